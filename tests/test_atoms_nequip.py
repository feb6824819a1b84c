"""gnkit.atoms NequIP and the shared equivariant pieces: the convolution against a NumPy sum,
nequip's gated irreps by hand, the shared model checks (symmetries, a lattice-equivalent cell,
finite differences, padding, the NNX twin, an unknown species), and, slow, a parameter gradient
against a finite difference and a small fit on rMD17 aspirin."""

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, graph_of, random_crystal, random_molecule
from _equivariant_checks import CUTOFF, SPECIES, ModelChecks, as_jax, random_params

import gnkit as gn
from gnkit.atoms import nn as atoms_nn
from gnkit.atoms import nnx as atoms_nnx
from gnkit.atoms.equivariant import average_num_neighbors, convolution, gated_irreps
from gnkit.atoms.potential import structure_energies

pytestmark = pytest.mark.filterwarnings("error::DeprecationWarning:e3nn_jax.*")

OPTIONS = dict(num_layers=2, hidden_irreps="2x0e + 2x0o + 2x1o + 2x1e", max_l=1,
               radial_mlp=(4,), readout_features=2, avg_num_neighbors=6.0)


class TestNequIP(ModelChecks):
    linen_class, twin_class, options = atoms_nn.NequIP, atoms_nnx.NequIP, OPTIONS
    fit_options = dict(num_layers=2, hidden_irreps="8x0e + 8x1o", max_l=1, radial_mlp=(16,))


def test_convolution_of_scalars_is_the_weighted_sum_of_neighbour_harmonics():
    # 0e x l -> l is the identity map (component normalisation), so the convolution of scalar
    # features is sum_j w_ij,l h_j Y_l(r_ij), with Y_0 = 1 and Y_1 = sqrt(3) r / |r|.
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 3))
    senders, receivers = np.array([1, 2, 0, 2]), np.array([0, 0, 1, 1])
    features = rng.normal(size=(3, 2))
    weights = rng.normal(size=(4, 4))  # [edge, paths]: 2x0e then 2x1o
    harmonics = e3nn.spherical_harmonics("0e + 1o", e3nn.IrrepsArray("1o", vectors),
                                         normalize=True, normalization="component")
    result = convolution(e3nn.IrrepsArray("2x0e", features), harmonics, jnp.asarray(weights),
                         jnp.asarray(senders), jnp.asarray(receivers), "0e + 1o")
    assert result.irreps == e3nn.Irreps("2x0e + 2x1o")
    directions = np.sqrt(3) * vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scalars = np.zeros((3, 2))
    vectors_out = np.zeros((3, 2, 3))
    for edge, (sender, receiver) in enumerate(zip(senders, receivers, strict=True)):
        scalars[receiver] += weights[edge, :2] * features[sender]
        vectors_out[receiver] += (weights[edge, 2:] * features[sender])[:, None] * directions[edge]
    np.testing.assert_allclose(result.filter(keep="0e").array, scalars, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.filter(keep="1o").array, vectors_out.reshape(3, 6),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("irreps_in, max_l, irreps_out", [
    ("3x0e + 3x1o", 3, "0e + 1o + 2e + 3o"),  # MACE's second interaction
    ("2x0e + 2x0o + 2x1e + 2x1o", 1, "0e + 0o + 1e + 1o"),  # NequIP with parity
    ("2x0e + 2x1o + 2x2e", 2, "0e + 1o"),
])
def test_convolution_equals_e3nns_per_path_products_and_their_gradients(irreps_in, max_l,
                                                                        irreps_out):
    # the one-pass convolution against e3nn-jax's tensor_product of every edge, weighted and
    # summed at the receivers; values and the gradients forces and training take, float64
    rng = np.random.default_rng(1)
    n_atoms, n_edge = 5, 17
    senders, receivers = (jnp.asarray(rng.integers(0, n_atoms, n_edge)) for _ in range(2))
    with jax.enable_x64(True):
        features = jnp.asarray(rng.normal(size=(n_atoms, e3nn.Irreps(irreps_in).dim)))
        harmonics = e3nn.spherical_harmonics(
            e3nn.Irreps.spherical_harmonics(max_l), jnp.asarray(rng.normal(size=(n_edge, 3))),
            normalize=True, normalization="component").array
        irreps_sh = e3nn.Irreps.spherical_harmonics(max_l)
        n_paths = e3nn.tensor_product(irreps_in, irreps_sh, filter_ir_out=[
            ir for _, ir in e3nn.Irreps(irreps_out)]).num_irreps
        weights = jnp.asarray(rng.normal(size=(n_edge, n_paths)))

        def one_pass(x, y, w):
            return convolution(e3nn.IrrepsArray(irreps_in, x), e3nn.IrrepsArray(irreps_sh, y),
                               w, senders, receivers, irreps_out)

        def per_path(x, y, w):
            products = e3nn.tensor_product(
                e3nn.IrrepsArray(irreps_in, x)[senders], e3nn.IrrepsArray(irreps_sh, y),
                filter_ir_out=[ir for _, ir in e3nn.Irreps(irreps_out)]).regroup() * w
            return e3nn.zeros(products.irreps, (n_atoms,), x.dtype).at[receivers].add(products)

        got, want = one_pass(features, harmonics, weights), per_path(features, harmonics, weights)
        assert got.irreps == want.irreps
        np.testing.assert_allclose(got.array, want.array, rtol=1e-12, atol=1e-12)
        probe = jnp.asarray(rng.normal(size=want.shape))
        gradients = [jax.grad(lambda *a, f=f: jnp.sum(probe * f(*a).array), argnums=(0, 1, 2))(
            features, harmonics, weights) for f in (one_pass, per_path)]
        for got_gradient, want_gradient in zip(*gradients, strict=True):
            np.testing.assert_allclose(got_gradient, want_gradient, rtol=1e-12, atol=1e-12)


def test_gated_irreps_follow_nequips_rule():
    hidden = e3nn.Irreps("4x0e + 4x0o + 4x1o + 4x1e")
    # first layer: scalars in, Y = 0e + 1o reach 0e and 1o only
    assert gated_irreps(hidden, e3nn.tensor_product("4x0e", "0e + 1o")) == e3nn.Irreps(
        "4x0e + 4x0e + 4x1o")
    # then 0e + 1o in: 0o stays out of reach, 1e comes in; one 0e gate per gated irrep
    assert gated_irreps(hidden, e3nn.tensor_product("4x0e + 4x1o", "0e + 1o")) == e3nn.Irreps(
        "4x0e + 8x0e + 4x1o + 4x1e")
    # odd scalars only: the gates are 0o
    assert gated_irreps(e3nn.Irreps("2x0o + 2x1e"), e3nn.Irreps("0o + 1e")) == e3nn.Irreps(
        "2x0o + 2x0o + 2x1e")


def test_average_num_neighbors_counts_edges_per_real_atom():
    rng = np.random.default_rng(0)
    batch = batch_of([random_crystal(rng, [1, 6, 8, 6]), random_molecule(rng, [6, 1, 8, 6])],
                     CUTOFF)
    padded = gn.pad_with_graphs(batch, n_node=int(batch.n_node.sum()) + 3,
                                n_edge=int(batch.n_edge.sum()) + 4, n_graph=3)
    assert average_num_neighbors(padded) == pytest.approx(len(batch.senders) / 8)


@pytest.mark.slow
def test_jitted_parameter_gradient_equals_a_finite_difference():
    model = TestNequIP().module()
    with jax.enable_x64(True):
        graph = as_jax(graph_of(random_crystal(np.random.default_rng(0), [1, 6, 8, 6]), CUTOFF))
        params64 = random_params(model, graph)

        def energy(params):
            return structure_energies(model.apply(params, graph), graph)[0]

        gradient = jax.jit(jax.grad(energy))(params64)
        leaf = params64["params"]["layer1_convnet"]["fc"]["Dense_0"]["kernel"]
        step = np.zeros(leaf.shape)
        step[2, 3] = 1e-5

        def shifted(sign):
            tree = jax.tree.map(lambda x: x, params64)
            tree["params"]["layer1_convnet"]["fc"]["Dense_0"]["kernel"] = leaf + sign * step
            return float(jax.jit(energy)(tree))

        difference = (shifted(1) - shifted(-1)) / 2e-5
        analytic = gradient["params"]["layer1_convnet"]["fc"]["Dense_0"]["kernel"][2, 3]
    assert abs(difference) > 1e-8
    np.testing.assert_allclose(analytic, difference, rtol=1e-5)


def test_hidden_irreps_without_even_scalars_are_rejected():
    model = atoms_nn.NequIP(SPECIES, CUTOFF, hidden_irreps="4x0o + 4x1o")
    with pytest.raises(ValueError, match="hidden_irreps must hold even scalars"):
        jax.eval_shape(model.init, jax.random.PRNGKey(0),
                       as_jax(graph_of(random_molecule(np.random.default_rng(0), [6, 1]), CUTOFF)))
