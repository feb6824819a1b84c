"""Test-session settings, applied before any test module imports JAX.

The tests compile thousands of small XLA programs and run each a few times, so compile time
dominates the suite. `--xla_backend_optimization_level=0` skips LLVM's optimisation passes on
XLA:CPU: the programs compute the same values (floating-point semantics are set by XLA, not by
these passes) and compile faster, which takes about a quarter off the suite on two cores.
Benchmarks and demos run outside pytest keep XLA's default level. An `XLA_FLAGS` that already
sets the level is left as it is; subprocesses the tests start inherit the setting unless they
replace `XLA_FLAGS` themselves.
"""

import os

_LEVEL = "--xla_backend_optimization_level"

if _LEVEL not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_LEVEL}=0".strip()
