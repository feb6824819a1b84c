"""gnkit.atoms.features and gnkit.atoms.species: edge vectors against ASE, radial bases and
envelopes against their papers' formulas (hand-computed and NumPy) and peers (e3nn-jax, PyTorch
Geometric), spherical harmonics against e3nn-jax, finite values and gradients at the zero vector."""

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, graph_of, random_crystal
from ase.build import bulk, molecule
from ase.neighborlist import neighbor_list

import gnkit as gn
from gnkit.atoms.features import (
    bessel_basis,
    cosine_cutoff,
    edge_vectors,
    gaussian_basis,
    polynomial_envelope,
    safe_norm,
    spherical_harmonics,
)
from gnkit.atoms.species import check_species, graph_species_index, species_index

DISTANCES = np.array([0.0, 0.3, 1.0, 2.5, 3.999, 4.0, 5.0])


def test_edge_vectors_are_ases_distance_vectors_in_a_batch_with_two_cells():
    crystal = bulk("Cu", "fcc", a=3.6) * (2, 1, 1)
    crystal.rattle(0.05, seed=0)
    crystal.cell[1, 0] += 0.4  # triclinic
    tilted = random_crystal(np.random.default_rng(0), [8, 1, 1])
    structures = [molecule("H2O"), crystal, tilted]
    graph = batch_of(structures, cutoff=3.0)
    expected = np.concatenate([neighbor_list("D", atoms, 3.0) for atoms in structures])
    with jax.enable_x64(True):
        vectors = jax.jit(edge_vectors)(graph)
    np.testing.assert_allclose(np.asarray(vectors), expected, atol=1e-12)


def test_edge_vectors_names_a_missing_field():
    graph = graph_of(molecule("H2O"), 2.0)
    graph = graph._replace(globals={"pbc": graph.globals["pbc"]})
    with pytest.raises(ValueError, match=r"graph.globals must be a dict with 'cell'"):
        edge_vectors(graph)


def test_safe_norm_is_the_norm_with_zero_gradient_at_zero():
    vectors = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 2.0]])
    np.testing.assert_allclose(safe_norm(vectors), [5.0, 0.0, 3.0])
    gradient = jax.grad(lambda v: safe_norm(v).sum())(jnp.asarray(vectors))
    np.testing.assert_allclose(gradient, [[0.6, 0.8, 0.0], [0, 0, 0], [1 / 3, -2 / 3, 2 / 3]],
                               rtol=1e-6)


def test_bessel_basis_is_dimenets_formula_and_e3nn_jaxs():
    cutoff, num_basis = 4.0, 5
    values = np.asarray(bessel_basis(DISTANCES, num_basis, cutoff))
    n = np.arange(1, num_basis + 1)
    r = DISTANCES[1:, None]
    np.testing.assert_allclose(values[1:], np.sqrt(2 / cutoff) * np.sin(n * np.pi * r / cutoff) / r,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[0], np.sqrt(2 / cutoff) * n * np.pi / cutoff, rtol=1e-6)
    # n = 1 at r = c / 2: sqrt(2 / 4) * sin(pi / 2) / 2
    np.testing.assert_allclose(bessel_basis(np.array([2.0]), 1, 4.0), [[np.sqrt(0.5) / 2]],
                               rtol=1e-6)
    np.testing.assert_allclose(values, e3nn.bessel(DISTANCES, num_basis, cutoff), rtol=1e-6,
                               atol=1e-6)
    gradient = jax.grad(lambda d: bessel_basis(d, num_basis, cutoff).sum())(jnp.zeros(2))
    np.testing.assert_array_equal(gradient, [0.0, 0.0])


def test_gaussian_basis_is_schnets_and_pyg_gaussian_smearing():
    torch = pytest.importorskip("torch")
    from torch_geometric.nn.models.schnet import GaussianSmearing

    values = np.asarray(gaussian_basis(DISTANCES, 6, 5.0))
    centres = np.linspace(0, 5.0, 6)
    np.testing.assert_allclose(values, np.exp(-0.5 * (DISTANCES[:, None] - centres) ** 2),
                               rtol=1e-6)  # width = spacing = 1
    smearing = GaussianSmearing(0.0, 5.0, 6)
    np.testing.assert_allclose(values, smearing(torch.tensor(DISTANCES)).numpy(), rtol=1e-6)
    narrow = gaussian_basis(np.array([1.0]), 3, 2.0, width=0.5)
    np.testing.assert_allclose(narrow, [[np.exp(-2.0), 1.0, np.exp(-2.0)]], rtol=1e-6)


def test_gaussian_basis_needs_two_centres_without_a_width():
    with pytest.raises(ValueError, match="num_basis must be at least 2"):
        gaussian_basis(DISTANCES, 1, 5.0)


def test_polynomial_envelope_is_dimenets_and_e3nn_jaxs():
    # p = 6 at d = 1/2: 1 - 28 / 64 + 48 / 128 - 21 / 256
    np.testing.assert_allclose(polynomial_envelope(np.array([2.0]), 4.0), [0.85546875], rtol=1e-7)
    p = 5
    d = DISTANCES / 4.0
    expected = np.where(
        d < 1,
        1 - (p + 1) * (p + 2) / 2 * d**p + p * (p + 2) * d ** (p + 1)
        - p * (p + 1) / 2 * d ** (p + 2),
        0.0,
    )
    values = polynomial_envelope(DISTANCES, 4.0, p=p)
    np.testing.assert_allclose(values, expected, atol=1e-7)
    np.testing.assert_allclose(values, e3nn.poly_envelope(p - 1, 2, 4.0)(DISTANCES), atol=1e-6)
    assert values[-2] == 0.0 and values[-1] == 0.0
    slope = jax.vmap(jax.grad(lambda r: polynomial_envelope(r, 4.0)))(jnp.array([3.9999, 4.0, 5.0]))
    np.testing.assert_allclose(slope, 0.0, atol=1e-6)


def test_cosine_cutoff_is_half_cosine_plus_one_inside_and_zero_outside():
    values = cosine_cutoff(DISTANCES, 4.0)
    expected = np.where(DISTANCES < 4.0, 0.5 * (np.cos(np.pi * DISTANCES / 4.0) + 1), 0.0)
    np.testing.assert_allclose(values, expected, atol=1e-7)
    np.testing.assert_allclose(cosine_cutoff(np.array([0.0, 2.0, 4.0]), 4.0), [1.0, 0.5, 0.0],
                               atol=1e-7)


def test_spherical_harmonics_are_e3nn_jaxs_on_directions_and_finite_at_zero():
    vectors = np.random.default_rng(0).normal(size=(7, 3)) * 3.0
    ours = spherical_harmonics(vectors, 3)
    theirs = e3nn.spherical_harmonics("0e + 1o + 2e + 3o", vectors, normalize=True,
                                      normalization="component")
    assert ours.irreps == theirs.irreps == e3nn.Irreps("0e + 1o + 2e + 3o")
    np.testing.assert_allclose(ours.array, theirs.array, rtol=1e-5, atol=1e-6)
    at_zero = spherical_harmonics(jnp.zeros((1, 3)), 3).array
    np.testing.assert_array_equal(at_zero, [[1.0] + [0.0] * 15])
    gradient = jax.grad(lambda v: jnp.sum(spherical_harmonics(v, 3).array ** 2 * 0.3
                                          + spherical_harmonics(v, 3).array))(jnp.zeros((2, 3)))
    assert np.all(np.isfinite(gradient))


def test_species_index_maps_atomic_numbers_and_padding_to_indices():
    indices = jax.jit(species_index, static_argnums=1)(jnp.array([8, 1, 0, 6, 1]), (1, 6, 8))
    np.testing.assert_array_equal(indices, [2, 0, 0, 1, 0])
    assert indices.dtype == jnp.int32


def test_check_species_names_the_structure_and_atom_and_ignores_padding():
    graph = batch_of([molecule("CH4"), molecule("H2O")], 2.0)
    padded = gn.pad_with_graphs(graph, n_node=12, n_edge=40, n_graph=3)
    check_species(padded, (1, 6, 8))
    with pytest.raises(ValueError, match=r"atomic number 8 of atom 0 in structure 1 \(row 5 of "
                                         r"nodes\['atomic_numbers'\]\) is not among the model's "
                                         r"species \(1, 6\)"):
        check_species(padded, (1, 6))


def test_graph_species_index_checks_concrete_graphs_and_traces_under_jit():
    graph = batch_of([molecule("CH4"), molecule("H2O")], 2.0)
    np.testing.assert_array_equal(graph_species_index(graph, (1, 6, 8)),
                                  [1, 0, 0, 0, 0, 2, 0, 0])
    with pytest.raises(ValueError, match=r"atomic number 8 of atom 0 in structure 1"):
        graph_species_index(graph, (1, 6))
    traced = jax.jit(graph_species_index, static_argnums=1)(graph, (1, 6))
    np.testing.assert_array_equal(traced, [1, 0, 0, 0, 0, 0, 0, 0])  # unknown: row 0, unchecked
