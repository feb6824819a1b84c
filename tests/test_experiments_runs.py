"""What a user sees around a run, through `gnkit.experiments.run`: `--json -` carrying the JSON
alone, the closing lines of `train`, `eval` naming its checkpoint and refusing an untrained one,
a run continued with a larger `updates`, the saved config used without `--config`, and
`--config PRESET --help`.

The toy demo trains f(x) = x^2 from x = 1 with `gnkit.train.fit`: each update is
x <- x - lr * 2x, so after n updates at lr = 0.25, x = 0.5^n (checkpoints, metrics and the
best state as every demo keeps them)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from gnkit import experiments
from gnkit import train as training
from gnkit.experiments import Verb, setting


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    updates: int = setting(4, minimum=1)
    learning_rate: float = 0.25
    seed: int = 0


@jax.jit
def _step(params, opt_state, batch):
    del batch
    x = params["x"]
    return {"x": x - 0.25 * 2 * x}, opt_state, {"loss": x * x}


def _fresh() -> training.TrainingState:
    return training.TrainingState(params={"x": jnp.float32(1.0)}, opt_state=())


def train(config: ToyConfig, run_dir, options) -> dict:
    print(f"toy: training to update {config.updates}")
    state = training.resume_or(_fresh(), run_dir.checkpoint_dir)
    resumed_from = int(state.step)
    state = training.fit(
        state,
        _step,
        lambda step: None,
        config.updates,
        evaluate=lambda params: {"score": -(float(params["x"]) ** 2), "x": float(params["x"])},
        eval_every_steps=2,
        checkpoint_dir=run_dir.checkpoint_dir,
        metrics_path=run_dir.metrics_path,
        log_every_steps=1,
        progress=False,
        should_stop=options.should_stop,
    )
    return {"x": float(state.params["x"]), "resumed_from": resumed_from}


def evaluate(config: ToyConfig, run_dir, options) -> dict:
    path = experiments.checkpoints.report_checkpoint(run_dir.checkpoint_dir)
    state = training.load_checkpoint(path, _fresh())
    print(f"toy: x = {float(state.params['x'])}")
    return {"x": float(state.params["x"]), "step": int(state.step)}


TOY = experiments.Demo(
    "toy",
    "A toy demo.",
    presets={
        "cpu": ToyConfig(),
        "tiny": ToyConfig(updates=2),
        "slow": ToyConfig(updates=2, learning_rate=0.1),
    },
    verbs=[Verb("train", train, "train (resumes)"), Verb("eval", evaluate, "test", "existing")],
    preset_notes={"cpu": "the toy on a CPU", "tiny": "two updates", "slow": "a larger step"},
)


def run(capsys, *argv):
    status = experiments.run(TOY, list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_json_to_stdout_is_the_json_alone(workdir, capsys):
    for argv in (["train", "--run-dir", "r"], ["eval", "--run-dir", "r"]):
        status, out, err = run(capsys, *argv, "--json", "-")
        assert status == 0
        results = json.loads(out)  # nothing but the JSON on stdout
        assert results["x"] == 0.5**4
        assert "toy: " in err  # the verb's own report went to stderr


def test_training_ends_with_its_outputs_and_the_eval_command(workdir, capsys):
    status, out, _ = run(capsys, "train", "--run-dir", "r")
    assert status == 0
    assert out.splitlines()[-4:] == [
        "run directory: r",
        "  checkpoints: checkpoints/best.msgpack (update 4)",
        "  results: train.json",
        "next: gnkit toy eval --run-dir r",
    ]


def test_eval_names_the_checkpoint_and_update_it_uses(workdir, capsys):
    run(capsys, "train", "--run-dir", "r")
    status, out, _ = run(capsys, "eval", "--run-dir", "r")
    assert status == 0
    assert out.splitlines()[0] == "eval: r: checkpoints/best.msgpack (update 4)"
    assert "toy: x = 0.0625" in out


def test_eval_refuses_a_run_stopped_at_update_zero_unless_asked(workdir, capsys):
    stop = training.StopRequest()
    stop.set()
    with pytest.raises(training.TrainingStopped):
        experiments.run_verb(TOY, "train", ToyConfig(), "r", progress=False, should_stop=stop)
    assert training.checkpoint_steps(workdir / "r" / "checkpoints") == [0]
    capsys.readouterr()
    status, out, err = run(capsys, "eval", "--run-dir", "r")
    assert (status, out) == (2, "")
    assert err == (
        "gnkit toy: error: --run-dir r: the model at update 0 (nothing trained); train first "
        "(gnkit toy train --run-dir r), or pass --untrained to evaluate the initial parameters\n"
    )
    status, out, _ = run(capsys, "eval", "--run-dir", "r", "--untrained")
    assert status == 0
    assert "checkpoint_000000000.msgpack (update 0)" in out and "toy: x = 1.0" in out


def test_a_larger_updates_alone_continues_a_finished_run(workdir, capsys):
    assert run(capsys, "train", "--run-dir", "r", "--set", "updates=2")[0] == 0
    status, out, _ = run(capsys, "train", "--run-dir", "r", "--set", "updates=6", "--json", "o")
    assert status == 0 and "continuing r to updates=6" in out
    results = json.loads((workdir / "o").read_text())
    assert results == {"x": 0.5**6, "resumed_from": 2}  # same x as 6 updates in one go
    assert json.loads((workdir / "r" / "config.json").read_text())["updates"] == 6
    steps = [row["step"] for row in training.read_metrics(workdir / "r" / "metrics.jsonl")]
    assert [s for s in steps if s] == [1, 2, 2, 3, 4, 4, 5, 6, 6]  # train + eval, no gap
    for change, named in ((["updates=3"], "updates 6 there, 3 here"), (["learning_rate=0.1"], "")):
        status, _, err = run(capsys, "train", "--run-dir", "r", "--set", change[0])
        assert status == 2 and "holds a run with another config" in err and named in err


def test_a_resumed_command_takes_the_saved_config_without_config(workdir, capsys):
    assert run(capsys, "train", "--run-dir", "r", "--config", "tiny")[0] == 0
    status, out, _ = run(capsys, "train", "--run-dir", "r")  # no --config: tiny, not cpu
    assert status == 0 and "toy: training to update 2" in out
    status, _, err = run(capsys, "train", "--run-dir", "r", "--config", "slow")
    assert status == 2 and "learning_rate 0.25 there, 0.1 here" in err
    status, out, _ = run(capsys, "train", "--run-dir", "fresh")
    assert status == 0 and "toy: training to update 4" in out  # nothing saved: the default


def test_help_shows_the_values_of_the_preset_given(workdir, capsys):
    for argv, preset, updates in (
        (["--config", "tiny"], "tiny", 2),
        (["--config=tiny"], "tiny", 2),
        ([], "cpu", 4),
    ):
        assert experiments.run(TOY, ["train", *argv, "--help"]) == 0
        out = capsys.readouterr().out
        assert f"values of preset {preset}" in out and f"updates: int = {updates}" in out


def test_a_figure_that_cannot_be_written_is_a_warning_not_an_error(tmp_path):
    plt = experiments.pyplot()
    figure, axis = plt.subplots()
    axis.plot([0, 1], [1, 0])
    (tmp_path / "file").write_text("not a folder")
    target = tmp_path / "file" / "x.png"
    with pytest.warns(RuntimeWarning, match="x.png not saved: FileExistsError"):
        assert experiments.save_figure(figure, target) is None
    assert not plt.get_fignums()  # closed all the same


@pytest.mark.parametrize("backend, expected", [("", "agg"), ("svg", "svg")])
def test_pyplot_draws_on_agg_unless_mplbackend_names_a_backend(backend, expected):
    environment = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    if backend:
        environment["MPLBACKEND"] = backend
    script = "from gnkit import experiments; print(experiments.pyplot().get_backend().lower())"
    printed = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True,
                             text=True, check=True).stdout
    assert printed.strip() == expected
