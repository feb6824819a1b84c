"""Learning curves of training runs: validation accuracy per givens level vs training CPU time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gnkit import experiments
from gnkit import train as training


def learning_curves(runs: dict[str, str | Path]) -> dict[str, list[dict]]:
    """Validation records of each run with `train_cpu_minutes` (CPU time minus evaluation)."""
    curves = {}
    for name, run_dir in runs.items():
        path = Path(run_dir) / "metrics.jsonl"
        with experiments.reading_file(path, "the metrics of a training run", "--run"):
            records = training.read_metrics(path)
        rows, eval_minutes = [], 0.0
        for row in records:
            if row["kind"] != "eval":
                continue
            eval_minutes += row.get("eval_cpu_minutes", 0.0)
            rows.append({**row, "train_cpu_minutes": row["cpu_minutes"] - eval_minutes})
        curves[name] = rows
    return curves


def plot_curves(curves: dict[str, list[dict]], path: str | Path, key: str = "puzzle") -> Path:
    """Validation accuracy vs training CPU-minutes, one panel per givens level, one line per run."""
    plt = experiments.pyplot()
    levels = sorted(
        {level for rows in curves.values() for row in rows for level in row["per_givens"]}, key=int
    )
    columns = min(len(levels), 4)
    rows_count = -(-len(levels) // columns)
    figure, axes = plt.subplots(
        rows_count,
        columns,
        figsize=(3.4 * columns, 2.8 * rows_count),
        squeeze=False,
        sharex=True,
        sharey=True,
        constrained_layout=True,
    )
    for axis, level in zip(axes.flat, levels, strict=False):
        for name, rows in curves.items():
            points = [
                (row["train_cpu_minutes"], row["per_givens"][level][key])
                for row in rows
                if level in row["per_givens"]
            ]
            if points:
                axis.plot(*zip(*points, strict=True), marker=".", label=name)
        axis.set_title(f"{level} givens")
        axis.grid(alpha=0.3)
    for axis in axes.flat[len(levels) :]:
        axis.axis("off")
    for axis in axes[-1]:
        axis.set_xlabel("training CPU-minutes")
    for axis in axes[:, 0]:
        axis.set_ylabel("puzzles solved" if key == "puzzle" else "empty cells right")
    axes.flat[0].legend()
    return experiments.save_figure(figure, path, dpi=120)


def named_runs(items: Sequence[str]) -> dict[str, str]:
    """`--run NAME=RUN_DIR` items as `{NAME: RUN_DIR}`; a `UsageError` for an item without `=`."""
    runs = {}
    for item in items:
        name, separator, run_dir = item.partition("=")
        if not separator or not name or not run_dir:
            raise experiments.UsageError(f"--run {item}: expected NAME=RUN_DIR")
        runs[name] = run_dir
    return runs


def print_curves(curves: dict[str, list[dict]]) -> None:
    """One line per validation record: run, puzzles seen, CPU-minutes, accuracy per level."""
    for name, rows in curves.items():
        for row in rows:
            levels = " ".join(
                f"{level}:{values['puzzle']:.0%}/{values['cell']:.0%}"
                for level, values in row["per_givens"].items()
            )
            print(
                f"{name:>8} {row['examples']:>8} puzzles {row['train_cpu_minutes']:>7.1f} "
                f"CPU-min  {levels}"
            )
