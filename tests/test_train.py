"""Tests for gnkit.train (loop, checkpoints, exact resume, stopping) and the Sudoku demo's
commands."""

import json
import random
import signal
import subprocess
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _forced_devices import run_with_devices

from gnkit import train as training
from gnkit.demos import sudoku as demo
from gnkit.tasks import sudoku

CONFIG = demo.CONFIGS["tiny"]


@pytest.fixture(scope="module")
def setup():
    pool = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))
    return demo.make_train_step(CONFIG), demo.make_batches(CONFIG, pool)


def _fit(setup, state, num_steps, directory=None, make_batch=None, **kwargs):
    train_step, batches = setup
    return training.fit(
        state,
        train_step,
        make_batch or batches,
        num_steps,
        checkpoint_dir=directory,
        progress=False,
        **{"should_stop": training.StopRequest(), **kwargs},
    )


def test_short_training_lowers_the_loss(setup):
    model = CONFIG.model()
    quizzes, solutions = (jnp.asarray(part, jnp.int32) for part in setup[1](10_000))

    def loss(params):
        return float(jnp.mean(sudoku.cell_loss(model.apply(params, quizzes, 4), solutions)))

    state = demo.init_state(CONFIG)
    before = loss(state.params)
    after = loss(_fit(setup, state, 40).params)
    assert before > 2.1  # about log(9) at initialisation
    assert after < before - 0.1


def test_resume_continues_exactly(setup, tmp_path):
    straight = _fit(setup, demo.init_state(CONFIG), 6)
    first = _fit(
        setup,
        demo.init_state(CONFIG),
        3,
        tmp_path,
        eval_every_steps=2,
        evaluate=lambda params: {"score": 0.5},
    )
    assert int(first.step) == 3
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "best.msgpack",
        "checkpoint_000000002.msgpack",
        "checkpoint_000000003.msgpack",
    ]
    resumed_state = training.resume_or(demo.init_state(CONFIG), tmp_path)
    assert int(resumed_state.step) == 3 and resumed_state.best_score == 0.5
    resumed = _fit(setup, resumed_state, 6, tmp_path)
    assert int(resumed.step) == 6
    for got, want in zip(
        jax.tree.leaves((resumed.params, resumed.opt_state)),
        jax.tree.leaves((straight.params, straight.opt_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_interrupt_saves_and_resume_matches(setup, tmp_path):
    straight = _fit(setup, demo.init_state(CONFIG), 5)
    calls = []

    def interrupted(step):
        calls.append(step)
        if step == 2 and calls.count(2) == 1:
            raise KeyboardInterrupt
        return setup[1](step)

    with pytest.raises(KeyboardInterrupt):
        _fit(
            setup,
            demo.init_state(CONFIG),
            5,
            tmp_path,
            make_batch=interrupted,
            checkpoint_every_s=1e9,
        )
    assert training.checkpoint_steps(tmp_path) == [2]
    resumed = _fit(
        setup,
        training.resume_or(demo.init_state(CONFIG), tmp_path),
        5,
        tmp_path,
        make_batch=interrupted,
    )
    for got, want in zip(
        jax.tree.leaves((resumed.params, resumed.opt_state)),
        jax.tree.leaves((straight.params, straight.opt_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


# A toy regression trained with `fit`: fast to compile, so the loop's bookkeeping can be tested
# on many short runs. Run as a script (`python -c TOY_TRAINING RUN_DIR STEPS`) it is a command
# line entry point: `stop_on_signals` installs the signal handlers, and a stopped run exits with
# `TrainingStopped.exit_code`.
TOY_TRAINING = """
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import train as training

OPTIMIZER = optax.adam(0.05)
TRUE_WEIGHTS = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)


def initial_state():
    params = {"w": jnp.zeros((4, 1))}
    return training.TrainingState(params=params, opt_state=OPTIMIZER.init(params))


@jax.jit
def train_step(params, opt_state, batch):
    inputs, targets = batch
    loss_fn = lambda p: jnp.mean((inputs @ p["w"] - targets) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, {"loss": loss}


def make_batch(step):
    inputs = np.random.default_rng(step).normal(size=(8, 4)).astype(np.float32)
    return inputs, inputs @ TRUE_WEIGHTS


def train_run(run_dir, num_steps, should_stop, seconds_per_batch=0.0):
    def paced_batch(step):
        time.sleep(seconds_per_batch)
        return make_batch(step)

    state = training.resume_or(initial_state(), f"{run_dir}/checkpoints")
    return training.fit(
        state, train_step, paced_batch, num_steps, checkpoint_dir=f"{run_dir}/checkpoints",
        checkpoint_every_s=0.05, metrics_path=f"{run_dir}/metrics.jsonl", log_every_steps=7,
        progress=False, should_stop=should_stop,
    )


if __name__ == "__main__":
    run_dir, num_steps = sys.argv[1], int(sys.argv[2])
    try:
        with training.stop_on_signals() as stop:
            train_run(run_dir, num_steps, stop, 0.002)
    except training.TrainingStopped as stopped:
        sys.exit(stopped.exit_code)
"""
TOY = {}
exec(TOY_TRAINING, TOY)


def toy_fit(num_steps, state=None, **kwargs):
    return training.fit(
        TOY["initial_state"]() if state is None else state,
        TOY["train_step"],
        kwargs.pop("make_batch", TOY["make_batch"]),
        num_steps,
        progress=False,
        **{"should_stop": training.StopRequest(), **kwargs},
    )


def assert_same_state(got, want):
    for a, b in zip(
        jax.tree.leaves((got.params, got.opt_state)),
        jax.tree.leaves((want.params, want.opt_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_metrics_log_records_counters_without_rounding_them_away(tmp_path, monkeypatch):
    """The CPU clock is faked: 0.012 s per training step, none for evaluation, so the records
    hold hand-computed times however fast the machine is."""
    clock = [100.0]
    monkeypatch.setattr(time, "process_time", lambda: clock[0])

    def timed_step(params, opt_state, batch):
        clock[0] += 0.012
        return TOY["train_step"](params, opt_state, batch)

    path = tmp_path / "metrics.jsonl"
    state = training.fit(
        TOY["initial_state"](),
        timed_step,
        TOY["make_batch"],
        4,
        metrics_path=path,
        log_every_steps=2,
        examples_per_step=8,
        evaluate=lambda params: {"score": 1.0, "per": {"17": 0.25}},
        eval_every_steps=4,
        progress=False,
        should_stop=training.StopRequest(),
    )
    rows = training.read_metrics(path)
    assert [row["kind"] for row in rows] == ["train", "train", "eval"]
    assert [row["examples"] for row in rows] == [16, 32, 32]
    assert rows[2]["per"] == {"17": 0.25} and "loss" in rows[0]
    np.testing.assert_allclose([row["cpu_minutes"] for row in rows], [0.0004, 0.0008, 0.0008])
    assert rows[2]["eval_cpu_minutes"] == 0.0
    assert state.cpu_seconds == pytest.approx(0.048)


def test_best_checkpoint_is_the_latest_of_equal_scores(tmp_path):
    scores = iter([0.5, 0.75, 0.75, 0.25])
    toy_fit(8, checkpoint_dir=tmp_path, evaluate=lambda params: {"score": next(scores)},
            eval_every_steps=2)  # fmt: skip
    best = training.load_checkpoint(tmp_path / "best.msgpack", TOY["initial_state"]())
    assert (int(best.step), best.best_score) == (6, 0.75)
    assert_same_state(best, toy_fit(6))


def test_a_non_finite_loss_stops_the_run_and_keeps_the_finite_checkpoints(tmp_path):
    """NaN inputs from step 7 on make the loss NaN: the interval ending at step 8 is logged,
    `fit` raises there naming the last checkpoint (step 4, a finite state), and saves nothing
    after it."""

    def poisoned_batch(step):
        inputs, targets = TOY["make_batch"](step)
        return (inputs * np.nan, targets) if step >= 7 else (inputs, targets)

    options = dict(checkpoint_dir=tmp_path, metrics_path=tmp_path / "metrics.jsonl")
    with pytest.raises(training.TrainingDiverged) as diverged:
        toy_fit(12, make_batch=poisoned_batch, log_every_steps=4,
                evaluate=lambda params: {"score": 0.0}, eval_every_steps=4, **options)
    assert diverged.value.step == 8 and np.isnan(diverged.value.loss)
    assert diverged.value.checkpoint == tmp_path / "checkpoint_000000004.msgpack"
    assert "steps up to 8 is nan" in str(diverged.value)
    assert training.checkpoint_steps(tmp_path) == [4]
    best = training.load_checkpoint(tmp_path / "best.msgpack", TOY["initial_state"]())
    assert int(best.step) == 4 and np.all(np.isfinite(best.params["w"]))
    rows = training.read_metrics(tmp_path / "metrics.jsonl")
    assert [(row["kind"], row["step"]) for row in rows] == [
        ("train", 4), ("eval", 4), ("train", 8)]
    assert np.isnan(rows[-1]["loss"])


def test_a_non_finite_loss_is_found_before_a_validation_between_log_records(tmp_path):
    """Log records every 8 steps, validation every 2, NaN inputs from the fifth update on: the
    run stops at step 6, before its validation; the last checkpoint is step 4's."""

    def poisoned_batch(step):
        inputs, targets = TOY["make_batch"](step)
        return (inputs * np.nan, targets) if step >= 4 else (inputs, targets)

    evaluated = []

    def evaluate(params):
        evaluated.append(np.asarray(params["w"]).copy())
        return {"score": 0.0}

    with pytest.raises(training.TrainingDiverged) as diverged:
        toy_fit(12, make_batch=poisoned_batch, log_every_steps=8, evaluate=evaluate,
                eval_every_steps=2, checkpoint_dir=tmp_path)
    assert diverged.value.step == 6 and np.isnan(diverged.value.loss)
    assert diverged.value.checkpoint == tmp_path / "checkpoint_000000004.msgpack"
    assert training.checkpoint_steps(tmp_path) == [2, 4]
    assert len(evaluated) == 2 and all(np.all(np.isfinite(w)) for w in evaluated)


def test_stop_request_logs_the_partial_interval_saves_and_resumes_exactly(tmp_path):
    straight = toy_fit(12)
    stop = training.StopRequest()

    def stop_after_step_five(step):
        if step == 4:
            stop.set()
        return TOY["make_batch"](step)

    options = dict(checkpoint_dir=tmp_path, metrics_path=tmp_path / "metrics.jsonl")
    with pytest.raises(training.TrainingStopped) as stopped:
        toy_fit(12, make_batch=stop_after_step_five, log_every_steps=4, should_stop=stop, **options)
    assert stopped.value.step == 5 and stopped.value.exit_code == 130
    assert stopped.value.checkpoint == tmp_path / "checkpoint_000000005.msgpack"
    assert "at step 5" in str(stopped.value)
    resumed = toy_fit(
        12, training.resume_or(TOY["initial_state"](), tmp_path), log_every_steps=4, **options
    )
    assert_same_state(resumed, straight)
    rows = training.read_metrics(tmp_path / "metrics.jsonl")
    assert [row["step"] for row in rows] == [4, 5, 8, 12]


def test_resume_drops_the_records_logged_after_its_checkpoint(tmp_path):
    """A kill after steps 4-6 were logged but before checkpoint 6 was written (simulated by
    deleting it): the resumed run logs them again, and the file has each step once."""
    options = dict(
        checkpoint_dir=tmp_path,
        metrics_path=tmp_path / "metrics.jsonl",
        log_every_steps=1,
        evaluate=lambda params: {"score": 0.0},
        eval_every_steps=3,
        checkpoint_every_s=1e9,
    )
    toy_fit(6, **options)
    (tmp_path / "checkpoint_000000006.msgpack").unlink()
    with open(tmp_path / "metrics.jsonl", "a") as stream:
        stream.write('{"kind": "train", "st')  # a record torn by the kill
    resumed = toy_fit(6, training.resume_or(TOY["initial_state"](), tmp_path), **options)
    assert_same_state(resumed, toy_fit(6))
    rows = training.read_metrics(tmp_path / "metrics.jsonl")
    assert [(row["kind"], row["step"]) for row in rows] == [
        ("train", 1), ("train", 2), ("train", 3), ("eval", 3),
        ("train", 4), ("train", 5), ("train", 6), ("eval", 6),
    ]  # fmt: skip


def test_unreadable_latest_checkpoint_is_named_and_the_previous_one_used(tmp_path):
    toy_fit(4, checkpoint_dir=tmp_path, checkpoint_every_s=0.0)
    newest = tmp_path / "checkpoint_000000004.msgpack"
    newest.write_bytes(newest.read_bytes()[:100])
    with pytest.raises(training.CheckpointError, match="checkpoint_000000004.msgpack"):
        training.load_checkpoint(newest, TOY["initial_state"]())
    with pytest.warns(RuntimeWarning, match="checkpoint_000000004.msgpack"):
        state = training.resume_or(TOY["initial_state"](), tmp_path)
    assert int(state.step) == 3
    assert_same_state(state, toy_fit(3))
    assert training.checkpoint_steps(tmp_path) == [3]
    assert (tmp_path / "checkpoint_000000004.msgpack.unreadable").exists()


def test_fit_runs_in_a_thread_and_stops_when_an_event_is_set(tmp_path):
    """No signal handler is needed: the main thread sets a `threading.Event` while the
    training thread waits inside its sixth batch, so the run stops after step 6."""
    stop, reached = threading.Event(), threading.Event()
    outcome = {}

    def batch_waiting_at_step_five(step):
        if step == 5:
            reached.set()
            stop.wait(timeout=60)
        return TOY["make_batch"](step)

    def train_in_thread():
        try:
            toy_fit(
                10, make_batch=batch_waiting_at_step_five, checkpoint_dir=tmp_path, should_stop=stop
            )
        except training.TrainingStopped as stopped:
            outcome["stopped"] = stopped

    worker = threading.Thread(target=train_in_thread)
    worker.start()
    assert reached.wait(timeout=60)
    stop.set()
    worker.join(timeout=60)
    assert outcome["stopped"].step == 6 and outcome["stopped"].signal_number is None
    resumed = toy_fit(10, training.resume_or(TOY["initial_state"](), tmp_path))
    assert_same_state(resumed, toy_fit(10))


@pytest.mark.parametrize("signal_number, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_handlers_only_set_the_flag(tmp_path, signal_number, exit_code):
    """The signal arrives inside `make_batch`; the handler sets the flag, the step finishes,
    and the run stops before the next one. The previous handler is back afterwards."""
    before = signal.getsignal(signal_number)

    def signalled_batch(step):
        if step == 2:
            signal.raise_signal(signal_number)
        return TOY["make_batch"](step)

    with training.stop_on_signals() as stop:
        with pytest.raises(training.TrainingStopped) as stopped:
            toy_fit(10, make_batch=signalled_batch, checkpoint_dir=tmp_path, should_stop=stop)
    assert (stopped.value.step, stopped.value.exit_code) == (3, exit_code)
    assert signal.getsignal(signal_number) is before
    assert training.checkpoint_steps(tmp_path) == [3]


class _StopAtStep:
    """A `should_stop` callable that names its cause, as a time budget does."""

    reason = "--budget-min 5"

    def __init__(self, step):
        self.step, self.calls = step, 0

    def __call__(self):
        self.calls += 1
        return self.calls > self.step


def test_a_stop_message_names_the_stopping_callables_reason(tmp_path):
    with pytest.raises(training.TrainingStopped) as stopped:
        toy_fit(10, checkpoint_dir=tmp_path, should_stop=_StopAtStep(4))
    assert str(stopped.value) == (
        f"stopped by --budget-min 5 at step 4; saved {tmp_path / 'checkpoint_000000004.msgpack'}; "
        "rerun the command to resume"
    )
    assert (stopped.value.signal_number, stopped.value.exit_code) == (None, 130)


def test_fit_stops_cleanly_on_a_keyboard_interrupt_and_restores_the_sigint_handler(tmp_path):
    """As in a notebook: no `should_stop`; a KeyboardInterrupt raised inside the loop (here by
    `make_batch`) saves and stops. While `fit` runs SIGINT has its flag-setting handler, SIGTERM
    is untouched, and both are as before once it has raised."""
    handlers = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert handlers[0] is signal.default_int_handler
    seen = []

    def interrupted_batch(step):
        seen.append((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))
        if step == 3:
            raise KeyboardInterrupt
        return TOY["make_batch"](step)

    with pytest.raises(training.TrainingStopped) as stopped:
        training.fit(
            TOY["initial_state"](),
            TOY["train_step"],
            interrupted_batch,
            10,
            checkpoint_dir=tmp_path,
            progress=False,
        )
    assert (stopped.value.step, stopped.value.exit_code) == (3, 130)
    assert training.checkpoint_steps(tmp_path) == [3]
    assert all(sigint is not handlers[0] and sigterm is handlers[1] for sigint, sigterm in seen)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


def test_a_sigint_during_fit_stops_after_the_current_update(tmp_path):
    """`signal.raise_signal(SIGINT)` inside update 4's batch: the update still runs (no
    exception mid-step), the state after it is saved, `TrainingStopped` names SIGINT."""

    def batch(step):
        if step == 4:
            signal.raise_signal(signal.SIGINT)
        return TOY["make_batch"](step)

    with pytest.raises(training.TrainingStopped) as stopped:
        training.fit(
            TOY["initial_state"](),
            TOY["train_step"],
            batch,
            10,
            checkpoint_dir=tmp_path,
            progress=False,
        )
    assert (stopped.value.step, stopped.value.signal_number) == (5, signal.SIGINT)
    assert "stopped by SIGINT at step 5" in str(stopped.value)
    assert training.checkpoint_steps(tmp_path) == [5]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_fit_leaves_a_handler_someone_installed_alone():
    """Under a command's `stop_on_signals` (or any handler but Python's default) `fit` keeps
    the handler in place: the command's flag asks for the stop."""
    with training.stop_on_signals() as stop:
        installed = signal.getsignal(signal.SIGINT)

        def batch(step):
            assert signal.getsignal(signal.SIGINT) is installed
            if step == 2:
                signal.raise_signal(signal.SIGINT)
            return TOY["make_batch"](step)

        with pytest.raises(training.TrainingStopped) as stopped:
            training.fit(
                TOY["initial_state"](),
                TOY["train_step"],
                batch,
                10,
                progress=False,
                should_stop=stop,
            )
    assert (stopped.value.step, stopped.value.exit_code) == (3, 130)


def test_first_signal_restores_the_previous_handler_so_a_second_one_interrupts():
    previous = signal.getsignal(signal.SIGINT)
    with training.stop_on_signals() as stop:
        assert signal.getsignal(signal.SIGINT) is not previous
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set() and stop.exit_code == 143
        assert signal.getsignal(signal.SIGINT) is previous
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is previous


def test_train_state_is_a_deprecated_name_of_training_state():
    with pytest.warns(DeprecationWarning, match="TrainingState"):
        assert training.TrainState is training.TrainingState


def test_fit_takes_a_strategy_or_its_mode_name_alike():
    """`parallel=` a strategy object or its mode name: one code path, the same trained state
    (the toy step is plain `jit`, so the one-device layout is all that differs)."""
    from gnkit.parallel import data_parallel

    want = toy_fit(5)
    for parallel in (data_parallel("single"), "single"):
        assert_same_state(toy_fit(5, parallel=parallel), want)


def test_checkpoint_pieces_alone(tmp_path):
    """Save, list, prune to the last two, load into a template: no `fit` involved."""
    state = TOY["initial_state"]()
    for step in (3, 10, 7):
        training.save_checkpoint(tmp_path, state.replace(step=step, best_score=step / 10))
    training.save_checkpoint(tmp_path, state, training.BEST_CHECKPOINT)
    assert training.checkpoint_steps(tmp_path) == [3, 7, 10]
    training.prune_checkpoints(tmp_path, keep=2)
    assert training.checkpoint_steps(tmp_path) == [7, 10]
    assert (tmp_path / "best.msgpack").exists() and not list(tmp_path.glob(".*tmp"))
    latest = training.load_checkpoint(training.latest_checkpoint(tmp_path), state)
    assert (int(latest.step), latest.best_score) == (10, 1.0)


def test_metrics_writer_alone_drops_records_after_its_resume_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    state = TOY["initial_state"]()
    with training.MetricsWriter(path, examples_per_step=4) as writer:
        for step in (1, 2, 3):
            writer.write("train", state.replace(step=step, cpu_seconds=6.0 * step), {"loss": step})
    with training.MetricsWriter(path, resume_step=2, examples_per_step=4) as writer:
        writer.write("eval", state.replace(step=2, wall_seconds=30.0), {"score": np.float32(0.5)})
    rows = training.read_metrics(path)
    assert [(row["kind"], row["step"], row["examples"]) for row in rows] == [
        ("train", 1, 4), ("train", 2, 8), ("eval", 2, 8),
    ]  # fmt: skip
    assert [row["cpu_minutes"] for row in rows] == [0.1, 0.2, 0.0]
    assert rows[2]["wall_minutes"] == 0.5 and rows[2]["score"] == 0.5


def test_every_is_due_by_steps_or_by_seconds():
    by_steps = training.Every(steps=3)
    assert [step for step in range(1, 10) if by_steps.due(step)] == [3, 6, 9]
    by_time = training.Every(seconds=60.0, last=1000.0)
    assert not by_time.due(1, now=1059.0) and by_time.due(1, now=1060.0)
    assert not training.Every().due(3)


def _wait_for_progress(process, metrics_path, after_step, timeout=120):
    """Wait until the metrics file has a record past `after_step` (training is under way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        text = metrics_path.read_text() if metrics_path.exists() else ""
        complete_lines = text.split("\n")[:-1]
        if complete_lines and json.loads(complete_lines[-1])["step"] > after_step:
            return
        time.sleep(0.005)
    raise AssertionError(f"no training progress past step {after_step}: {process.poll()}")


@pytest.mark.slow
def test_signals_at_random_moments_stop_cleanly_and_resume_exactly(tmp_path):
    """A real process, stopped four times by SIGINT / SIGTERM at random moments of training:
    each time one line and the documented exit status, no traceback and no "Exception
    ignored"; the final state equals an uninterrupted run and every step is logged once."""
    num_steps, moments = 2000, random.Random(0)
    command = [sys.executable, "-c", TOY_TRAINING, str(tmp_path), str(num_steps)]
    saved_step = 0
    for signal_number in (signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _wait_for_progress(process, tmp_path / "metrics.jsonl", saved_step)
        time.sleep(moments.uniform(0.0, 0.3))
        process.send_signal(signal_number)
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 128 + signal_number, stdout + stderr
        assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
        name = signal.Signals(signal_number).name
        assert stdout.startswith(f"stopped by {name} at step ") and stdout.count("\n") == 1
        saved_step = int(stdout.split()[5].rstrip(";"))
        assert training.checkpoint_steps(tmp_path / "checkpoints")[-1] == saved_step
    assert saved_step < num_steps
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    state = training.load_checkpoint(
        training.latest_checkpoint(tmp_path / "checkpoints"), TOY["initial_state"]()
    )
    assert_same_state(state, toy_fit(num_steps))
    steps = [row["step"] for row in training.read_metrics(tmp_path / "metrics.jsonl")]
    assert steps == sorted(set(steps)) and steps[-1] == num_steps
    assert set(range(7, num_steps, 7)) <= set(steps)


@pytest.mark.slow
def test_train_eval_solve_export_commands(tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        demo.main(
            [
                "train",
                "--config",
                "tiny",
                "--run-dir",
                str(run),
                "--updates",
                "3",
                "--valid-per-level",
                "1",
                "--valid-givens",
                "20,30",
                "--no-progress",
            ]
        )
        == 0
    )
    result_path, plot_path = tmp_path / "eval.json", tmp_path / "heatmap.png"
    assert (
        demo.main(
            [
                "eval",
                "--checkpoint",
                str(run),
                "--per-level",
                "1",
                "--steps",
                "6",
                "--json",
                str(result_path),
                "--plot",
                str(plot_path),
                "--no-progress",
            ]
        )
        == 0
    )
    result = json.loads(result_path.read_text())
    assert sorted(map(int, result["per_givens"])) == list(range(17, 35))
    assert len(result["per_givens"]["17"]["puzzle_accuracy_per_step"]) == 6
    assert plot_path.stat().st_size > 1000
    exported = tmp_path / "exported"
    assert demo.main(["export", "--from", str(run), "--to", str(exported)]) == 0
    config, params, info = demo.load_model(exported)
    assert config == demo.CONFIGS["tiny"] and info["updates"] == 3
    puzzle = "." * 81
    assert demo.main(["solve", puzzle, "--checkpoint", str(exported), "--steps", "3"]) == 0
    assert "how the beliefs settle" in capsys.readouterr().out


def test_malformed_csv_gives_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("quiz,solution\n" + "0" * 81 + "," + "1" * 81 + "\n" + "0" * 81 + ",12\n")
    assert demo.main(["eval", "--data", str(bad), "--checkpoint", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "row 3" in error and "bad.csv" in error


def test_cli_dispatches_to_the_sudoku_demo(capsys):
    from gnkit import cli

    assert cli.main(["sudoku", "eval", "--help"]) == 0
    assert "--checkpoint" in capsys.readouterr().out
    assert cli.main(["no-such-demo"]) == 2
    assert "sudoku" in capsys.readouterr().err


def test_learning_curves_subtract_evaluation_time(tmp_path):
    rows = [
        {"kind": "train", "step": 1, "cpu_minutes": 1.0},
        {
            "kind": "eval",
            "step": 2,
            "examples": 64,
            "cpu_minutes": 3.0,
            "eval_cpu_minutes": 0.5,
            "per_givens": {"17": {"puzzle": 0.0, "cell": 0.2}},
        },
        {
            "kind": "eval",
            "step": 4,
            "examples": 128,
            "cpu_minutes": 6.0,
            "eval_cpu_minutes": 0.5,
            "per_givens": {"17": {"puzzle": 0.1, "cell": 0.5}},
        },
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    curves = demo.learning_curves({"cpu": tmp_path})
    assert [row["train_cpu_minutes"] for row in curves["cpu"]] == [2.5, 5.0]
    demo.plot_curves(curves, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 1000


@pytest.mark.slow
def test_sudoku_trains_with_pmap_and_mesh_like_one_device(tmp_path):
    """`train --parallel pmap|mesh` on 8 forced CPU devices (a fresh interpreter): same
    checkpoint after 3 updates as `--parallel single` (the batch of 8 split one per device)."""
    script = (
        "import sys\n"
        "from gnkit.demos import sudoku as demo\n"
        "for mode in ('single', 'pmap', 'mesh'):\n"
        "    code = demo.main(['train', '--config', 'tiny', '--run-dir', f'{sys.argv[1]}/{mode}',\n"
        "        '--updates', '3', '--valid-per-level', '1', '--valid-givens', '30',\n"
        "        '--parallel', mode, '--no-progress'])\n"
        "    assert code == 0, mode\n"
    )
    stdout = run_with_devices(script, str(tmp_path))
    assert "pmap on 8 device(s)" in stdout and "mesh on 8 device(s)" in stdout
    states = {
        mode: training.load_checkpoint(
            training.latest_checkpoint(tmp_path / mode / "checkpoints"), demo.init_state(CONFIG)
        )
        for mode in ("single", "pmap", "mesh")
    }
    assert {int(state.step) for state in states.values()} == {3}
    start = jax.tree.leaves(demo.init_state(CONFIG).params)
    single = jax.tree.leaves(states["single"].params)
    assert max(float(np.abs(a - b).max()) for a, b in zip(single, start, strict=True)) > 1e-3
    for mode in ("pmap", "mesh"):
        for got, want in zip(jax.tree.leaves(states[mode].params), single, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

