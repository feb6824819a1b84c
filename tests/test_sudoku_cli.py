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

import flax.serialization
import jax
import numpy as np
import pytest
from _run_records import run_record

from gnkit import experiments
from gnkit.demos import sudoku as demo
from gnkit.demos.sudoku.model_files import read_config
from gnkit.tasks import sudoku

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = pathlib.Path(str(resources.files("gnkit"))).resolve()
TINY = demo.CONFIGS["tiny"]
# Pool row 1 of the shipped training pool (17 givens).
QUIZ = "000000010400000000020000000000050407008000300001090000300400200050100000000806000"


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    error = captured.err.strip()
    assert error.startswith("gnkit sudoku: error: ") and "\n" not in error, captured.err
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
    ("assignment", "value"),
    [
        ("remat=block", "block"),
        ("remat=step", "step"),
        ("remat=true", True),
        ("remat=False", False),
        ("cosine_decay=true", True),
        ("hidden_size=64", 64),
        ("learning_rate=1e-3", 0.001),
        ("cell=gru", "gru"),
        ("steps=8", 8),
    ],
)
def test_set_parses_each_field_by_its_declared_type(assignment, value):
    field, parsed = experiments.parse_override(demo.SudokuConfig, assignment)
    assert field == assignment.split("=")[0]
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.slow
def test_set_remat_block_reaches_the_model_and_trains(tmp_path):
    run_dir = tmp_path / "run"
    argv = ["train", "--config", "tiny", "--run-dir", str(run_dir), "--set", "remat=block"]
    argv += ["--updates", "1", "--valid-per-level", "1", "--valid-givens", "30", "--no-progress"]
    assert demo.main(argv) == 0
    config = read_config(run_dir / "config.json")
    assert config == dataclasses.replace(TINY, remat="block")
    assert config.model().remat == "block"
    assert json.loads((run_dir / "train.json").read_text())["updates"] == 1


def test_train_refuses_a_run_dir_holding_another_config(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    saved = json.dumps(dataclasses.asdict(TINY))
    (run_dir / "config.json").write_text(saved)
    argv = ["train", "--config", "tiny", "--run-dir", str(run_dir), "--set", "remat=block"]
    assert demo.main(argv) == 2
    error = _one_line_error(capsys)
    assert "--run-dir" in error and "remat False there, 'block' here" in error
    assert (run_dir / "config.json").read_text() == saved
    assert sorted(path.name for path in run_dir.iterdir()) == ["config.json"]


def test_the_shipped_model_config_is_the_cpu_preset_fine_tuned_with_64_steps():
    path = PACKAGE / "pretrained" / "sudoku_rrn" / "config.json"
    assert json.loads(path.read_text())["steps"] == 64
    fine_tuning = dict(
        steps=64,
        learning_rate=3e-5,
        warmup_updates=10,
        updates=150,
        curriculum_start_givens=17,
        curriculum_fraction=0.0,
        seed=4,
    )
    assert read_config(path) == dataclasses.replace(demo.CONFIGS["default"], **fine_tuning)


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
    assert demo.main(["export", "--from", "runs/sudoku"]) == 2
    assert "--to" in _one_line_error(capsys)


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


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> pathlib.Path:
    """A folder of the files the bad-input table points at."""
    tmp_path = tmp_path_factory.mktemp("bad_inputs")
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 4)
    shipped = sudoku.shipped_data(sudoku.VALID_SET).read_bytes()
    (tmp_path / "truncated.csv.xz").write_bytes(shipped[:2000])
    (tmp_path / "short_rows.csv").write_text("0" * 80 + "," + "1" * 80 + "\n")
    (tmp_path / "one_column.csv").write_text("0" * 81 + "\n")
    tiny_params = flax.serialization.to_bytes(demo.init_state(TINY).params)
    models = {
        "corrupt": (TINY, b"not a msgpack file"),
        "resized": (dataclasses.replace(TINY, hidden_size=12), tiny_params),
        "restructured": (dataclasses.replace(TINY, encoder_layers=2), tiny_params),
    }
    for name, (config, params) in models.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
        (tmp_path / name / "params.msgpack").write_bytes(params)
    (tmp_path / "badrun" / "checkpoints").mkdir(parents=True)
    (tmp_path / "badrun" / "config.json").write_text(json.dumps(dataclasses.asdict(TINY)))
    (tmp_path / "badrun" / "checkpoints" / "checkpoint_000000001.msgpack").write_bytes(b"\0x")
    (tmp_path / "badconfig").mkdir()
    (tmp_path / "badconfig" / "config.json").write_text("{not json")
    return tmp_path


TRAIN = ["train", "--config", "tiny", "--run-dir", "{tmp}/run"]
BAD_INPUTS = [
    (TRAIN + ["--set", "updates=0"], "--set updates=0: updates must be >= 1"),
    (TRAIN + ["--set", "updates=-3"], "--set updates=-3: updates must be >= 1"),
    (TRAIN + ["--updates", "0"], "argument --updates: expected an integer >= 1, got '0'"),
    (TRAIN + ["--set", "steps=0"], "--set steps=0: steps must be >= 1"),
    (TRAIN + ["--set", "curriculum_start_givens=12"], "curriculum_start_givens must be in 17-34"),
    (TRAIN + ["--eval-every-min", "0"], "argument --eval-every-min: expected a number >= 0.1"),
    (TRAIN + ["--valid-givens", "5,6"], "--valid-givens 5,6: no puzzles of these givens"),
    (TRAIN + ["--set", "hidden=64"], "--set hidden=64: unknown key 'hidden'"),
    (TRAIN + ["--set", "hidden_size=wide"], "--set hidden_size=wide: expected int"),
    (TRAIN + ["--set", "remat=bloc"], "--set remat=bloc: expected bool | Literal['step', 'block']"),
    (TRAIN + ["--set", "symmetries=true"], "symmetries=True needs data=device"),
    (TRAIN + ["--budget-min", "0"], "argument --budget-min: expected a number >= 0.1, got '0'"),
    (TRAIN + ["--init-from", "pretrained"], "--init-from pretrained: its parameters do not fit"),
    (TRAIN + ["--init-from", "{tmp}/resized"], "--init-from {tmp}/resized/params.msgpack: exp"),
    (TRAIN + ["--valid", "{tmp}/binary.csv"], "--valid {tmp}/binary.csv: expected a quiz,solution"),
    (TRAIN + ["--pool", "{tmp}/truncated.csv.xz"], "--pool {tmp}/truncated.csv.xz: expected"),
    (["train", "--config", "tiny", "--run-dir", "{tmp}/a_file"], "--run-dir {tmp}/a_file: is a"),
    (["eval", "--steps", "0"], "argument --steps: expected an integer >= 1, got '0'"),
    (["solve", QUIZ, "--steps", "-2"], "argument --steps: expected an integer >= 1, got '-2'"),
    (["eval", "--per-level", "0"], "argument --per-level: expected an integer >= 1, got '0'"),
    (["demo", "--per-level", "-1"], "argument --per-level: expected an integer >= 1, got '-1'"),
    (["eval", "--data", "{tmp}/binary.csv"], "--data {tmp}/binary.csv: expected a quiz,solution"),
    (["eval", "--data", "{tmp}/truncated.csv.xz"], "--data {tmp}/truncated.csv.xz: expected"),
    (["eval", "--data", "{tmp}/short_rows.csv"], "row 1: a Sudoku board is 81 characters"),
    (["eval", "--data", "{tmp}/one_column.csv"], "row 1: expected 2 columns"),
    (["eval", "--checkpoint", "{tmp}/corrupt"], "--checkpoint {tmp}/corrupt/params.msgpack: expe"),
    (["eval", "--checkpoint", "{tmp}/resized"], "params.msgpack: expected an array of shape [12]"),
    (["solve", QUIZ, "--checkpoint", "{tmp}/restructured"], "restructured/params.msgpack: ex"),
    (["eval", "--checkpoint", "{tmp}/badrun"], "badrun/checkpoints/checkpoint_000000001.msgpack"),
    (["eval", "--checkpoint", "{tmp}/badconfig"], "badconfig/config.json: expected a config JSON"),
    (["eval", "--checkpoint", "{tmp}/nowhere"], "--checkpoint {tmp}/nowhere: no config.json"),
    (["eval", "--json", "{tmp}"], "--json {tmp}: is a directory"),
    (["curves", "--run", "cpu"], "--run cpu: expected NAME=RUN_DIR"),
    (["curves", "--run", "cpu={tmp}/nowhere"], "--run {tmp}/nowhere/metrics.jsonl: expected"),
    (["export", "--from", "{tmp}/nowhere", "--to", "{tmp}/out"], "--from {tmp}/nowhere: no config"),
]


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize(
    ("argv", "expected"), BAD_INPUTS, ids=[" ".join(argv[-2:])[:40] for argv, _ in BAD_INPUTS]
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    bad_files, tmp_path, monkeypatch, capsys, argv, expected
):
    monkeypatch.chdir(tmp_path)
    before = _tree(bad_files)
    argv = [item.format(tmp=bad_files) for item in argv] + ["--no-progress"]
    assert demo.main(argv) == 2
    error = _one_line_error(capsys)
    assert expected.format(tmp=bad_files) in error
    assert _tree(bad_files) == before and list(tmp_path.iterdir()) == []


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
        r"gnkit sudoku: error: the givens contradict each other: .*\(same row\)\n",
        completed.stderr,
    )


@pytest.mark.slow
@pytest.mark.parametrize("budget", [[], ["--budget-min", "30"]], ids=["plain", "budget"])
def test_train_stops_on_sigterm_with_a_checkpoint_and_status_143(tmp_path, budget):
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "gnkit.demos.sudoku", "train", "--config", "tiny", *budget]
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


def _recorded_headline():
    """The shipped model's run record (docs/results/sudoku.json): its eval command (without
    `--json`), per-level accuracies and overall accuracies, in percent."""
    record = run_record("sudoku", "shipped_checkpoint")
    command = record["command"].replace(" --json R.json", "")
    results = record["results"]
    table = {
        level: (100 * row["puzzle_accuracy"], 100 * row["cell_accuracy"])
        for level, row in results["per_givens"].items()
    }
    return command, table, (100 * results["puzzle_accuracy"], 100 * results["cell_accuracy"])


@pytest.mark.slow
def test_recorded_eval_command_gives_the_recorded_table(tmp_path):
    """Runs the results page's command as recorded (minutes on two CPU cores) in an empty
    directory.

    Evaluation is deterministic, so on one machine the numbers repeat exactly. Per level the
    tolerance is 1 percentage point: the command prints one decimal, and on another CPU the
    float summation order may flip one puzzle of 100. Overall (1,800 puzzles): 0.1 point.
    """
    command, table, (overall_puzzles, overall_cells) = _recorded_headline()
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


def test_curves_draws_only_where_asked(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = {"kind": "eval", "step": 2, "examples": 64, "cpu_minutes": 3.0,
              "eval_cpu_minutes": 0.5, "per_givens": {"17": {"puzzle": 0.25, "cell": 0.5}}}
    (run_dir / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    monkeypatch.chdir(tmp_path)
    assert demo.main(["curves", "--run", f"cpu={run_dir}"]) == 0
    assert "cpu       64 puzzles     2.5 CPU-min  17:25%/50%" in capsys.readouterr().out
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]
    assert demo.main(["curves", "--run", f"cpu={run_dir}", "--plot", "plots/c.png"]) == 0
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == ["c.png", "c_cells.png"]


def test_gpu_preset_is_the_paper_model_scaled_for_one_accelerator():
    gpu, paper = demo.CONFIGS["gpu"], demo.CONFIGS["paper"]
    assert (gpu.steps, gpu.eval_steps, gpu.precision, gpu.data) == (32, 64, "bf16", "device")
    assert gpu.symmetries and gpu.cosine_decay
    assert gpu.learning_rate == pytest.approx(
        paper.learning_rate * (gpu.batch_size / paper.batch_size) ** 0.5
    )
    model_fields = ("hidden_size", "embed_size", "encoder_layers", "message_layers", "cell")
    assert all(getattr(gpu, name) == getattr(paper, name) for name in model_fields)


def test_device_curriculum_matches_the_host_one():
    config = demo.CONFIGS["default"]
    for update in range(0, config.updates + 1, 7):
        assert int(config.min_givens(update)) == config.givens_range(update)[0], update
    assert demo.CONFIGS["gpu"].min_givens(0) == 17


def test_init_from_takes_a_models_parameters_and_a_fresh_optimiser(tmp_path):
    from gnkit.demos.sudoku.recipe import initial_state

    trained = demo.init_state(dataclasses.replace(TINY, seed=5)).params
    (tmp_path / "config.json").write_text(json.dumps(dataclasses.asdict(TINY)))
    (tmp_path / "params.msgpack").write_bytes(flax.serialization.to_bytes(trained))
    config = dataclasses.replace(TINY, steps=6, learning_rate=1e-4)
    state = initial_state(config, str(tmp_path))
    for got, want in zip(jax.tree.leaves(state.params), jax.tree.leaves(trained), strict=True):
        np.testing.assert_array_equal(got, want)
    fresh = initial_state(config, None)
    assert not np.array_equal(jax.tree.leaves(fresh.params)[0], jax.tree.leaves(trained)[0])
    assert int(state.step) == 0
    assert jax.tree.structure(state.opt_state) == jax.tree.structure(fresh.opt_state)


def test_device_step_is_a_function_of_the_update_number():
    from gnkit.demos.sudoku.recipe import initial_state, make_device_train_step

    config = dataclasses.replace(TINY, data="device", symmetries=True, precision="bf16")
    pool = tuple(part[:200] for part in sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL)))
    step = make_device_train_step(config, pool)
    state = initial_state(config, None)
    runs = []
    for _ in range(2):
        params, opt_state = state.params, state.opt_state
        losses = []
        for update in range(3):
            params, opt_state, metrics = step(params, opt_state, np.int32(update))
            losses.append(float(metrics["loss"]))
        runs.append((losses, params))
    assert runs[0][0] == runs[1][0] and len(set(runs[0][0])) == 3
    assert all(np.isfinite(runs[0][0])) and 1.0 < runs[0][0][0] < 3.0  # near log(9) at start
    for a, b in zip(jax.tree.leaves(runs[0][1]), jax.tree.leaves(runs[1][1]), strict=True):
        np.testing.assert_array_equal(a, b)
    assert jax.tree.leaves(runs[0][1])[0].dtype == np.float32


def test_a_spent_budget_stops_the_run_and_names_itself_a_signal_names_the_signal():
    from gnkit import train as training
    from gnkit.demos.sudoku import recipe

    request = training.StopRequest()
    budget = recipe._stop_or_past(request, time.time() - 1.0, 2.5)
    assert budget() and budget.reason == "--budget-min 2.5" and budget.signal_number is None
    request.set(signal.SIGTERM)
    assert budget() and budget.reason is None and budget.signal_number == signal.SIGTERM
    running = recipe._stop_or_past(training.StopRequest(), time.time() + 600.0, 10.0)
    assert not running() and running.reason is None
    assert recipe._stop_or_past(request, None) is request


def test_eval_reads_a_run_directory_written_before_the_model_left_the_task_module(tmp_path):
    """`tests/data/sudoku_tiny_run` is a `train --config tiny` run directory (its config, best
    checkpoint and final validation record) written when `SudokuRRN` lived in
    `gnkit.tasks.sudoku`. Today's `eval` reads it and measures what that run's own validation
    measured: the same 540 puzzles (30 per level) at 8 steps, cell accuracy per level."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "sudoku_tiny_run", run_dir)
    (recorded,) = map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
    out = tmp_path / "eval.json"
    argv = ["eval", "--checkpoint", str(run_dir), "--data", "rrn_valid_slice", "--steps", "8"]
    assert demo.main(argv + ["--no-progress", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["model"]["updates"] == recorded["step"] == 20
    assert result["cell_accuracy"] == pytest.approx(recorded["cell_accuracy"], abs=1e-6)
    assert sorted(result["per_givens"]) == sorted(recorded["per_givens"])
    for level, row in result["per_givens"].items():
        then = recorded["per_givens"][level]
        assert row["puzzles"] == 30 and row["puzzle_accuracy"] == then["puzzle"]
        assert row["cell_accuracy"] == pytest.approx(then["cell"], abs=1e-6)
