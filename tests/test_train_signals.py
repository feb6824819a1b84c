"""Ctrl-C inside `gnkit.train.fit` outside any entry point (a script, a notebook), with real
signals from another process.

Each child runs `fit` on a jitted GraphNetwork step in its own interpreter and catches
`TrainingStopped`; the parent sends SIGINT with `os.kill`: during the first step's compile,
and repeatedly under garbage collections made frequent (`gc.set_threshold(1)`, so JAX's
collection callback runs all the time). Every SIGINT must stop its `fit` cleanly: the stop
saved and raised, no "Exception ignored", no crash, exit status 0. A partial checkpoint left by
a SIGKILL during a write is removed by the next `fit` in that directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gnkit import train as training

_CHILD_PRELUDE = """
import gc, json, os, sys, time
import jax, jax.numpy as jnp, numpy as np
import gnkit as gn
from gnkit import train as training

graph = gn.GraphsTuple(
    nodes=jnp.ones((6, 4)), edges=jnp.ones((10, 4)), globals=jnp.ones((1, 4)),
    senders=jnp.array([0, 1, 2, 3, 4, 5, 0, 1, 2, 3]),
    receivers=jnp.array([1, 2, 3, 4, 5, 0, 2, 3, 4, 5]),
    n_node=jnp.array([6]), n_edge=jnp.array([10]),
)

def make_step(layers):
    def loss(w):
        out = graph
        for _ in range(layers):
            net = gn.GraphNetwork(
                update_edge_fn=lambda e, s, r, g: jnp.tanh((e + s + r + g) @ w),
                update_node_fn=lambda n, se, re, g: jnp.tanh((n + se + re + g) @ w),
                update_global_fn=lambda n, e, g: jnp.tanh((n + e + g) @ w),
            )
            out = net(out)
        return jnp.mean(out.globals ** 2)

    @jax.jit
    def step(w, opt_state, batch):
        value, grad = jax.value_and_grad(loss)(w)
        return w - 0.01 * grad, opt_state, {"loss": value}
    return step

def tell(message):
    print(message, flush=True)
"""


def _child(body: str, *args: str) -> subprocess.Popen:
    script = _CHILD_PRELUDE + textwrap.dedent(body)
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(process: subprocess.Popen, line: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = process.stdout.readline()
        if got.strip() == line:
            return
        if not got and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"child never said {line!r}: {process.stderr.read()}")


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    return out, err


def test_sigint_during_the_first_compile_stops_after_that_update(tmp_path):
    """The first step compiles a 8-block GraphNetwork and its gradient; SIGINT arrives while
    XLA compiles it. The update finishes, is saved, and `TrainingStopped` reaches the script."""
    process = _child(
        """
        def batch(step):
            if step == 0:
                tell("compiling")
            return None
        state = training.TrainingState(params=jnp.eye(4) * 0.5, opt_state=())
        try:
            training.fit(state, make_step(8), batch, 1000, checkpoint_dir=sys.argv[1],
                         progress=False)
            tell("finished without stopping")
        except training.TrainingStopped as stopped:
            tell(json.dumps([stopped.step, stopped.signal_number, str(stopped.checkpoint)]))
        """,
        str(tmp_path),
    )
    _wait_for(process, "compiling")
    time.sleep(0.3)
    os.kill(process.pid, signal.SIGINT)
    out, _ = _finish(process)
    step, number, checkpoint = json.loads(out.strip().splitlines()[-1])
    assert (step, number) == (1, signal.SIGINT)
    assert Path(checkpoint).name == "checkpoint_000000001.msgpack"
    assert training.checkpoint_steps(tmp_path) == [1]


def test_every_sigint_stops_fit_under_frequent_garbage_collection():
    """Eight `fit` calls one after another with `gc.set_threshold(1)`; one SIGINT each, sent
    once the call is training. A lost SIGINT would let its `fit` run all 100,000 updates."""
    rounds = 8
    process = _child(
        f"""
        gc.set_threshold(1, 1, 1)
        step_fn = make_step(1)
        stopped_steps = []
        for round in range({rounds}):
            def batch(step):
                if step == 20:
                    tell("training")
                return None
            state = training.TrainingState(params=jnp.eye(4) * 0.5, opt_state=())
            try:
                training.fit(state, step_fn, batch, 100_000, progress=False)
                tell("finished without stopping")
                break
            except training.TrainingStopped as stopped:
                stopped_steps.append(stopped.step)
                assert stopped.signal_number == 2
        tell("stops " + json.dumps(stopped_steps))
        """
    )
    for _ in range(rounds):
        _wait_for(process, "training")
        os.kill(process.pid, signal.SIGINT)
    out, _ = _finish(process)
    stops = json.loads(out.strip().splitlines()[-1].removeprefix("stops "))
    assert len(stops) == rounds and all(20 < step < 100_000 for step in stops)


@pytest.mark.slow
def test_a_checkpoint_write_killed_midway_leaves_a_partial_file_the_next_fit_removes(tmp_path):
    """SIGKILL while `save_checkpoint` writes (held at its fsync): the temporary file stays,
    the checkpoint itself was never renamed into place; the next `fit` removes the leftover
    (and one of `best.msgpack`, made here by hand), and nothing else."""
    process = _child(
        """
        import os as real_os
        real_os.fsync = lambda descriptor: (tell("writing"), time.sleep(600))
        state = training.TrainingState(params=jnp.ones((256, 256)), opt_state=(), step=7)
        training.save_checkpoint(sys.argv[1], state)
        """,
        str(tmp_path),
    )
    _wait_for(process, "writing")
    process.kill()
    process.communicate(timeout=60)
    partial = tmp_path / ".checkpoint_000000007.msgpack.tmp"
    assert partial.stat().st_size > 0 and not (tmp_path / "checkpoint_000000007.msgpack").exists()
    (tmp_path / ".best.msgpack.tmp").write_bytes(b"torn")
    (tmp_path / "notes.tmp").write_text("not a checkpoint: stays")
    state = training.TrainingState(params={"x": 1.0}, opt_state=())
    training.fit(
        state,
        lambda p, o, b: (p, o, {}),
        lambda step: None,
        1,
        checkpoint_dir=tmp_path,
        progress=False,
    )
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["checkpoint_000000001.msgpack", "notes.tmp"]
