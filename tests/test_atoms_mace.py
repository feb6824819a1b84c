"""gnkit.atoms MACE: the symmetric contraction against a dense NumPy reference, its orders as
homogeneous polynomials of their degree, the body order of the site energy (inclusion-exclusion
over a centre's neighbours vanishes above the correlation order), the shared model checks
(symmetries, a lattice-equivalent cell, finite differences, padding, the NNX twin, an unknown
species), and a small fit on rMD17 aspirin (slow)."""

import itertools

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, graph_of, random_molecule
from _equivariant_checks import (
    CUTOFF,
    SPECIES,
    ModelChecks,
    as_jax,
    random_params,
    random_rotation,
)
from ase import Atoms
from ase.build import bulk

from gnkit.atoms import nn as atoms_nn
from gnkit.atoms import nnx as atoms_nnx
from gnkit.atoms.equivariant import (
    _lower_monomials,
    average_min_distance,
    edge_embedding,
    radial_normalisation,
    symmetric_contraction,
    symmetric_contraction_weight_shapes,
)
from gnkit.atoms.potential import structure_energies

pytestmark = pytest.mark.filterwarnings("error::DeprecationWarning:e3nn_jax.*")


class TestMACE(ModelChecks):
    linen_class, twin_class = atoms_nn.MACE, atoms_nnx.MACE
    options = dict(num_interactions=2, hidden_irreps="2x0e + 2x1o", max_l=1, correlation=2,
                   radial_mlp=(4,), readout_features=2, avg_num_neighbors=6.0)
    fit_options = dict(num_interactions=2, hidden_irreps="8x0e + 8x1o", max_l=2, correlation=2,
                       radial_mlp=(16,))


class TestMACEScaledRadial(TestMACE):
    """The same checks with the radial features scaled from a mean shortest edge of 0.9 Å."""

    options = dict(TestMACE.options, mean_min_distance=0.9)
    fit_options = dict(TestMACE.fit_options, mean_min_distance=0.9)


def test_radial_normalisation_gives_numpys_bessel_features_unit_mean_square():
    cutoff, num_basis, p, r_min = 5.0, 8, 5, 1.0
    r = np.linspace(r_min, cutoff, 1000)[:, None]
    d, n = r / cutoff, np.arange(1, num_basis + 1)
    envelope = 1 - (p + 1) * (p + 2) / 2 * d**p + p * (p + 2) * d**(p + 1) \
        - p * (p + 1) / 2 * d**(p + 2)
    features = np.sqrt(2 / cutoff) * np.sin(n * np.pi * r / cutoff) / r * envelope
    expected = np.mean(features ** 2) ** -0.5
    factor = radial_normalisation(r_min, num_basis=num_basis, cutoff=cutoff, envelope_p=p)
    assert factor == pytest.approx(expected, rel=1e-5)
    assert np.mean((factor * features) ** 2) == pytest.approx(1.0, rel=1e-5)
    # the same number under jit (evaluated while tracing, a constant of the computation)
    assert float(jax.jit(lambda: radial_normalisation(
        r_min, num_basis=num_basis, cutoff=cutoff, envelope_p=p))()) == pytest.approx(factor)
    for bad in (-0.1, cutoff, 7.0):
        with pytest.raises(ValueError, match="min_distance must be in"):
            radial_normalisation(bad, num_basis=num_basis, cutoff=cutoff, envelope_p=p)


def test_average_min_distance_is_the_mean_of_each_structures_shortest_edge():
    rng = np.random.default_rng(3)
    molecules = [random_molecule(rng, [6, 1, 1, 8]) for _ in range(3)]
    shortest = [min(np.linalg.norm(a.positions[i] - a.positions[j])
                    for i in range(len(a)) for j in range(i)) for a in molecules]
    # one-atom fcc copper: the shortest edge is to its own image, a / sqrt(2)
    copper = bulk("Cu", "fcc", a=3.6)
    graphs = [graph_of(atoms, CUTOFF) for atoms in [*molecules, copper]]
    expected = np.mean([*shortest, 3.6 / np.sqrt(2)])
    assert average_min_distance(graphs) == pytest.approx(expected, rel=1e-6)  # float32
    with pytest.raises(ValueError, match="structure 0 has no edges"):
        average_min_distance([graph_of(Atoms("H"), CUTOFF)])


def test_edge_embedding_scales_the_radial_features_by_the_normalisation():
    graph = as_jax(graph_of(random_molecule(np.random.default_rng(4), [6, 1, 8]), CUTOFF))
    sizes = dict(max_l=2, num_basis=6, cutoff=CUTOFF, envelope_p=5)
    harmonics, radial = edge_embedding(graph, **sizes)
    scaled_harmonics, scaled = edge_embedding(graph, **sizes, min_distance=0.9)
    factor = radial_normalisation(0.9, num_basis=6, cutoff=CUTOFF, envelope_p=5)
    np.testing.assert_allclose(scaled, factor * np.asarray(radial), rtol=1e-6)
    np.testing.assert_array_equal(scaled_harmonics.array, harmonics.array)


@pytest.mark.parametrize("correlation", [2, 3])
def test_symmetric_contraction_equals_the_dense_sum_over_symmetric_powers(correlation):
    irreps_in, irreps_out, channels = e3nn.Irreps("0e + 1o + 2e"), "0e + 1o", 3
    rng = np.random.default_rng(0)
    shapes = symmetric_contraction_weight_shapes(irreps_in, correlation, irreps_out, 2, channels)
    with jax.enable_x64(True):
        features = e3nn.IrrepsArray(irreps_in, rng.normal(size=(2, channels, irreps_in.dim)))
        species = jnp.array([1, 0])
        weights = {name: jnp.asarray(rng.normal(size=shape)) for name, shape in shapes.items()}
        result = symmetric_contraction(features, species, weights, correlation, irreps_out)
        x = np.asarray(features.array)
        for ir in ("0e", "1o"):
            expected = 0.0
            for order in range(1, correlation + 1):
                basis = e3nn.reduced_symmetric_tensor_product_basis(irreps_in, order,
                                                                    keep_ir=irreps_out).regroup()
                u = np.asarray(basis.filter(keep=ir).chunks[0])  # [d] * order + [basis, 2l + 1]
                w = np.asarray(weights[f"w{order}_{ir}"])[np.asarray(species)]  # [atom, basis, c]
                letters = "ijl"[:order]
                power = np.einsum(",".join(f"nc{a}" for a in letters) + f"->nc{letters}",
                                  *[x] * order)
                expected = expected + np.einsum(
                    f"{letters}km,nkc,nc{letters}->ncm", u, w, power) / order
            np.testing.assert_allclose(result.filter(keep=ir).array, expected, rtol=1e-10,
                                       atol=1e-12)


def test_symmetric_contraction_is_equivariant():
    # A-features made of spherical harmonics of random vectors rotate with the vectors, so the
    # contraction's scalars stay, its vectors (1o, e3nn-jax's x, y, z) rotate by R, and the norm
    # of its 2e part stays, for a proper and an improper R.
    irreps_in = e3nn.Irreps("0e + 1o + 2e")
    rng = np.random.default_rng(1)
    vectors, mixing = rng.normal(size=(2, 1, 2, 3)), rng.normal(size=(2, 1, 2, 1))
    with jax.enable_x64(True):
        shapes = symmetric_contraction_weight_shapes(irreps_in, 2, "0e + 1o + 2e", 1, 2)
        weights = {name: jnp.asarray(rng.normal(size=shape)) for name, shape in shapes.items()}

        def contract(rotation):
            harmonics = e3nn.spherical_harmonics(irreps_in, jnp.asarray(vectors @ rotation.T),
                                                 normalize=False, normalization="component")
            features = e3nn.IrrepsArray(irreps_in, jnp.sum(mixing * harmonics.array, axis=0))
            return symmetric_contraction(features, jnp.array([0]), weights, 2, "0e + 1o + 2e")

        reference = contract(np.eye(3))
        assert reference.irreps == e3nn.Irreps("0e + 1o + 2e")
        for proper in (True, False):
            rotation = random_rotation(rng, proper)
            rotated = contract(rotation)
            np.testing.assert_allclose(rotated.filter(keep="0e").array,
                                       reference.filter(keep="0e").array, rtol=1e-10)
            np.testing.assert_allclose(rotated.filter(keep="1o").array,
                                       reference.filter(keep="1o").array @ rotation.T,
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(np.linalg.norm(rotated.filter(keep="2e").array, axis=-1),
                                       np.linalg.norm(reference.filter(keep="2e").array, axis=-1),
                                       rtol=1e-10)


@pytest.mark.parametrize("correlation", [
    pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow), 3])
def test_each_order_of_the_contraction_is_homogeneous_of_its_degree(correlation):
    # B(A) = sum_nu B_nu(A), each B_nu a product of nu factors of A: B_nu(t A) = t^nu B_nu(A),
    # so B(t A) is a polynomial of degree `correlation` in t, whose (correlation + 1)-th finite
    # difference vanishes while the correlation-th is correlation! times its leading term.
    irreps_in, irreps_out = e3nn.Irreps("0e + 1o"), "0e + 1o"
    rng = np.random.default_rng(correlation)
    features = rng.normal(size=(2, 3, irreps_in.dim))
    species = jnp.array([0, 1])
    shapes = symmetric_contraction_weight_shapes(irreps_in, correlation, irreps_out, 2, 3)
    weights = {name: jnp.asarray(rng.normal(size=shape)) for name, shape in shapes.items()}

    def contract(scale, weights=weights):
        scaled = e3nn.IrrepsArray(irreps_in, jnp.asarray(scale * features))
        return np.asarray(symmetric_contraction(scaled, species, weights, correlation,
                                                irreps_out).array)

    with jax.enable_x64(True):
        for order in range(1, correlation + 1):
            alone = {name: value if name.startswith(f"w{order}_") else jnp.zeros_like(value)
                     for name, value in weights.items()}
            np.testing.assert_allclose(contract(2.0, alone), 2.0**order * contract(1.0, alone),
                                       rtol=1e-10, atol=1e-12)
        values = np.stack([contract(float(t)) for t in range(correlation + 2)])
    above = np.diff(values, n=correlation + 1, axis=0)
    at = np.diff(values, n=correlation, axis=0)
    assert np.abs(above).max() < 1e-9 * np.abs(values).max()
    assert np.abs(at).min() > 0
    np.testing.assert_allclose(at[0], at[1], rtol=1e-9, atol=1e-9)  # a constant: degree exactly


def site_energies_over_subsets(correlation):
    """The centre's energy (a one-interaction MACE with linear readout) with each subset of four
    neighbours, by subset (a tuple of neighbour indices)."""
    model = atoms_nn.MACE(SPECIES, CUTOFF, num_interactions=1, hidden_irreps="3x0e + 3x1o",
                          max_l=2, correlation=correlation, radial_mlp=(8,),
                          avg_num_neighbors=0.05)
    neighbours = np.array([[1.1, 0.2, -0.3], [-0.4, 1.3, 0.5], [0.3, -0.6, -1.2],
                           [-1.0, -0.7, 0.8]])
    numbers = [1, 8, 6, 1]
    subsets = [s for k in range(5) for s in itertools.combinations(range(4), k)]
    structures = [Atoms(numbers=[6] + [numbers[j] for j in s],
                        positions=np.vstack([np.zeros((1, 3)), neighbours[list(s)]]))
                  for s in subsets]
    batch = as_jax(batch_of(structures, CUTOFF))
    params = random_params(model, batch, seed=correlation)
    atom_energies = np.asarray(jax.jit(model.apply)(params, batch))
    centres = np.concatenate([[0], np.cumsum(np.asarray(batch.n_node))[:-1]])
    return dict(zip(subsets, atom_energies[centres], strict=True))


def inclusion_exclusion(energies, neighbours):
    return sum((-1) ** (len(neighbours) - len(s)) * energies[s]
               for k in range(len(neighbours) + 1)
               for s in itertools.combinations(neighbours, k))


@pytest.mark.parametrize("correlation", [
    pytest.param(1, marks=pytest.mark.slow), 2, pytest.param(3, marks=pytest.mark.slow)])
def test_body_order_site_energy_is_a_polynomial_of_degree_correlation_in_the_neighbours(
        correlation):
    # E_i = P(A_i), A_i = sum_j phi(r_ij): P of degree nu makes every (nu + 1)-fold
    # inclusion-exclusion over neighbours vanish, while the nu-fold one does not; with
    # correlation 1 the site energy is additive over neighbours.
    with jax.enable_x64(True):
        energies = site_energies_over_subsets(correlation)
    scale = max(abs(value) for value in energies.values())
    above = [inclusion_exclusion(energies, s)
             for s in itertools.combinations(range(4), correlation + 1)]
    at = [inclusion_exclusion(energies, s) for s in itertools.combinations(range(4), correlation)]
    assert np.max(np.abs(above)) < 1e-12 * scale
    assert np.min(np.abs(at)) > 1e-7 * scale
    if correlation == 1:
        additive = energies[()] + sum(energies[(j,)] - energies[()] for j in range(4))
        np.testing.assert_allclose(energies[(0, 1, 2, 3)], additive, rtol=1e-10)


def test_hidden_irreps_of_unequal_multiplicities_are_rejected():
    model = atoms_nn.MACE(SPECIES, CUTOFF, hidden_irreps="8x0e + 4x1o")
    with pytest.raises(ValueError, match="one multiplicity for every irrep"):
        molecule = random_molecule(np.random.default_rng(0), [6, 1])
        jax.eval_shape(model.init, jax.random.PRNGKey(0), as_jax(graph_of(molecule, CUTOFF)))


def test_the_lower_monomials_equal_numpys_products_over_sorted_tuples():
    dim, correlation = 4, 4
    x = np.random.default_rng(0).normal(size=(2, dim, 3))
    tuples = [t for order in range(correlation)
              for t in itertools.combinations_with_replacement(range(dim), order)]
    reference = np.stack([np.prod(x[:, list(t), :], axis=1) for t in tuples], axis=1)
    with jax.enable_x64(True):
        np.testing.assert_allclose(_lower_monomials(jnp.asarray(x), correlation), reference,
                                   rtol=1e-13)


def test_the_contraction_and_three_orders_of_its_derivatives_equal_differences():
    # Each derivative against a central difference of the order below, exact up to rounding on
    # this cubic (five points for the value's gradient); forward mode and the Hessian against
    # reverse mode, at correlation 3 with two species.
    irreps_in, irreps_out, correlation = e3nn.Irreps("0e + 1o"), "0e + 1o", 3
    rng = np.random.default_rng(5)
    shapes = symmetric_contraction_weight_shapes(irreps_in, correlation, irreps_out, 2, 2)
    x, v, u = (rng.normal(size=(3, 2, irreps_in.dim)) for _ in range(3))
    with jax.enable_x64(True):
        weights = {name: jnp.asarray(rng.normal(size=shape)) for name, shape in shapes.items()}
        cotangent = jnp.asarray(rng.normal(size=(3, 2, 4)))

        def value(y):
            contracted = symmetric_contraction(e3nn.IrrepsArray(irreps_in, y),
                                               jnp.array([0, 1, 1]), weights, correlation,
                                               irreps_out)
            return jnp.sum(cotangent * contracted.array)

        first = jax.jit(jax.grad(value))
        second = jax.jit(jax.grad(lambda y: jnp.sum(v * first(y))))  # the Hessian times v
        third = jax.jit(jax.grad(lambda y: jnp.sum(u * second(y))))

        def at(f, shift):
            return np.asarray(f(jnp.asarray(x + shift)))

        def difference(f, direction, h=1e-3):
            return (at(f, h * direction) - at(f, -h * direction)) / (2 * h)

        def five_point(f, direction, h=1e-2):
            return (8 * difference(f, direction, h) * 2 * h - at(f, 2 * h * direction)
                    + at(f, -2 * h * direction)) / (12 * h)

        basis = np.eye(x.size).reshape(-1, *x.shape)
        numerical = np.array([five_point(value, e) for e in basis]).reshape(x.shape)
        np.testing.assert_allclose(first(jnp.asarray(x)), numerical, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(second(jnp.asarray(x)), difference(first, v), rtol=1e-9,
                                   atol=1e-10)
        third_derivative = np.asarray(third(jnp.asarray(x)))
        np.testing.assert_allclose(third_derivative, difference(second, u), rtol=1e-9,
                                   atol=1e-10)
        np.testing.assert_allclose(jax.jacfwd(value)(jnp.asarray(x)), first(jnp.asarray(x)),
                                   rtol=1e-12)
        np.testing.assert_allclose(jax.hessian(value)(jnp.asarray(x)),
                                   jax.jacrev(jax.jacrev(value))(jnp.asarray(x)), rtol=1e-12,
                                   atol=1e-12)
    assert np.abs(third_derivative).min() > 0


def test_the_force_loss_parameter_gradient_equals_a_finite_difference():
    # Training on forces differentiates the forces (a first derivative) in the parameters: the
    # contraction's transpose is differentiated, here at correlation 3 (degrees 1 to 3).
    model = atoms_nn.MACE(SPECIES, CUTOFF, num_interactions=2, hidden_irreps="2x0e + 2x1o",
                          max_l=2, correlation=3, radial_mlp=(4,), readout_features=2,
                          avg_num_neighbors=0.1)  # large A-features: every degree matters
    with jax.enable_x64(True):
        graph = as_jax(graph_of(random_molecule(np.random.default_rng(1), [6, 1, 8, 1]), CUTOFF))
        params = random_params(model, graph, seed=3)

        def force_loss(params):
            energy = lambda positions: structure_energies(  # noqa: E731
                model.apply(params, graph._replace(
                    nodes={**graph.nodes, "positions": positions})), graph)[0]
            return jnp.sum(jax.grad(energy)(graph.nodes["positions"]) ** 2)

        gradient = jax.jit(jax.grad(force_loss))(params)
        path = ("params", "products_0", "symmetric_contraction", "w3_0e")
        leaf = params[path[0]][path[1]][path[2]][path[3]]
        analytic = np.asarray(gradient[path[0]][path[1]][path[2]][path[3]])
        index = np.unravel_index(np.argmax(np.abs(analytic)), leaf.shape)  # the largest entry
        step = np.zeros(leaf.shape)
        step[index] = 1e-5

        def shifted(sign):
            tree = jax.tree.map(lambda x: x, params)
            tree[path[0]][path[1]][path[2]][path[3]] = leaf + sign * step
            return float(jax.jit(force_loss)(tree))

        difference = (shifted(1) - shifted(-1)) / 2e-5
    assert abs(difference) > 1e-6
    np.testing.assert_allclose(analytic[index], difference, rtol=1e-6)
