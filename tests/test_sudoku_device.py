"""Tests for benchmarks/sudoku_device.py, the accelerator-window script: end to end at tiny size
on the CPU, and its planning and dependency checks."""

import json

import pytest

from benchmarks import sudoku_device
from gnkit.demos import sudoku as demo


def test_missing_demo_packages_without_wheels_stop_with_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setattr(sudoku_device, "DEMO_PACKAGES", {"no_such_module_xyz": "no_such_module"})
    with pytest.raises(SystemExit, match="missing no_such_module_xyz .*pip download --no-deps"):
        sudoku_device.ensure_demo_packages(tmp_path)
    monkeypatch.setattr(sudoku_device, "DEMO_PACKAGES", {"json": "json"})
    sudoku_device.ensure_demo_packages(tmp_path)  # present: nothing to do


def test_the_schedule_is_sized_from_the_probe():
    gpu = demo.CONFIGS["gpu"]
    rows = [
        {"batch_size": 512, "puzzles_per_s": 8000.0},
        {"batch_size": 1024, "puzzles_per_s": 10240.0},
        {"batch_size": 2048, "error": "XlaRuntimeError: RESOURCE_EXHAUSTED"},
    ]
    # 10 minutes, 60 s kept for compiling and validating: 540 s x 10,240 / 1024 = 5,400.
    assert sudoku_device.planned_updates(gpu, rows, 600.0) == 5400
    assert sudoku_device.planned_updates(gpu, rows[:1], 600.0) == 4218  # best rate measured
    assert sudoku_device.planned_updates(gpu, rows[2:], 600.0) == gpu.updates  # nothing ran


@pytest.mark.slow
def test_tiny_run_end_to_end_on_the_cpu(tmp_path):
    """The whole script at tiny size with the gpu config's bf16 and symmetries (~2 min here)."""
    out = tmp_path / "out"
    argv = ["--out", str(out), "--config", "tiny", "--set", "precision=bf16"]
    argv += ["--set", "symmetries=true", "--probe-batches", "4,8", "--probe-s", "2"]
    argv += ["--budget-min", "0.75", "--eval-per-level", "2", "--valid-per-level", "1"]
    results = sudoku_device.main(argv + ["--eval-steps", "12"])
    assert json.loads((out / "results.json").read_text()) == results
    first, second = results["throughput"]
    assert (first["batch_size"], second["batch_size"]) == (4, 8) and first["puzzles_per_s"] > 0
    # The probe stops after twice --probe-s (compiling included): the second size ran or not.
    assert second.get("puzzles_per_s", 0) > 0 or "the probe's 4 s are spent" in second["skipped"]
    train = results["train"]
    assert 1 <= train["updates"] < train["puzzles_seen"] and train["validation"] is not None
    config = json.loads((out / "model" / "config.json").read_text())
    assert (config["precision"], config["data"], config["symmetries"]) == ("bf16", "device", True)
    assert config["updates"] >= train["updates"]
    validation = results["validation"]
    assert validation["puzzles"] == 36 and validation["steps"] == 12
    assert sorted(validation["per_givens"]) == [str(level) for level in range(17, 35)]
    assert len(validation["per_givens"]["17"]["puzzle_accuracy_per_step"]) == 12
    assert (out / "run" / "checkpoints" / "best.msgpack").exists()
    model_config, _, info = demo.load_model(out / "model")
    assert model_config.precision == "bf16" and info["updates"] == train["updates"]
