"""benchmarks/md_stability: its drift and bond metrics against NumPy on hand-made trajectories,
and the aspirin case end to end at tiny size (an untrained few-channel SchNet, a few steps)."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("e3nn_jax")

from benchmarks import md_stability  # noqa: E402
from gnkit import experiments  # noqa: E402
from gnkit.demos.potentials.config import CONFIGS  # noqa: E402


def test_energy_drift_is_the_least_squares_slope_per_atom():
    n_atoms = 8
    times = np.linspace(0.0, 2.0, 41)
    wiggle = 0.003 * np.sin(7.0 * times)
    total = -12.0 + n_atoms * 0.0025 * times + wiggle
    per_atom = total / n_atoms
    centred = times - times.mean()
    slope = np.sum(centred * (per_atom - per_atom.mean())) / np.sum(centred**2)
    metrics = md_stability.energy_drift(times, total, n_atoms)
    assert metrics["drift_ev_per_atom_per_ps"] == pytest.approx(slope, rel=1e-9)
    assert metrics["drift_ev_per_atom_per_ps"] == pytest.approx(0.0025, abs=2e-4)
    assert metrics["max_deviation_ev_per_atom"] == pytest.approx(
        np.max(np.abs(per_atom - per_atom[0])), rel=1e-12)


def test_bonds_and_their_largest_change_on_a_stretched_water():
    # O at the origin, H at 0.96 Å on x and y: the two O-H pairs are bonds, H-H (1.36 Å) is not
    # (1.2 * (0.31 + 0.31) = 0.744 Å)
    start = np.array([[0.0, 0.0, 0.0], [0.96, 0.0, 0.0], [0.0, 0.96, 0.0]])
    bonds = md_stability.bonds_at(start, np.array([8, 1, 1]))
    assert bonds.tolist() == [[0, 1], [0, 2]]
    frames = np.stack([start, start, start])
    frames[1, 1, 0] += 0.1           # the first O-H 0.1 Å longer
    frames[2, 2, 1] -= 0.25          # the second 0.25 Å shorter
    frames[2, 0] += [0.0, 0.0, 0.3]  # and O lifted: both bonds change
    lengths = np.array([[np.linalg.norm(f[0] - f[1]), np.linalg.norm(f[0] - f[2])]
                        for f in frames])
    expected = np.abs(lengths - lengths[0]).max(axis=1)
    assert np.allclose(md_stability.bond_changes(frames, bonds), expected)
    assert md_stability.bond_changes(frames, bonds)[1] == pytest.approx(0.1)


def _tiny_potential(tmp_path, data_name: str):
    from gnkit.demos.potentials import training
    from gnkit.demos.potentials.data import load_data
    from gnkit.demos.potentials.models import build_model, scale_shift

    config = dataclasses.replace(CONFIGS["tiny"], data=data_name, model=("schnet",))
    run = experiments.RunDir(tmp_path / "run", config)
    data = load_data(config, run, progress=False)
    params = training.averaged(training.init("schnet", config, data))
    return build_model("schnet", config, data), params, scale_shift(data), config, data, run


def test_tiny_aspirin_case_runs_and_its_metrics_match_its_trajectory(tmp_path):
    import ase.io

    potential = _tiny_potential(tmp_path, "aspirin")
    result = md_stability.aspirin_case(
        potential, tmp_path, steps=20, ase_steps=20, write_every=10, chunk=10, timed_steps=10,
        rounds=1, peer_python=None, peer_model=None)  # one compiled chunk shape throughout
    frames = ase.io.read(tmp_path / "aspirin_jax.xyz", index=":")
    assert len(frames) == 3 and result["atoms"] == 21
    total = np.array([f.get_potential_energy() + f.get_kinetic_energy() for f in frames])
    assert result["jax"]["max_deviation_ev_per_atom"] == pytest.approx(
        np.max(np.abs(total - total[0])) / 21, rel=1e-6, abs=1e-9)
    # aspirin: 21 atoms, 21 bonds (13 between heavy atoms, 8 to hydrogens)
    assert result["bonds"] == 21
    # the JAX loop and ASE's VelocityVerlet on the same calculator follow one trajectory
    assert result["jax_vs_ase"]["50_fs"]["max_position_difference"] < 1e-3
    assert set(result["speed"]["steps_per_s"]) == {"gnkit_jax_loop", "gnkit_ase_calculator"}


@pytest.mark.slow
def test_tiny_emt_case_runs_beside_ase_emt(tmp_path):
    potential = _tiny_potential(tmp_path, "emt")
    result = md_stability.emt_case(potential, tmp_path, steps=10, ref_steps=10, write_every=10,
                                   chunk=10, repeats=2)
    assert result["atoms"] == 32
    # ASE's EMT at 1 fs conserves energy to well under a meV per atom over 10 steps
    assert result["emt_reference"]["max_deviation_ev_per_atom"] < 1e-4
    assert np.isfinite(result["jax"]["drift_ev_per_atom_per_ps"])
