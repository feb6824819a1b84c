"""Sudoku data for the demo's flags: a CSV path or a named data set shipped with gnkit. Host."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gnkit import experiments
from gnkit.tasks import sudoku

# Named data sets: name -> (file shipped in gnkit/data/, puzzles kept per givens level or None).
DATA_SETS = {
    "rrn_valid": (sudoku.VALID_SET, None),
    "rrn_valid_slice": (sudoku.VALID_SET, 30),
    "royle17_train_pool": (sudoku.TRAIN_POOL, None),
}
DATA_HELP = f"a quiz,solution CSV (plain or .xz) or a named data set: {', '.join(DATA_SETS)}"


def read_data_file(path: str | Path, flag: str) -> tuple[np.ndarray, np.ndarray]:
    """`(quizzes, solutions)`, int8 `[P, 81]`, from the CSV at `path`; a binary, truncated or
    malformed file is a one-line `UsageError` naming `flag` and the file."""
    with experiments.reading_file(path, "a quiz,solution CSV of 81-cell boards", flag):
        return sudoku.read_puzzles(path)


def load_data(source: str | Path, flag: str = "--data") -> tuple[np.ndarray, np.ndarray]:
    """`(quizzes, solutions)`, int8 `[P, 81]`, from a CSV path or a named data set.

    A path to an existing file is read as it is. Otherwise `source` is looked up in `DATA_SETS`,
    by name (`rrn_valid`) or by its shipped file's name (`rrn_valid.csv.xz`). Anything else is a
    `UsageError` naming `flag` and the known names.
    """
    if Path(source).is_file():
        return read_data_file(source, flag)
    for name, (file_name, per_level) in DATA_SETS.items():
        if str(source) in (name, file_name):
            data = sudoku.read_puzzles(sudoku.shipped_data(file_name))
            return validation_slice(data, per_level) if per_level else data
    raise experiments.UsageError(
        f"{flag} {source}: no such file, and not a named data set ({', '.join(DATA_SETS)})"
    )


def validation_slice(
    data: tuple[np.ndarray, np.ndarray], per_level: int, levels: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The first `per_level` puzzles of each givens level (all levels, or `levels`), `[P', 81]`."""
    quizzes, solutions = data
    givens = sudoku.num_givens(quizzes)
    levels = np.unique(givens) if levels is None else levels
    rows = np.concatenate([np.flatnonzero(givens == level)[:per_level] for level in levels])
    return quizzes[rows], solutions[rows]
