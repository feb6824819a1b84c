"""jraph's own test files, run against gnkit.

`utils_test.py` and `models_test.py` ship inside the installed jraph wheel (`jraph/_src/`). They
are read from there at test time, only their import lines are rewritten (`from jraph._src import
graph / utils / models` to gnkit; `jax.lib.xla_bridge`, which JAX has removed, to its public
successor `jax.extend.backend`), and every test in them runs here, one pytest case per upstream
test method. Nothing else of jraph's text is changed, so gnkit passes jraph's suite as written.
"""

import os
import pathlib
import types
import unittest

import pytest

jraph = pytest.importorskip("jraph")
pytest.importorskip("absl.testing.absltest")

UPSTREAM = pathlib.Path(jraph.__file__).parent / "_src"

# Upstream import lines and their replacements (whole lines).
IMPORT_REWRITES = {
    "from jraph._src import graph": "from gnkit import graph",
    # jraph's `utils` holds the batching, padding and segment functions; gnkit exports them all
    # at top level under the same names.
    "from jraph._src import utils": "import gnkit as utils",
    "from jraph._src import models": "from gnkit import models",
    # `jax.lib.xla_bridge` was removed from JAX. DynamicBatchTest.setUp only calls
    # `xla_bridge.get_backend.cache_clear()`, which `jax.extend.backend` offers publicly.
    "from jax.lib import xla_bridge": "from jax.extend import backend as xla_bridge",
}

# At least this many test methods per file (jraph 0.0.6 has 85 and 17), so a file that fails to
# load or loses its tests cannot pass by running nothing.
MINIMUM_TESTS = {"utils_test": 85, "models_test": 17}

# Upstream tests that take over ~20 s here: many random shapes through jnp (a compile each).
SLOW = {"GraphTest.test_batch_unbatch_with_random_graphs"}


def _rewrite_imports(source: str, filename: str) -> str:
    lines = [IMPORT_REWRITES.get(line, line) for line in source.splitlines()]
    leftover = [
        line
        for line in lines
        if line.startswith(("import", "from")) and ("jraph" in line or "jax.lib" in line)
    ]
    if leftover:
        raise AssertionError(f"{filename}.py still imports {leftover} after the rewrite")
    return "\n".join(lines) + "\n"


def _load_upstream(filename: str) -> types.ModuleType:
    path = UPSTREAM / f"{filename}.py"
    module = types.ModuleType(f"jraph_upstream_{filename}")
    module.__file__ = str(path)
    source = _rewrite_imports(path.read_text(), filename)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def _test_ids(module: types.ModuleType) -> list[str]:
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    ids = []

    def collect(tests):
        for test in tests:
            if isinstance(test, unittest.TestSuite):
                collect(test)
            else:
                ids.append(f"{type(test).__name__}.{test._testMethodName}")

    collect(suite)
    return ids


MODULES = {name: _load_upstream(name) for name in MINIMUM_TESTS}
TEST_IDS = {name: _test_ids(module) for name, module in MODULES.items()}


def _cases():
    for filename, ids in TEST_IDS.items():
        for test_id in ids:
            slow = test_id.rstrip("0123456789") in SLOW
            marks = [pytest.mark.slow] if slow else []
            yield pytest.param(filename, test_id, id=f"{filename}.{test_id}", marks=marks)


@pytest.mark.parametrize("filename", sorted(MINIMUM_TESTS))
def test_every_upstream_file_has_its_tests(filename):
    assert len(TEST_IDS[filename]) >= MINIMUM_TESTS[filename]


@pytest.mark.parametrize(("filename", "test_id"), list(_cases()))
def test_upstream(filename, test_id, monkeypatch):
    # DynamicBatchTest.setUp sets XLA_FLAGS in os.environ; keep it from leaking into later
    # tests' subprocesses.
    monkeypatch.setitem(os.environ, "XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    test = unittest.defaultTestLoader.loadTestsFromName(test_id, MODULES[filename])
    result = unittest.TestResult()
    test.run(result)
    problems = [f"{case.id()}:\n{trace}" for case, trace in result.failures + result.errors]
    assert not problems, "\n\n".join(problems)
    assert result.testsRun == 1 and not result.skipped and not result.unexpectedSuccesses
