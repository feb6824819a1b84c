"""`--json -` for every verb of every demo: stdout carries the results as JSON and nothing else
(`json.loads` of the whole of it), the human report goes to stderr. Each demo trains at its
smallest preset, is evaluated from its run directory, and is continued with a larger `updates`
(or `epochs`) alone, as `gnkit DEMO ...` runs them; Sudoku's other verbs read the run's
checkpoint. Slow (every demo trains twice)."""

from __future__ import annotations

import importlib
import json

import pytest

from gnkit import cli

# `(config flags, the demo's own flags for train and eval)` where the preset alone is not small.
SMALLEST = {"kg": (["--config", "quick"], ["--data", "nations", "--model", "complex"])}
PUZZLE = "." * 81


def _json_of(capsys, argv: list[str]) -> dict:
    status = cli.main([*argv, "--no-progress", "--json", "-"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in cli.DEMOS if name != "sudoku"])
def test_train_and_eval_print_json_alone(tmp_path, capsys, name):
    """`train` at the smallest preset (`tiny`, else `quick`), then `eval` where the demo has
    one that reads the run."""
    demo = importlib.import_module(cli.DEMOS[name][0]).DEMO
    preset = "tiny" if "tiny" in demo.presets else "quick"
    run = str(tmp_path / "run")
    config, own = SMALLEST.get(name, (["--config", preset], []))
    assert _json_of(capsys, [name, "train", *config, *own, "--run-dir", run])
    if any(verb.name == "eval" and verb.run_dir == "existing" for verb in demo.verbs):
        assert _json_of(capsys, [name, "eval", *own, "--run-dir", run])
    saved_path = tmp_path / "run" / "config.json"
    if not saved_path.exists():  # a demo that keeps no run (nothing to continue)
        return
    saved = json.loads(saved_path.read_text())
    key = "updates" if "updates" in saved else "epochs"
    logs = sorted((tmp_path / "run").glob("metrics*.jsonl"))
    assert logs, "no metrics"
    before = {log: _last_step(log) for log in logs}
    longer = saved[key] + 2
    assert _json_of(capsys, [name, "train", *own, "--run-dir", run, "--set", f"{key}={longer}"])
    assert json.loads(saved_path.read_text())[key] == longer
    for log, last in before.items():  # every model trained on, in proportion to the new length
        assert _last_step(log) * saved[key] == last * longer, log.name


def _last_step(log) -> int:
    return max(json.loads(line)["step"] for line in log.read_text().splitlines())


@pytest.mark.slow
def test_every_sudoku_verb_prints_json_alone(tmp_path, capsys):
    run = str(tmp_path / "run")
    model = ["--checkpoint", run, "--steps", "2"]
    assert _json_of(capsys, ["sudoku", "train", "--config", "tiny", "--run-dir", run])
    for argv in (
        ["eval", *model, "--per-level", "2"],
        ["solve", PUZZLE, *model],
        ["demo", *model, "--per-level", "1"],
        ["curves", "--run", f"tiny={run}"],
        ["export", "--from", run, "--to", str(tmp_path / "exported")],
    ):
        assert isinstance(_json_of(capsys, ["sudoku", *argv]), dict), argv
