"""benchmarks/lagrangebench_compare.py: the config mapping, the one rollout metric against a
NumPy loop, gnkit's side at the tiny preset, and LagrangeBench's side where its venv exists."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location(
    "lagrangebench_compare", ROOT / "benchmarks" / "lagrangebench_compare.py")
compare = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(compare)
TGV = ROOT / "gnkit" / "data" / "particles" / "tgv2d"


def _quick():
    from gnkit.demos.particles.config import CONFIGS

    return CONFIGS["quick"]


def test_settings_map_the_quick_preset():
    settings = compare.lagrangebench_settings(_quick(), TGV)
    assert settings == {
        "dataset_path": str(TGV), "input_seq_length": 6, "latent_size": 64,
        "num_mlp_layers": 2, "num_message_passing_steps": 4,
        "particle_type_embedding_size": 16, "noise_std": 3e-4, "batch_size": 1,
        "lr_start": 1e-3, "lr_final": 1e-6, "lr_decay_steps": 1000, "lr_decay_rate": 0.1,
        "neighbor_list_multiplier": 1.25, "seed": 0, "rollout_steps": 20}
    json.dumps(settings)


def test_widened_stats_follow_lagrangebench_formula():
    from gnkit.particles.gns import Normalisation

    metadata = json.loads((TGV / "metadata.json").read_text())
    widened = compare.widened_stats(Normalisation.from_metadata(metadata), 3e-4)
    vel_std = np.array(metadata["vel_std"])
    acc_std = np.array(metadata["acc_std"])
    np.testing.assert_allclose(widened.vel_std, np.sqrt(vel_std**2 + 9e-8), rtol=1e-6)
    np.testing.assert_allclose(widened.acc_std, np.sqrt(acc_std**2 + 9e-8), rtol=1e-6)
    np.testing.assert_allclose(widened.vel_mean, metadata["vel_mean"], atol=1e-12)
    # By hand: acc_std 0.0019471 widens by sqrt(1 + (3e-4 / 0.0019471)**2) = 1.01180.
    assert widened.acc_std[0] / acc_std[0] == pytest.approx(1.01180, abs=1e-5)


def test_rollout_mse_wraps_like_a_numpy_loop():
    rng = np.random.default_rng(0)
    box = np.array([1.0, 2.0])
    predicted = rng.uniform(0, 1, (4, 5, 2)) * box
    target = rng.uniform(0, 1, (4, 5, 2)) * box
    total = 0.0
    for step, particle, axis in np.ndindex(predicted.shape):
        difference = predicted[step, particle, axis] - target[step, particle, axis]
        length = box[axis]
        wrapped = min((difference % length, difference % length - length), key=abs)
        total += wrapped**2
    assert compare.rollout_mse(predicted, target, box) == pytest.approx(total / predicted.size)
    # By hand: 0.99 against 0.01 in a unit box is 0.02 apart, not 0.98.
    one = compare.rollout_mse(np.full((1, 1, 2), 0.99), np.full((1, 1, 2), 0.01), [1.0, 1.0])
    assert one == pytest.approx(0.02**2)
    with pytest.raises(ValueError, match="predicted"):
        compare.rollout_mse(predicted, target[:3], box)


@pytest.mark.slow
def test_gnkit_side_trains_and_rolls_out_at_tiny_size():
    from gnkit.demos.particles.config import CONFIGS

    config = dataclasses.replace(CONFIGS["tiny"], case="tgv2d")
    side = compare.GnkitSide(config, rollout_steps=3)
    with h5py.File(TGV / "test.h5") as test:
        truth = test["00000/position"][:]
    np.testing.assert_array_equal(side.test, truth)
    chunk = side.train(2)
    assert side.update == 2 and np.isfinite(chunk["loss"]) and chunk["seconds"] > 0
    positions, seconds = side.rollout()
    assert positions.shape == (3, 2500, 2) and seconds > 0
    assert np.all((positions >= 0) & (positions < 1))
    # Three steps of a barely trained model stay within a few frame displacements (0.01).
    assert compare.rollout_mse(positions, truth[6:9], side.data.box) < 1e-3
    usage = side.usage()
    assert usage["cpu_seconds"] > 0 and usage["peak_rss_mib"] > 100


def _venv_python() -> pathlib.Path:
    python = compare.DEFAULT_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no LagrangeBench venv at {compare.DEFAULT_VENV} "
                    "(bash benchmarks/make_lagrangebench_venv.sh makes it)")
    shim = ("import e3nn_jax._src.tensor_products as tp; tp.naive_broadcast_decorator = "
            "getattr(tp, 'naive_broadcast_decorator', lambda f: f); import lagrangebench")
    check = subprocess.run([str(python), "-c", shim], capture_output=True, text=True)
    if check.returncode:
        pytest.skip(f"the LagrangeBench venv at {compare.DEFAULT_VENV} does not import "
                    f"lagrangebench: {check.stderr.strip().splitlines()[-1]}")
    return python


@pytest.mark.slow
def test_lagrangebench_side_trains_and_rolls_out(tmp_path):
    from gnkit.demos.particles.config import CONFIGS

    python = _venv_python()
    config = CONFIGS["tiny"]
    worker = compare.LagrangeBenchWorker(
        python, compare.lagrangebench_settings(config, TGV, rollout_steps=3),
        tmp_path / "worker.log")
    try:
        chunk = worker.train(2)
        assert np.isfinite(chunk["loss"]) and chunk["seconds"] > 0
        positions, seconds, own_mse = worker.rollout(tmp_path / "rollout.npy")
    finally:
        worker.close()
    with h5py.File(TGV / "test.h5") as test:
        truth = test["00000/position"][6:9]
    assert positions.shape == (3, 2500, 2) and seconds > 0
    # LagrangeBench's own mse of the rollout is the benchmark's metric of it.
    assert compare.rollout_mse(positions, truth, [1.0, 1.0]) == pytest.approx(own_mse, rel=1e-4)
