"""`import gnkit` sets glibc's allocator to reuse freed memory: a step that needs a fresh 80 MB
buffer every call stops page-faulting once the heap has grown to its working size, whichever of
gnkit and JAX is imported first and for a plain `jax.jit` loop over a gnkit function;
`GNKIT_SYSTEM_MALLOC=1` keeps glibc's defaults. Page faults are counted with getrusage in fresh
processes, never timed."""

import json
import os
import subprocess
import sys

import pytest

from gnkit import tuning

# argv: the import order, the function stepped, the output sizes in MB, the warm-up calls.
# Prints the median minor page faults per call of each size, after the warm-up calls.
_SCRIPT = """
import json, resource, statistics, sys, warnings
order, function, warm_up = sys.argv[1], sys.argv[2], int(sys.argv[4])
sizes = [int(mb) for mb in sys.argv[3].split(",")]
if order == "gnkit, jax":
    import gnkit
    import jax
elif order == "jax, gnkit":
    import jax
    import gnkit
else:  # a JAX computation first: JAX's worker threads have their arenas before gnkit comes
    import jax
    jax.jit(lambda x: x + 1.0)(jax.numpy.ones(1_000_000)).block_until_ready()
    import gnkit
import jax.numpy as jnp

def stepper(mb):
    n = mb * 2**18  # float32 values in `mb` MB
    if function == "segment_sum":  # [n / 4, 4] rows, each its own segment: an `mb` MB output
        rows = jnp.ones((n // 4, 4), jnp.float32)
        ids = jnp.arange(n // 4, dtype=jnp.int32)
        step = jax.jit(lambda rows, ids: gnkit.segment_sum(rows, ids, n // 4,
                                                           indices_are_sorted=True))
        return lambda: step(rows, ids).block_until_ready()
    values = jnp.ones((n,), jnp.float32)
    step = jax.jit(lambda x: x * 2.0 + 1.0)
    return lambda: step(values).block_until_ready()

result = {}
for mb in sizes:
    call = stepper(mb)
    for _ in range(warm_up):
        call()
    counts = []
    for _ in range(11):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        call()
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    result[mb] = statistics.median(counts)
if order == "late":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result["explicit_call_applied"] = gnkit.tuning.use_fast_allocator()
    result["warning"] = str(caught[0].message)
print(json.dumps(result))
"""
# An 80 MB buffer is 20,480 pages of 4 KB, each faulted in afresh per call under glibc's
# defaults; reused, the typical call (the median of 11) faults on next to none. The heap first
# grows over 10-20 calls (glibc 2.36 here: the small remainders of XLA's 64-byte-aligned blocks
# sit in malloc's per-thread cache, so a freed block is at first too small for the next request),
# hence the 30 warm-up calls; a busy machine may still grow it in a few, which the median leaves
# out. glibc's defaults need no warm-up to show their faults.
_FRESH_80_MB = 18_000
_REUSED = 1_000

needs_glibc = pytest.mark.skipif(tuning._mallopt() is None, reason="needs glibc")


def _median_faults(order: str, function: str = "plain", sizes: str = "80",
                   system_malloc: bool = False) -> dict:
    env = {key: value for key, value in os.environ.items() if key != tuning.SYSTEM_MALLOC_ENV}
    if system_malloc:
        env[tuning.SYSTEM_MALLOC_ENV] = "1"
    warm_up = "3" if system_malloc else "30"
    result = subprocess.run([sys.executable, "-c", _SCRIPT, order, function, sizes, warm_up],
                            capture_output=True, text=True, check=True, env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_glibc
@pytest.mark.parametrize("order", [pytest.param("gnkit, jax", marks=pytest.mark.slow),
                                   "jax, gnkit"])
def test_importing_gnkit_stops_the_per_call_page_faults_in_either_order(order):
    assert _median_faults(order)["80"] < _REUSED


@needs_glibc
@pytest.mark.slow  # two processes, one stepping a scatter under glibc's defaults
def test_a_jit_loop_over_a_gnkit_function_stops_faulting_and_the_opt_out_keeps_glibc():
    assert _median_faults("gnkit, jax", "segment_sum")["80"] < _REUSED
    assert _median_faults("gnkit, jax", "segment_sum", system_malloc=True)["80"] > _FRESH_80_MB


@needs_glibc
def test_the_opt_out_leaves_glibc_mapping_every_large_buffer_afresh():
    assert _median_faults("jax, gnkit", system_malloc=True)["80"] > _FRESH_80_MB


@needs_glibc
@pytest.mark.slow  # 80 calls of 40 and 80 MB steps
def test_after_a_jax_computation_import_helps_buffers_up_to_64_mb_and_a_late_call_warns():
    late = _median_faults("late", sizes="40,80")
    # JAX's worker threads kept their own arenas: a 40 MB buffer (10,240 pages) now stays in
    # one, an 80 MB one is larger than an arena's 64 MB heap and is still mapped every call.
    assert late["40"] < _REUSED
    assert late["80"] > _FRESH_80_MB
    assert late["explicit_call_applied"] is True
    assert "before the first JAX computation" in late["warning"]


def test_off_glibc_nothing_is_changed(monkeypatch):
    def no_such_name(name):
        raise ValueError("unrecognized configuration name")

    monkeypatch.delenv(tuning.SYSTEM_MALLOC_ENV, raising=False)
    monkeypatch.setattr(tuning.os, "confstr", no_such_name)
    assert tuning._mallopt() is None
    assert tuning.apply_default_allocator() is False
    monkeypatch.setattr(tuning.os, "confstr", lambda name: None)
    assert tuning.use_fast_allocator() is False


def test_the_opt_out_variable_skips_mallopt(monkeypatch):
    calls = []
    monkeypatch.setattr(tuning, "use_fast_allocator", lambda **kw: calls.append(kw) or True)
    monkeypatch.setenv(tuning.SYSTEM_MALLOC_ENV, "1")
    assert tuning.apply_default_allocator() is False
    monkeypatch.setenv(tuning.SYSTEM_MALLOC_ENV, "0")
    assert tuning.apply_default_allocator() is True
    assert calls == [{"warn_if_late": False}]


# argv: an XLA_FLAGS value or "-" for none. Prints XLA_FLAGS after `import jax; import gnkit`
# and how many YNNPACK fusions XLA makes of a reduction over the middle axis of a product.
_FLAG_SCRIPT = """
import json, os, sys
if sys.argv[1] != "-":
    os.environ["XLA_FLAGS"] = sys.argv[1]
import jax
import gnkit
import jax.numpy as jnp
x = jnp.ones((512, 16, 64))
text = jax.jit(lambda x: jnp.sum(x * x, axis=1)).lower(x).compile().as_text()
print(json.dumps([os.environ.get("XLA_FLAGS"), text.count("__ynn_fusion")]))
"""

needs_flag_jaxlib = pytest.mark.skipif(
    not (tuning._CPU_REDUCTIONS_JAXLIB[0] <= tuning._jaxlib_version()
         < tuning._CPU_REDUCTIONS_JAXLIB[1]),
    reason="the flag is added for jaxlib 0.10-0.11 only")


def _flags_and_ynn_fusions(xla_flags: str | None, system_flags: bool = False) -> list:
    env = {key: value for key, value in os.environ.items()
           if key not in ("XLA_FLAGS", tuning.SYSTEM_XLA_FLAGS_ENV)}
    if system_flags:
        env[tuning.SYSTEM_XLA_FLAGS_ENV] = "1"
    result = subprocess.run([sys.executable, "-c", _FLAG_SCRIPT, xla_flags or "-"],
                            capture_output=True, text=True, check=True, env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])


@needs_flag_jaxlib
def test_import_gnkit_keeps_reductions_out_of_ynnpack_and_the_opt_out_keeps_xlas_choice():
    assert _flags_and_ynn_fusions(None) == [tuning.CPU_REDUCTIONS_FLAG, 0]
    assert _flags_and_ynn_fusions("--xla_backend_optimization_level=1") == [
        f"--xla_backend_optimization_level=1 {tuning.CPU_REDUCTIONS_FLAG}", 0]
    flags, fusions = _flags_and_ynn_fusions(None, system_flags=True)
    assert flags is None and fusions == 1  # XLA's default sends the reduction to YNNPACK


@needs_flag_jaxlib
def test_a_flag_the_user_set_is_left_alone():
    own = "--xla_cpu_experimental_ynn_fusion_type=reduce"
    assert _flags_and_ynn_fusions(own) == [own, 1]


def test_the_flag_is_added_only_for_the_jaxlib_versions_that_have_it(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv(tuning.SYSTEM_XLA_FLAGS_ENV, raising=False)
    monkeypatch.setattr(tuning, "_jax_backend_started", lambda: False)
    for version, added in [((0, 9), False), ((0, 10), True), ((0, 11), True), ((0, 12), False),
                           (None, False)]:
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        monkeypatch.setattr(tuning, "_jaxlib_version", lambda version=version: version)
        assert tuning.apply_default_xla_flags() is added, version
        assert os.environ.get("XLA_FLAGS") == (tuning.CPU_REDUCTIONS_FLAG if added else None)
    monkeypatch.setattr(tuning, "_jaxlib_version", lambda: (0, 10))
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert tuning.apply_default_xla_flags() is False  # XLA's loops gave NaN at level 0
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=0"
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(tuning, "_jax_backend_started", lambda: True)
    assert tuning.apply_default_xla_flags() is False  # too late to take effect


def test_a_foreign_jax_environment_drops_only_the_flag_gnkit_added():
    flag = tuning.CPU_REDUCTIONS_FLAG
    assert tuning.foreign_jax_environment(
        {"XLA_FLAGS": f"--xla_cpu_enable_fast_math=false {flag}", "HOME": "/h"}) == {
        "XLA_FLAGS": "--xla_cpu_enable_fast_math=false", "HOME": "/h"}
    assert tuning.foreign_jax_environment({"XLA_FLAGS": flag}) == {}
    own = {"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=reduce"}
    assert tuning.foreign_jax_environment(own) == own
