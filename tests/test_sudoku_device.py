"""Tests for benchmarks/sudoku_device.py, the Sudoku pieces of an accelerator window: its
schedule planning, and the whole script at tiny size on the CPU with only the GPU image's
packages importable."""

import json

import pytest
from _gpu_image import distributions_of, image_closure, imported_outside_gnkit, run_as_image

from benchmarks import sudoku_device
from gnkit.demos import sudoku as demo
from gnkit.demos.sudoku.recipe import make_device_train_step


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


def test_training_resumes_from_the_run_directory_it_wrote(tmp_path):
    config = sudoku_device.device_config("tiny", updates=3)
    pool = demo.load_data("royle17_train_pool")
    step = make_device_train_step(config, pool)  # tiny's learning rate is constant: reusable
    first = sudoku_device.train_for(config, pool, tmp_path, seconds=600, step=step)
    assert (first["updates"], first["puzzles_seen"]) == (3, 24)
    longer = sudoku_device.device_config("tiny", updates=5)
    more = sudoku_device.train_for(longer, pool, tmp_path, seconds=600, step=step)
    assert more["updates"] == 5  # two more, from the checkpoint at 3
    rows = map(json.loads, (tmp_path / "metrics.jsonl").read_text().splitlines())
    steps = [row["step"] for row in rows if row["kind"] == "train"]
    assert steps == [3, 5]
    config, _, info = demo.load_model(tmp_path)
    assert (config.updates, info["updates"]) == (5, 5)


@pytest.mark.slow
def test_tiny_run_end_to_end_with_only_the_gpu_images_packages(tmp_path):
    """The whole script at tiny size, tyro, rich and matplotlib blocked (~1 min here)."""
    out, logs = tmp_path / "out", tmp_path / "logs"
    logs.mkdir()
    argv = ["-m", "benchmarks.sudoku_device", "--out", str(out), "--config", "tiny"]
    argv += ["--probe-batches", "4,8", "--probe-s", "2", "--budget-min", "0.3"]
    done = run_as_image(argv + ["--eval-per-level", "2", "--eval-steps", "12"], logs, 600, ())
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    first, second = results["throughput"]
    assert (first["batch_size"], second["batch_size"]) == (4, 8) and first["puzzles_per_s"] > 0
    # The probe stops after twice --probe-s (compiling included): the second size ran or not.
    assert second.get("puzzles_per_s", 0) > 0 or "the probe's 4 s are spent" in second["skipped"]
    train = results["train"]
    assert 1 <= train["updates"] < train["puzzles_seen"]
    config = json.loads((out / "model" / "config.json").read_text())
    assert (config["data"], config["updates"]) == ("device", train["schedule_updates"])
    validation = results["validation"]
    assert validation["puzzles"] == 36 and validation["steps"] == 12
    assert sorted(validation["per_givens"]) == [str(level) for level in range(17, 35)]
    assert len(validation["per_givens"]["17"]["puzzle_accuracy_per_step"]) == 12
    model_config, _, info = demo.load_model(out / "model")
    assert model_config.data == "device" and info["updates"] == train["updates"]
    (names,) = imported_outside_gnkit(logs).values()
    owners = distributions_of(names)
    outside = {name: dists for name, dists in owners.items() if not dists & image_closure(())}
    assert not outside, f"imported from outside the GPU image: {outside}"


@pytest.mark.slow
def test_cost_counts_grow_by_one_step_per_step_and_the_gradient_costs_about_three_forwards():
    tiny = sudoku_device.device_config("tiny")
    flops = [sudoku_device._cost(tiny, steps, train=False)[0] for steps in (1, 2, 3)]
    # XLA fuses the loss's per-step terms a little differently at each length: within 5%.
    assert flops[2] - flops[1] == pytest.approx(flops[1] - flops[0], rel=0.05)
    costs = sudoku_device.step_costs(tiny)
    assert costs["forward_flops_per_step"] == pytest.approx(flops[1] - flops[0], rel=1e-6)
    assert 2.0 < costs["train_flops_per_step"] / costs["forward_flops_per_step"] < 4.0
    per_puzzle = costs["train_flops_per_puzzle"]
    assert tiny.steps * costs["train_flops_per_step"] < per_puzzle
    assert per_puzzle < (tiny.steps + 1) * costs["train_flops_per_step"]
