"""One puzzle, step by step: the digit beliefs of every cell and how they settle. Host driver
around a jitted forward pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.demos.sudoku.config import SudokuConfig
from gnkit.tasks import sudoku


def solve_steps(config: SudokuConfig, params, quiz: np.ndarray, steps: int) -> np.ndarray:
    """Digit probabilities of every cell at every step for one quiz. Host, a jitted forward.

    Args:
      config: the run's config (builds the model).
      params: the model's variables.
      quiz: int `[81]`, the puzzle (0 an empty cell).
      steps: message-passing steps to run.

    Returns:
      `[steps, 81, 9]`, each cell's digit probabilities after each step.
    """
    logits = jax.jit(config.model().apply, static_argnums=2)(
        params, jnp.asarray(quiz[None], jnp.int32), steps
    )
    return np.asarray(jax.nn.softmax(logits[:, 0], axis=-1))


def describe_solve(
    quiz: np.ndarray, probs: np.ndarray, solution: np.ndarray | None = None, boards_at=()
) -> str:
    """How the beliefs settle: per step, cells changed, confidence, rule violations, accuracy.

    Host.

    Args:
      quiz: int `[81]`, the puzzle (0 an empty cell).
      probs: `[T, 81, 9]`, from `solve_steps`.
      solution: int `[81]`; when given, each line also counts the empty cells right.
      boards_at: steps (from 1) after which to print the board.

    Returns:
      The text: one line per step up to 16, then every 8th step and the last; then the boards.
    """
    empty = quiz == 0
    boards = np.where(empty, probs.argmax(-1) + 1, quiz)
    lines = [
        "changed: empty cells whose best digit changed; confidence: their mean top probability;",
        "conflicts: pairs of cells in one row, column or box showing the same digit",
        f"{'step':>4} {'changed':>7} {'confidence':>10} {'conflicts':>9}"
        + (f" {'correct':>7}" if solution is not None else ""),
    ]
    senders, receivers = sudoku.sudoku_edges()
    for step in range(len(probs)):
        if step >= 16 and (step + 1) % 8 and step + 1 != len(probs):
            continue
        board = boards[step]
        changed = int((board != boards[step - 1]).sum()) if step else int(empty.sum())
        confidence = float(probs[step].max(-1)[empty].mean()) if empty.any() else 1.0
        conflicts = int((board[senders] == board[receivers]).sum()) // 2
        line = f"{step + 1:>4} {changed:>7} {confidence:>10.3f} {conflicts:>9}"
        if solution is not None:
            line += f" {int((board == solution)[empty].sum()):>3}/{int(empty.sum())}"
        lines.append(line)
    if boards_at:
        panels = [sudoku.format_board(boards[step - 1]).splitlines() for step in boards_at]
        titles = [f"after step {step}" for step in boards_at]
        lines.append("\n" + "    ".join(f"{title:<21}" for title in titles))
        lines.extend("    ".join(rows) for rows in zip(*panels, strict=True))
    return "\n".join(lines)
