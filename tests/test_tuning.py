"""The opt-in allocator settings: off by default, and once on, a step that needs a fresh 80 MB
buffer every call stops page-faulting once the heap has grown to its working size (counted with
getrusage, in fresh processes)."""

import json
import os
import subprocess
import sys

import pytest

import gnkit
from gnkit import tuning

_SCRIPT = """
import json, resource, statistics, sys, warnings
from gnkit import tuning
warnings.simplefilter("error" if sys.argv[2] == "early" else "ignore")
applied = tuning.use_fast_allocator() if sys.argv[2] == "early" else None
import jax, jax.numpy as jnp
x = jnp.ones((20_000_000,), jnp.float32)
step = jax.jit(lambda x: x * 2.0 + 1.0)
for _ in range(40):
    step(x).block_until_ready()
if sys.argv[2] == "late":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        applied = tuning.use_fast_allocator()
    assert "before the first JAX computation" in str(caught[0].message)
    for _ in range(3):
        step(x).block_until_ready()
counts = []
for _ in range(int(sys.argv[1])):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step(x).block_until_ready()
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"applied": applied, "faults_per_call": statistics.median(counts)}))
"""


def _faults_per_call(mode: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "15", mode], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(tuning._mallopt() is None, reason="needs glibc")
def test_fast_allocator_stops_the_per_call_page_faults():
    default = _faults_per_call("default")
    fast = _faults_per_call("early")
    # An 80 MB output is 19,532 pages of 4 KB, each faulted in afresh under glibc's defaults;
    # with the opt-in, the typical call (the median of 15) reuses the grown heap. A busy machine
    # may still grow it in a few calls, which the median leaves out.
    assert default["faults_per_call"] > 15_000
    assert fast["applied"] is True
    assert fast["faults_per_call"] < 2_000


@pytest.mark.skipif(tuning._mallopt() is None, reason="needs glibc")
def test_fast_allocator_after_jax_started_warns():
    late = _faults_per_call("late")
    assert late["applied"] is True
    # JAX's worker threads kept their own arenas, which map an 80 MB buffer afresh each call.
    assert late["faults_per_call"] > 15_000


_FIT_SCRIPT = """
import json, resource, statistics
import jax, jax.numpy as jnp
from gnkit import train
x = jnp.ones((10_000_000,), jnp.float32)
step = jax.jit(lambda x: x * 2.0 + 1.0)

def median_faults_per_call():
    counts = []
    for _ in range(15):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        step(x).block_until_ready()
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return statistics.median(counts)

before_fit = median_faults_per_call()
state = train.TrainingState(params=jnp.zeros(()), opt_state=())
train.fit(state, lambda p, o, b: (p, o, {}), lambda step: None, 1, progress=False)
print(json.dumps({"before_fit": before_fit, "after_fit": median_faults_per_call()}))
"""


def _faults_around_fit(system_malloc: bool) -> dict:
    env = dict(os.environ, GNKIT_SYSTEM_MALLOC="1" if system_malloc else "0")
    result = subprocess.run(
        [sys.executable, "-c", _FIT_SCRIPT], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(tuning._mallopt() is None, reason="needs glibc")
def test_fit_stops_the_page_faults_of_buffers_under_64_mb():
    # A 40 MB output is 9,766 pages of 4 KB: faulted in afresh on every call until `fit` has run
    # (JAX started before it, so only buffers up to a worker arena's 64 MB are helped). After it,
    # a call faults only while some worker thread's arena first grows to hold the buffer, so the
    # median call of 15 faults on no page.
    fast = _faults_around_fit(system_malloc=False)
    assert fast["before_fit"] > 8_000
    assert fast["after_fit"] < 100
    untouched = _faults_around_fit(system_malloc=True)
    assert untouched["after_fit"] > 8_000


def test_demo_entry_point_applies_the_training_allocator(monkeypatch):
    from gnkit import experiments
    from gnkit.demos.graph_nets import sort

    calls = []
    monkeypatch.setattr(tuning, "use_fast_allocator", lambda **kw: calls.append(kw) or True)
    monkeypatch.setenv(tuning.SYSTEM_MALLOC_ENV, "0")
    assert experiments.run(sort.DEMO, ["train", "--help"]) == 0
    assert calls == [{"warn_if_late": False}]
    monkeypatch.setenv(tuning.SYSTEM_MALLOC_ENV, "1")
    assert experiments.run(sort.DEMO, ["train", "--help"]) == 0
    assert calls == [{"warn_if_late": False}]


def test_importing_gnkit_leaves_the_allocator_alone():
    assert not hasattr(gnkit, "use_fast_allocator")
    assert "gnkit.tuning" not in subprocess.run(
        [sys.executable, "-c", "import sys, gnkit; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout
