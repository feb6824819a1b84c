"""The particles demo: a tiny `train`, `eval` and resumed `train` on the shipped TGV set, whose
reported position MSEs are NumPy's on the saved rollouts against the test trajectory (slow:
2,500 particles; minutes on a loaded 2-core machine)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("h5py")

from gnkit import experiments  # noqa: E402
from gnkit.demos.particles import CONFIGS, DEMO  # noqa: E402
from gnkit.particles import load_particle_dataset  # noqa: E402


def _steps(run_dir, kind):
    lines = (run_dir / "metrics_gns.jsonl").read_text().splitlines()
    return [r["step"] for r in map(json.loads, lines) if r["kind"] == kind]


@pytest.mark.slow
def test_tiny_train_eval_resume_and_metrics_against_numpy(tmp_path):
    config = CONFIGS["tiny"]
    run_dir = tmp_path / "run"
    results = experiments.run_verb(DEMO, "train", config, run_dir, progress=False)
    for name in ("config.json", "metrics_gns.jsonl", "rollouts_gns.npz", "curves.png",
                 "rollout.gif"):
        assert (run_dir / name).is_file(), name
    test = load_particle_dataset("tgv2d").splits["test"][0].positions.astype(np.float64)
    predicted = np.load(run_dir / "rollouts_gns.npz")["test_0"].astype(np.float64)
    target = test[config.history + 1:][: len(predicted)]
    delta = predicted - target
    delta -= np.round(delta)  # unit box
    per_step = np.mean(delta**2, axis=(1, 2))
    metrics = results["models"]["gns"]["test"]
    assert results["models"]["gns"]["steps_reached"] == [config.test_rollout_steps]
    assert metrics["mse"] == pytest.approx(np.mean(per_step), rel=1e-5)
    assert metrics["mse1"] == pytest.approx(per_step[0], rel=1e-5)
    evaluated = experiments.run_verb(DEMO, "eval", None, run_dir, progress=False)
    assert evaluated["models"]["gns"]["test"]["mse"] == pytest.approx(metrics["mse"])
    experiments.run_verb(DEMO, "train", dataclasses.replace(config, updates=6), run_dir,
                         progress=False)
    assert _steps(run_dir, "eval") == [2, 4, 6]


@pytest.mark.slow
def test_tiny_segnn_run_reports_numpys_rollout_mse_in_the_nnx_api(tmp_path):
    config = dataclasses.replace(CONFIGS["tiny"], model=("segnn",), api="nnx", gif_frames=0)
    run_dir = tmp_path / "run"
    results = experiments.run_verb(DEMO, "train", config, run_dir, progress=False)
    test = load_particle_dataset("tgv2d").splits["test"][0].positions.astype(np.float64)
    predicted = np.load(run_dir / "rollouts_segnn.npz")["test_0"].astype(np.float64)
    delta = predicted - test[config.history + 1:][: len(predicted)]
    delta -= np.round(delta)  # unit box
    assert results["models"]["segnn"]["steps_reached"] == [config.test_rollout_steps]
    assert results["models"]["segnn"]["test"]["mse"] == pytest.approx(np.mean(delta**2),
                                                                      rel=1e-5)


def test_repeated_rollouts_of_the_isotropic_model_reuse_one_jitted_rollout():
    """SEGNN reads the isotropic statistics; they are made once per data set, so validation
    rollouts after the first find the rollout compiled for them (one entry, not one per call)."""
    from gnkit.demos.particles import COMPARISON, training
    from gnkit.particles import rollout

    config = dataclasses.replace(CONFIGS["tiny"], model=("segnn",))
    data = COMPARISON.load_data(config, None, False)
    params = training.init("segnn", config, data)
    positions = data.splits["valid"][0]
    rollout._ROLLOUTS.clear()
    for _ in range(3):
        training.rollout_of("segnn", config, data, params, positions, 3)
    assert len(rollout._ROLLOUTS) == 1
