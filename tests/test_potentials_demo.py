"""The potentials demo: a tiny `train`, `eval` and resumed `train` on aspirin (SchNet), whose
reported errors are NumPy's on the saved test predictions and whose references are ASE's
energies and forces of the test frames; the EMT set with MACE and stress, PaiNN and NequIP, a
falling training loss (slow); batches that visit every training structure once an epoch;
PaiNN's own learning rate."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("e3nn_jax")

from gnkit import experiments  # noqa: E402
from gnkit.demos.potentials import CONFIGS, DEMO  # noqa: E402
from gnkit.demos.potentials.data import load_data, make_batch  # noqa: E402

TINY = CONFIGS["tiny"]


def _train(config, run_dir):
    return experiments.run_verb(DEMO, "train", config, run_dir, progress=False)


def _records(run_dir, name, kind):
    lines = (run_dir / f"metrics_{name}.jsonl").read_text().splitlines()
    return [record for record in map(json.loads, lines) if record["kind"] == kind]


def _check_errors_against_numpy(results, run_dir, name, stress=False):
    saved = np.load(run_dir / f"predictions_{name}.npz")
    test = results["models"][name]["test"]
    energy_error = saved["energy"] - saved["energy_ref"]
    expected = {
        "energy_mae": np.mean(np.abs(energy_error)) * 1000,
        "energy_rmse": np.sqrt(np.mean(energy_error**2)) * 1000,
        "energy_per_atom_mae": np.mean(np.abs(energy_error / saved["n_atoms"])) * 1000,
        "forces_mae": np.mean(np.abs(saved["forces"] - saved["forces_ref"])) * 1000,
        "forces_rmse": np.sqrt(np.mean((saved["forces"] - saved["forces_ref"]) ** 2)) * 1000,
    }
    if stress:
        expected["stress_mae"] = np.mean(np.abs(saved["stress"] - saved["stress_ref"])) * 1000
    for key, value in expected.items():
        assert test[key] == pytest.approx(value, abs=1e-4), key
    return saved


def test_tiny_aspirin_train_eval_resume(tmp_path):
    from gnkit.atoms.datasets import load_aspirin

    config = dataclasses.replace(TINY, model=("schnet",))
    run_dir = tmp_path / "run"
    results = _train(config, run_dir)
    assert results["sizes"] == {"train": 10, "validation": 10, "test": 10}
    saved = _check_errors_against_numpy(results, run_dir, "schnet")
    # The references are the shipped test frames' (evenly spaced rows), energies in float64.
    frames = load_aspirin("test")
    rows = np.linspace(0, len(frames) - 1, 10).round().astype(int)
    np.testing.assert_allclose(
        saved["energy_ref"], [frames[row].get_potential_energy() for row in rows], atol=1e-6
    )
    np.testing.assert_allclose(
        saved["forces_ref"], np.concatenate([frames[row].get_forces() for row in rows]),
        atol=1e-5,
    )
    assert np.all(saved["n_atoms"] == 21)
    # eval reports the same saved best state.
    evaluated = experiments.run_verb(DEMO, "eval", None, run_dir, progress=False)
    assert evaluated["models"]["schnet"]["test"] == results["models"]["schnet"]["test"]
    # A longer run resumes from update 4 (2 epochs of 2 updates) instead of starting again.
    longer = dataclasses.replace(config, epochs=3)
    _train(longer, run_dir)
    assert [record["step"] for record in _records(run_dir, "schnet", "train")] == [2, 4, 6]
    assert [record["step"] for record in _records(run_dir, "schnet", "eval")] == [2, 4, 6]


def test_batches_visit_every_training_structure_once_an_epoch(tmp_path):
    config = dataclasses.replace(TINY, max_train=7, batch_size=3)
    data = load_data(config, experiments.RunDir(tmp_path / "run", config), progress=False)
    batch = make_batch(config, data)
    assert config.steps_per_epoch == math.ceil(7 / 3) == 3
    energies = {float(graph.globals["energy"][0]) for graph in data.splits["train"]}
    for epoch in range(2):
        seen = []
        for position in range(3):
            graph = batch(epoch * 3 + position)
            structure = np.repeat(np.arange(len(graph.n_node)), graph.n_node)
            real = len(np.unique(structure[graph.nodes["atomic_numbers"] > 0]))
            assert real == (3 if position < 2 else 1)
            seen += [float(energy) for energy in graph.globals["energy"][:real]]
        assert sorted(seen) == sorted(energies)
    first, again = batch(4), batch(4)
    np.testing.assert_array_equal(first.nodes["positions"], again.nodes["positions"])


@pytest.mark.slow
def test_tiny_emt_mace_reports_stress_errors(tmp_path):
    config = dataclasses.replace(TINY, data="emt", model=("mace",))
    run_dir = tmp_path / "run"
    results = _train(config, run_dir)
    assert results["sizes"] == {"train": 8, "validation": 4, "test": 4}
    saved = _check_errors_against_numpy(results, run_dir, "mace", stress=True)
    from gnkit.atoms.datasets import make_emt_dataset

    held_out = make_emt_dataset(16, 0)[12:]
    np.testing.assert_allclose(
        saved["energy_ref"], [atoms.get_potential_energy() for atoms in held_out], atol=1e-6
    )
    np.testing.assert_allclose(saved["n_atoms"], [len(atoms) for atoms in held_out])


@pytest.mark.slow
def test_training_loss_is_finite_and_falls(tmp_path):
    config = dataclasses.replace(TINY, model=("schnet",), epochs=15, schnet_learning_rate=5e-3)
    run_dir = tmp_path / "run"
    _train(config, run_dir)
    losses = [record["loss"] for record in _records(run_dir, "schnet", "train")]
    assert len(losses) == 15 and np.all(np.isfinite(losses))
    assert np.mean(losses[-3:]) < 0.85 * np.mean(losses[:3])


@pytest.mark.slow
def test_tiny_painn_and_nequip_train_and_report_numpy_errors(tmp_path):
    config = dataclasses.replace(TINY, model=("painn", "nequip"))
    run_dir = tmp_path / "run"
    results = _train(config, run_dir)
    for name in ("painn", "nequip"):
        _check_errors_against_numpy(results, run_dir, name)
        assert results["models"][name]["updates"] == 4


def test_schnet_and_painn_train_at_their_own_learning_rates_and_the_others_at_the_runs():
    from gnkit.demos.potentials import COMPARISON

    config = dataclasses.replace(
        CONFIGS["default"], model=("painn", "mace", "schnet", "nequip"), schnet_learning_rate=2e-3
    )
    rates = {name: COMPARISON.config_of(name, config, None).learning_rate for name in config.model}
    assert rates == {"painn": 1e-3, "mace": 1e-2, "schnet": 2e-3, "nequip": 1e-2}
    shared = dataclasses.replace(config, painn_learning_rate=0.0, schnet_learning_rate=0.0)
    assert {COMPARISON.config_of(name, shared, None).learning_rate
            for name in ("painn", "schnet")} == {1e-2}


@pytest.mark.parametrize("decay", [0.0, 0.9])
def test_moving_average_follows_the_trained_variables_as_torch_ema_does(decay):
    import jax
    import jax.numpy as jnp
    import optax

    from gnkit.demos.potentials.training import averaged, with_moving_average

    inner = optax.sgd(0.1)
    optimizer = with_moving_average(inner, decay)
    target = jnp.array([1.0, -2.0, 3.0])
    params = {"model": {"w": jnp.zeros(3)}, "average": {"w": jnp.zeros(3)}}
    state = optimizer.init(params)

    def loss(params):  # the potentials' losses read only the model's variables
        return jnp.sum((params["model"]["w"] - target) ** 2)

    model, average = np.zeros(3), np.zeros(3)  # NumPy: plain SGD and torch_ema's recursion
    for t in range(1, 26):
        updates, state = optimizer.update(jax.grad(loss)(params), state, params)
        params = optax.apply_updates(params, updates)
        model = model - 0.1 * 2 * (model - np.array(target))
        step_decay = min(decay, (1 + t) / (10 + t))
        average = average - (1 - step_decay) * (average - model)
        np.testing.assert_allclose(params["model"]["w"], model, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(averaged(params)["w"], average, rtol=1e-5, atol=1e-6)
    if decay == 0.0:
        np.testing.assert_array_equal(averaged(params)["w"], params["model"]["w"])
    else:  # the average lags the model on its way to the target
        assert np.all(np.abs(average - np.array(target)) > np.abs(model - np.array(target)))
