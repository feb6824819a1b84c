"""Accuracy of a Sudoku RRN per givens level and per step: evaluation, tables, heatmaps. Host
drivers around a jitted forward pass."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from gnkit import experiments
from gnkit.demos.sudoku.config import SudokuConfig
from gnkit.demos.sudoku.models import SudokuRRN
from gnkit.progress import track
from gnkit.tasks import sudoku


def make_predict(model: SudokuRRN, num_steps: int):
    """Jitted `(params, quizzes [B, 81], solutions [B, 81]) -> (solved [T, B] bool, empty-cell
    accuracy [T, B])` at every step `T = num_steps`."""

    @jax.jit
    def predict(params, quizzes, solutions):
        logits = model.apply(params, quizzes, num_steps)
        return sudoku.step_accuracy(logits, quizzes, solutions)

    return predict


def evaluate_puzzles(
    model: SudokuRRN,
    params,
    quizzes: np.ndarray,
    solutions: np.ndarray,
    num_steps: int,
    batch_size: int = 100,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per step and puzzle: `(solved [T, P] bool, empty-cell accuracy [T, P])`.

    Host loop over a jitted forward pass.

    Args:
      model: the `SudokuRRN`.
      params: its variables.
      quizzes: int `[P, 81]`, the puzzles (0 an empty cell).
      solutions: int `[P, 81]`, their solutions.
      num_steps: `T`, message-passing steps.
      batch_size: puzzles per call; the last batch is padded with copies of the first puzzle
        (dropped from the results), so one compiled function serves any number of puzzles.
      progress: show a progress bar.

    Returns:
      `(solved [T, P] bool, empty-cell accuracy [T, P])`.
    """
    predict = make_predict(model, num_steps)
    total = len(quizzes)
    solved, cells = [], []
    starts = range(0, total, batch_size)
    if progress:
        starts = track(starts, len(starts), f"evaluating {total} puzzles")
    for start in starts:
        part = slice(start, start + batch_size)
        count = len(quizzes[part])
        pad = batch_size - count
        q = np.concatenate([quizzes[part], np.repeat(quizzes[:1], pad, 0)]).astype(np.int32)
        s = np.concatenate([solutions[part], np.repeat(solutions[:1], pad, 0)]).astype(np.int32)
        batch_solved, batch_cells = jax.device_get(predict(params, q, s))
        solved.append(batch_solved[:, :count])
        cells.append(batch_cells[:, :count])
    return np.concatenate(solved, axis=1), np.concatenate(cells, axis=1)


def summarise(
    givens: np.ndarray, solved: np.ndarray, cells: np.ndarray
) -> dict[str, dict[str, list[float] | float]]:
    """Accuracies per givens level: final-step puzzle and cell accuracy, and both per step.

    `givens` int `[P]`, `solved` bool `[T, P]` and `cells` `[T, P]` (from `evaluate_puzzles`).
    Returns `{level: {"puzzles", "puzzle_accuracy", "cell_accuracy", "puzzle_accuracy_per_step",
    "cell_accuracy_per_step"}}` with levels as strings in increasing order.
    """
    table = {}
    for level in np.unique(givens):
        rows = givens == level
        table[str(int(level))] = {
            "puzzles": int(rows.sum()),
            "puzzle_accuracy": float(solved[-1, rows].mean()),
            "cell_accuracy": float(cells[-1, rows].mean()),
            "puzzle_accuracy_per_step": solved[:, rows].mean(axis=1).round(4).tolist(),
            "cell_accuracy_per_step": cells[:, rows].mean(axis=1).round(4).tolist(),
        }
    return table


def make_evaluate(config: SudokuConfig, valid: tuple[np.ndarray, np.ndarray], num_steps: int):
    """`params -> metrics` for `fit` on `valid` at `num_steps` steps.

    score = mean puzzle accuracy + mean empty-cell accuracy / 100 (cells break ties); the metrics
    also hold both accuracies overall and per givens level.
    """
    model = config.model()
    givens = sudoku.num_givens(valid[0])

    def evaluate(params):
        solved, cells = evaluate_puzzles(model, params, valid[0], valid[1], num_steps)
        table = summarise(givens, solved, cells)
        puzzle_accuracy = float(solved[-1].mean())
        cell_accuracy = float(cells[-1].mean())
        return {
            "score": puzzle_accuracy + cell_accuracy / 100,
            "puzzle_accuracy": puzzle_accuracy,
            "cell_accuracy": cell_accuracy,
            "eval_steps": num_steps,
            "per_givens": {
                level: {"puzzle": row["puzzle_accuracy"], "cell": row["cell_accuracy"]}
                for level, row in table.items()
            },
        }

    return evaluate


def shown_steps(num_steps: int, candidates: Sequence[int] = (1, 4, 8, 16, 32, 64, 128)) -> list:
    """The steps a table shows: the `candidates` below `num_steps`, then `num_steps`."""
    return [step for step in candidates if step < num_steps] + [num_steps]


def format_table(table: dict, steps_shown: Sequence[int]) -> str:
    """A text table: givens, puzzles, puzzle and cell accuracy, puzzle accuracy at some steps."""
    header = f"{'givens':>6} {'puzzles':>7} {'solved':>7} {'cells':>7}  " + " ".join(
        f"{'@' + str(step):>6}" for step in steps_shown
    )
    lines = [header, "-" * len(header)]
    for level, row in table.items():
        curve = row["puzzle_accuracy_per_step"]
        at = " ".join(f"{curve[step - 1]:>6.1%}" for step in steps_shown)
        lines.append(
            f"{level:>6} {row['puzzles']:>7} {row['puzzle_accuracy']:>7.1%} "
            f"{row['cell_accuracy']:>7.1%}  {at}"
        )
    return "\n".join(lines)


def plot_heatmap(table: dict, path: str | Path, title: str) -> Path:
    """Puzzle and cell accuracy as heatmaps, steps (rows) x givens (columns), saved as PNG."""
    plt = experiments.pyplot()
    levels = list(table)
    figure, axes = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    for axis, key, label in zip(
        axes,
        ("puzzle_accuracy_per_step", "cell_accuracy_per_step"),
        ("puzzles solved", "cells"),
        strict=True,
    ):
        grid = np.array([table[level][key] for level in levels]).T
        image = axis.imshow(
            grid,
            aspect="auto",
            origin="lower",
            vmin=0,
            vmax=1,
            cmap="viridis",
            extent=(-0.5, len(levels) - 0.5, 0.5, grid.shape[0] + 0.5),
        )
        axis.set_xticks(range(len(levels)), levels, fontsize=7)
        axis.set_xlabel("givens")
        axis.set_ylabel("step")
        axis.set_title(label)
        figure.colorbar(image, ax=axis)
    figure.suptitle(title)
    return experiments.save_figure(figure, path, dpi=120)
