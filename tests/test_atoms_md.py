"""gnkit.atoms.md against ASE's VelocityVerlet and LennardJones calculator, in float64."""

import ase.io
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ase import Atoms, units
from ase.build import bulk
from ase.calculators.lj import LennardJones
from ase.md.velocitydistribution import thermalize_momenta
from ase.md.verlet import VelocityVerlet as AseVelocityVerlet

from gnkit.atoms import md

SIGMA, EPSILON, CUTOFF = 3.4, 0.0104, 6.0  # argon, in Å and eV
SMOOTH_START = 0.66 * CUTOFF  # ASE's default ro


CELL = 10.52 * np.eye(3)  # the argon crystal's cell (2 x 2 x 2 cubic cells of 5.26 Å)


def lj_energy(positions, neighbors):
    """ASE's smooth Lennard-Jones (`LennardJones(smooth=True)`) over the pairs, both directions,
    in `CELL` (or without a cell: the shifts are then zero). One function, so the jitted chunks
    compile once per setting across the tests."""
    vectors = (
        positions[neighbors.receivers] - positions[neighbors.senders]
        + neighbors.shifts @ jnp.asarray(CELL)
    )
    mask = neighbors.pair_mask
    r2 = jnp.where(mask, jnp.sum(vectors**2, axis=-1), 1.0)
    c6 = (SIGMA**2 / r2) ** 3
    rc2, ro2 = CUTOFF**2, SMOOTH_START**2
    switch = jnp.where(
        r2 < ro2, 1.0, jnp.where(r2 < rc2, (rc2 - r2) ** 2 * (rc2 + 2 * r2 - 3 * ro2)
                                 / (rc2 - ro2) ** 3, 0.0)
    )
    pair = 4 * EPSILON * (c6**2 - c6) * switch
    return 0.5 * jnp.sum(jnp.where(mask, pair, 0.0))


def argon(temperature=40.0, seed=0, rattle=0.05):
    atoms = bulk("Ar", "fcc", a=5.26, cubic=True).repeat(2)  # 32 atoms in CELL
    atoms.rattle(rattle, seed=seed)
    thermalize_momenta(atoms, temperature, rng=np.random.default_rng(seed))
    return atoms


def setup(atoms, skin=0.5, capacity=4096, seed=0):
    settings = md.NeighborSettings(CUTOFF, skin, atoms.cell[:], atoms.pbc, capacity)
    state = md.init_md_state(
        atoms.positions, atoms.get_masses(), lj_energy, settings, momenta=atoms.get_momenta(),
        seed=seed,
    )
    return settings, lj_energy, state


def frames(state, energy_fn, integrator, settings, n_steps, write_every=1):
    return md._jitted_chunk(
        state, energy_fn, integrator, settings, n_steps // write_every, write_every
    )


def test_nve_matches_ase_velocity_verlet():
    atoms = argon(temperature=60.0)
    timestep = 5.0 * units.fs
    with jax.enable_x64(True):
        settings, energy_fn, state = setup(atoms)
        ase_atoms = atoms.copy()
        ase_atoms.calc = LennardJones(sigma=SIGMA, epsilon=EPSILON, rc=CUTOFF, smooth=True)
        np.testing.assert_allclose(state.forces, ase_atoms.get_forces(), atol=1e-12)
        np.testing.assert_allclose(state.energy, ase_atoms.get_potential_energy(), rtol=1e-12)
        _, got = frames(state, energy_fn, md.VelocityVerlet(timestep), settings, 50)
        dynamics = AseVelocityVerlet(ase_atoms, timestep=timestep)
        for step in range(50):
            dynamics.run(1)
            np.testing.assert_allclose(got["positions"][step], ase_atoms.positions, atol=1e-10)
            np.testing.assert_allclose(got["momenta"][step], ase_atoms.get_momenta(), atol=1e-10)
            np.testing.assert_allclose(
                got["energy"][step], ase_atoms.get_potential_energy(), rtol=1e-10
            )


def total_energy_error(atoms, timestep, n_steps):
    """Max |E_total(t) - E_total(0)| per atom over `n_steps` of velocity Verlet."""
    settings, energy_fn, state = setup(atoms)
    start = float(state.energy + md.kinetic_energy(state.momenta, state.masses))
    _, got = frames(state, energy_fn, md.VelocityVerlet(timestep), settings, n_steps)
    momenta, masses = np.asarray(got["momenta"]), np.asarray(state.masses)
    kinetic = 0.5 * np.sum(momenta**2 / masses[None, :, None], axis=(1, 2))
    return np.max(np.abs(np.asarray(got["energy"]) + kinetic - start)) / len(atoms)


def test_nve_energy_conservation_second_order():
    # Velocity Verlet is symplectic and second order: the total energy oscillates without drift
    # with an amplitude ~ dt^2, so halving dt over the same 400 fs divides the error by ~4.
    atoms = argon(temperature=40.0)
    with jax.enable_x64(True):
        coarse = total_energy_error(atoms, 2.0 * units.fs, 200)
        fine = total_energy_error(atoms, 1.0 * units.fs, 400)
    assert coarse < 1e-5  # eV/atom, well below kT = 3.4e-3 eV at 40 K
    assert 3.0 < coarse / fine < 5.0


def test_verlet_list_same_as_rebuilding_every_step():
    atoms = argon(temperature=300.0)  # hot: atoms cross half the skin within the run
    integrator = md.VelocityVerlet(5.0 * units.fs)
    with jax.enable_x64(True):
        settings, energy_fn, state = setup(atoms, skin=0.5)
        skin_state, skin_frames = frames(state, energy_fn, integrator, settings, 50)
        full_settings, _, full_state = setup(atoms, skin=0.0)
        every_state, every_frames = frames(full_state, energy_fn, integrator, full_settings, 50)
    np.testing.assert_allclose(skin_frames["positions"], every_frames["positions"], atol=1e-10)
    np.testing.assert_allclose(skin_frames["momenta"], every_frames["momenta"], atol=1e-10)
    assert 0 < int(skin_state.rebuilds) < 50
    assert int(every_state.rebuilds) == 50  # a zero skin rebuilds after every move
    assert not bool(skin_state.overflow)


def test_overflow_inside_a_chunk_grows_and_redoes_it():
    # two atoms 8 Å apart approach: the list at capacity 1 holds no pair at the start and
    # overflows at a rebuild inside the chunk, which is then run again at a grown capacity
    integrator = md.VelocityVerlet(5.0 * units.fs)
    pair = Atoms("Ar2", positions=[[0, 0, 0], [8.0, 0, 0]])
    speed = 0.02  # Å per ASE time unit, ~1.5 Å over 200 steps of 5 fs
    pair.set_velocities([[speed, 0, 0], [-speed, 0, 0]])
    results = []
    with jax.enable_x64(True):
        for capacity in (1, 64):
            settings, energy_fn, state = setup(pair, skin=1.0, capacity=capacity)
            assert int(state.verlet.neighbors.n_pairs) == 0
            results.append(md.run_md(state, energy_fn, 200, integrator, settings,
                                     chunk_steps=100))
    (small_end, small_stats), (large_end, large_stats) = results
    assert small_stats.redone_chunks >= 1 and large_stats.redone_chunks == 0
    assert small_stats.capacity >= 2
    assert int(small_end.verlet.neighbors.n_pairs) == 2
    assert not bool(small_end.overflow)
    np.testing.assert_allclose(small_end.positions, large_end.positions, atol=1e-12)
    np.testing.assert_allclose(small_end.momenta, large_end.momenta, atol=1e-12)


@pytest.mark.slow
def test_too_small_first_list_grows_before_the_first_chunk():
    integrator = md.VelocityVerlet(5.0 * units.fs)
    atoms = argon(temperature=60.0)
    with jax.enable_x64(True):
        settings, energy_fn, small = setup(atoms, capacity=8)
        assert bool(small.overflow)
        grown, stats = md.run_md(small, energy_fn, 50, integrator, settings, write_every=1)
        large_settings, _, large = setup(atoms, capacity=4096)
        reference = frames(large, energy_fn, integrator, large_settings, 50)[0]
    np.testing.assert_allclose(grown.positions, reference.positions, atol=1e-10)
    np.testing.assert_allclose(grown.momenta, reference.momenta, atol=1e-10)
    assert int(grown.verlet.neighbors.n_pairs) <= stats.capacity and not bool(grown.overflow)


def test_langevin_reproducible_with_seed():
    atoms = argon(temperature=40.0)
    integrator = md.Langevin(5.0 * units.fs, temperature=40.0, friction=0.02 / units.fs)
    with jax.enable_x64(True):
        ends = []
        for seed in (3, 3, 4):
            settings, energy_fn, state = setup(atoms, seed=seed)
            ends.append(frames(state, energy_fn, integrator, settings, 20)[0].positions)
    np.testing.assert_array_equal(ends[0], ends[1])
    assert np.max(np.abs(ends[0] - ends[2])) > 1e-6


@pytest.mark.slow
def test_langevin_mean_temperature():
    # 32 atoms: the instantaneous temperature has relative spread sqrt(2 / 96) = 0.14; with a
    # 25 fs momentum relaxation time, 10 ps hold ~200 independent samples, so the mean is within
    # ~1% of the target (1 sigma); BAOAB's kinetic bias at dt * omega ~ 0.06 is ~0.1%. 5% is
    # ~5 sigma.
    target = 60.0
    atoms = argon(temperature=target)
    integrator = md.Langevin(5.0 * units.fs, temperature=target, friction=0.04 / units.fs)
    with jax.enable_x64(True):
        settings, energy_fn, state = setup(atoms, seed=1)
        state, _ = frames(state, energy_fn, integrator, settings, 200, write_every=200)
        _, got = frames(state, energy_fn, integrator, settings, 2000)
        masses, momenta = np.asarray(state.masses), np.asarray(got["momenta"])
    kinetic = 0.5 * np.sum(momenta**2 / masses[None, :, None], axis=(1, 2))
    mean_temperature = np.mean(2 * kinetic / (3 * len(atoms) * units.kB))
    assert abs(mean_temperature / target - 1) < 0.05


def test_trajectory_reads_back(tmp_path):
    atoms = argon(temperature=60.0)
    path = tmp_path / "md.xyz"
    with jax.enable_x64(True):
        settings, energy_fn, state = setup(atoms)
        integrator = md.VelocityVerlet(5.0 * units.fs)
        state, stats = md.run_md(state, energy_fn, 30, integrator, settings, chunk_steps=10,
                                 write_every=5, trajectory=path, atoms=atoms, progress=True)
        ase_atoms = atoms.copy()
        ase_atoms.calc = LennardJones(sigma=SIGMA, epsilon=EPSILON, rc=CUTOFF, smooth=True)
        AseVelocityVerlet(ase_atoms, timestep=5.0 * units.fs).run(30)
    images = ase.io.read(path, ":")
    assert stats.frames == len(images) == 7
    assert [image.info["step"] for image in images] == [0, 5, 10, 15, 20, 25, 30]
    last = images[-1]
    np.testing.assert_allclose(last.positions, ase_atoms.positions, atol=1e-8)
    np.testing.assert_allclose(last.get_momenta(), ase_atoms.get_momenta(), atol=1e-8)
    np.testing.assert_allclose(last.get_forces(), ase_atoms.get_forces(), atol=1e-8)
    np.testing.assert_allclose(last.get_potential_energy(), ase_atoms.get_potential_energy(),
                               rtol=1e-8)
    np.testing.assert_allclose(images[0].positions, atoms.positions, atol=1e-8)


@pytest.mark.slow
def test_model_energy_fn_matches_the_host_list_graph():
    # the MD graph (Verlet list pairs, one padding atom) against the host list's graph
    # (atoms_to_graph through vesin), differentiated by energy_forces_stress
    from gnkit.atoms import atoms_to_graph
    from gnkit.atoms.nn import SchNet
    from gnkit.atoms.potential import energy_forces_stress, structure_energies

    model = SchNet(species=(18,), cutoff=5.0, features=8, num_filters=8, num_interactions=1,
                   num_basis=8)
    atoms = argon(temperature=60.0, rattle=0.2)
    with jax.enable_x64(True):
        settings = md.NeighborSettings(5.0, 0.5, atoms.cell[:], atoms.pbc, 4096)
        graph = atoms_to_graph(atoms, 5.0, targets=(), dtype=np.float64)
        variables = jax.tree.map(
            lambda x: np.asarray(x, np.float64), model.init(jax.random.key(0), graph)
        )
        energy_fn = md.model_energy_fn(model, variables, atoms.numbers, atoms.cell[:], atoms.pbc)
        state = md.init_md_state(atoms.positions, atoms.get_masses(), energy_fn, settings)
        reference = jax.jit(lambda graph: energy_forces_stress(
            lambda g: structure_energies(model.apply(variables, g), g), graph, stress=False
        ))(graph)
        np.testing.assert_allclose(state.energy, reference["energy"][0], rtol=1e-12)
        np.testing.assert_allclose(state.forces, reference["forces"], atol=1e-12)
    assert np.abs(np.asarray(state.forces)).max() > 1e-6


def test_positions_energy_without_neighbors_matches_numpy_verlet():
    # a harmonic spring between two atoms, E = k (|r1 - r0| - d)^2 / 2, no neighbour list
    stiffness, rest, timestep, masses = 2.0, 1.5, 2.0 * units.fs, np.array([1.0, 4.0])

    def spring(positions):
        return 0.5 * stiffness * (jnp.linalg.norm(positions[1] - positions[0]) - rest) ** 2

    def numpy_forces(positions):
        bond = positions[1] - positions[0]
        length = np.linalg.norm(bond)
        pull = stiffness * (length - rest) * bond / length
        return np.stack([pull, -pull])

    positions = np.array([[0.0, 0.0, 0.0], [1.9, 0.2, -0.1]])
    momenta = np.array([[0.01, 0.0, 0.02], [0.0, -0.03, 0.0]])
    with jax.enable_x64(True):
        energy_fn = md.positions_energy_fn(spring)
        state = md.init_md_state(positions, masses, energy_fn, momenta=momenta)
        state, stats = md.run_md(state, energy_fn, 40, md.VelocityVerlet(timestep),
                                 chunk_steps=20)
    forces = numpy_forces(positions)
    for _ in range(40):
        momenta = momenta + 0.5 * timestep * forces
        positions = positions + timestep * momenta / masses[:, None]
        forces = numpy_forces(positions)
        momenta = momenta + 0.5 * timestep * forces
    np.testing.assert_allclose(state.positions, positions, atol=1e-12)
    np.testing.assert_allclose(state.momenta, momenta, atol=1e-12)
    assert int(state.step) == 40 and stats.capacity == 0 and stats.rebuilds == 0


@pytest.mark.parametrize(
    ("argument", "value"),
    [("n_steps", -1), ("n_steps", 2.0), ("chunk_steps", 0), ("write_every", 0)],
)
def test_run_md_rejects_bad_step_counts(argument, value):
    energy_fn = md.positions_energy_fn(lambda positions: jnp.sum(positions**2))
    state = md.init_md_state(np.zeros((1, 3), np.float32), np.ones(1), energy_fn)
    counts = {"n_steps": 2, "chunk_steps": 2, "write_every": 1, argument: value}
    n_steps = counts.pop("n_steps")
    with pytest.raises(ValueError, match=argument):
        md.run_md(state, energy_fn, n_steps, md.VelocityVerlet(1.0), **counts)
