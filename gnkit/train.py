"""A small training loop shared by the demos: progress bar, periodic evaluation, checkpoints.

`fit` drives a jitted `train_step` over batches that are a pure function of the step number, so a
run that is stopped (Ctrl-C, SIGTERM, a killed machine) and restarted from its last checkpoint
continues exactly where it stopped: same parameters, same optimiser state, same next batch.

Checkpoints are one file per save, `checkpoint_<step>.msgpack`, holding the whole `TrainState`
serialised with `flax.serialization` and written atomically (temporary file, then `os.replace`),
so a kill during a save never leaves a torn checkpoint. The last `keep` are kept, and `best.msgpack`
holds the state with the best evaluation score. (orbax-checkpoint was the other option; its
asynchronous managers add threads and directories that a kill can leave half-written, and a flat
msgpack file is all a single-host demo needs.)

Metrics go to a JSON-lines file, one record per evaluation and per log interval, each with the
step, puzzles (examples) seen, process CPU-minutes and wall-minutes accumulated over all resumes.
Host-side loop; the step function is whatever the caller jits. With `mode='pmap'` or `'mesh'`
(see `gnkit.parallel`) `fit` keeps the parameters and optimiser state replicated on the devices
during training and hands host copies to evaluation and checkpoints, so the same checkpoint
resumes in any mode.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Mapping
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


@flax.struct.dataclass
class TrainState:
    """Everything a resumed run needs: parameters, optimiser state, counters, the best score."""

    params: Any
    opt_state: Any
    step: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    best_score: float = -np.inf


def save_checkpoint(directory: str | Path, state: TrainState, name: str | None = None) -> Path:
    """Write `state` atomically to `directory/name` (default `checkpoint_<step>.msgpack`)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = name or f"{_CHECKPOINT_PREFIX}{int(state.step):09d}.msgpack"
    path = directory / name
    temporary = directory / f".{name}.tmp"
    data = flax.serialization.to_bytes(jax.device_get(state))
    with open(temporary, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    return path


def checkpoint_steps(directory: str | Path) -> list[int]:
    """Steps of the numbered checkpoints in `directory`, ascending (empty if none)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    names = directory.glob(f"{_CHECKPOINT_PREFIX}*.msgpack")
    return sorted(int(path.stem[len(_CHECKPOINT_PREFIX) :]) for path in names)


def load_checkpoint(path: str | Path, target: TrainState) -> TrainState:
    """Read a checkpoint file into the structure of `target` (e.g. a freshly initialised state)."""
    return flax.serialization.from_bytes(target, Path(path).read_bytes())


def latest_checkpoint(directory: str | Path) -> Path | None:
    """The newest numbered checkpoint in `directory`, or None."""
    steps = checkpoint_steps(directory)
    if not steps:
        return None
    return Path(directory) / f"{_CHECKPOINT_PREFIX}{steps[-1]:09d}.msgpack"


def _prune(directory: Path, keep: int) -> None:
    for step in checkpoint_steps(directory)[:-keep]:
        (directory / f"{_CHECKPOINT_PREFIX}{step:09d}.msgpack").unlink(missing_ok=True)


class _Stop(Exception):
    pass


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
) -> TrainState:
    """Train from `state.step` up to `num_steps`; return the final state. Host loop.

    `train_step(params, opt_state, batch) -> (params, opt_state, metrics)` is called with
    `batch = make_batch(step)`; `metrics` is a mapping of scalars (the mean over each log interval
    is logged). `evaluate(params) -> metrics` runs every `eval_every_s` seconds of wall time or
    `eval_every_steps` steps (and at the end); if it returns `"score"`, the best-scoring state is
    saved as `best.msgpack`. With `checkpoint_dir`, the state is saved every `checkpoint_every_s`
    seconds, at each evaluation, at the end, and when the run is interrupted (Ctrl-C, SIGTERM).

    `mode` ('single', 'pmap' or 'mesh') and `mesh` say where the parameters live: `fit` places
    `state.params` and `state.opt_state` with `gnkit.parallel.replicate` before the first step,
    and `evaluate` and the checkpoints get one host copy (`unreplicate`). `train_step` is then
    `gnkit.parallel.make_train_step(..., mode, mesh=mesh)` and `make_batch` lays out its batch
    for that mode (e.g. with `gnkit.parallel.shard_batch`).
    """
    check_mode(mode)
    checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
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
            "cpu_minutes": round(current.cpu_seconds / 60, 3),
            "wall_minutes": round(current.wall_seconds / 60, 3),
            **{key: _plain(value) for key, value in values.items()},
        }
        metrics_file.write(json.dumps(row) + "\n")
        metrics_file.flush()

    def run_evaluation(current: TrainState) -> TrainState:
        eval_start = time.process_time()
        results = dict(evaluate(current.params))
        results["eval_cpu_minutes"] = round((time.process_time() - eval_start) / 60, 3)
        current = clocked(current)
        record("eval", current, results)
        score = results.get("score")
        if score is not None and score > current.best_score:
            current = current.replace(best_score=float(score))
            if checkpoint_dir is not None:
                save_checkpoint(checkpoint_dir, current, "best.msgpack")
        _write(bar, f"eval at step {int(current.step)}: {_summary(results)}")
        return current

    def save(current: TrainState) -> None:
        if checkpoint_dir is not None:
            save_checkpoint(checkpoint_dir, current)
            _prune(checkpoint_dir, keep)

    def on_sigterm(signum, frame):
        raise _Stop()

    previous_handler = signal.signal(signal.SIGTERM, on_sigterm)
    bar = None
    if progress:
        bar = ProgressBar(num_steps, initial=int(state.step), description="training")
    last_save = last_eval = time.time()
    window: dict[str, list[float]] = {}
    params, opt_state = parallel.replicate((state.params, state.opt_state), mode, mesh)
    step = int(state.step)
    try:
        while step < num_steps:
            params, opt_state, metrics = train_step(params, opt_state, make_batch(step))
            step += 1
            for key, value in metrics.items():
                window.setdefault(key, []).append(value)
            if bar is not None:
                bar.update(1)
            if step % log_every_steps == 0 or step == num_steps:
                means = {key: float(np.mean(jax.device_get(v))) for key, v in window.items()}
                window = {}
                state = clocked(state.replace(step=step))
                record("train", state, means)
                if bar is not None:
                    bar.set_status(means)
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
    except (KeyboardInterrupt, _Stop):
        state = snapshot(state, params, opt_state, step)
        save(state)
        _write(bar, f"interrupted at step {step}; saved, rerun the same command to resume")
        raise KeyboardInterrupt from None
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        if bar is not None:
            bar.close()
        if metrics_file is not None:
            metrics_file.close()
    return state


def resume_or(state: TrainState, checkpoint_dir: str | Path | None) -> TrainState:
    """The latest checkpoint in `checkpoint_dir` if there is one, else `state` (a fresh start)."""
    path = latest_checkpoint(checkpoint_dir) if checkpoint_dir is not None else None
    return state if path is None else load_checkpoint(path, state)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a metrics JSON-lines file."""
    with open(path) as stream:
        return [json.loads(line) for line in stream if line.strip()]


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
