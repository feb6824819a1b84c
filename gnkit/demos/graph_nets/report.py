"""What the graph_nets demos' reports share: the checkpoint they report on, a stopwatch, the
training curve, the summary lines. Host."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.graph_nets.config import DemoConfig
from gnkit.demos.graph_nets.harness import make_optimizer
from gnkit.graph import GraphsTuple
from gnkit.nn.encode_process_decode import EncodeProcessDecode

_BOOKKEEPING = (
    "kind",
    "step",
    "examples",
    "cpu_minutes",
    "wall_minutes",
    "eval_cpu_minutes",
    "score",
)


def load_report_checkpoint(
    model: EncodeProcessDecode, example: GraphsTuple, config: DemoConfig, run_dir: Path
) -> tuple[Any, dict[str, Any]]:
    """`(params, info)` of the checkpoint the reports use: `run_dir/checkpoints/best.msgpack`
    (best monitored score), else the latest one. `info` names the file and gives its step, its
    score and the monitored metrics logged at that step (`validation`). `UsageError` naming the
    file if there is none or it does not fit `config`. Host.

    Args:
      model: the `EncodeProcessDecode`.
      example: a small input graph (the parameters' structure).
      config: the run's config.
      run_dir: the run directory.

    Returns:
      `(params, info)`.

    Raises:
      UsageError: no checkpoint, or one of another config.
    """
    directory = Path(run_dir) / "checkpoints"
    path = directory / training.BEST_CHECKPOINT
    if not path.exists():
        path = training.latest_checkpoint(directory)
    if path is None:
        raise experiments.UsageError(f"--run-dir {run_dir}: no checkpoint; run `train` first")
    params = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(config.seed), example, 1))
    opt_state = jax.eval_shape(make_optimizer(config).init, params)
    template = training.TrainingState(params=params, opt_state=opt_state)
    with experiments.reading_file(path, "a checkpoint of this run's config"):
        state = training.load_checkpoint(path, template)
    step = int(state.step)
    info = {
        "file": path.name,
        "step": step,
        "score": float(state.best_score) if np.isfinite(state.best_score) else None,
        "validation": monitored_at(Path(run_dir) / "metrics.jsonl", step),
    }
    return state.params, info


def monitored_at(metrics_path: Path, step: int) -> dict[str, Any] | None:
    """The monitored metrics of the evaluation logged at `step` (None if there is none)."""
    if not metrics_path.exists():
        return None
    for row in training.read_metrics(metrics_path):
        if row["kind"] == "eval" and row["step"] == step:
            return {key: value for key, value in row.items() if key not in _BOOKKEEPING}
    return None


class Stopwatch:
    """Wall and process CPU seconds since construction."""

    def __init__(self):
        self.wall, self.cpu = time.time(), time.process_time()

    def read(self) -> dict[str, float]:
        return {
            "wall_seconds": round(time.time() - self.wall, 1),
            "cpu_seconds": round(time.process_time() - self.cpu, 1),
        }


def plot_training(metrics_path: Path, path: Path | None, score_key: str, score_label: str) -> None:
    """Training loss and the monitored score against the update, saved to `path` (nothing when
    `path` is None or there are no metrics).

    Args:
      metrics_path: the run's `metrics.jsonl`.
      path: where to save the figure, or None.
      score_key: the monitored metric drawn.
      score_label: its axis label.
    """
    if path is None or not metrics_path.exists():
        return
    rows = training.read_metrics(metrics_path)
    train_rows = [row for row in rows if row["kind"] == "train"]
    eval_rows = [row for row in rows if row["kind"] == "eval" and score_key in row]
    plt = experiments.pyplot()
    figure, (loss_axis, score_axis) = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    loss_axis.plot([r["step"] for r in train_rows], [r["loss"] for r in train_rows])
    loss_axis.set(xlabel="update", ylabel="training loss", yscale="log")
    score_axis.plot([r["step"] for r in eval_rows], [r[score_key] for r in eval_rows], marker=".")
    score_axis.set(xlabel="update", ylabel=score_label)
    for axis in (loss_axis, score_axis):
        axis.grid(alpha=0.3)
    experiments.save_figure(figure, path)


def print_summary(results: Mapping[str, Any]) -> None:
    """One line per test set: its metrics to 4 digits."""
    for name, metrics in results["test"].items():
        values = " ".join(f"{key}={value:.4g}" for key, value in metrics.items())
        print(f"test {name}: {values}", flush=True)
