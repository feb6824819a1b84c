"""Tests for gnkit.tasks.sudoku: the constraint graph, the data recipe, reading CSVs, metrics."""

import io
import itertools
import lzma

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.tasks import sudoku

# Pool row 1 of the shipped training pool (a 17-given puzzle) and its solution.
QUIZ = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"
SOLUTION = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"


def _relabelled(quizzes: np.ndarray, solutions: np.ndarray):
    """Rename digits in order of first appearance in the solution: the same puzzle up to any
    digit relabelling gives the same (quiz, solution) pair. Int `[P, 81]` each."""
    first_seen = (solutions[:, :, None] == np.arange(1, 10)).argmax(axis=1)  # [P, 9]
    order = np.argsort(first_seen, axis=1)  # digits - 1, in order of first appearance
    rename = np.zeros((len(solutions), 10), np.int8)
    np.put_along_axis(rename, order + 1, np.arange(1, 10, dtype=np.int8)[None], axis=1)
    renamed = (
        np.take_along_axis(rename, board.astype(np.intp), axis=1) for board in (quizzes, solutions)
    )
    return zip(*renamed, strict=True)


def _underlain(pool, puzzles) -> int:
    """How many `puzzles` contain all givens of some relabelled pool puzzle with the same grid."""
    by_grid = {}
    for quiz, solution in _relabelled(*pool):
        by_grid.setdefault(solution.tobytes(), []).append(quiz)
    count = 0
    for quiz, solution in _relabelled(*puzzles):
        bases = by_grid.get(solution.tobytes(), [])
        count += any(np.all((base == 0) | (base == quiz)) for base in bases)
    return count


def test_edges_are_the_sudoku_constraints():
    senders, receivers = sudoku.sudoku_edges()
    pairs = set(zip(senders.tolist(), receivers.tolist(), strict=True))
    expected = {
        (a, b)
        for a, b in itertools.permutations(range(81), 2)
        if a // 9 == b // 9 or a % 9 == b % 9 or (a // 27, a % 9 // 3) == (b // 27, b % 9 // 3)
    }
    assert len(senders) == 1620 and len(pairs) == 1620
    assert pairs == expected
    assert all((b, a) in pairs for a, b in pairs)
    np.testing.assert_array_equal(np.bincount(receivers, minlength=81), np.full(81, 20))
    np.testing.assert_array_equal(np.bincount(senders, minlength=81), np.full(81, 20))
    assert np.all(np.diff(receivers) >= 0)


def test_batch_graph_offsets_copies():
    graph = sudoku.batch_graph(3)
    assert graph.senders.shape == (3 * 1620,)
    np.testing.assert_array_equal(graph.receivers[1620:3240], sudoku.sudoku_edges()[1] + 81)
    assert np.all(np.diff(graph.receivers) >= 0)
    np.testing.assert_array_equal(graph.n_node, [81, 81, 81])


def test_parse_and_validity():
    quiz = sudoku.parse_board(QUIZ.replace("0", "."))
    np.testing.assert_array_equal(quiz, sudoku.parse_board(QUIZ))
    assert (quiz != 0).sum() == 17
    solution = sudoku.parse_board(SOLUTION)
    assert sudoku.is_valid_solution(solution)
    broken = solution.copy()
    broken[[0, 1]] = broken[[1, 0]]
    assert not sudoku.is_valid_solution(broken)
    with pytest.raises(ValueError, match="81 characters"):
        sudoku.parse_board("123")


@pytest.mark.parametrize(
    ("character", "name"),
    [("x", "'x'"), ("\uff15", "FULLWIDTH DIGIT FIVE"), ("\u0665", "ARABIC-INDIC DIGIT FIVE")],
)
def test_parse_board_names_a_bad_character_and_its_cell(character, name):
    # Cell 12 (0-based) is row 2, column 4; the whitespace is not counted.
    text = QUIZ[:9] + "\n" + QUIZ[9:12] + character + QUIZ[13:]
    with pytest.raises(ValueError, match=rf"found .*{name}.*at position 13 \(row 2, column 4\)"):
        sudoku.parse_board(text)


def test_parse_board_rejects_wrong_lengths():
    with pytest.raises(ValueError, match="got 80 characters"):
        sudoku.parse_board(QUIZ[:80])
    with pytest.raises(ValueError, match="got 82 characters"):
        sudoku.parse_board(QUIZ + "0")


def _with_digits(cells: dict[int, int]) -> np.ndarray:
    board = np.zeros(81, np.int8)
    board[list(cells)] = list(cells.values())
    return board


@pytest.mark.parametrize(
    ("cells", "pair", "message"),
    [
        # Cells 3 and 7: row 1, columns 4 and 8.
        ({3: 5, 7: 5}, (3, 7), "the 5 at row 1, column 8 conflicts with the 5 at row 1, column 4"),
        # Cells 11 and 74: column 3, rows 2 and 9.
        ({11: 2, 74: 2, 40: 2}, (11, 74), "row 9, column 3 .* row 2, column 3 \\(same column\\)"),
        # Cells 30 and 50: rows 4 and 6, columns 4 and 6, both in the centre box.
        ({30: 9, 50: 9, 0: 1}, (30, 50), "row 6, column 6 .* row 4, column 4 \\(same box\\)"),
    ],
)
def test_contradictory_givens_are_found_and_named(cells, pair, message):
    board = _with_digits(cells)
    assert sudoku.find_conflict(board) == pair
    with pytest.raises(ValueError, match=message):
        sudoku.check_givens(board)


def test_consistent_givens_pass():
    quiz = sudoku.parse_board(QUIZ)
    assert sudoku.find_conflict(quiz) is None
    assert sudoku.find_conflict(sudoku.parse_board(SOLUTION)) is None
    np.testing.assert_array_equal(sudoku.check_givens(quiz), quiz)


def test_read_puzzles_plain_xz_and_errors(tmp_path):
    text = f"quiz,solution\n{QUIZ},{SOLUTION}\n{QUIZ.replace('0', '.')},{SOLUTION}\n"
    plain = tmp_path / "p.csv"
    plain.write_text(text)
    packed = tmp_path / "p.csv.xz"
    packed.write_bytes(lzma.compress(text.encode()))
    for source in (plain, packed):
        quizzes, solutions = sudoku.read_puzzles(source)
        assert quizzes.shape == (2, 81)
        np.testing.assert_array_equal(quizzes[1], sudoku.parse_board(QUIZ))
    bad_digit = SOLUTION[:80] + "x"
    with pytest.raises(ValueError, match=r"row 3: .*found 'x' at position 81"):
        sudoku.read_puzzles(io.StringIO(f"quiz,solution\n{QUIZ},{SOLUTION}\n{QUIZ},{bad_digit}\n"))
    wrong = ("5" + QUIZ[1:], SOLUTION)
    with pytest.raises(ValueError, match="row 2: a given digit disagrees"):
        sudoku.read_puzzles(io.StringIO(f"{QUIZ},{SOLUTION}\n{wrong[0]},{wrong[1]}\n"))
    with pytest.raises(ValueError, match="row 1: expected 2 columns"):
        sudoku.read_puzzles(io.StringIO(QUIZ + "\n"))


def test_recipe_givens_relabelling_and_consistency():
    pool = (sudoku.parse_board(QUIZ)[None], sudoku.parse_board(SOLUTION)[None])
    rng = np.random.default_rng(0)
    quizzes, solutions = sudoku.sample_puzzles(rng, *pool, batch_size=200, givens=range(17, 35))
    givens = sudoku.num_givens(quizzes)
    assert givens.min() == 17 and givens.max() == 34 and len(np.unique(givens)) == 18
    assert all(sudoku.is_valid_solution(solution) for solution in solutions)
    assert np.all((quizzes == 0) | (quizzes == solutions))
    # Relabelling: the pool's 17 given cells stay given, holding the permuted digits.
    given_cells = pool[0][0] != 0
    assert np.all(quizzes[:, given_cells] != 0)
    assert len({solution.tobytes() for solution in solutions}) > 150
    assert _underlain(pool, (quizzes, solutions)) == 200
    fixed, _ = sudoku.sample_puzzles(rng, *pool, batch_size=5, givens=[30])
    np.testing.assert_array_equal(sudoku.num_givens(fixed), [30] * 5)
    with pytest.raises(ValueError, match="more givens"):
        sudoku.sample_puzzles(rng, fixed, solutions[:5], batch_size=2, givens=[20])


def test_shipped_data_and_no_pool_puzzle_underlies_validation():
    pool_quizzes, pool_solutions = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))
    assert pool_quizzes.shape == (39779, 81)
    np.testing.assert_array_equal(sudoku.num_givens(pool_quizzes), 17)
    valid_quizzes, valid_solutions = sudoku.read_puzzles(sudoku.shipped_data(sudoku.VALID_SET))
    np.testing.assert_array_equal(
        np.bincount(sudoku.num_givens(valid_quizzes))[17:], np.full(18, 1000)
    )
    assert all(sudoku.is_valid_solution(solution) for solution in valid_solutions[::50])
    pool = (pool_quizzes, pool_solutions)
    assert _underlain(pool, (valid_quizzes, valid_solutions)) == 0
    # The check can fail: puzzles made from the pool by the recipe are found.
    sampled = sudoku.sample_puzzles(np.random.default_rng(1), *pool, 3, [25])
    assert _underlain(pool, sampled) == 3


def test_loss_and_accuracy_by_hand():
    solutions = jnp.asarray([sudoku.parse_board(SOLUTION)], jnp.int32)
    quizzes = jnp.asarray([sudoku.parse_board(QUIZ)], jnp.int32)
    perfect = 10.0 * jnp.eye(9)[solutions - 1][None]
    wrong_cell = perfect.at[0, 0, 0].set(10.0 * jnp.eye(9)[0])
    logits = jnp.concatenate([perfect, wrong_cell])
    solved, cells = sudoku.step_accuracy(logits, quizzes, solutions)
    np.testing.assert_array_equal(solved, [[True], [False]])
    np.testing.assert_allclose(cells, [[1.0], [63 / 64]])
    loss = sudoku.cell_loss(jnp.zeros((1, 1, 81, 9)), solutions)
    np.testing.assert_allclose(loss, np.log(9.0), rtol=1e-6)


@pytest.mark.slow
def test_demo_with_shipped_model_and_notebook(capsys):
    import pathlib

    import nbformat
    from nbclient import NotebookClient

    from gnkit.demos import sudoku as demo

    assert demo.main(["demo", "--per-level", "2", "--steps", "8", "--no-progress"]) == 0
    output = capsys.readouterr().out
    assert "givens" in output and "step by step" in output
    path = pathlib.Path(__file__).resolve().parents[1] / "colabs" / "sudoku.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
    assert any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


def _device_batch(pool, batch_size, min_givens, symmetries, seed=0):
    make = jax.jit(sudoku.device_puzzles, static_argnums=(3, 5))
    key = jax.random.PRNGKey(seed)
    pool = tuple(jnp.asarray(part) for part in pool)
    return tuple(np.asarray(part) for part in make(key, *pool, batch_size, min_givens, symmetries))


@pytest.mark.parametrize("symmetries", [False, True])
def test_device_puzzles_follow_the_recipe(symmetries):
    pool = tuple(part[:300] for part in sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL)))
    quizzes, solutions = _device_batch(pool, 360, 17, symmetries)
    assert quizzes.dtype == solutions.dtype == np.int32
    givens = sudoku.num_givens(quizzes)
    assert givens.min() == 17 and givens.max() == 34 and len(np.unique(givens)) == 18
    assert np.all((quizzes == 0) | (quizzes == solutions))
    assert all(sudoku.is_valid_solution(solution) for solution in solutions)
    assert len({solution.tobytes() for solution in solutions}) > 250
    # Without symmetries every puzzle is a relabelled pool puzzle with cells revealed; moved
    # grids are (almost all) no longer found by the relabelling-only check.
    underlain = _underlain(pool, (quizzes, solutions))
    assert underlain == 360 if not symmetries else underlain < 36
    fewest, _ = _device_batch(pool, 64, 30, symmetries, seed=1)
    assert sudoku.num_givens(fewest).min() >= 30 and len(np.unique(sudoku.num_givens(fewest))) == 5
    again = _device_batch(pool, 360, 17, symmetries)
    np.testing.assert_array_equal(again[0], quizzes)


def test_grid_symmetries_permute_bands_rows_stacks_columns_and_transpose():
    rows, cols, transpose = sudoku._grid_symmetries(jax.random.PRNGKey(3), 200)
    for order in (np.asarray(rows), np.asarray(cols)):
        blocks = order.reshape(-1, 3, 3)
        # Each group of three is one band (stack), its rows (columns) in some order.
        assert np.all(blocks // 3 == blocks[:, :, :1] // 3)
        np.testing.assert_array_equal(np.sort(order, axis=1), np.tile(np.arange(9), (200, 1)))
        assert len({tuple(row) for row in order}) > 150
    assert 60 < int(np.sum(transpose)) < 140
    board = np.arange(81)[None]
    one = (jnp.asarray([[3, 5, 4, 0, 2, 1, 6, 7, 8]]), jnp.asarray([[8, 7, 6, 0, 1, 2, 3, 4, 5]]))
    moved = np.asarray(sudoku._move_grid(jnp.asarray(board), *one, jnp.asarray([True])))
    expected = board.reshape(9, 9)[np.asarray(one[0][0])][:, np.asarray(one[1][0])].T
    np.testing.assert_array_equal(moved.reshape(9, 9), expected)


# The 1,296 orders of 9 rows that keep bands together: bands permuted, rows within each band.
_BAND_ORDERS = np.array(
    [
        [band * 3 + row for band, rows in zip(bands, within, strict=True) for row in rows]
        for bands in itertools.permutations(range(3))
        for within in itertools.product(itertools.permutations(range(3)), repeat=3)
    ]
)


def _symmetry_fingerprints(quizzes: np.ndarray) -> list[bytes]:
    """A fingerprint of each 17-given quiz `[P, 81]` that no grid symmetry or relabelling changes:
    the sorted features of its givens (givens in the cell's row and band, column and stack, as
    an unordered pair for transposition; in its box; of its digit). Different: not equivalent."""
    grid = quizzes.reshape(-1, 9, 9)
    given = grid != 0
    band = np.repeat(given.reshape(-1, 3, 27).sum(2), 3, 1)  # [P, 9]: givens in the row's band
    stack = np.repeat(given.reshape(-1, 9, 3, 3).sum((1, 3)), 3, 1)
    row = given.sum(2, keepdims=True) * 100 + band[:, :, None]
    col = given.sum(1, keepdims=True) * 100 + stack[:, None, :]
    box = np.repeat(np.repeat(given.reshape(-1, 3, 3, 3, 3).sum((2, 4)), 3, 1), 3, 2)
    digits = np.stack([(grid == d).sum((1, 2)) for d in range(10)], axis=1)
    digit = np.take_along_axis(digits, grid.reshape(len(grid), -1), 1).reshape(grid.shape)
    features = ((np.minimum(row, col) * 10_000 + np.maximum(row, col)) * 100 + box) * 100 + digit
    rows = np.sort(features[given].reshape(len(grid), -1), axis=1)
    return [item.tobytes() for item in rows]


def _equivalent(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether quiz `a` becomes quiz `b` (int `[81]`) by a grid symmetry and a relabelling."""
    target = b.reshape(9, 9)
    mask = target != 0
    for moved in (a.reshape(9, 9), a.reshape(9, 9).T):
        fitting = _BAND_ORDERS[np.all((moved != 0).sum(1)[_BAND_ORDERS] == mask.sum(1), axis=1)]
        for rows in fitting:
            columns = moved[rows][:, _BAND_ORDERS]  # [9, 1296, 9]
            for order in np.flatnonzero(np.all((columns != 0) == mask[:, None], axis=(0, 2))):
                digits = moved[rows][:, _BAND_ORDERS[order]][mask]
                pairs = set(zip(digits, target[mask], strict=True))
                if len({x for x, _ in pairs}) == len(pairs) == len({y for _, y in pairs}):
                    return True
    return False


@pytest.mark.slow
def test_no_17_given_validation_puzzle_is_a_symmetric_variant_of_a_pool_puzzle():
    """Training with grid symmetries leaks nothing: no validation puzzle's 17-given source (the
    1,000 at 17 givens are their own) is a pool puzzle moved by a symmetry and relabelled.
    Fingerprints narrow 39,779 x 1,000 pairs to a few dozen, checked exactly."""
    pool = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))[0]
    valid = sudoku.read_puzzles(sudoku.shipped_data(sudoku.VALID_SET))[0]
    valid = valid[sudoku.num_givens(valid) == 17]
    by_print: dict[bytes, list[int]] = {}
    for index, key in enumerate(_symmetry_fingerprints(pool)):
        by_print.setdefault(key, []).append(index)
    pairs = [
        (v, p) for v, key in enumerate(_symmetry_fingerprints(valid)) for p in by_print.get(key, [])
    ]
    assert 0 < len(pairs) < 200
    assert not any(_equivalent(valid[v], pool[p]) for v, p in pairs)
    # The check can fail: a moved, relabelled pool puzzle is found.
    rng = np.random.default_rng(0)
    rows, cols = _BAND_ORDERS[rng.integers(1296, size=2)]
    relabel = np.concatenate([[0], rng.permutation(9) + 1])
    moved = relabel[pool[7].reshape(9, 9)[rows][:, cols].T].reshape(81)
    assert _symmetry_fingerprints(moved[None]) == _symmetry_fingerprints(pool[7:8])
    assert _equivalent(moved, pool[7]) and not _equivalent(pool[8], pool[7])


def test_the_task_module_loads_without_flax():
    """The task holds generators, loaders and metrics; the model is the demo's
    (`gnkit.demos.sudoku.models`), so importing the task loads no Flax at all."""
    import subprocess
    import sys

    code = "import sys, gnkit.tasks.sudoku; print(sorted(m for m in sys.modules if 'flax' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert not hasattr(sudoku, "SudokuRRN")
