"""gnkit.atoms.Calculator: forces and stress against ASE's finite differences of its own energy,
the energy against the model applied to an independently built graph, the NNX twin, ASE's BFGS
and VelocityVerlet driving it, and compiles counted by JAX's compile events during an MD run."""

import jax
import numpy as np
import pytest
from _atoms_graphs import graph_of, random_molecule
from ase import units
from ase.build import bulk
from ase.calculators.calculator import PropertyNotImplementedError
from ase.calculators.fd import calculate_numerical_forces, calculate_numerical_stress
from ase.md.verlet import VelocityVerlet
from ase.optimize import BFGS

import gnkit as gn
import gnkit.atoms.nnx  # noqa: F401  (registers the atoms twins for from_linen)
from gnkit.atoms import Calculator
from gnkit.atoms.nn import MACE, SchNet
from gnkit.atoms.potential import ScaleShift, structure_energies

CUTOFF = 3.0
MODEL = SchNet(species=(1, 29), cutoff=CUTOFF, features=8, num_filters=8, num_interactions=1,
               num_basis=6)


def crystal(seed=0):
    """8 Cu atoms in a sheared, rattled fcc cell (periodic in 3-D)."""
    atoms = bulk("Cu", "fcc", a=3.6, cubic=True).repeat((2, 1, 1))
    atoms.set_cell(atoms.cell[:] + np.array([[0, 0.1, 0], [0.2, 0, 0], [0.1, -0.2, 0]]),
                   scale_atoms=True)
    atoms.rattle(0.1, seed=seed)
    return atoms


@pytest.fixture(scope="module")
def variables():
    return jax.jit(MODEL.init)(jax.random.key(0), graph_of(crystal(), CUTOFF, np.float32))


@pytest.fixture(scope="module")
def calculator(variables):
    """A float32 calculator shared by the tests that do not count its compiles."""
    return Calculator(MODEL, variables)


def test_forces_and_stress_are_derivatives_of_the_energy(variables):
    with jax.enable_x64(True):
        atoms = crystal(seed=1)
        atoms.calc = Calculator(MODEL, variables, dtype=np.float64)
        energy = atoms.get_potential_energy()
        graph = graph_of(atoms, CUTOFF)
        weights = jax.tree.map(lambda x: np.asarray(x, np.float64), variables)
        unpadded = jax.jit(lambda graph: structure_energies(MODEL.apply(weights, graph), graph))(
            graph)[0]
        np.testing.assert_allclose(energy, unpadded, rtol=1e-12)
        assert atoms.get_potential_energy(force_consistent=True) == energy
        np.testing.assert_allclose(
            atoms.get_forces(), calculate_numerical_forces(atoms, eps=1e-5), atol=1e-7
        )
        np.testing.assert_allclose(
            atoms.get_stress(), calculate_numerical_stress(atoms, eps=1e-6), atol=1e-7
        )
        assert np.abs(atoms.get_stress()).max() > 1e-4


def test_nnx_twin_gives_the_linen_numbers_and_molecules_have_no_stress(variables, calculator):
    atoms = crystal(seed=2)
    twin = Calculator(gn.nnx.from_linen(MODEL, variables))
    for name in ("energy", "forces", "stress"):
        np.testing.assert_allclose(calculator.get_property(name, atoms),
                                   twin.get_property(name, atoms), rtol=1e-5, atol=1e-6)
    molecule = random_molecule(np.random.default_rng(0), [29, 1, 1])
    molecule.calc = twin
    assert np.isfinite(molecule.get_forces()).all()
    with pytest.raises(PropertyNotImplementedError, match="periodic along all three"):
        molecule.get_stress()


def test_bfgs_lowers_the_energy(calculator):
    atoms = crystal(seed=3)
    atoms.calc = calculator
    start = atoms.get_potential_energy()
    optimizer = BFGS(atoms, logfile=None, maxstep=0.05)
    optimizer.run(fmax=1e-4, steps=5)
    assert optimizer.get_number_of_steps() == 5
    assert atoms.get_potential_energy() < start - 1e-4


def test_md_run_compiles_at_most_twice(variables):
    compiles = []

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    atoms = crystal(seed=4)
    atoms.calc = Calculator(MODEL, variables)
    atoms.set_momenta(np.random.default_rng(0).normal(scale=0.3, size=(len(atoms), 3)))
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        start = atoms.positions.copy()
        VelocityVerlet(atoms, timestep=2 * units.fs).run(20)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert np.abs(atoms.positions - start).max() > 0.01
    assert 1 <= len(compiles) <= 2
    assert len(atoms.calc.padded_sizes) == len(compiles)


def test_scale_shift_maps_outputs_to_energies(variables, calculator):
    atoms = crystal(seed=5)
    scale_shift = ScaleShift(scale=2.0, shift=0.5, species=(1, 29), reference_energies=(-1.0, -3.0))
    scaled = Calculator(MODEL, variables, scale_shift=scale_shift)
    plain_energy, plain_forces = (calculator.get_property(name, atoms) for name in ("energy",
                                                                                    "forces"))
    expected = 2.0 * plain_energy + len(atoms) * (0.5 - 3.0)
    np.testing.assert_allclose(scaled.get_property("energy", atoms), expected, rtol=1e-6)
    np.testing.assert_allclose(scaled.get_property("forces", atoms), 2.0 * plain_forces,
                               rtol=1e-5, atol=1e-6)


def test_float64_needs_x64_and_models_need_their_weights(variables):
    with pytest.raises(ValueError, match="x64"):
        Calculator(MODEL, variables, dtype=np.float64)
    with pytest.raises(ValueError, match="pass its variables as params"):
        Calculator(MODEL)
    with pytest.raises(ValueError, match="NNX module holds its own weights"):
        Calculator(gn.nnx.from_linen(MODEL, variables), variables)


@pytest.mark.slow
def test_mace_forces_and_stress_are_derivatives_of_the_energy():
    with jax.enable_x64(True):
        model = MACE(species=(29,), cutoff=CUTOFF, num_interactions=1, hidden_irreps="4x0e + 4x1o",
                     max_l=2, correlation=2, num_basis=4, radial_mlp=(8,), readout_features=4)
        atoms = crystal(seed=6)
        variables = jax.jit(model.init)(jax.random.key(1), graph_of(atoms, CUTOFF))
        atoms.calc = Calculator(model, variables, dtype=np.float64)
        np.testing.assert_allclose(
            atoms.get_forces(), calculate_numerical_forces(atoms, eps=1e-5), atol=1e-7
        )
        np.testing.assert_allclose(
            atoms.get_stress(), calculate_numerical_stress(atoms, eps=1e-6), atol=1e-7
        )
        assert np.abs(atoms.get_forces()).max() > 1e-4


def test_bad_arguments_and_unknown_species_are_named(variables, calculator):
    for options, message in (
        (dict(cutoff="far"), "cutoff"),
        (dict(cutoff=-1.0), "cutoff"),
        (dict(dtype=np.int32), "dtype must be a float"),
        (dict(edge_headroom=-1.0), "edge_headroom"),
        (dict(policy=3), "policy must be a gnkit.BucketPolicy"),
    ):
        with pytest.raises(ValueError, match=message):
            Calculator(MODEL, variables, **options)
    with pytest.raises(ValueError, match="atomic number 13 of atom 0 .* not among"):
        calculator.get_property("energy", bulk("Al", "fcc", a=4.05, cubic=True))
