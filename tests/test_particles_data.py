"""gnkit.particles.data: the shipped JAX-SPH sets in LagrangeBench's layout, and their physics.

The shipped TGV 2D set (`gnkit/data/particles/tgv2d`, made by `benchmarks/sph_data.py`) is a
decaying Taylor-Green vortex, u = -cos(2 pi x) sin(2 pi y) exp(-8 pi^2 nu t),
v = sin(2 pi x) cos(2 pi y) exp(-8 pi^2 nu t) on the periodic unit box (JAX-SPH `cases/tgv.py`,
nu = 0.01 from `defaults.py`, rho = 1), so its kinetic energy decays as exp(-16 pi^2 nu t), up
to the numerical dissipation of SPH at this resolution (the tolerances below).
Velocities come from finite differences of the positions with the periodic wrap.
"""

import json
import os
import pathlib
import subprocess

import h5py
import numpy as np
import pytest

from gnkit.particles import (
    finite_difference_velocities,
    kinetic_energy,
    load_particle_dataset,
    particle_dataset_path,
    periodic_displacements,
    read_split,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPH_PYTHON = pathlib.Path(
    os.environ.get("GNKIT_SPH_VENV", pathlib.Path.home() / ".cache" / "gnkit-sph-venv")
) / "bin" / "python"
# What the SPH resolution allows. LagrangeBench's TGV run is standard weakly compressible SPH
# (no transport velocity, zero background pressure, c = 10 u) at 50 particles per wavelength:
# it starts at the viscous rate (first frame pair within 10% of 16 pi^2 nu; the shipped set:
# -3%) and then, as particle disorder grows, dissipates faster than the continuum (fitted over
# t <= 1: +27%). So the fitted rate must lie between the analytic rate and 1.35 times it, the
# decay must stay exponential (log kinetic energy within 0.05 of the fitted line), and the first
# frame's mean kinetic energy within 3% of the analytic 1/4 exp(-16 pi^2 nu t).
EXCESS_DISSIPATION_LIMIT = 1.35
INITIAL_RATE_TOLERANCE = 0.10
LOG_LINEARITY_TOLERANCE = 0.05
INITIAL_ENERGY_TOLERANCE = 0.03


def _kinetic_energy(positions, box, frame_dt):
    """Mean kinetic energy per unit mass [T - 1] at the frame midpoints, by NumPy alone."""
    delta = np.diff(positions.astype(np.float64), axis=0)
    delta -= box * np.round(delta / box)
    return 0.5 * np.mean(np.sum((delta / frame_dt) ** 2, axis=-1), axis=-1)


def test_periodic_displacements_wrap_across_the_box_and_velocities_divide_by_the_frame_time():
    positions = np.array([[[0.99, 0.5]], [[0.01, 0.52]], [[0.03, 1.98]]])
    box = np.array([1.0, 2.0])
    expected = np.array([[[0.02, 0.02]], [[0.02, -0.54]]])
    np.testing.assert_allclose(periodic_displacements(positions, box), expected, atol=1e-12)
    np.testing.assert_allclose(
        finite_difference_velocities(positions, box, 0.04), expected / 0.04, atol=1e-10
    )
    unwrapped = periodic_displacements(positions, box, periodic=np.array([False, True]))
    np.testing.assert_allclose(unwrapped[0, 0], [-0.98, 0.02], atol=1e-12)


@pytest.mark.parametrize("name", ["tgv2d", "rpf2d"])
def test_reader_shapes_and_metadata_agree_with_the_files(name):
    path = particle_dataset_path(name)
    dataset = load_particle_dataset(path)
    metadata = json.loads((path / "metadata.json").read_text())
    assert dataset.metadata == metadata
    dim, n_particles = metadata["dim"], metadata["num_particles_max"]
    assert len(dataset.splits["train"]) == metadata["num_trajs_train"]
    assert len(dataset.splits["test"]) == metadata["num_trajs_test"]
    box = np.asarray(metadata["bounds"])[:, 1] - np.asarray(metadata["bounds"])[:, 0]
    np.testing.assert_allclose(dataset.box, box)
    assert dataset.frame_dt == pytest.approx(metadata["dt"] * metadata["write_every"])
    for split, trajectories in dataset.splits.items():
        length = metadata["sequence_length_train" if split == "train" else "sequence_length_test"]
        with h5py.File(path / f"{split}.h5", "r") as handle:
            assert sorted(handle) == [str(i).zfill(5) for i in range(len(trajectories))]
            for key, trajectory in zip(sorted(handle), trajectories, strict=True):
                np.testing.assert_array_equal(trajectory.positions, handle[key]["position"][:])
        for trajectory in trajectories:
            assert trajectory.positions.shape == (length + 1, n_particles, dim)
            assert trajectory.positions.dtype == np.float32
            assert trajectory.particle_type.shape == (n_particles,)
            assert np.all(trajectory.particle_type == 0)  # every particle is fluid
            assert np.all((trajectory.positions >= 0) & (trajectory.positions <= box))
    assert read_split(path, "valid")[0].positions.shape[1:] == (n_particles, dim)
    # Particle counts and spacing of LagrangeBench's cases: 50 x 50 at dx 0.02, 40 x 80 at 0.025.
    assert (n_particles, metadata["dx"]) == {"tgv2d": (2500, 0.02), "rpf2d": (3200, 0.025)}[name]


def test_shipped_statistics_are_the_per_frame_displacement_moments():
    dataset = load_particle_dataset("tgv2d")
    trajectories = [t for split in dataset.splits.values() for t in split]
    velocities = [periodic_displacements(t.positions, dataset.box) for t in trajectories]
    vel_mean = np.mean([v.mean((0, 1)) for v in velocities], axis=0)
    vel_std = np.mean([((v - vel_mean) ** 2).mean((0, 1)) for v in velocities], axis=0) ** 0.5
    np.testing.assert_allclose(dataset.metadata["vel_mean"], vel_mean, atol=1e-6)
    np.testing.assert_allclose(dataset.metadata["vel_std"], vel_std, rtol=1e-4)


def test_tgv_kinetic_energy_decays_at_the_viscous_rate_of_the_2d_vortex():
    dataset = load_particle_dataset("tgv2d")
    metadata = dataset.metadata
    rate = 16 * np.pi**2 * metadata["viscosity"]  # rho = 1: kinematic = dynamic viscosity
    for trajectory in [t for split in dataset.splits.values() for t in split]:
        energy = _kinetic_energy(trajectory.positions, dataset.box, dataset.frame_dt)
        np.testing.assert_allclose(
            kinetic_energy(trajectory.positions, dataset.box, dataset.frame_dt), energy, rtol=1e-12
        )
        times = (np.arange(len(energy)) + 0.5) * dataset.frame_dt
        slope, intercept = np.polyfit(times, np.log(energy), 1)
        assert 1.0 <= -slope / rate <= EXCESS_DISSIPATION_LIMIT
        residual = np.log(energy) - (slope * times + intercept)
        assert np.abs(residual).max() < LOG_LINEARITY_TOLERANCE
        initial_rate = np.log(energy[0] / energy[1]) / dataset.frame_dt
        assert initial_rate == pytest.approx(rate, rel=INITIAL_RATE_TOLERANCE)
        # the mean of |u|^2 / 2 over the box is 1/4 at t = 0
        assert energy[0] == pytest.approx(0.25 * np.exp(-rate * times[0]),
                                          rel=INITIAL_ENERGY_TOLERANCE)


@pytest.mark.slow
@pytest.mark.skipif(not SPH_PYTHON.is_file(),
                    reason="no JAX-SPH venv (bash benchmarks/make_sph_venv.sh)")
def test_generator_writes_the_layout_in_the_jax_sph_venv(tmp_path):
    out = tmp_path / "tgv"
    subprocess.run(
        [str(SPH_PYTHON), str(ROOT / "benchmarks" / "sph_data.py"), "--case", "tgv2d",
         "--out", str(out), "--trajectories", "3", "--steps", "300", "--relax-steps", "20"],
        check=True, cwd=ROOT, capture_output=True, timeout=1200,
    )
    dataset = load_particle_dataset(out)
    assert [len(dataset.splits[s]) for s in ("train", "valid", "test")] == [1, 1, 1]
    assert dataset.splits["train"][0].positions.shape == (4, 2500, 2)
    assert dataset.metadata["case"] == "TGV" and dataset.metadata["dt"] == 0.0004
    assert dataset.metadata["default_connectivity_radius"] == 0.029  # 1.45 dx
    # the first frame is one step (dt 0.0004) after the lattice velocity: |u|^2 / 2 ~ 1/4
    energy = _kinetic_energy(dataset.splits["train"][0].positions, dataset.box, 0.04)
    assert energy[0] == pytest.approx(0.25, rel=0.1)


def test_a_path_of_the_wrong_type_is_one_line_naming_the_argument():
    with pytest.raises(TypeError, match=r"path must be a dataset folder .* got int 3"):
        load_particle_dataset(3)
