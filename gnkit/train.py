"""A small training loop shared by the demos: progress bar, periodic evaluation, checkpoints.

`fit` drives a jitted `train_step` over batches that are a pure function of the step number, so a
run that is stopped (Ctrl-C, SIGTERM, a killed machine) and restarted from its last checkpoint
continues exactly where it stopped: same parameters, same optimiser state, same next batch.

Checkpoints are one file per save, `checkpoint_<step>.msgpack`, holding the whole `TrainState`
serialised with `flax.serialization` and written atomically (temporary file, then `os.replace`),
so a kill during a save never leaves a torn checkpoint. The last `keep` are kept, and `best.msgpack`
holds the state with the best evaluation score (the latest of equal scores: a saturated score,
such as 100% of a small validation set solved, then picks the most trained state).
(orbax-checkpoint was the other option; its asynchronous managers add threads and directories
that a kill can leave half-written, and a flat msgpack file is all a single-host demo needs.)
A checkpoint that cannot be read (a damaged disk, a copy cut short) is named in a warning, set
aside, and `resume_or` resumes from the one before.

Metrics go to a JSON-lines file, one record per evaluation and per log interval, each with the
step, puzzles (examples) seen, process CPU-minutes and wall-minutes accumulated over all resumes.
The file always matches the checkpoint a run resumes from: on resume, records of steps after the
checkpoint (logged before a kill) are dropped, and a stopped run logs its partial interval before
its last save, so each step's record appears once, in order.

Stopping is cooperative: `fit` checks a `should_stop` flag between steps, saves, logs and raises
`TrainingStopped`. It installs no signal handler itself, so it runs in any thread and in a
notebook; a command-line entry point wraps the call in `stop_on_signals()`, whose SIGINT / SIGTERM
handlers only set that flag (and the exit status to report: 130 for SIGINT, 143 for SIGTERM).

Host-side loop; the step function is whatever the caller jits. With `mode='pmap'` or `'mesh'`
(see `gnkit.parallel`) `fit` keeps the parameters and optimiser state replicated on the devices
during training and hands host copies to evaluation and checkpoints, so the same checkpoint
resumes in any mode.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import flax.serialization
import flax.struct
import jax
import numpy as np
from jax.sharding import Mesh

from gnkit import parallel
from gnkit.parallel.placement import check_mode
from gnkit.progress import ProgressBar

_CHECKPOINT_PREFIX = "checkpoint_"
_UNREADABLE_SUFFIX = ".unreadable"


@flax.struct.dataclass
class TrainState:
    """Everything a resumed run needs: parameters, optimiser state, counters, the best score."""

    params: Any
    opt_state: Any
    step: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    best_score: float = -np.inf


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read into the expected `TrainState`."""


class TrainingStopped(KeyboardInterrupt):
    """Raised by `fit` after a requested stop (or a KeyboardInterrupt) once the state is saved.

    `step` is the step saved, `checkpoint` the file written (None without a checkpoint
    directory), `signal_number` the signal that asked for the stop (None if code did), and
    `exit_code` the status a command should exit with: 128 + the signal (130 for SIGINT, 143 for
    SIGTERM), 130 when no signal is known. A KeyboardInterrupt, so `except KeyboardInterrupt`
    catches it too.
    """

    def __init__(self, step: int, checkpoint: Path | None, signal_number: int | None):
        self.step = step
        self.checkpoint = checkpoint
        self.signal_number = signal_number
        super().__init__(stop_message(step, checkpoint, signal_number))

    @property
    def exit_code(self) -> int:
        return 128 + (self.signal_number or signal.SIGINT)


class StopRequest:
    """A flag asking `fit` to stop after the current step: `set()` from any thread or a signal
    handler, `is_set()` (or call it) to read. Lock-free, so a signal handler can set it safely.
    `signal_number` is the signal that set it first (None if code did)."""

    def __init__(self) -> None:
        self.signal_number: int | None = None
        self._requested = False

    def set(self, signal_number: int | None = None) -> None:
        if not self._requested:
            self.signal_number = signal_number
        self._requested = True

    def is_set(self) -> bool:
        return self._requested

    __call__ = is_set


@contextlib.contextmanager
def stop_on_signals(
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[StopRequest]:
    """Context manager for command-line entry points: yields a `StopRequest` for `fit`'s
    `should_stop`, set by `signals` (default SIGINT and SIGTERM) while the block runs.

    The handlers only set the flag (an exception raised from a handler can land anywhere, e.g.
    inside JAX's garbage-collection callback, where Python prints and swallows it). The previous
    handlers come back on exit. Python delivers signals to the main thread only, so from another
    thread nothing is installed and only code can set the flag.
    """
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handler(signal_number, frame):
        request.set(signal_number)

    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield request
    finally:
        for number, old_handler in previous.items():
            signal.signal(number, old_handler)


def stop_message(step: int, checkpoint: Path | None, signal_number: int | None) -> str:
    """One line saying where a stopped run was saved and how to go on."""
    cause = signal.Signals(signal_number).name if signal_number else "request"
    if checkpoint is None:
        return f"stopped by {cause} at step {step} (no checkpoint directory, nothing saved)"
    return f"stopped by {cause} at step {step}; saved {checkpoint}; rerun the command to resume"


def save_checkpoint(directory: str | Path, state: TrainState, name: str | None = None) -> Path:
    """Write `state` atomically to `directory/name` (default `checkpoint_<step>.msgpack`)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = name or _checkpoint_name(int(state.step))
    path = directory / name
    temporary = directory / f".{name}.tmp"
    data = flax.serialization.to_bytes(jax.device_get(state))
    with open(temporary, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    return path


def _checkpoint_name(step: int) -> str:
    return f"{_CHECKPOINT_PREFIX}{step:09d}.msgpack"


def checkpoint_steps(directory: str | Path) -> list[int]:
    """Steps of the numbered checkpoints in `directory`, ascending (empty if none)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    names = directory.glob(f"{_CHECKPOINT_PREFIX}*.msgpack")
    return sorted(int(path.stem[len(_CHECKPOINT_PREFIX) :]) for path in names)


def load_checkpoint(path: str | Path, target: TrainState) -> TrainState:
    """Read a checkpoint file into the structure of `target` (e.g. a freshly initialised state).

    Raises `CheckpointError` naming the file if it is truncated, corrupt or of another model.
    """
    path = Path(path)
    try:
        return flax.serialization.from_bytes(target, path.read_bytes())
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"cannot read checkpoint {path}: {error}") from error


def latest_checkpoint(directory: str | Path) -> Path | None:
    """The newest numbered checkpoint in `directory`, or None."""
    steps = checkpoint_steps(directory)
    if not steps:
        return None
    return Path(directory) / _checkpoint_name(steps[-1])


def resume_or(state: TrainState, checkpoint_dir: str | Path | None) -> TrainState:
    """The newest readable checkpoint in `checkpoint_dir` if there is one, else `state` (a fresh
    start; `state` also gives the structure to read into). Host.

    A checkpoint that cannot be read is renamed `<name>.unreadable` (so it is neither pruned in
    place of a good one nor tried again), with a `RuntimeWarning` naming it, and the one before
    it is used.
    """
    if checkpoint_dir is None:
        return state
    for step in reversed(checkpoint_steps(checkpoint_dir)):
        path = Path(checkpoint_dir) / _checkpoint_name(step)
        try:
            return load_checkpoint(path, state)
        except CheckpointError as error:
            aside = path.with_name(path.name + _UNREADABLE_SUFFIX)
            os.replace(path, aside)
            warnings.warn(
                f"{error}; moved it to {aside.name} and trying the previous checkpoint",
                RuntimeWarning,
                stacklevel=2,
            )
    return state


def _prune(directory: Path, keep: int) -> None:
    for step in checkpoint_steps(directory)[:-keep]:
        (directory / _checkpoint_name(step)).unlink(missing_ok=True)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a metrics JSON-lines file."""
    with open(path) as stream:
        return [json.loads(line) for line in stream if line.strip()]


def drop_metrics_after(path: str | Path, step: int) -> int:
    """Remove the records of steps after `step` from the metrics file at `path` (rewritten
    atomically; a torn last line, from a kill during a write, goes too). Returns how many records
    were dropped; a missing file is left missing. Host."""
    path = Path(path)
    if not path.exists():
        return 0
    text = path.read_text()
    kept, dropped = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if row.get("step", 0) > step:
            dropped += 1
        else:
            kept.append(line + "\n")
    if dropped or (text and not text.endswith("\n")):
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text("".join(kept))
        os.replace(temporary, path)
    return dropped


def _stop_check(
    should_stop: Callable[[], bool] | threading.Event | StopRequest | None,
) -> Callable[[], bool]:
    if should_stop is None:
        return lambda: False
    if hasattr(should_stop, "is_set"):
        return should_stop.is_set
    return should_stop


def fit(
    state: TrainState,
    train_step: Callable[[Any, Any, Any], tuple[Any, Any, Mapping[str, Any]]],
    make_batch: Callable[[int], Any],
    num_steps: int,
    *,
    examples_per_step: int = 1,
    evaluate: Callable[[Any], Mapping[str, Any]] | None = None,
    eval_every_s: float | None = None,
    eval_every_steps: int | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every_s: float = 300.0,
    keep: int = 2,
    metrics_path: str | Path | None = None,
    log_every_steps: int = 50,
    progress: bool = True,
    mode: str = "single",
    mesh: Mesh | None = None,
    should_stop: Callable[[], bool] | threading.Event | StopRequest | None = None,
) -> TrainState:
    """Train from `state.step` up to `num_steps`; return the final state. Host loop.

    `train_step(params, opt_state, batch) -> (params, opt_state, metrics)` is called with
    `batch = make_batch(step)`; `metrics` is a mapping of scalars (the mean over each log interval
    is logged). `evaluate(params) -> metrics` runs every `eval_every_s` seconds of wall time or
    `eval_every_steps` steps (and at the end); if it returns `"score"`, the best-scoring state is
    saved as `best.msgpack` (a later state with an equal or higher score replaces it). With
    `checkpoint_dir`, the state is saved every `checkpoint_every_s` seconds, at each evaluation,
    at the end, and when the run is stopped. With `metrics_path`, records of steps after
    `state.step` already in the file (from a run killed after its last checkpoint) are dropped
    first.

    `should_stop` (a `StopRequest` from `stop_on_signals()`, a `threading.Event`, or a callable
    returning a bool) is checked before every step: once it is set, `fit` logs the partial log
    interval, saves the state and raises `TrainingStopped`; so does a KeyboardInterrupt raised
    inside the loop (Ctrl-C in a notebook). `fit` installs no signal handler.

    `mode` ('single', 'pmap' or 'mesh') and `mesh` say where the parameters live: `fit` places
    `state.params` and `state.opt_state` with `gnkit.parallel.replicate` before the first step,
    and `evaluate` and the checkpoints get one host copy (`unreplicate`). `train_step` is then
    `gnkit.parallel.make_train_step(..., mode, mesh=mesh)` and `make_batch` lays out its batch
    for that mode (e.g. with `gnkit.parallel.shard_batch`).
    """
    check_mode(mode)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if metrics_path is not None:
        drop_metrics_after(metrics_path, int(state.step))
    metrics_file = open(metrics_path, "a") if metrics_path is not None else None
    cpu_start, wall_start = time.process_time(), time.time()
    base_cpu, base_wall = state.cpu_seconds, state.wall_seconds

    def snapshot(current: TrainState, params, opt_state, step: int) -> TrainState:
        if mode != "single":
            params, opt_state = jax.device_get(parallel.unreplicate((params, opt_state), mode))
        return clocked(current.replace(params=params, opt_state=opt_state, step=step))

    def clocked(current: TrainState) -> TrainState:
        return current.replace(
            cpu_seconds=base_cpu + time.process_time() - cpu_start,
            wall_seconds=base_wall + time.time() - wall_start,
        )

    def record(kind: str, current: TrainState, values: Mapping[str, Any]) -> None:
        if metrics_file is None:
            return
        row = {
            "kind": kind,
            "step": int(current.step),
            "examples": int(current.step) * examples_per_step,
            "cpu_minutes": current.cpu_seconds / 60,
            "wall_minutes": current.wall_seconds / 60,
            **{key: _plain(value) for key, value in values.items()},
        }
        metrics_file.write(json.dumps(row) + "\n")
        metrics_file.flush()

    def log_window(current: TrainState) -> TrainState:
        means = {key: float(np.mean(jax.device_get(v))) for key, v in window.items()}
        window.clear()
        current = clocked(current)
        record("train", current, means)
        if bar is not None:
            bar.set_status(means)
        return current

    def run_evaluation(current: TrainState) -> TrainState:
        eval_start = time.process_time()
        results = dict(evaluate(current.params))
        results["eval_cpu_minutes"] = (time.process_time() - eval_start) / 60
        current = clocked(current)
        record("eval", current, results)
        score = results.get("score")
        if score is not None and score >= current.best_score:
            current = current.replace(best_score=float(score))
            if checkpoint_dir is not None:
                save_checkpoint(checkpoint_dir, current, "best.msgpack")
        _write(bar, f"eval at step {int(current.step)}: {_summary(results)}")
        return current

    def save(current: TrainState) -> Path | None:
        if checkpoint_dir is None:
            return None
        path = save_checkpoint(checkpoint_dir, current)
        _prune(checkpoint_dir, keep)
        return path

    bar = None
    if progress:
        bar = ProgressBar(num_steps, initial=int(state.step), description="training")
    last_save = last_eval = time.time()
    window: dict[str, list[Any]] = {}
    params, opt_state = parallel.replicate((state.params, state.opt_state), mode, mesh)
    step = int(state.step)
    stop_requested = _stop_check(should_stop)
    interrupted = False
    try:
        try:
            while step < num_steps and not stop_requested():
                new_params, new_opt_state, metrics = train_step(params, opt_state, make_batch(step))
                params, opt_state, step = new_params, new_opt_state, step + 1
                for key, value in metrics.items():
                    window.setdefault(key, []).append(value)
                if bar is not None:
                    bar.update(1)
                if step % log_every_steps == 0 or step == num_steps:
                    state = log_window(state.replace(step=step))
                now = time.time()
                due_eval = evaluate is not None and (
                    (eval_every_s is not None and now - last_eval >= eval_every_s)
                    or (eval_every_steps is not None and step % eval_every_steps == 0)
                )
                if due_eval or now - last_save >= checkpoint_every_s or step == num_steps:
                    state = snapshot(state, params, opt_state, step)
                    if due_eval or (step == num_steps and evaluate is not None):
                        state = run_evaluation(state)
                        last_eval = time.time()
                    save(state)
                    last_save = time.time()
        except KeyboardInterrupt:
            interrupted = True
        if interrupted or step < num_steps:
            if window:
                state = log_window(state.replace(step=step))
            state = snapshot(state, params, opt_state, step)
            cause = signal.SIGINT if interrupted else _requesting_signal(should_stop)
            stopped = TrainingStopped(step, save(state), cause)
            _write(bar, str(stopped))
            raise stopped
    finally:
        if bar is not None:
            bar.close()
        if metrics_file is not None:
            metrics_file.close()
    return state


def _requesting_signal(should_stop) -> int | None:
    return should_stop.signal_number if isinstance(should_stop, StopRequest) else None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    array = np.asarray(jax.device_get(value))
    return array.item() if array.ndim == 0 else array.tolist()


def _summary(results: Mapping[str, Any]) -> str:
    scalars = {
        key: value
        for key, value in results.items()
        if not isinstance(value, Mapping) and np.ndim(value) == 0
    }
    return ", ".join(f"{key}={float(value):.4g}" for key, value in scalars.items())


def _write(bar: ProgressBar | None, message: str) -> None:
    if bar is not None:
        bar.write(message)
    else:
        print(message, flush=True)
