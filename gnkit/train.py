"""Training pieces, each usable alone, and `fit`, the loop that combines them. Host driver.

- `TrainingState`: parameters, optimiser state, step, accumulated CPU / wall seconds and the best
  evaluation score: everything an exact resume needs.
- Checkpoints: `save_checkpoint` (atomic), `load_checkpoint`, `checkpoint_steps`,
  `latest_checkpoint`, `prune_checkpoints` (keep the last K) and `resume_or` (the newest readable
  checkpoint, or a fresh state).
- `Every`: a schedule by steps and / or seconds (periodic evaluation, periodic saving).
- `MetricsWriter`: a JSON-lines metrics file that stays consistent with the checkpoint a run
  resumes from (`drop_metrics_after`, `read_metrics`).
- `RunClock`: process CPU and wall seconds accumulated over resumes.
- Progress: `gnkit.progress.ProgressBar`.
- Stopping: `StopRequest`, `TrainingStopped`, and `stop_on_signals()` for command-line entry
  points (signal handlers, restored on exit; `fit` uses it for SIGINT while it runs);
  `TrainingDiverged` when the training loss stops being finite.

`fit` drives a `train_step` over batches that are a pure function of the step number, so a run
that is stopped (Ctrl-C, SIGTERM, a killed machine) and restarted from its last checkpoint
continues exactly where it stopped: same parameters, optimiser state and next batch. Its
`parallel` argument is a `gnkit.parallel` strategy or a mode name (`single`, `pmap`, `mesh`):
parameters stay replicated on the devices during training, and evaluation and checkpoints get
one host copy, so a checkpoint resumes in any mode.

Checkpoint format. One file per save, `checkpoint_<step>.msgpack`, the whole `TrainingState`
serialised with `flax.serialization`, written to a temporary file, fsynced and renamed, so a kill
never leaves a torn checkpoint; `best.msgpack` holds the best-scoring state (the latest of equal
scores, so a saturated score picks the most trained state). orbax-checkpoint, the ecosystem's
standard, was considered and not adopted: its strengths (saving sharded arrays from many hosts
without gathering them, asynchronous saves) matter for states that do not fit on one host, while
gnkit's demos hold small replicated states; a flat file needs no extra dependency and no
background threads, is one rename to commit, and keeps every existing run and the shipped
pretrained checkpoint readable. A state sharded over hosts is the point to move to orbax.
A checkpoint that cannot be read is named in a warning, set aside, and `resume_or` resumes from
the one before. A partial `.checkpoint_*.tmp` (a process killed while writing) is removed when
`fit` next starts in that directory.

Stopping is cooperative: `fit` checks `should_stop` between steps, logs the partial interval,
saves and raises `TrainingStopped` (whose `exit_code` is 130 for SIGINT, 143 for SIGTERM).
Ctrl-C in a script or a notebook is a stop request too: while `fit` runs in the main thread and
SIGINT has Python's default handler, a handler that only sets a flag replaces it, and the old
one is back when `fit` returns or raises. A `KeyboardInterrupt` raised by the default handler
can land anywhere, e.g. inside JAX's garbage-collection callback (where Python prints
"Exception ignored" and training goes on), or while XLA compiles, which can crash the process;
a flag cannot. A second Ctrl-C finds the default handler back and interrupts at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from gnkit import parallel as data_parallelism
from gnkit.progress import ProgressBar

_CHECKPOINT_PREFIX = "checkpoint_"
_UNREADABLE_SUFFIX = ".unreadable"
BEST_CHECKPOINT = "best.msgpack"


@flax.struct.dataclass
class TrainingState:
    """Everything a resumed run needs: parameters, optimiser state, counters, the best score.

    Not `flax.training.train_state.TrainState`: no apply function or optimiser inside, so it
    serialises as plain data and one state works with any step function.

    Attributes:
      params: the model's parameters (any pytree).
      opt_state: the optimiser's state.
      step: updates done so far.
      cpu_seconds: process CPU time the run has used, over all its resumptions.
      wall_seconds: wall-clock time the run has used, likewise.
      best_score: the best validation `"score"` so far (`-inf` before any).
    """

    params: Any
    opt_state: Any
    step: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    best_score: float = -np.inf


def __getattr__(name: str) -> Any:
    if name == "TrainState":
        warnings.warn(
            "gnkit.train.TrainState is deprecated; use gnkit.train.TrainingState",
            DeprecationWarning,
            stacklevel=2,
        )
        return TrainingState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read into the expected `TrainingState`."""


# Stopping.


class TrainingStopped(KeyboardInterrupt):
    """Raised by `fit` after a requested stop (or a KeyboardInterrupt) once the state is saved.

    `exit_code` is the status a command should exit with (`exit_status`). A KeyboardInterrupt,
    so `except KeyboardInterrupt` catches it too.

    Args:
      step: the step saved (kept as `step`).
      checkpoint: the file written, None without a checkpoint directory (kept as `checkpoint`).
      signal_number: the signal that asked for the stop, None if code did (kept as
        `signal_number`).
      reason: the cause code gave (e.g. a time budget), for the message; None otherwise.
    """

    def __init__(
        self,
        step: int,
        checkpoint: Path | None,
        signal_number: int | None,
        reason: str | None = None,
    ):
        self.step = step
        self.checkpoint = checkpoint
        self.signal_number = signal_number
        super().__init__(stop_message(step, checkpoint, signal_number, reason))

    @property
    def exit_code(self) -> int:
        return exit_status(self.signal_number)


class TrainingDiverged(FloatingPointError):
    """Raised by `fit` when a training loss is not finite, found at the next log record,
    validation or save, whichever comes first: the run stops there, nothing more is validated
    or saved, so the checkpoints on disk (and `best.msgpack`) hold the finite states from
    before.

    Args:
      step: the step where the non-finite loss was found (kept as `step`); the mean loss of
        the steps since the last log record is not finite.
      loss: that mean (kept as `loss`).
      checkpoint: the last checkpoint `fit` wrote, None if it wrote none (kept as
        `checkpoint`).
    """

    def __init__(self, step: int, loss: float, checkpoint: Path | None):
        self.step, self.loss, self.checkpoint = step, loss, checkpoint
        kept = (f"the last checkpoint written is {checkpoint}" if checkpoint is not None
                else "no checkpoint was written")
        super().__init__(f"training diverged: the mean loss of the steps up to {step} is "
                         f"{loss}; stopped there ({kept}). A lower learning rate or a tighter "
                         "gradient clip is the usual cure")


def exit_status(signal_number: int | None) -> int:
    """A stopped command's exit status: 128 + the signal (130 SIGINT, 143 SIGTERM); 130 when
    no signal is known (code asked for the stop)."""
    return 128 + (signal_number or signal.SIGINT)


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

    @property
    def exit_code(self) -> int:
        """`exit_status` of the signal that set the flag."""
        return exit_status(self.signal_number)


@contextlib.contextmanager
def stop_on_signals(
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM),
) -> Iterator[StopRequest]:
    """Context manager for command-line entry points: yields a `StopRequest` for `fit`'s
    `should_stop`, set by `signals` (default SIGINT and SIGTERM) while the block runs.

    The first signal only sets the flag (an exception raised from a handler can land anywhere,
    e.g. inside JAX's garbage-collection callback) and puts the previous handlers back, so a
    second Ctrl-C interrupts at once. The previous handlers come back on exit too. Python
    delivers signals to the main thread only, so from another thread nothing is installed and
    only code can set the flag.
    """
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous: dict[int, Any] = {}

    def restore() -> None:
        for number, old_handler in previous.items():
            signal.signal(number, old_handler)

    def handler(signal_number, frame):
        del frame
        request.set(signal_number)
        restore()

    previous.update({number: signal.signal(number, handler) for number in signals})
    try:
        yield request
    finally:
        restore()


def stop_message(
    step: int, checkpoint: Path | None, signal_number: int | None, reason: str | None = None
) -> str:
    """One line saying why a run stopped (the signal's name, else `reason`, else "request"),
    where it was saved and how to go on.

    Args:
      step: the step the state was saved at.
      checkpoint: the file written, or None without a checkpoint directory.
      signal_number: the signal that asked for the stop, or None.
      reason: the cause when no signal did (e.g. a time budget); None: "request".

    Returns:
      The line, without a newline.
    """
    cause = signal.Signals(signal_number).name if signal_number else reason or "request"
    if checkpoint is None:
        return f"stopped by {cause} at step {step} (no checkpoint directory, nothing saved)"
    return f"stopped by {cause} at step {step}; saved {checkpoint}; rerun the command to resume"


# Checkpoints.


def save_checkpoint(directory: str | Path, state: TrainingState, name: str | None = None) -> Path:
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


def remove_partial_checkpoints(directory: str | Path) -> list[Path]:
    """Delete the temporary files a killed `save_checkpoint` left in `directory` (never read:
    a checkpoint only counts once renamed into place); returns the paths removed. Host."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    names = (f"{_CHECKPOINT_PREFIX}*", BEST_CHECKPOINT)
    partial = sorted(path for name in names for path in directory.glob(f".{name}.tmp"))
    for path in partial:
        path.unlink(missing_ok=True)
    return partial


def checkpoint_steps(directory: str | Path) -> list[int]:
    """Steps of the numbered checkpoints in `directory`, ascending (empty if none)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    names = directory.glob(f"{_CHECKPOINT_PREFIX}*.msgpack")
    return sorted(int(path.stem[len(_CHECKPOINT_PREFIX) :]) for path in names)


def load_checkpoint(path: str | Path, target: TrainingState) -> TrainingState:
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


def prune_checkpoints(directory: str | Path, keep: int) -> None:
    """Delete all but the newest `keep` numbered checkpoints in `directory` (`best` stays)."""
    for step in checkpoint_steps(directory)[:-keep]:
        (Path(directory) / _checkpoint_name(step)).unlink(missing_ok=True)


def resume_or(state: TrainingState, checkpoint_dir: str | Path | None) -> TrainingState:
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


# Schedules, clocks, metrics.


@dataclasses.dataclass
class Every:
    """A schedule: due every `steps` steps and / or every `seconds` of wall time since it was
    last `reset` (either one suffices; neither: never due)."""

    steps: int | None = None
    seconds: float | None = None
    last: float = dataclasses.field(default_factory=time.time)

    def due(self, step: int, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        by_steps = self.steps is not None and step % self.steps == 0
        return by_steps or (self.seconds is not None and now - self.last >= self.seconds)

    def reset(self) -> None:
        self.last = time.time()


class RunClock:
    """Process CPU and wall seconds of a run, accumulated over resumes from `state`'s counters."""

    def __init__(self, state: TrainingState):
        self._base = (state.cpu_seconds, state.wall_seconds)
        self._start = (time.process_time(), time.time())

    def stamp(self, state: TrainingState) -> TrainingState:
        """`state` with its `cpu_seconds` and `wall_seconds` brought up to now."""
        return state.replace(
            cpu_seconds=self._base[0] + time.process_time() - self._start[0],
            wall_seconds=self._base[1] + time.time() - self._start[1],
        )


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


class MetricsWriter:
    """Appends one JSON record a line to `path`: kind, step, examples seen, CPU- and wall-minutes
    of the run, then the values. Opening it drops the records of steps after `resume_step` (from
    a run killed after its last checkpoint), so the file matches the state it resumes from.
    `path=None` writes nothing. A context manager; `close()` closes the file."""

    def __init__(self, path: str | Path | None, resume_step: int = 0, examples_per_step: int = 1):
        self.examples_per_step = examples_per_step
        self._file = None
        if path is not None:
            drop_metrics_after(path, resume_step)
            self._file = open(path, "a")

    def write(self, kind: str, state: TrainingState, values: Mapping[str, Any]) -> None:
        """One record of `kind` ('train', 'eval') at `state`'s step and clocks."""
        if self._file is None:
            return
        step = int(state.step)
        row = {
            "kind": kind,
            "step": step,
            "examples": step * self.examples_per_step,
            "cpu_minutes": state.cpu_seconds / 60,
            "wall_minutes": state.wall_seconds / 60,
            **{key: _plain(value) for key, value in values.items()},
        }
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


# The loop.


def _stop_check(
    should_stop: Callable[[], bool] | threading.Event | StopRequest | None,
) -> Callable[[], bool]:
    if should_stop is None:
        return lambda: False
    if hasattr(should_stop, "is_set"):
        return should_stop.is_set
    return should_stop


def strategy_for(parallel: data_parallelism.Strategy | str) -> data_parallelism.Strategy:
    """The data-parallel strategy `fit` uses: `parallel` itself, or `data_parallel(parallel)`
    for a mode name (`single`, `pmap`, `mesh`)."""
    if isinstance(parallel, str):
        return data_parallelism.data_parallel(parallel)
    return parallel


@contextlib.contextmanager
def _interrupts_as_stop_request() -> Iterator[StopRequest]:
    """While the block runs in the main thread with Python's default SIGINT handler, SIGINT
    sets the yielded flag instead of raising (`stop_on_signals`); otherwise (another thread,
    or a handler someone installed, e.g. a command's) nothing changes and the flag stays
    unset."""
    on_main = threading.current_thread() is threading.main_thread()
    if on_main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        with stop_on_signals((signal.SIGINT,)) as request:
            yield request
    else:
        yield StopRequest()


class _Window:
    """Per-step metrics since the last log record; `means()` empties it."""

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {}

    def add(self, metrics: Mapping[str, Any]) -> None:
        for key, value in metrics.items():
            self.values.setdefault(key, []).append(value)

    def means(self) -> dict[str, float]:
        means = {key: float(np.mean(jax.device_get(v))) for key, v in self.values.items()}
        self.values.clear()
        return means


def fit(
    state: TrainingState,
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
    log_evals: bool = True,
    parallel: data_parallelism.Strategy | str = "single",
    should_stop: Callable[[], bool] | threading.Event | StopRequest | None = None,
) -> TrainingState:
    """Train from `state.step` up to `num_steps`; return the final state. Host loop.

    Once `should_stop` is set, `fit` logs the partial log interval, saves the state and raises
    `TrainingStopped`, whose message names the cause from `should_stop.signal_number` or
    `should_stop.reason` where it has them; so does a KeyboardInterrupt raised inside the loop.
    Ctrl-C (SIGINT) is a stop request too: in the main thread, where SIGINT has Python's default
    handler, `fit` installs a handler that sets a flag for the duration of the call (the default is
    restored when it returns or raises), so the current update finishes, the state is saved and
    `TrainingStopped` (a `KeyboardInterrupt`) reaches the caller; a second Ctrl-C interrupts at
    once.

    Args:
      state: the state to start from (a fresh one, or one restored by `resume_or`).
      train_step: `(params, opt_state, batch) -> (params, opt_state, metrics)`, `metrics` a
        mapping of scalars (their mean over each log interval is logged).
      make_batch: `step -> batch`, the batch of each step.
      num_steps: train up to this step.
      examples_per_step: examples in one batch, for the examples-seen count of the log.
      evaluate: `params -> metrics`, run every `eval_every_s` seconds or `eval_every_steps` steps
        and at the end; if it returns `"score"`, the best-scoring state is saved as
        `best.msgpack` (an equal or higher later score replaces it). None: no evaluation.
      eval_every_s: wall-clock seconds between evaluations, or None.
      eval_every_steps: steps between evaluations, or None.
      checkpoint_dir: where to save the state: every `checkpoint_every_s` seconds, at each
        evaluation, at the end and when stopped; partial files a killed process left there are
        removed first (`remove_partial_checkpoints`). None: no checkpoints.
      checkpoint_every_s: wall-clock seconds between checkpoints.
      keep: how many of the newest checkpoints to keep.
      metrics_path: the `MetricsWriter` file, or None.
      log_every_steps: steps per log interval.
      progress: show a progress bar.
      log_evals: print a line per evaluation, `eval at step N: ...` (above the bar); False:
        none, and the bar shows the latest `score` as `val_score`.
      parallel: the `gnkit.parallel` strategy that `train_step` and `make_batch` were built with,
        or its mode name: `fit` replicates `state.params` and `state.opt_state` with it before the
        first step, and `evaluate` and the checkpoints get its `host_copy`.
      should_stop: a `StopRequest` from `stop_on_signals()`, a `threading.Event`, or a callable
        returning a bool, checked before every step; None: only Ctrl-C stops.

    Returns:
      The final `TrainingState`.

    Raises:
      TrainingStopped: after a stop request or a KeyboardInterrupt, once the state is saved.
      TrainingDiverged: a step's `loss` is NaN or infinite, found at the next log record,
        validation or save; the diverged state is neither validated nor saved.
    """
    strategy = strategy_for(parallel)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if checkpoint_dir is not None:
        remove_partial_checkpoints(checkpoint_dir)
    clock = RunClock(state)
    evaluation = Every(eval_every_steps, eval_every_s)
    saving = Every(None, checkpoint_every_s)
    window = _Window()
    status = {}  # the bar's: the latest training means and (without log_evals) val_score
    bar = None
    if progress:
        bar = ProgressBar(num_steps, initial=int(state.step), description="training")
    metrics = MetricsWriter(metrics_path, int(state.step), examples_per_step)

    def host_state(current: TrainingState, params, opt_state, step: int) -> TrainingState:
        params, opt_state = strategy.host_copy((params, opt_state))
        return clock.stamp(current.replace(params=params, opt_state=opt_state, step=step))

    saved = []  # the checkpoints written, newest last

    def log_window(current: TrainingState) -> TrainingState:
        means = window.means()
        current = clock.stamp(current)
        metrics.write("train", current, means)
        if bar is not None:
            status.update(means)
            bar.set_status(_score_first(status))
        if not np.isfinite(means.get("loss", 0.0)):
            raise TrainingDiverged(int(current.step), means["loss"], saved[-1] if saved else None)
        return current

    def stop_if_diverged(step: int) -> None:
        """Before a validation or a save between log records: a non-finite loss since the last
        record stops the run there, so no state after it is validated or saved."""
        losses = window.values.get("loss")
        loss = float(np.mean(jax.device_get(losses))) if losses else 0.0
        if not np.isfinite(loss):
            raise TrainingDiverged(step, loss, saved[-1] if saved else None)

    def run_evaluation(current: TrainingState) -> TrainingState:
        eval_start = time.process_time()
        results = dict(evaluate(current.params))
        results["eval_cpu_minutes"] = (time.process_time() - eval_start) / 60
        current = clock.stamp(current)
        metrics.write("eval", current, results)
        score = results.get("score")
        if score is not None and score >= current.best_score:
            current = current.replace(best_score=float(score))
            if checkpoint_dir is not None:
                save_checkpoint(checkpoint_dir, current, BEST_CHECKPOINT)
        if log_evals:
            _write(bar, f"eval at step {int(current.step)}: {_summary(results)}")
        elif bar is not None and score is not None:
            status["val_score"] = float(score)
            bar.set_status(_score_first(status))
        return current

    def save(current: TrainingState) -> Path | None:
        if checkpoint_dir is None:
            return None
        path = save_checkpoint(checkpoint_dir, current)
        prune_checkpoints(checkpoint_dir, keep)
        saved.append(path)
        return path

    params, opt_state = strategy.replicate((state.params, state.opt_state))
    step = int(state.step)
    interrupted = False
    asked = _stop_check(should_stop)
    with _interrupts_as_stop_request() as ctrl_c:
        try:
            try:
                while step < num_steps and not (ctrl_c.is_set() or asked()):
                    params, opt_state, step_metrics = train_step(
                        params, opt_state, make_batch(step)
                    )
                    step += 1
                    window.add(step_metrics)
                    if bar is not None:
                        bar.update(1)
                    if step % log_every_steps == 0 or step == num_steps:
                        state = log_window(state.replace(step=step))
                    due_eval = evaluate is not None and evaluation.due(step)
                    if due_eval or saving.due(step) or step == num_steps:
                        stop_if_diverged(step)
                        state = host_state(state, params, opt_state, step)
                        if due_eval or (step == num_steps and evaluate is not None):
                            state = run_evaluation(state)
                            evaluation.reset()
                        save(state)
                        saving.reset()
            except KeyboardInterrupt:
                interrupted = True
            if interrupted or step < num_steps:
                if window.values:
                    state = log_window(state.replace(step=step))
                state = host_state(state, params, opt_state, step)
                by_signal = interrupted or ctrl_c.is_set()
                cause = signal.SIGINT if by_signal else _requesting_signal(should_stop)
                reason = None if by_signal else getattr(should_stop, "reason", None)
                stopped = TrainingStopped(step, save(state), cause, reason)
                _write(bar, str(stopped))
                raise stopped
        finally:
            if bar is not None:
                bar.close()
            metrics.close()
    return state


def _requesting_signal(should_stop) -> int | None:
    return getattr(should_stop, "signal_number", None)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    array = np.asarray(jax.device_get(value))
    return array.item() if array.ndim == 0 else array.tolist()


def _score_first(status: Mapping[str, float]) -> dict[str, float]:
    """The bar's status with `val_score` first, where a narrow terminal does not cut it."""
    return dict(sorted(status.items(), key=lambda item: item[0] != "val_score"))


def _summary(results: Mapping[str, Any]) -> str:
    """`key=value, ...` of the scalar results, 4 significant digits, then the evaluation's CPU
    time in seconds; `score` is left out where it repeats another value (it is the monitored
    metric under a second name)."""
    scalars = {
        key: float(value)
        for key, value in results.items()
        if not isinstance(value, Mapping) and np.ndim(value) == 0
    }
    seconds = scalars.pop("eval_cpu_minutes", None)
    score = scalars.pop("score", None)
    if score is not None and score not in scalars.values():
        scalars = {"score": score, **scalars}
    text = ", ".join(f"{key}={_number(value)}" for key, value in scalars.items())
    if seconds is not None:
        text += f" ({seconds * 60:.1f} CPU-s)"
    return text


def _number(value: float) -> str:
    """4 significant digits, without an exponent between 1e-4 and 1e6."""
    text = f"{value:.4g}"
    if "e" in text and 1e-4 <= abs(value) < 1e6:
        text = f"{value:.0f}" if abs(value) >= 1 else f"{value:.6f}".rstrip("0")
    return text


def _write(bar: ProgressBar | None, message: str) -> None:
    if bar is not None:
        bar.write(message)
    else:
        print(message, flush=True)
