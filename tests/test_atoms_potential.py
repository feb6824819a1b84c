"""gnkit.atoms.potential: structure energies, forces and stress of pair potentials against their
analytic derivatives, a finite strain derivative and ASE's LennardJones calculator; reference
energies, scale / shift and the loss on hand-made data with padding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, graph_of, random_molecule
from ase.build import bulk, molecule
from ase.calculators.lj import LennardJones

import gnkit as gn
from gnkit.atoms.features import edge_vectors, safe_norm
from gnkit.atoms.potential import (
    ScaleShift,
    energy_forces_stress,
    fit_reference_energies,
    loss,
    structure_energies,
)

STIFFNESS, REST = 1.7, 1.1


def pair_energy_fn(pair_energy):
    """`graph -> [n_graph]`: half of `pair_energy(r)` per directed edge, given to its receiver."""

    def energy_fn(graph):
        distances = safe_norm(edge_vectors(graph))
        atom_energies = jax.ops.segment_sum(
            0.5 * pair_energy(distances), graph.receivers, len(graph.nodes["atomic_numbers"])
        )
        return structure_energies(atom_energies, graph)

    return energy_fn


harmonic = pair_energy_fn(lambda r: 0.5 * STIFFNESS * (r - REST) ** 2)
predict = jax.jit(energy_forces_stress, static_argnums=0, static_argnames="stress")


def crystal(seed=0):
    atoms = bulk("Cu", "fcc", a=2.6, cubic=True)
    atoms.set_cell(atoms.cell[:] + np.array([[0, 0, 0], [0.3, 0, 0], [0.1, -0.2, 0]]),
                   scale_atoms=True)
    atoms.rattle(0.05, seed=seed)
    return atoms


def harmonic_reference(graph):
    """NumPy: energy, forces and virial `sum_e dE/dD_e (x) D_e` of `harmonic` on one structure."""
    vectors = np.asarray(edge_vectors(graph))
    distances = np.linalg.norm(vectors, axis=1)
    derivative = (0.5 * STIFFNESS * (distances - REST) / distances)[:, None] * vectors  # dE/dD
    gradient = np.zeros_like(np.asarray(graph.nodes["positions"]))
    np.add.at(gradient, np.asarray(graph.receivers), derivative)
    np.subtract.at(gradient, np.asarray(graph.senders), derivative)
    energy = np.sum(0.25 * STIFFNESS * (distances - REST) ** 2)
    return energy, -gradient, derivative.T @ vectors


def test_structure_energies_sum_each_structures_atoms_and_skip_padding():
    graph = gn.pad_with_graphs(batch_of([molecule("H2O"), molecule("CH4")], 2.0),
                               n_node=11, n_edge=30, n_graph=4)
    atom_energies = jnp.arange(1.0, 12.0)  # padding atoms 9 and 10 carry 9 and 10
    np.testing.assert_allclose(jax.jit(structure_energies)(atom_energies, graph),
                               [1 + 2 + 3, 4 + 5 + 6 + 7 + 8, 0, 0])


def test_forces_and_stress_of_a_harmonic_pair_energy_are_its_analytic_derivatives():
    with jax.enable_x64(True):
        structures = [crystal(), molecule("CH3OH")]
        graph = batch_of(structures, 2.0)
        result = predict(harmonic, graph)
        parts = [graph_of(atoms, 2.0) for atoms in structures]
        references = [harmonic_reference(part) for part in parts]
        np.testing.assert_allclose(result["energy"], [e for e, _, _ in references], rtol=1e-12)
        np.testing.assert_allclose(result["forces"], np.concatenate([f for _, f, _ in references]),
                                   atol=1e-12)
        volume = abs(np.linalg.det(structures[0].cell[:]))
        np.testing.assert_allclose(result["stress"][0], references[0][2] / volume, atol=1e-12)
        np.testing.assert_array_equal(result["stress"][1], np.zeros((3, 3)))  # no pbc


def test_stress_is_the_finite_strain_derivative_over_the_volume():
    with jax.enable_x64(True):
        graph = graph_of(crystal(seed=3), 2.0)
        stress = predict(harmonic, graph)["stress"][0]
        positions, cell = graph.nodes["positions"], graph.globals["cell"]
        volume = abs(np.linalg.det(cell[0]))
        step = 1e-5
        expected = np.zeros((3, 3))
        for a in range(3):
            for b in range(3):
                energies = []
                for sign in (1, -1):
                    strain = np.zeros((3, 3))
                    strain[a, b] += sign * step / 2
                    strain[b, a] += sign * step / 2
                    deformed = graph._replace(
                        nodes=dict(graph.nodes, positions=positions @ (np.eye(3) + strain)),
                        globals=dict(graph.globals, cell=cell @ (np.eye(3) + strain)))
                    energies.append(float(jax.jit(harmonic)(deformed)[0]))
                expected[a, b] = (energies[0] - energies[1]) / (2 * step) / volume
        np.testing.assert_allclose(stress, expected, rtol=1e-7, atol=1e-9)


def test_lennard_jones_matches_ases_calculator_on_a_periodic_cell():
    # ASE's LennardJones with smooth=False shifts each pair energy by -u(rc) inside rc and leaves
    # the forces and stress unshifted; the same shifted pair energy here, with no pair at rc,
    # gives the same energy, forces and stress.
    sigma, epsilon, cutoff = 1.0, 0.8, 2.2
    atoms = bulk("Ar", "fcc", a=1.6, cubic=True).repeat((2, 1, 1))
    atoms.set_cell(atoms.cell[:] + np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.1, 0]]),
                   scale_atoms=True)
    atoms.rattle(0.03, seed=1)
    calculator = LennardJones(sigma=sigma, epsilon=epsilon, rc=cutoff, smooth=False)
    atoms.calc = calculator

    def lennard_jones(r):
        inside = r < cutoff
        safe = jnp.where(inside, r, cutoff)
        shifted = 4 * epsilon * ((sigma / safe) ** 12 - (sigma / safe) ** 6
                                 - (sigma / cutoff) ** 12 + (sigma / cutoff) ** 6)
        return jnp.where(inside, shifted, 0.0)

    with jax.enable_x64(True):
        result = predict(pair_energy_fn(lennard_jones), graph_of(atoms, cutoff))
    np.testing.assert_allclose(result["energy"], [atoms.get_potential_energy()], rtol=1e-10)
    np.testing.assert_allclose(result["forces"], atoms.get_forces(), atol=1e-9)
    np.testing.assert_allclose(result["stress"][0], atoms.get_stress(voigt=False), atol=1e-9)
    assert np.abs(atoms.get_forces()).max() > 1.0  # a structure far from equilibrium


def test_padding_atoms_change_no_energy_force_or_stress():
    with jax.enable_x64(True):
        graph = batch_of([crystal(seed=5), molecule("H2O")], 2.0)
        padded = gn.pad_with_graphs(graph, n_node=21, n_edge=int(graph.n_edge.sum()) + 7,
                                    n_graph=4)
        exact = predict(harmonic, graph)
        result = predict(harmonic, padded)
        np.testing.assert_allclose(result["energy"][:2], exact["energy"], rtol=1e-12)
        np.testing.assert_allclose(result["energy"][2:], 0.0)
        np.testing.assert_allclose(result["forces"][:7], exact["forces"], atol=1e-12)
        np.testing.assert_array_equal(result["forces"][7:], 0.0)
        np.testing.assert_allclose(result["stress"][:2], exact["stress"], atol=1e-12)
        np.testing.assert_array_equal(result["stress"][2:], 0.0)
        without = predict(harmonic, padded, stress=False)
        assert sorted(without) == ["energy", "forces"]
        np.testing.assert_allclose(without["forces"], result["forces"], atol=1e-12)


SPECIES = (1, 6, 8)
E0 = np.array([-13.6, -1029.4, -2041.3])


def synthetic_structures(n_structures=12, seed=0):
    """Random H / C / O molecules whose energies are exactly sum E0 + 0.25 eV per atom."""
    rng = np.random.default_rng(seed)
    structures = []
    for _ in range(n_structures):
        numbers = rng.choice(SPECIES, size=rng.integers(2, 6))
        atoms = random_molecule(rng, numbers)
        counts = np.array([(numbers == z).sum() for z in SPECIES])
        atoms.info["energy"] = counts @ E0 + 0.25 * len(atoms)
        atoms.arrays["forces"] = rng.normal(scale=0.5, size=(len(atoms), 3))
        structures.append(atoms)
    return structures


def test_fit_reference_energies_recovers_known_e0s_and_ignores_padding():
    structures = synthetic_structures()
    for atoms in structures:  # remove the per-atom offset: energies are exactly sum E0
        atoms.info["energy"] -= 0.25 * len(atoms)
    graph = batch_of(structures, 1.5)
    padded = gn.pad_with_graphs(graph, n_node=int(graph.n_node.sum()) + 3,
                                n_edge=int(graph.n_edge.sum()) + 2, n_graph=len(structures) + 3)
    padded.globals["energy"][len(structures):] = 123.0  # padding graphs' energies never count
    np.testing.assert_allclose(fit_reference_energies(padded, SPECIES), E0, rtol=1e-10)
    graphs = [graph_of(atoms, 1.5) for atoms in structures]
    np.testing.assert_allclose(fit_reference_energies(graphs, SPECIES), E0, rtol=1e-10)


def test_scale_shift_fit_and_call():
    structures = synthetic_structures()
    graph = batch_of(structures, 1.5)
    scaling = ScaleShift.fit(graph, SPECIES)
    # E = sum (E0 + 0.25) is fitted exactly by E0' = E0 + 0.25, leaving no per-atom residual.
    np.testing.assert_allclose(scaling.reference_energies, E0 + 0.25, rtol=1e-10)
    assert abs(scaling.shift) < 1e-9
    forces = np.concatenate([atoms.arrays["forces"] for atoms in structures])
    np.testing.assert_allclose(scaling.scale, np.sqrt(np.mean(forces**2)), rtol=1e-12)
    hand = ScaleShift(scale=2.0, shift=0.5, species=(1, 8), reference_energies=(-1.0, -10.0))
    np.testing.assert_allclose(hand(jnp.array([1.0, 3.0, 7.0]), jnp.array([8, 1, 0])),
                               [2.0 + 0.5 - 10.0, 6.0 + 0.5 - 1.0, 0.0])


def test_scale_shift_gives_nan_for_a_species_outside_the_model():
    hand = ScaleShift(scale=2.0, shift=0.5, species=(1, 8), reference_energies=(-1.0, -10.0))
    energies = jax.jit(hand)(jnp.array([1.0, 3.0, 7.0]), jnp.array([8, 29, 0]))
    assert energies[0] == pytest.approx(2.0 + 0.5 - 10.0)
    assert np.isnan(energies[1])
    assert energies[2] == 0.0


def test_scale_shift_needs_one_reference_energy_per_species():
    with pytest.raises(ValueError, match="reference_energies has 1 values but species has 2"):
        ScaleShift(scale=1.0, shift=0.0, species=(1, 8), reference_energies=(-1.0,))


def test_loss_is_the_weighted_masked_mean_of_squared_errors():
    water = molecule("H2O")
    water.info["energy"] = -10.0
    water.arrays["forces"] = np.ones((3, 3))
    water.info["stress"] = np.zeros((3, 3))
    cell = bulk("Cu", "fcc", a=3.6)
    cell.info["energy"] = -4.0
    cell.info["stress"] = np.eye(3)
    cell.arrays["forces"] = np.zeros((1, 3))
    graph = gn.pad_with_graphs(batch_of([water, cell], 3.0), n_node=6, n_edge=40, n_graph=3)
    prediction = {
        "energy": jnp.array([-7.0, -6.0, 50.0]),  # errors 3 / 3 atoms, -2 / 1 atom, padding
        "forces": jnp.concatenate([jnp.zeros((3, 3)), jnp.full((1, 3), 2.0), jnp.ones((2, 3))]),
        "stress": jnp.stack([jnp.full((3, 3), 9.0), jnp.zeros((3, 3)), jnp.ones((3, 3))]),
    }
    energy_term = (1.0**2 + 2.0**2) / 2
    forces_term = (9 * 1.0 + 3 * 4.0) / 12
    stress_term = 3 / 9  # the copper cell only: (0 - 1)^2 on the diagonal
    np.testing.assert_allclose(loss(prediction, graph), energy_term + forces_term, rtol=1e-6)
    weighted = jax.jit(loss)(prediction, graph, {"energy": 2.0, "forces": 0.5, "stress": 3.0})
    np.testing.assert_allclose(weighted, 2 * energy_term + 0.5 * forces_term + 3 * stress_term,
                               rtol=1e-6)


def test_loss_names_a_missing_target_or_an_unknown_weight():
    graph = graph_of(molecule("H2O"), 2.0)
    prediction = {"energy": jnp.zeros(1), "forces": jnp.zeros((3, 3))}
    with pytest.raises(ValueError, match=r"loss: weights has 'energy', so prediction\['energy'\] "
                                         r"and graph.globals\['energy'\] are needed"):
        loss(prediction, graph)
    with pytest.raises(ValueError, match=r"loss: weights has 'virial'; expected some of"):
        loss(prediction, graph, {"virial": 1.0})
