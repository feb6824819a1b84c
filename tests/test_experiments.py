"""gnkit.experiments through `run(demo, argv)`: a toy demo declared here, bad inputs, run
directories, typed overrides, results.

The toy `train` verb runs gradient descent on f(x) = x^2 from x = 1: each update is
x <- x - lr * 2x, so after n updates x = (1 - 2 lr)^n (0.5^n at lr = 0.25)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

import flax.serialization
import numpy as np
import pytest

from gnkit import experiments
from gnkit import train as training
from gnkit.experiments import UsageError, Verb, setting


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    """A toy demo's config: every kind of field `--set` parses."""

    updates: int = setting(3, minimum=1)
    steps: int = setting(2, minimum=1)
    learning_rate: float = 0.25
    remat: bool | Literal["block"] = False
    cell: Literal["lstm", "gru"] = "lstm"
    sizes: tuple[int, int] = setting((4, 8), minimum=1)
    test_sizes: tuple[tuple[int, int], ...] = ((4, 8),)
    width: int | None = None
    name: str = "toy"
    layer_norm: bool = True
    seed: int = 0

    def validate(self):
        if self.sizes[0] > self.sizes[1]:
            raise ValueError(f"sizes {self.sizes}: expected min <= max")


def read_points(path: str) -> np.ndarray:
    """A `[N, 2]` float array from a comma-separated text file, or a `UsageError`."""
    with experiments.reading_file(path, "comma-separated rows of 2 numbers", "--data"):
        points = np.loadtxt(path, delimiter=",", ndmin=2)
    experiments.check_shape(points.shape, (None, 2), path, "--data")
    return points


def train(config: ToyConfig, run_dir, options) -> dict:
    """Resumes from metrics.jsonl; `--signal-at K` sends SIGTERM to itself after update K."""
    points = read_points(options.flags.data) if options.flags.data else np.zeros((0, 2))
    metrics = run_dir.metrics_path
    rows = (
        [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    )
    x = rows[-1]["x"] if rows else 1.0
    with metrics.open("a") as stream:
        for update in range(len(rows) + 1, config.updates + 1):
            if options.should_stop():
                break
            x -= config.learning_rate * 2 * x
            stream.write(json.dumps({"update": update, "x": x}) + "\n")
            stream.flush()
            if update == options.flags.signal_at:
                os.kill(os.getpid(), signal.SIGTERM)
    done = len(metrics.read_text().splitlines())
    checkpoint = {"x": np.array([x, float(done)])}
    run_dir.file("checkpoint.msgpack").write_bytes(flax.serialization.to_bytes(checkpoint))
    return {"x": x, "updates": done, "resumed_from": len(rows), "points": len(points)}


def add_train_flags(parser) -> None:
    parser.add_argument("--data", help="points CSV")
    parser.add_argument("--signal-at", type=int, help="SIGTERM to itself after this update")


def evaluate(config: ToyConfig, run_dir, options) -> dict:
    """Loads the checkpoint (or `--checkpoint`) and plots x into the run directory."""
    path = options.flags.checkpoint or run_dir.path / "checkpoint.msgpack"
    template = {"x": np.zeros(2)}
    with experiments.reading_file(path, "a checkpoint of this run", "--checkpoint"):
        state = flax.serialization.from_bytes(template, Path(path).read_bytes())
    experiments.check_shape(state["x"].shape, (2,), path, "--checkpoint")
    plot = options.plot_path(run_dir, "x.png")
    plt = experiments.pyplot()
    figure, axis = plt.subplots()
    axis.plot([0, state["x"][1]], [1.0, state["x"][0]])
    experiments.save_figure(figure, plot)
    return {"x": float(state["x"][0]), "steps": config.steps, "plot": plot}


def show_config(config: ToyConfig, run_dir, options) -> dict:
    """No run directory: returns the config; draws only with --plot."""
    assert run_dir is None
    plot = options.plot_path(run_dir, "config.png")
    if plot is not None:
        plt = experiments.pyplot()
        figure, _ = plt.subplots()
        experiments.save_figure(figure, plot)
    return {**dataclasses.asdict(config), "preset": options.preset, "parallel": options.parallel}


def count_up(config, run_dir, options) -> dict:
    """A verb without a config: `config` and `run_dir` are None."""
    assert config is None and run_dir is None
    return {"numbers": list(range(1, options.flags.to + 1)), "parallel": options.parallel}


TOY = experiments.Demo(
    name="toy",
    description="A toy demo.",
    presets={"cpu": ToyConfig(), "tiny": ToyConfig(updates=2, steps=1)},
    verbs=[
        Verb("train", train, "train (resumes)", add_flags=add_train_flags),
        Verb(
            "eval",
            evaluate,
            "evaluate a run",
            run_dir="existing",
            add_flags=lambda parser: parser.add_argument("--checkpoint"),
        ),
        Verb("show", show_config, "print the resolved config", run_dir=None),
        Verb(
            "count",
            count_up,
            "count to --to (takes no config)",
            run_dir=None,
            add_flags=lambda parser: parser.add_argument("--to", type=experiments.at_least(1)),
            configured=False,
        ),
    ],
    preset_notes={"cpu": "the toy on a CPU", "tiny": "two updates"},
)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` with its bytes (None for directories)."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def run_toy(capsys, *argv) -> tuple[int, str, str]:
    status = experiments.run(TOY, [str(arg) for arg in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def metrics_rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


# A good run end to end.


def test_train_then_eval_end_to_end(workdir, capsys):
    status, _, err = run_toy(capsys, "train", "--config", "tiny", "--set", "updates=3")
    assert (status, err) == (0, "")
    run_dir = workdir / "runs" / "toy"
    assert json.loads((run_dir / "config.json").read_text()) == {
        **dataclasses.asdict(ToyConfig(updates=3, steps=1)),
        "sizes": [4, 8],
        "test_sizes": [[4, 8]],
    }
    assert [row["x"] for row in metrics_rows(run_dir)] == [0.5, 0.25, 0.125]
    train_results = json.loads((run_dir / "train.json").read_text())
    assert train_results == {"x": 0.125, "updates": 3, "resumed_from": 0, "points": 0}

    status, out, err = run_toy(capsys, "eval", "--set", "steps=5", "--json", "-")
    assert (status, err) == (0, "")
    expected = {"x": 0.125, "steps": 5, "plot": "runs/toy/x.png"}
    assert json.loads(out) == expected
    assert json.loads((run_dir / "eval.json").read_text()) == expected
    assert (run_dir / "x.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((run_dir / "config.json").read_text())["steps"] == 1  # --set is not saved


def test_json_results_written_where_asked(workdir, capsys):
    argv = ["train", "--run-dir", "r", "--json", "out/deep/results.json", "--set", "updates=2"]
    assert run_toy(capsys, *argv)[0] == 0
    results = json.loads((workdir / "out" / "deep" / "results.json").read_text())
    assert results == {"x": 0.25, "updates": 2, "resumed_from": 0, "points": 0}


def test_data_file_flag_of_a_verb(workdir, capsys):
    (workdir / "points.csv").write_text("1,2\n3,4\n5,6\n")
    assert run_toy(capsys, "train", "--data", "points.csv", "--json", "-")[1].count('"points": 3')


def test_plots_only_where_asked(workdir, capsys):
    status, _, _ = run_toy(capsys, "show")
    assert status == 0 and tree(workdir) == {}
    assert run_toy(capsys, "show", "--plot", "figs/config.png")[0] == 0
    assert (workdir / "figs" / "config.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_path_of_secondary_figures(tmp_path):
    options = experiments.Options(
        verb="eval",
        preset=None,
        parallel="single",
        json_path=None,
        plot=Path("figs/main.png"),
        progress=True,
        flags=None,
    )
    assert options.plot_path(None, "curve.png") == Path("figs/main.png")
    assert options.plot_path(None, "curve.png", main=False) == Path("figs/main_curve.png")


def test_presets_seed_and_parallel(workdir, capsys):
    status, out, _ = run_toy(
        capsys, "show", "--config", "tiny", "--seed", "7", "--parallel", "mesh", "--json", "-"
    )
    shown = json.loads(out)
    assert status == 0
    assert (shown["updates"], shown["steps"], shown["seed"]) == (2, 1, 7)
    assert (shown["preset"], shown["parallel"]) == ("tiny", "mesh")


def test_help_lists_presets_and_fields(workdir, capsys):
    status, out, _ = run_toy(capsys, "train", "--help")
    assert status == 0
    assert "presets: cpu, tiny (default cpu)" in out
    assert "remat: bool | Literal['block'] = False" in out
    assert "updates: int = 3  (>= 1)" in out
    assert "  cpu: the toy on a CPU\n  tiny: two updates\n" in out


def test_a_demo_without_a_note_for_each_preset_is_refused():
    missing = r"demo toy: preset_notes has no line for presets \['tiny'\]"
    with pytest.raises(ValueError, match=missing):
        dataclasses.replace(TOY, preset_notes={"cpu": "the toy on a CPU"})


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "--sedd", "3"], "unrecognized arguments: --sedd 3; did you mean '--seed'? "
                                  "(`gnkit toy show --help`)"),
        (["train", "--run-dri=r"], "unrecognized arguments: --run-dri=r; did you mean "
                                   "'--run-dir'? (`gnkit toy train --help`)"),
        (["show", "--colour", "red"], "unrecognized arguments: --colour red (`gnkit toy show "
                                      "--help` lists the flags)"),
    ],
)
def test_a_mistyped_flag_is_named_with_the_nearest_flag_of_its_verb(workdir, capsys, argv,
                                                                     message):
    status, out, err = run_toy(capsys, *argv)
    assert (status, out, err) == (2, "", f"gnkit toy: error: {message}\n")
    assert not (workdir / "r").exists()


# Typed overrides.


@pytest.mark.parametrize(
    "assignment, key, value",
    [
        ("updates=12", "updates", 12),
        ("learning_rate=1e-3", "learning_rate", 0.001),
        ("learning_rate=2", "learning_rate", 2.0),
        ("layer_norm=False", "layer_norm", False),
        ("layer_norm=true", "layer_norm", True),
        ("remat=True", "remat", True),
        ("remat=block", "remat", "block"),
        ("remat=false", "remat", False),
        ("cell=gru", "cell", "gru"),
        ("width=None", "width", None),
        ("width=64", "width", 64),
        ("name=a b=c", "name", "a b=c"),
        ("name=", "name", ""),
        ("sizes=8,16", "sizes", (8, 16)),
        ("sizes=(8, 16)", "sizes", (8, 16)),
        ("test_sizes=[[8,16],[16,32]]", "test_sizes", ((8, 16), (16, 32))),
        ("test_sizes=8,16,16,32", "test_sizes", ((8, 16), (16, 32))),
    ],
)
def test_override_parsed_by_declared_type(assignment, key, value):
    parsed_key, parsed = experiments.parse_override(ToyConfig, assignment)
    assert (parsed_key, parsed) == (key, value)
    assert type(parsed) is type(value)


def test_overrides_reach_the_saved_config(workdir, capsys):
    argv = ["train", "--run-dir", "r", "--set", "remat=block", "--set", "test_sizes=2,3,4,5"]
    assert run_toy(capsys, *argv, "--set", "width=8", "--set", "updates=1")[0] == 0
    saved = json.loads((workdir / "r" / "config.json").read_text())
    assert (saved["remat"], saved["test_sizes"], saved["width"]) == ("block", [[2, 3], [4, 5]], 8)


def test_a_field_flag_sets_its_field_as_set_does(workdir, capsys):
    demo = dataclasses.replace(TOY, flag_fields=("cell", "learning_rate"))
    argv = ["show", "--cell", "gru", "--learning-rate", "0.5"]
    assert experiments.run(demo, argv) == 0
    assert "--cell VALUE" in _help(demo, capsys)
    argv = ["show", "--json", "-", "--cell", "gru", "--learning-rate", "0.5"]
    assert experiments.run(demo, argv) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["cell"], shown["learning_rate"]) == ("gru", 0.5)
    assert experiments.run(demo, ["show", "--cell", "rnn"]) == 2
    error = capsys.readouterr().err
    assert "--cell rnn: expected" in error and "lstm" in error and "--set" not in error
    with pytest.raises(ValueError, match="flag_fields"):
        dataclasses.replace(TOY, flag_fields=("colour",))


def _help(demo, capsys) -> str:
    capsys.readouterr()
    assert experiments.run(demo, ["show", "--help"]) == 0
    return capsys.readouterr().out


# Bad input: one line naming the flag, key or file; exit status 2; nothing written.


def _write_inputs(root: Path) -> None:
    (root / "a_file").write_text("not a directory\n")
    (root / "binary.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    (root / "ragged.csv").write_text("1,2\n3\n")
    (root / "three.csv").write_text("1,2,3\n4,5,6\n")
    (root / "corrupt.msgpack").write_bytes(b"\x00\x01not msgpack\xff" * 3)
    (root / "truncated.msgpack").write_bytes(flax.serialization.to_bytes({"x": np.ones(2)})[:9])
    (root / "other.msgpack").write_bytes(flax.serialization.to_bytes({"w": np.ones(2)}))
    (root / "wide.msgpack").write_bytes(flax.serialization.to_bytes({"x": np.ones(3)}))
    (root / "outdir").mkdir()
    run = root / "badrun"
    run.mkdir()
    (run / "config.json").write_text("{truncated")
    run = root / "oldrun"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"updates": 2, "dropout": 0.1}))
    run = root / "goodrun"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"updates": 2}))


BAD_INPUTS = [
    (["train", "--set", "updates=0"], "--set updates=0: updates must be >= 1"),
    (["train", "--set", "steps=-1"], "--set steps=-1: steps must be >= 1"),
    (["train", "--set", "sizes=0,4"], "--set sizes=0,4: every number in sizes must be >= 1"),
    (["train", "--set", "sizes=9,4"], "--set sizes=9,4: sizes (9, 4): expected min <= max"),
    (["train", "--set", "nosuch=1"], "--set nosuch=1: unknown key 'nosuch'; keys: cell, "),
    (["train", "--set", "updates"], "--set updates: expected KEY=VALUE"),
    (["train", "--set", "updates=many"], "--set updates=many: expected int"),
    (["train", "--set", "updates=2.5"], "--set updates=2.5: expected int"),
    (["train", "--set", "learning_rate=fast"], "--set learning_rate=fast: expected float"),
    (["train", "--set", "layer_norm=yes"], "--set layer_norm=yes: expected bool"),
    (["train", "--set", "remat=maybe"], "--set remat=maybe: expected bool | Literal['block']"),
    (["train", "--set", "cell=rnn"], "--set cell=rnn: expected one of lstm, gru"),
    (["train", "--set", "width=wide"], "--set width=wide: expected int | None"),
    (["train", "--set", "sizes=1,2,3"], "expected tuple[int, int], items separated by commas"),
    (["train", "--set", "test_sizes=1,2,3"], "expected tuple[tuple[int, int], ...]"),
    (["train", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["train", "--config", "huge"], "argument --config: invalid choice: 'huge'"),
    (["train", "--parallel", "gpu"], "argument --parallel: invalid choice: 'gpu'"),
    (["train", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["frobnicate"], "unknown verb 'frobnicate'; the verbs: train, eval, show, count"),
    (["trian"], "unknown verb 'trian'; did you mean 'train'? the verbs: train, eval, show, count"),
    ([], "expected a verb first: train, eval, show, count (`gnkit toy --help` describes each)"),
    (["train", "--run-dir", "a_file"], "--run-dir a_file: is a file, expected a directory"),
    (["train", "--run-dir", "a_file/run"], "--run-dir a_file/run: a_file is a file, expected a"),
    (["train", "--json", "outdir"], "--json outdir: is a directory, expected a file path"),
    (["train", "--plot", "a_file/x.png"], "--plot a_file/x.png: a_file is a file, expected a dir"),
    (["train", "--data", "binary.csv"], "--data binary.csv: expected comma-separated rows"),
    (["train", "--data", "ragged.csv"], "--data ragged.csv: expected comma-separated rows"),
    (["train", "--data", "missing.csv"], "--data missing.csv: expected comma-separated rows"),
    (
        ["train", "--data", "three.csv"],
        "--data three.csv: expected an array of shape [any, 2], found [2, 3]",
    ),
    (["eval", "--run-dir", "nowhere"], "--run-dir nowhere: expected the directory of an earlier"),
    (["eval", "--run-dir", "outdir"], "--run-dir outdir: no config.json"),
    (["eval", "--run-dir", "badrun"], "badrun/config.json: expected a config JSON object"),
    (
        ["eval", "--run-dir", "oldrun"],
        "oldrun/config.json: expected fields of ToyConfig, found unknown dropout",
    ),
    (["eval", "--run-dir", "goodrun", "--config", "tiny"], "unrecognized arguments: --config"),
    (
        ["eval", "--run-dir", "goodrun", "--checkpoint", "corrupt.msgpack"],
        "--checkpoint corrupt.msgpack: expected a checkpoint of this run (ExtraData",
    ),
    (
        ["eval", "--run-dir", "goodrun", "--checkpoint", "truncated.msgpack"],
        "--checkpoint truncated.msgpack: expected a checkpoint of this run (ValueError",
    ),
    (
        ["eval", "--run-dir", "goodrun", "--checkpoint", "other.msgpack"],
        "--checkpoint other.msgpack: expected a checkpoint of this run (ValueError",
    ),
    (
        ["eval", "--run-dir", "goodrun", "--checkpoint", "wide.msgpack"],
        "--checkpoint wide.msgpack: expected an array of shape [2], found [3]",
    ),
    (["eval", "--run-dir", "goodrun"], "goodrun/checkpoint.msgpack: expected a checkpoint"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(workdir, capsys, argv, message):
    _write_inputs(workdir)
    before = tree(workdir)
    status, out, err = run_toy(capsys, *argv)
    assert status == 2
    assert out == ""
    assert err.startswith("gnkit toy: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert "Traceback" not in err
    assert tree(workdir) == before


def test_read_only_run_dir_is_refused(workdir, capsys, monkeypatch):
    (workdir / "locked").mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: Path(path).name != "locked" and real_access(path, mode)
    )
    status, _, err = run_toy(capsys, "train", "--run-dir", "locked/run")
    assert status == 2
    assert "--run-dir locked/run: locked is not writable" in err
    assert tree(workdir) == {"locked": None}


def test_rejected_set_leaves_nothing_that_blocks_the_corrected_command(workdir, capsys):
    assert run_toy(capsys, "train", "--run-dir", "r", "--set", "updates=0")[0] == 2
    assert run_toy(capsys, "train", "--run-dir", "r", "--set", "updates=2")[0] == 0


def test_bad_data_file_writes_no_run_dir(workdir, capsys):
    (workdir / "three.csv").write_text("1,2,3\n")
    assert run_toy(capsys, "train", "--run-dir", "r", "--data", "three.csv")[0] == 2
    assert not (workdir / "r").exists()


# Run directories: refusal and resume.


def test_other_config_refused_naming_the_keys(workdir, capsys):
    assert run_toy(capsys, "train", "--run-dir", "r", "--set", "updates=2")[0] == 0
    before = tree(workdir)
    status, _, err = run_toy(
        capsys, "train", "--run-dir", "r", "--set", "updates=4", "--set", "cell=gru"
    )
    assert status == 2
    assert "--run-dir r holds a run with another config (" in err
    assert "cell 'lstm' there, 'gru' here, updates 2 there, 4 here)" in err
    assert tree(workdir) == before


def test_stop_request_then_resume(workdir, capsys):
    status, _, err = run_toy(
        capsys, "train", "--run-dir", "r", "--set", "updates=4", "--signal-at", "2"
    )
    assert status == 143
    assert "Traceback" not in err
    assert [row["update"] for row in metrics_rows(workdir / "r")] == [1, 2]
    assert json.loads((workdir / "r" / "train.json").read_text())["x"] == 0.25

    status, _, _ = run_toy(capsys, "train", "--run-dir", "r", "--set", "updates=4")
    assert status == 0
    results = json.loads((workdir / "r" / "train.json").read_text())
    assert results == {"x": 0.0625, "updates": 4, "resumed_from": 2, "points": 0}
    assert [row["x"] for row in metrics_rows(workdir / "r")] == [0.5, 0.25, 0.125, 0.0625]



HOLD_LOCK = """
import fcntl, os, sys, time
descriptor = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(descriptor, 0)
os.write(descriptor, b"4242")
print("held", flush=True)
time.sleep(120)
"""


def test_a_run_dir_in_use_by_another_process_is_refused(workdir, capsys):
    argv = ["train", "--run-dir", "r", "--set", "updates=4"]
    assert run_toy(capsys, *argv, "--signal-at", "2")[0] == 143
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(workdir / "r" / ".lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # The lock was given back when the verb ended, so the other process gets it.
        assert holder.stdout.readline() == "held\n"
        status, _, err = run_toy(capsys, *argv)
        assert status == 2
        assert "--run-dir r: in use by another running process (pid 4242)" in err
        assert [row["update"] for row in metrics_rows(workdir / "r")] == [1, 2]
    finally:
        holder.kill()
        holder.wait()
    assert run_toy(capsys, *argv)[0] == 0
    assert [row["update"] for row in metrics_rows(workdir / "r")] == [1, 2, 3, 4]


# Stop requests, declarations, imports.


def stop_and_check(signal_number):
    """A verb that signals itself, sees the stop request, and finds the previous handler back
    (so a second Ctrl-C would interrupt at once)."""

    def verb(config, run_dir, options):
        previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
        assert not options.should_stop()
        os.kill(os.getpid(), signal_number)
        assert options.should_stop()
        assert signal.getsignal(signal_number) is not previous[signal_number]
        return {"stopped": True}

    return verb


@pytest.mark.parametrize("signal_number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_verb_exits_128_plus_the_signal(workdir, capsys, signal_number, status):
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    verbs = [Verb("go", stop_and_check(signal_number), "go", run_dir=None)]
    demo = dataclasses.replace(TOY, verbs=verbs)
    assert experiments.run(demo, ["go", "--json", "out.json"]) == status
    assert json.loads((workdir / "out.json").read_text()) == {"stopped": True}
    assert {number: signal.getsignal(number) for number in before} == before


def test_first_signal_puts_the_previous_handler_back(workdir, capsys):
    def verb(config, run_dir, options):
        default = signal.default_int_handler
        os.kill(os.getpid(), signal.SIGINT)
        assert options.should_stop() and signal.getsignal(signal.SIGINT) is default
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C interrupts at once
        raise AssertionError("not reached")

    demo = dataclasses.replace(TOY, verbs=[Verb("go", verb, "go", run_dir=None)])
    assert experiments.run(demo, ["go"]) == 130
    assert capsys.readouterr().err == "gnkit toy: interrupted\n"


def test_training_stopped_from_a_verb_gives_its_exit_status(workdir, capsys):
    def verb(config, run_dir, options):
        raise training.TrainingStopped(3, None, signal.SIGTERM)

    demo = dataclasses.replace(TOY, verbs=[Verb("go", verb, "go", run_dir=None)])
    assert experiments.run(demo, ["go"]) == 143


def test_usage_error_from_a_verb_is_one_line(workdir, capsys):
    def refuse(config, run_dir, options):
        raise UsageError("--steps 0: expected a positive number")

    demo = dataclasses.replace(TOY, verbs=[Verb("go", refuse, "refuse", run_dir=None)])
    status = experiments.run(demo, ["go"])
    assert status == 2
    assert capsys.readouterr().err == "gnkit toy: error: --steps 0: expected a positive number\n"


@dataclasses.dataclass
class Mutable:
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class NoSeed:
    updates: int = 1


@dataclasses.dataclass(frozen=True)
class Unparseable:
    callback: object = None
    seed: int = 0


@pytest.mark.parametrize(
    "config, message",
    [
        (Mutable(), "Mutable is not a frozen dataclass"),
        (NoSeed(), "NoSeed has no `seed` field"),
        (Unparseable(), "Unparseable.callback: config fields of type object cannot be set"),
    ],
)
def test_declaration_errors(config, message):
    with pytest.raises(TypeError, match=message):
        experiments.Demo("bad", "bad", {"only": config}, [Verb("show", show_config, "show")])


def test_import_does_not_load_matplotlib():
    code = "import sys, gnkit.experiments; print('matplotlib' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_run_verb_from_python_checks_resumes_and_records(workdir):
    """A verb called from Python: the same checks and run directory as the command line."""
    results = experiments.run_verb(
        TOY, "train", ToyConfig(updates=2), "r", data=None, signal_at=None
    )
    assert results == {"x": 0.25, "updates": 2, "resumed_from": 0, "points": 0}
    assert json.loads((workdir / "r" / "train.json").read_text()) == results
    resumed = experiments.run_verb(
        TOY, "train", ToyConfig(updates=2), "r", data=None, signal_at=None
    )
    assert resumed["resumed_from"] == 2
    evaluated = experiments.run_verb(
        TOY, "eval", None, "r", plot=workdir / "x.png", checkpoint=None
    )
    assert evaluated["x"] == 0.25 and evaluated["steps"] == 2 and (workdir / "x.png").exists()
    with pytest.raises(UsageError, match="updates must be >= 1"):
        experiments.run_verb(TOY, "train", ToyConfig(updates=0), "s")
    with pytest.raises(UsageError, match="holds a run with another config"):
        experiments.run_verb(TOY, "train", ToyConfig(updates=1), "r", data=None, signal_at=None)
    assert not (workdir / "s").exists()


def test_a_verb_without_config_has_no_config_flags(workdir, capsys):
    status, out, _ = run_toy(capsys, "count", "--to", "3", "--json", "-")
    assert status == 0 and json.loads(out) == {"numbers": [1, 2, 3], "parallel": "single"}
    for flag in (["--set", "steps=2"], ["--config", "tiny"], ["--seed", "1"]):
        status, _, err = run_toy(capsys, "count", "--to", "3", *flag)
        assert status == 2 and f"unrecognized arguments: {' '.join(flag)}" in err
    assert experiments.run_verb(TOY, "count", to=2) == {"numbers": [1, 2], "parallel": "single"}
    with pytest.raises(ValueError, match="without a config has no run directory"):
        Verb("bad", count_up, "", run_dir="create", configured=False)


@pytest.mark.parametrize("text", ["0", "-2", "1.5", "x"])
def test_at_least_rejects_with_the_bound(workdir, capsys, text):
    status, _, err = run_toy(capsys, "count", "--to", text)
    assert status == 2
    assert f"argument --to: expected an integer >= 1, got '{text}'" in err


def test_nothing_is_written_inside_the_package(workdir, capsys):
    package = Path(experiments.__file__).resolve().parents[1]
    before = tree(package)
    for argv in (
        ["show", "--json", package / "show.json"],
        ["show", "--plot", package / "data" / ".." / "show.png"],
        ["train", "--config", "tiny", "--run-dir", package / "runs"],
    ):
        status, _, err = run_toy(capsys, *argv)
        assert status == 2 and "inside the gnkit package" in err, err
    assert tree(package) == before
