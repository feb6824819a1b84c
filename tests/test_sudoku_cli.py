"""Tests for the `gnkit sudoku` command line: typed --set, named data sets, where files are
written, and one-line errors (exit status 2) for bad flags and puzzles."""

import dataclasses
import hashlib
import json
import pathlib
import re
import signal
import subprocess
import sys
import time
from importlib import resources

import numpy as np
import pytest

from gnkit.demos import sudoku as demo
from gnkit.tasks import sudoku

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = pathlib.Path(str(resources.files("gnkit"))).resolve()
TINY = demo.CONFIGS["tiny"]
# Pool row 1 of the shipped training pool (17 givens).
QUIZ = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    error = captured.err.strip()
    assert error.startswith("error: ") and "\n" not in error, captured.err
    assert "Traceback" not in captured.err + captured.out
    return error


def _package_digest() -> str:
    """A digest of the shipped files (model and data) and of which files the package holds."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(str(path.relative_to(PACKAGE)).encode())
        if path.parent.name in ("data", "sudoku_rrn"):
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize(
    ("field", "text", "value"),
    [
        ("remat", "block", "block"),
        ("remat", "step", "step"),
        ("remat", "true", True),
        ("remat", "False", False),
        ("cosine_decay", "yes", True),
        ("cosine_decay", "0", False),
        ("hidden_size", "64", 64),
        ("learning_rate", "1e-3", 0.001),
        ("cell", "gru", "gru"),
    ],
)
def test_set_parses_each_field_by_its_declared_type(field, text, value):
    args = demo.build_parser().parse_args(["train", "--set", field, text])
    config = demo.apply_overrides(TINY, args.set)
    assert getattr(config, field) == value
    assert type(getattr(config, field)) is type(value)
    assert dataclasses.replace(config, **{field: getattr(TINY, field)}) == TINY


@pytest.mark.parametrize(
    ("field", "text", "expected"),
    [
        ("remat", "bloc", "true, false, 'step' or 'block'"),
        ("cosine_decay", "maybe", "true or false"),
        ("hidden_size", "1.5", "an int"),
        ("learning_rate", "fast", "a float"),
        ("cell", "rnn", "'lstm', 'gru' or 'mlp'"),
        ("hidden", "64", "unknown config field"),
    ],
)
def test_set_rejects_bad_values_in_one_line_and_writes_nothing(
    tmp_path, capsys, field, text, expected
):
    run_dir = tmp_path / "run"
    argv = ["train", "--config", "tiny", "--run-dir", str(run_dir), "--set", field, text]
    assert demo.main(argv) == 2
    error = _one_line_error(capsys)
    assert f"--set {field}" in error and expected in error
    assert not run_dir.exists()


def test_train_refuses_a_run_dir_holding_another_config(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    saved = json.dumps(dataclasses.asdict(TINY))
    (run_dir / "config.json").write_text(saved)
    argv = ["train", "--config", "tiny", "--run-dir", str(run_dir), "--set", "remat", "block"]
    assert demo.main(argv) == 2
    assert "--run-dir" in _one_line_error(capsys)
    assert (run_dir / "config.json").read_text() == saved
    assert sorted(path.name for path in run_dir.iterdir()) == ["config.json"]


def test_train_refuses_an_unknown_data_set_before_writing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = ["train", "--config", "tiny", "--run-dir", str(run_dir), "--valid", "rrn_test"]
    assert demo.main(argv) == 2
    error = _one_line_error(capsys)
    assert "--valid rrn_test" in error and "rrn_valid" in error
    assert not run_dir.exists()


def test_named_data_sets():
    quizzes, solutions = demo.load_data("rrn_valid")
    np.testing.assert_array_equal(np.bincount(sudoku.num_givens(quizzes))[17:], np.full(18, 1000))
    by_file_name = demo.load_data("rrn_valid.csv.xz")
    np.testing.assert_array_equal(by_file_name[0], quizzes)
    # The slice: rows of the full set in their order, the first 30 of each givens level.
    sliced, sliced_solutions = demo.load_data("rrn_valid_slice")
    givens = sudoku.num_givens(quizzes)
    first_rows = [row for level in range(17, 35) for row in np.flatnonzero(givens == level)[:30]]
    np.testing.assert_array_equal(sliced, quizzes[first_rows])
    np.testing.assert_array_equal(sliced_solutions, solutions[first_rows])
    pool, _ = demo.load_data("royle17_train_pool", "--pool")
    assert pool.shape == (39779, 81)


def test_a_file_path_wins_over_a_name(tmp_path, monkeypatch):
    solution = "693784512487512936125963874932651487568247391741398625319475268856129743274836159"
    monkeypatch.chdir(tmp_path)
    pathlib.Path("rrn_valid").write_text(f"{QUIZ},{solution}\n")
    quizzes, _ = demo.load_data("rrn_valid")
    np.testing.assert_array_equal(quizzes, [sudoku.parse_board(QUIZ)])


def test_unknown_data_names_the_flag(capsys):
    assert demo.main(["eval", "--data", "no_such_set", "--no-progress"]) == 2
    error = _one_line_error(capsys)
    assert "--data no_such_set" in error and "rrn_valid_slice" in error


@pytest.mark.slow
def test_eval_writes_nothing_unless_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    before = _package_digest()
    argv = ["eval", "--per-level", "1", "--steps", "2", "--no-progress"]
    assert demo.main(argv) == 0
    assert "18 puzzles" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert _package_digest() == before


def test_export_needs_a_target(capsys):
    with pytest.raises(SystemExit) as exit_info:
        demo.main(["export", "--from", "runs/sudoku"])
    assert exit_info.value.code == 2
    assert "--to" in capsys.readouterr().err


@pytest.mark.parametrize(
    "target",
    [
        "pretrained",
        "{package}/pretrained/sudoku_rrn",
        "{package}/data/../pretrained/sudoku_rrn",
        "{package}",
        "{link}/sudoku_rrn",
    ],
)
def test_export_refuses_any_target_inside_the_package(tmp_path, monkeypatch, capsys, target):
    link = tmp_path / "link"
    link.symlink_to(PACKAGE / "pretrained")
    monkeypatch.chdir(PACKAGE)
    target = target.format(package=PACKAGE, link=link)
    before = _package_digest()
    assert demo.main(["export", "--from", str(ROOT / "no_such_run"), "--to", target]) == 2
    error = _one_line_error(capsys)
    assert f"--to {target}" in error and "inside the gnkit package" in error
    assert _package_digest() == before


def test_writing_flags_refuse_the_package(tmp_path, capsys):
    plot = PACKAGE / "sudoku_eval.png"
    assert demo.main(["eval", "--plot", str(plot), "--no-progress"]) == 2
    assert "--plot" in _one_line_error(capsys)
    run_dir = PACKAGE / "runs"
    assert demo.main(["train", "--config", "tiny", "--run-dir", str(run_dir)]) == 2
    assert "--run-dir" in _one_line_error(capsys)
    assert not plot.exists() and not run_dir.exists()


def _with(cells: dict[int, str]) -> str:
    chars = list("." * 81)
    for cell, char in cells.items():
        chars[cell] = char
    return "".join(chars)


@pytest.mark.parametrize(
    ("puzzle", "expected"),
    [
        # Two 5s in row 1 (cells 0 and 4).
        (_with({0: "5", 4: "5"}), "5 at row 1, column 5 conflicts with the 5 at row 1, column 1"),
        # Two 7s in column 9 (cells 8 and 80).
        (_with({8: "7", 80: "7"}), "row 9, column 9 conflicts with the 7 at row 1, column 9"),
        # Two 3s in the top-left box (cells 0 and 20: row 3, column 3).
        (_with({0: "3", 20: "3"}), "row 3, column 3 conflicts with the 3 at row 1, column 1"),
        (_with({40: "\uff15"}), "'\uff15' (FULLWIDTH DIGIT FIVE) at position 41 (row 5, column 5)"),
        (_with({2: "\u0665"}), "(ARABIC-INDIC DIGIT FIVE) at position 3 (row 1, column 3)"),
        (_with({9: "a"}), "found 'a' at position 10 (row 2, column 1)"),
        ("." * 80, "got 80 characters"),
        ("." * 82, "got 82 characters"),
    ],
)
def test_solve_rejects_bad_puzzles_in_one_line(capsys, puzzle, expected):
    assert demo.main(["solve", puzzle]) == 2
    assert expected in _one_line_error(capsys)


def test_solve_error_through_the_installed_command():
    """The same check through `python -m`: exit status 2 and no traceback on stderr."""
    puzzle = _with({0: "5", 4: "5"})
    completed = subprocess.run(
        [sys.executable, "-m", "gnkit.demos.sudoku", "solve", puzzle],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert re.fullmatch(
        r"error: the givens contradict each other: .*\(same row\)\n", completed.stderr
    )


@pytest.mark.slow
def test_train_stops_on_sigterm_with_a_checkpoint_and_status_143(tmp_path):
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "gnkit.demos.sudoku", "train", "--config", "tiny"]
    argv += ["--run-dir", str(run_dir), "--updates", "100000", "--log-every", "1"]
    argv += ["--valid-per-level", "1", "--valid-givens", "30", "--no-progress"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = run_dir / "metrics.jsonl"
    for _ in range(1200):
        if metrics.exists() and metrics.read_text().count("\n") >= 2:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr and "rerun the command to resume" in stdout + stderr
    assert list((run_dir / "checkpoints").glob("checkpoint_*.msgpack"))


def _readme_headline():
    """The README's eval command, its per-level table (percent) and its overall numbers."""
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"`(python -m gnkit\.demos\.sudoku eval [^`]*)`", readme).group(1)
    rows = {}
    for label in ("givens", "solved", "cells right"):
        line = re.search(rf"^\| {label} \|(.*)\|$", readme, re.M).group(1)
        rows[label] = [cell.strip().rstrip("%") for cell in line.split("|")]
    table = {
        level: (float(solved), float(cells))
        for level, solved, cells in zip(*rows.values(), strict=True)
    }
    overall = re.search(r"Overall ([\d.]+)% of puzzles and ([\d.]+)% of empty cells", readme)
    return command, table, tuple(map(float, overall.groups()))


@pytest.mark.slow
def test_readme_headline_eval_command_gives_the_readme_table(tmp_path):
    """Runs the README's command as written (minutes on two CPU cores) in an empty directory.

    Evaluation is deterministic, so on one machine the numbers repeat exactly. Per level the
    tolerance is 1 percentage point: the README rounds to whole percent, and on another CPU the
    float summation order may flip one puzzle of 100. Overall (1,800 puzzles): 0.1 point.
    """
    command, table, (overall_puzzles, overall_cells) = _readme_headline()
    argv = [sys.executable, *command.split()[1:]]
    completed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=3600)
    assert completed.returncode == 0, completed.stderr
    measured = {
        level: (float(solved), float(cells))
        for level, solved, cells in re.findall(
            r"^\s*(\d+)\s+\d+\s+([\d.]+)%\s+([\d.]+)%", completed.stdout, re.M
        )
    }
    assert sorted(measured) == sorted(table)
    for level, (solved, cells) in table.items():
        assert abs(measured[level][0] - solved) <= 1.0, (level, measured[level], table[level])
        assert abs(measured[level][1] - cells) <= 1.0, (level, measured[level], table[level])
    overall = re.search(
        r"all: ([\d.]+)% puzzles solved, ([\d.]+)% of empty cells", completed.stdout
    )
    assert abs(float(overall.group(1)) - overall_puzzles) <= 0.1
    assert abs(float(overall.group(2)) - overall_cells) <= 0.1
    assert list(tmp_path.iterdir()) == []
