"""Tests for benchmarks/accelerator.py, the plan for one accelerator window: every stage at tiny
size on the CPU with only the GPU image's packages importable, and its pieces."""

import json
import os

import pytest
from _gpu_image import (
    distributions_of,
    image_closure,
    imported_outside_gnkit,
    run_as_image,
    wheel_of,
)

from benchmarks import accelerator
from gnkit.demos import sudoku as demo

PLAN = ["-m", "benchmarks.accelerator", "--config", "tiny", "--budget-min", "0.4"]
PLAN += ["--probe-s", "2", "--bench-quick", "--bench-only", "w1", "--bench-s", "240"]
PLAN += ["--atoms-quick", "--atoms-s", "300", "--eval-per-level", "1", "--checkpoint-every-s", "5"]
CARRIED_WHEELS = ("jraph", "e3nn_jax", "ase", "vesin")  # the image lacks them: carried


@pytest.mark.slow  # about 5 CPU-minutes: child interpreters run every stage
def test_the_plan_runs_every_stage_importing_only_the_gpu_images_packages(tmp_path):
    """As in a window: the image's packages only, jraph and the atoms extra from carried wheels."""
    out, logs, wheels = tmp_path / "out", tmp_path / "logs", tmp_path / "wheels"
    logs.mkdir()
    wheels.mkdir()
    for package in CARRIED_WHEELS:
        wheel_of(package, wheels)
    argv = PLAN + ["--out", str(out), "--wheels", str(wheels)]
    done = run_as_image(argv, logs, timeout=900, carried=())
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["done"] == list(accelerator.STAGES)
    assert results["device"]["platform"] == "cpu"
    assert results["throughput"]["puzzles_per_s"] > 0
    assert results["throughput"]["expected_puzzles_per_s"] is None  # no H200 here
    assert "throughput:" in done.stdout and "puzzles/s" in done.stdout
    bench = results["benchmarks"]
    assert bench["status"] == "finished" and bench["workloads"] and not bench["errors"]
    assert {row["peer"] for row in bench["summary"]} == {"jraph", "pyg eager"}
    atoms = results["atoms"]
    assert atoms["status"] == "finished"
    assert [(row["model"], row["workload"]) for row in atoms["pairs"]] == [
        ("mace", "aspirin8"), ("nequip", "aspirin8")]
    for row in atoms["pairs"]:
        assert (row["n_atoms"], row["n_edges"], row["compiles_of_the_step"]) == (168, 2436, 1)
        assert row["best_s"] > 0 and row["atoms_per_s"] == pytest.approx(168 / row["best_s"])
    train = results["train"]
    assert train["updates"] >= 1 and train["puzzles_seen"] == 8 * train["updates"]
    assert (out / "run" / "checkpoints").is_dir() and (out / "run" / "metrics.jsonl").is_file()
    config, _, info = demo.load_model(out / "model")
    assert (config.hidden_size, config.data) == (16, "device")
    assert info["updates"] == train["updates"]
    validation = results["validation"]
    assert validation["puzzles"] == 18 and validation["steps"] == 64
    assert sorted(validation["per_givens"], key=int) == [str(g) for g in range(17, 35)]
    assert len(validation["per_givens"]["17"]["puzzle_accuracy_per_step"]) == 64
    page = (out / "results.md").read_text()
    assert "| givens | puzzles | solved |" in page and "All stages done." in page

    # The plan, the benchmark suite, the atoms benchmark and its gnkit worker for each model.
    # The plan's Sudoku path needs none of the carried packages; the suite's jraph and the atoms
    # processes' e3nn-jax, ASE and vesin are the unpacked wheels; every other module from
    # outside gnkit belongs to the image.
    imported = list(imported_outside_gnkit(logs).values())
    assert len(imported) == 3 + len(atoms["pairs"]), [sorted(found)[:5] for found in imported]
    (suite,) = (modules for modules in imported if "torch_geometric" in modules)
    (plan,) = (modules for modules in imported if not {"torch_geometric", "ase"} & set(modules))
    assert not {"jraph", "e3nn_jax", "vesin"} & set(plan)
    assert {"jax", "flax", "optax", "numpy"} <= set(plan)
    assert {"jraph", "torch", "torch_geometric"} <= set(suite)
    assert suite.pop("jraph").startswith(str(out / "benchmarks" / "site"))
    workers = [modules for modules in imported if "e3nn_jax" in modules]
    assert len(workers) == len(atoms["pairs"])
    for modules in imported:
        for package in ("e3nn_jax", "ase", "vesin"):
            if package in modules:
                assert modules.pop(package).startswith(str(out / "atoms" / "site"))
    allowed = image_closure(())
    for modules in imported:
        assert not {"tyro", "matplotlib"} & set(modules)
        owners = distributions_of(list(modules))
        outside = {name: dists for name, dists in owners.items() if not dists & allowed}
        assert not outside, f"imported from outside the GPU image: {outside}"


def test_the_blocker_refuses_the_demo_extras_and_packages_outside_the_image(tmp_path):
    """The test above means something only if its blocker blocks: tyro, matplotlib, rich from
    gnkit, and an installed package that the image lacks (pandas, which torch_geometric would
    import if it could), while flax still gets rich."""
    probe = (
        "import importlib.util, flax.linen\n"
        "for name in ('tyro', 'matplotlib', 'pandas'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "    except ImportError:\n"
        "        print(name, 'blocked')\n"
        "print('pandas spec', importlib.util.find_spec('pandas'))\n"
        "from gnkit import progress\n"
        "try:\n"
        "    progress.ProgressBar(2)\n"
        "except ImportError as error:\n"
        "    print('rich:', error)\n"
    )
    done = run_as_image(["-c", probe], tmp_path, timeout=120, carried=())
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[:4] == ["tyro blocked", "matplotlib blocked", "pandas blocked", "pandas spec None"]
    assert lines[4] == "rich: rich.console is blocked here (imported by gnkit.progress)"


def test_the_expected_rate_is_looked_up_by_preset_and_device_kind():
    assert accelerator.expected_rate("gpu", "NVIDIA H200") == 7_500
    assert accelerator.expected_rate("gpu", "NVIDIA A100-SXM4-80GB") is None
    assert accelerator.expected_rate("tiny", "NVIDIA H200") is None


def test_the_schedule_fills_the_training_time_at_the_measured_rate():
    gpu = demo.CONFIGS["gpu"]
    # 10,240 puzzles/s for 540 s at batch 1024: 5,400 updates.
    assert accelerator._updates(gpu, 10_240.0, 540.0) == 5400
    assert accelerator._updates(gpu, 1.0, 3.0) == 1  # at least one


def test_results_page_of_a_plan_cut_after_the_throughput_stage():
    results = {
        "command": "python -m benchmarks.accelerator --out OUT --budget-min 11",
        "config": "gpu",
        "done": ["device", "throughput"],
        "device": {
            "device": "NVIDIA H200",
            "platform": "gpu",
            "device_count": 1,
            "jax": "0.11.0",
            "python": "3.12.3",
        },
        "throughput": {
            "batch_size": 1024,
            "compile_s": 31.5,
            "steps": 40,
            "puzzles_per_s": 6144.0,
            "expected_puzzles_per_s": 7500,
        },
    }
    page = accelerator.markdown(results)
    assert "Device: NVIDIA H200 (gpu x 1), jax 0.11.0, Python 3.12.3." in page
    assert "batch 1024: 6,144.0 puzzles/s, expected 7,500 (compile 31.5 s)." in page
    assert page.rstrip().endswith("Stages left: benchmarks, atoms, train, validation.")


def test_results_page_lists_the_atoms_stages_pairs():
    results = {"command": "python -m benchmarks.accelerator", "done": ["atoms"], "atoms": {
        "status": "finished", "seconds": 61.8, "pairs": [
            {"model": "mace", "workload": "cu500", "n_atoms": 500, "n_edges": 21534,
             "best_s": 0.0125, "atoms_per_s": 40_000.0, "compile_s": 12.34,
             "compiles_of_the_step": 1, "peak_rss_mb": 2048.0}]}}
    page = accelerator.markdown(results)
    assert "| mace | cu500 | 500 | 21534 | 12.5 | 40,000 | 12.3 |" in page
    assert "Atoms: finished (62 s)." in page
    assert "Training" not in page and "| givens |" not in page


def test_a_benchmark_run_past_its_limit_is_stopped_and_recorded(tmp_path):
    record = accelerator.run_benchmarks(tmp_path, "w1", True, 0.5, tmp_path)
    assert record["status"] == "stopped at the 0.5 s limit"
    assert "summary" not in record  # it finished no workload


def test_wheels_are_unpacked_onto_the_path_only_for_the_packages_missing(tmp_path, monkeypatch):
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    wheels.mkdir()
    wheel_of("jraph", wheels)
    wheel_of("e3nn_jax", wheels)
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    assert accelerator.bench_environment(wheels, site)["PYTHONPATH"] == "/somewhere"
    assert not site.exists()
    found = accelerator.importlib.util.find_spec
    monkeypatch.setattr(accelerator.importlib.util, "find_spec",
                        lambda name: None if name == "jraph" else found(name))
    path = accelerator.bench_environment(wheels, site)["PYTHONPATH"].split(os.pathsep)
    assert path == [str(site), "/somewhere"]
    assert (site / "jraph" / "__init__.py").is_file() and (site / "jraph" / "_src").is_dir()
    assert not (site / "e3nn_jax").exists()


@pytest.mark.parametrize("name", ["gpu", "tiny"])
def test_device_configs_make_their_batches_on_the_device(name):
    from benchmarks import sudoku_device

    config = sudoku_device.device_config(name)
    assert config.data == "device" and config.batch_size == demo.CONFIGS[name].batch_size
    with pytest.raises(SystemExit, match="--config nope: not a preset"):
        sudoku_device.device_config("nope")


@pytest.mark.slow  # compiles the tiny Sudoku step twice
def test_a_step_that_fails_to_run_is_timed_again_with_block_remat(monkeypatch):
    """Out of memory at the `gpu` config's batch: the plan keeps the recipe and remats."""
    built = []
    real_make, real_time = accelerator.make_device_train_step, accelerator.sd.time_steps

    def make_step(config, pool):
        built.append(config.remat)
        return real_make(config, pool)

    def time_steps(step, state, batch_size, seconds):
        if not built[-1]:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 80.1GiB\nat ...")
        return real_time(step, state, batch_size, seconds)

    monkeypatch.setattr(accelerator, "make_device_train_step", make_step)
    monkeypatch.setattr(accelerator.sd, "time_steps", time_steps)
    tiny = accelerator.sd.device_config("tiny")
    config, _, timing = accelerator.measure_throughput(tiny, demo.load_data("rrn_valid_slice"), 0.1)
    assert built == [False, "block"] and config.remat == "block"
    assert timing["first_error"].endswith("Out of memory allocating 80.1GiB")
    assert timing["steps"] >= 2 and timing["puzzles_per_s"] > 0
