"""Sudoku as a graph task: the 81-cell constraint graph, the RRN paper's data recipe, metrics.

The graph has one node per cell and a directed edge between every two cells that share a row, a
column or a 3x3 box: 20 neighbours per cell, 1,620 edges, sorted by receiver. Puzzles are
81-digit strings (or int arrays) with 0 for an empty cell.

Training data follows Palm et al. (2018): puzzles are drawn from a pool of 17-given puzzles with
their solutions, the digits are relabelled by a random permutation, and k = 0..17 random empty
cells are revealed from the solution, giving 17..34 givens. `gnkit/data/` ships that pool
(`TRAIN_POOL`, which holds none of the puzzles that underlie the paper's validation or test sets)
and the paper's validation set (`VALID_SET`, 1,000 puzzles per givens level 17..34).

Host-side functions use NumPy; `cell_loss`, `step_accuracy` and `device_puzzles` (the recipe,
plus the grid's validity-preserving symmetries as an option, made inside `jit` from a PRNG key,
for an accelerator that should not wait on the host) are jittable. The model, `SudokuRRN`, lives
with the demo (`gnkit.demos.sudoku.models`).
"""

from __future__ import annotations

import csv
import io
import lzma
import unicodedata
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.graph import GraphsTuple

NUM_CELLS = 81
NUM_EDGES = 1620
MIN_GIVENS = 17
MAX_GIVENS = 34
TRAIN_POOL = "royle17_train_pool.csv.xz"
VALID_SET = "rrn_valid.csv.xz"


def sudoku_edges() -> tuple[np.ndarray, np.ndarray]:
    """The constraint graph of one board: `(senders, receivers)`, int32 `[1620]` each. Host.

    Cell `i` is row `i // 9`, column `i % 9`. Edges are sorted by receiver, then sender.
    """
    cells = np.arange(NUM_CELLS)
    rows, cols = cells // 9, cells % 9
    boxes = (rows // 3) * 3 + cols // 3
    related = (
        (rows[:, None] == rows[None, :])
        | (cols[:, None] == cols[None, :])
        | (boxes[:, None] == boxes[None, :])
    )
    np.fill_diagonal(related, False)
    receivers, senders = np.nonzero(related)
    return senders.astype(np.int32), receivers.astype(np.int32)


def batch_graph(num_puzzles: int, nodes: np.ndarray | None = None) -> GraphsTuple:
    """`num_puzzles` copies of the constraint graph as one `GraphsTuple`. Host.

    `nodes` (optional) are the puzzles' digits, int `[num_puzzles * 81]`. Receivers stay sorted.
    """
    senders, receivers = sudoku_edges()
    offsets = (np.arange(num_puzzles, dtype=np.int32) * NUM_CELLS)[:, None]
    return GraphsTuple(
        nodes=nodes,
        edges=None,
        receivers=(receivers[None, :] + offsets).reshape(-1),
        senders=(senders[None, :] + offsets).reshape(-1),
        globals=None,
        n_node=np.full(num_puzzles, NUM_CELLS, np.int32),
        n_edge=np.full(num_puzzles, NUM_EDGES, np.int32),
    )


def parse_board(text: str) -> np.ndarray:
    """An 81-character board as int8 `[81]`, row by row: digits 1-9, `0` or `.` for blanks. Host.

    Whitespace is ignored. Only the ASCII digits count as digits: any other character (a letter,
    a full-width or Arabic-Indic digit) raises `ValueError` naming it and its position, and so
    does a board that is not 81 characters long. Givens may still contradict each other
    (`check_givens`).
    """
    chars = "".join(text.split()).replace(".", "0")
    for position, char in enumerate(chars):
        if char not in "0123456789":
            raise ValueError(
                f"a Sudoku board holds the digits 0-9 or '.', found {_describe_char(char)} "
                f"at position {position + 1}{_where(position)}"
            )
    if len(chars) != NUM_CELLS:
        raise ValueError(
            f"a Sudoku board is 81 characters of 0-9 or '.', got {len(chars)} characters: {text!r}"
        )
    return np.frombuffer(chars.encode(), np.uint8).astype(np.int8) - ord("0")


def _describe_char(char: str) -> str:
    name = unicodedata.name(char, None)
    return repr(char) if char.isascii() or name is None else f"{char!r} ({name})"


def _cell_name(cell: int) -> str:
    """`row R, column C` (1-based) of a cell index 0-80."""
    return f"row {cell // 9 + 1}, column {cell % 9 + 1}"


def _where(position: int) -> str:
    """` (row R, column C)` for a character position that is a cell, else nothing."""
    return f" ({_cell_name(position)})" if position < NUM_CELLS else ""


def find_conflict(board: np.ndarray) -> tuple[int, int] | None:
    """The first two cells that share a row, column or box and hold the same digit. Host.

    `board` is int `[81]` with 0 for blanks. Returns cell indices `(earlier, later)` in reading
    order; of several clashes, the one whose later cell is read first (ties: the earlier cell read
    first). None when the digits are consistent.
    """
    board = np.asarray(board)
    senders, receivers = sudoku_edges()
    clash = (board[senders] != 0) & (board[senders] == board[receivers]) & (senders < receivers)
    if not clash.any():
        return None
    pairs = np.stack([receivers[clash], senders[clash]], axis=1)
    later, earlier = min(map(tuple, pairs.tolist()))
    return earlier, later


def check_givens(quiz: np.ndarray) -> np.ndarray:
    """`quiz` unchanged if no two givens contradict each other, else `ValueError` naming both. Host.

    `quiz` is int `[81]`, 0 for blanks. Contradicting givens leave a puzzle without a solution.
    """
    conflict = find_conflict(quiz)
    if conflict is not None:
        earlier, later = conflict
        unit = "box"
        if earlier // 9 == later // 9:
            unit = "row"
        elif earlier % 9 == later % 9:
            unit = "column"
        digit = int(quiz[later])
        raise ValueError(
            f"the givens contradict each other: the {digit} at {_cell_name(later)} "
            f"conflicts with the {digit} at {_cell_name(earlier)} (same {unit})"
        )
    return quiz


def format_board(board: np.ndarray) -> str:
    """A board int `[81]` as nine lines with box separators, `.` for blanks. Host."""
    lines = []
    for row in range(9):
        if row in (3, 6):
            lines.append("------+-------+------")
        cells = [str(d) if d else "." for d in np.asarray(board)[row * 9 : row * 9 + 9]]
        lines.append(" | ".join(" ".join(cells[c : c + 3]) for c in (0, 3, 6)))
    return "\n".join(lines)


def is_valid_solution(board: np.ndarray) -> bool:
    """Whether a full board `[81]` has every digit 1-9 once per row, column and box. Host."""
    grid = np.asarray(board).reshape(9, 9)
    boxes = grid.reshape(3, 3, 3, 3).transpose(0, 2, 1, 3).reshape(9, 9)
    want = np.arange(1, 10)
    return all(
        np.array_equal(np.sort(unit, axis=1), np.tile(want, (9, 1)))
        for unit in (grid, grid.T, boxes)
    )


def read_puzzles(source: str | Path | io.TextIOBase) -> tuple[np.ndarray, np.ndarray]:
    """Read a `quiz,solution` CSV (plain or `.xz`; header optional). Host.

    Returns `(quizzes, solutions)`, int8 `[P, 81]`. A malformed row raises `ValueError` naming
    the file and the row number (a blank board character may be `0` or `.`).
    """
    if isinstance(source, io.TextIOBase):
        name, text = "<stream>", source.read()
    else:
        name = str(source)
        raw = Path(source).read_bytes()
        text = (lzma.decompress(raw) if name.endswith(".xz") else raw).decode()
    parsed = _parse_well_formed(text)
    return parsed if parsed is not None else _parse_rows(text, name)


def _is_header(row: list[str]) -> bool:
    return row[0].strip().lower() in ("quiz", "quizzes", "puzzle", "puzzles")


def _parse_well_formed(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised reading when every row is exactly `81 digits,81 digits`; else None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and _is_header(lines[0].split(",")):
        lines = lines[1:]
    width = 2 * NUM_CELLS + 1
    if not lines or any(len(line) != width for line in lines):
        return None
    table = np.frombuffer("".join(lines).encode(), np.uint8).reshape(len(lines), width)
    if not (table[:, NUM_CELLS] == ord(",")).all():
        return None
    digits = np.where(table == ord("."), ord("0"), table).astype(np.int16) - ord("0")
    quizzes, solutions = digits[:, :NUM_CELLS], digits[:, NUM_CELLS + 1 :]
    in_range = ((quizzes >= 0) & (quizzes <= 9)).all() and (
        (solutions >= 1) & (solutions <= 9)
    ).all()
    if not in_range or ((quizzes != 0) & (quizzes != solutions)).any():
        return None
    return quizzes.astype(np.int8), solutions.astype(np.int8)


def _parse_rows(text: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Row-by-row reading that names the first malformed row."""
    quizzes, solutions = [], []
    for row_number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip() or (row_number == 1 and _is_header(row)):
            continue
        try:
            if len(row) < 2:
                raise ValueError("expected 2 columns (quiz,solution)")
            quiz, solution = parse_board(row[0]), parse_board(row[1])
            if (solution == 0).any():
                raise ValueError("the solution has blanks")
            if ((quiz != 0) & (quiz != solution)).any():
                raise ValueError("a given digit disagrees with the solution")
        except ValueError as error:
            raise ValueError(f"{name}, row {row_number}: {error}") from None
        quizzes.append(quiz)
        solutions.append(solution)
    if not quizzes:
        raise ValueError(f"{name}: no puzzles found")
    return np.stack(quizzes), np.stack(solutions)


def shipped_data(name: str) -> Path:
    """Path of a data file shipped in `gnkit/data/` (`TRAIN_POOL` or `VALID_SET`). Host."""
    return Path(str(resources.files("gnkit") / "data" / name))


def num_givens(quizzes: np.ndarray) -> np.ndarray:
    """Number of filled cells per puzzle, int `[P]`, of quizzes int `[P, 81]`. Host."""
    return (np.asarray(quizzes) != 0).sum(axis=-1)


def sample_puzzles(
    rng: np.random.Generator,
    pool_quizzes: np.ndarray,
    pool_solutions: np.ndarray,
    batch_size: int,
    givens: Sequence[int] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's recipe: draw, relabel digits, reveal cells to reach `givens`. Host.

    For each puzzle: pick a pool puzzle with replacement, map digits 1-9 through a fresh random
    permutation (0 stays empty), then reveal random empty cells from the solution until the
    puzzle has `g` givens, `g` drawn from `givens`.

    Args:
      rng: the NumPy generator to draw from.
      pool_quizzes: int `[P, 81]`, the pool's puzzles (0 an empty cell).
      pool_solutions: int `[P, 81]`, their solutions.
      batch_size: puzzles to make.
      givens: the given counts to draw from, uniformly; each must be at least the drawn pool
        puzzle's own count (else `ValueError`).

    Returns:
      `(quizzes, solutions)`, int8 `[batch_size, 81]`.
    """
    picks = rng.integers(len(pool_quizzes), size=batch_size)
    quizzes, solutions = pool_quizzes[picks].copy(), pool_solutions[picks].copy()
    targets = rng.choice(np.asarray(givens), size=batch_size)
    for i in range(batch_size):
        relabel = np.concatenate([[0], rng.permutation(9) + 1]).astype(np.int8)
        quizzes[i], solutions[i] = relabel[quizzes[i]], relabel[solutions[i]]
        empty = np.flatnonzero(quizzes[i] == 0)
        extra = targets[i] - (NUM_CELLS - len(empty))
        if extra < 0:
            raise ValueError(f"cannot make a {targets[i]}-given puzzle from one with more givens")
        reveal = rng.choice(empty, size=extra, replace=False)
        quizzes[i, reveal] = solutions[i, reveal]
    return quizzes, solutions


def device_puzzles(
    key: jax.Array,
    pool_quizzes: jax.Array,
    pool_solutions: jax.Array,
    batch_size: int,
    min_givens: jax.Array | int = MIN_GIVENS,
    symmetries: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """The paper's recipe on the device, from a PRNG key: `sample_puzzles` inside `jit`.

    For each puzzle: pick a pool puzzle with replacement, relabel its digits by a random
    permutation, reveal random empty cells from the solution until it has `g` givens, and
    optionally move it by a grid symmetry. Jittable.

    Args:
      key: a PRNG key.
      pool_quizzes: int `[P, 81]`, the pool's puzzles, already on the device.
      pool_solutions: int `[P, 81]`, their solutions.
      batch_size: puzzles to make (static).
      min_givens: the fewest givens; `g` is uniform in `min_givens..34` (may be traced: a
        curriculum). A pool puzzle with more givens keeps its own.
      symmetries: move each puzzle by a random validity-preserving symmetry of the grid: bands and
        stacks permuted, rows within each band and columns within each stack permuted, and the
        grid transposed with probability 1/2 (static).

    Returns:
      `(quizzes, solutions)`, int32 `[batch_size, 81]`.
    """
    keys = jax.random.split(key, 6)
    picks = jax.random.randint(keys[0], (batch_size,), 0, pool_quizzes.shape[0])
    quizzes = pool_quizzes[picks].astype(jnp.int32)
    solutions = pool_solutions[picks].astype(jnp.int32)
    digits = jnp.argsort(jax.random.uniform(keys[1], (batch_size, 9)), axis=-1) + 1
    relabel = jnp.concatenate([jnp.zeros((batch_size, 1), jnp.int32), digits], axis=-1)
    quizzes = jnp.take_along_axis(relabel, quizzes, axis=-1)
    solutions = jnp.take_along_axis(relabel, solutions, axis=-1)
    targets = jax.random.randint(keys[2], (batch_size,), min_givens, MAX_GIVENS + 1)
    extra = targets - jnp.sum(quizzes != 0, axis=-1)
    # Empty cells in random order first, givens last: reveal the first `extra` of that order.
    scores = jax.random.uniform(keys[3], (batch_size, NUM_CELLS)) + (quizzes != 0)
    rank = jnp.argsort(jnp.argsort(scores, axis=-1), axis=-1)
    quizzes = jnp.where(rank < extra[:, None], solutions, quizzes)
    if symmetries:
        rows, cols, transpose = _grid_symmetries(keys[4], batch_size)
        quizzes, solutions = (
            _move_grid(board, rows, cols, transpose) for board in (quizzes, solutions)
        )
    return quizzes, solutions


def _grid_symmetries(key: jax.Array, batch_size: int):
    """Random row order `[B, 9]`, column order `[B, 9]` and transposition `[B]`: each order
    permutes the three bands (stacks) and the three rows (columns) inside each."""

    def order(key):
        outer, inner = jax.random.split(key)
        bands = jnp.argsort(jax.random.uniform(outer, (batch_size, 3)), axis=-1)
        within = jnp.argsort(jax.random.uniform(inner, (batch_size, 3, 3)), axis=-1)
        return (bands[:, :, None] * 3 + within).reshape(batch_size, 9)

    row_key, col_key, flip_key = jax.random.split(key, 3)
    return order(row_key), order(col_key), jax.random.bernoulli(flip_key, 0.5, (batch_size,))


def _move_grid(boards, rows, cols, transpose):
    """Boards int `[B, 81]` with rows, columns taken in the given orders, then transposed."""
    grid = boards.reshape(-1, 9, 9)
    grid = jnp.take_along_axis(grid, rows[:, :, None], axis=1)
    grid = jnp.take_along_axis(grid, cols[:, None, :], axis=2)
    grid = jnp.where(transpose[:, None, None], grid.transpose(0, 2, 1), grid)
    return grid.reshape(-1, NUM_CELLS)


def cell_loss(logits: jax.Array, solutions: jax.Array) -> jax.Array:
    """Cross-entropy of every cell at every step, `[T, B, 81]`. Jittable.

    `logits` are `[T, B, 81, 9]` over the digits 1-9; `solutions` int `[B, 81]` in 1-9.
    """
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    targets = jax.nn.one_hot(solutions - 1, 9, dtype=logits.dtype)
    return -jnp.sum(log_probs * targets, axis=-1)


def step_accuracy(
    logits: jax.Array, quizzes: jax.Array, solutions: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Per step and puzzle: `(solved [T, B] bool, empty-cell accuracy [T, B] float)`. Jittable.

    The predicted board keeps the quiz's givens and takes the most likely digit elsewhere; a puzzle
    is solved when all 81 cells equal the solution. Cell accuracy counts the empty cells only.
    """
    empty = quizzes == 0
    board = jnp.where(empty, jnp.argmax(logits, axis=-1) + 1, quizzes)
    correct = board == solutions
    solved = jnp.all(correct, axis=-1)
    cell_accuracy = jnp.sum(correct & empty, axis=-1) / jnp.maximum(jnp.sum(empty, axis=-1), 1)
    return solved, cell_accuracy
