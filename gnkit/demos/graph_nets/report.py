"""What the graph_nets demos' reports share: a stopwatch, the training curve, the summary lines.
Host."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnkit import experiments
from gnkit import train as training


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
    `path` is None or there are no metrics)."""
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
