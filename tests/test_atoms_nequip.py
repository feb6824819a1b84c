"""gnkit.atoms NequIP and the shared equivariant pieces: the convolution against a NumPy sum,
nequip's gated irreps by hand, rotation / reflection / translation / permutation / lattice
invariance, forces and stress against finite differences, padding, parameter gradients against a
finite difference, the NNX twin with converted weights, and a small fit on rMD17 aspirin."""

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, graph_of
from _equivariant_checks import (
    as_jax,
    check_finite_differences,
    check_padding,
    check_symmetries,
    crystal_and_molecule,
    predictor,
    random_params,
)
from flax import nnx

import gnkit as gn
from gnkit.atoms import nn as atoms_nn
from gnkit.atoms import nnx as atoms_nnx
from gnkit.atoms.equivariant import average_num_neighbors, convolution, gated_irreps
from gnkit.atoms.potential import structure_energies
from gnkit.nnx import from_linen, to_linen_variables

CUTOFF = 3.0
SPECIES = (1, 6, 8)
OPTIONS = dict(num_layers=2, hidden_irreps="4x0e + 4x0o + 4x1o + 4x1e", max_l=2,
               radial_mlp=(8,), readout_features=4, avg_num_neighbors=6.0)
MODEL = atoms_nn.NequIP(SPECIES, CUTOFF, **OPTIONS)
CRYSTAL, MOLECULE = crystal_and_molecule([1, 6, 8, 6], CUTOFF)


@pytest.fixture(scope="module")
def params64():
    with jax.enable_x64(True):
        yield random_params(MODEL, as_jax(graph_of(CRYSTAL, CUTOFF)), dtype=np.float64)


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
    batch = batch_of([CRYSTAL, MOLECULE], CUTOFF)
    padded = gn.pad_with_graphs(batch, n_node=int(batch.n_node.sum()) + 3,
                                n_edge=int(batch.n_edge.sum()) + 4, n_graph=3)
    assert average_num_neighbors(padded) == pytest.approx(len(batch.senders) / 8)


def test_energy_invariant_forces_and_stress_equivariant_float64(params64):
    with jax.enable_x64(True):
        check_symmetries(MODEL, params64, CRYSTAL, CUTOFF, atol=1e-10, rtol=1e-8)


def test_energy_invariant_forces_and_stress_equivariant_float32(params64):
    params32 = jax.tree.map(lambda leaf: leaf.astype(np.float32), params64)
    check_symmetries(MODEL, params32, CRYSTAL, CUTOFF, atol=1e-4, rtol=1e-3)


def test_forces_and_stress_are_finite_differences_of_the_energy(params64):
    with jax.enable_x64(True):
        check_finite_differences(MODEL, params64, CRYSTAL, CUTOFF)


def test_padding_changes_no_real_number_and_padded_atoms_move_none(params64):
    with jax.enable_x64(True):
        result = check_padding(MODEL, params64, [CRYSTAL, MOLECULE], CUTOFF)
        single = predictor(MODEL)(params64, as_jax(graph_of(CRYSTAL, CUTOFF)))
    np.testing.assert_allclose(result["energy"][0], single["energy"][0], rtol=1e-10)


def test_jitted_parameter_gradient_equals_a_finite_difference(params64):
    with jax.enable_x64(True):
        graph = as_jax(graph_of(CRYSTAL, CUTOFF))

        def energy(params):
            return structure_energies(MODEL.apply(params, graph), graph)[0]

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


def test_nnx_twin_gives_the_linen_numbers_with_converted_weights(params64):
    params = jax.tree.map(lambda leaf: leaf.astype(np.float32), params64)
    graph = as_jax(graph_of(CRYSTAL, CUTOFF, dtype=np.float32))
    twin = from_linen(MODEL, params)
    assert isinstance(twin, atoms_nnx.NequIP)
    energies = nnx.jit(lambda model, g: structure_energies(model(g), g))(twin, graph)
    np.testing.assert_allclose(energies, predictor(MODEL)(params, graph)["energy"], rtol=1e-6)
    back = to_linen_variables(twin)
    assert jax.tree.structure(back) == jax.tree.structure(params)
    for converted, original in zip(jax.tree.leaves(back), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(converted, original)
    built = nnx.eval_shape(lambda: atoms_nnx.NequIP(SPECIES, CUTOFF, rngs=nnx.Rngs(0),
                                                    **OPTIONS))
    assert (jax.tree.map(jnp.shape, built.linen_params())
            == jax.tree.map(jnp.shape, params["params"]))


def test_hidden_irreps_without_even_scalars_are_rejected():
    model = atoms_nn.NequIP(SPECIES, CUTOFF, hidden_irreps="4x0o + 4x1o")
    with pytest.raises(ValueError, match="hidden_irreps must hold even scalars"):
        jax.eval_shape(model.init, jax.random.PRNGKey(0), as_jax(graph_of(MOLECULE, CUTOFF)))


@pytest.mark.slow
def test_a_small_fit_on_aspirin_frames_lowers_the_loss():
    import ase.io
    import optax

    from gnkit.atoms.potential import ScaleShift, energy_forces_stress, loss

    frames = ase.io.read("/work/shared/data/atoms/rmd17_aspirin_train.xyz.xz", index=":4")
    for atoms in frames:
        atoms.info["energy"] = atoms.get_potential_energy()
        atoms.arrays["forces"] = atoms.get_forces()
    batch = batch_of(frames, 4.0, dtype=np.float32)
    scale_shift = ScaleShift.fit(batch, SPECIES)
    model = atoms_nn.NequIP(SPECIES, 4.0, num_layers=2, hidden_irreps="8x0e + 8x1o",
                            max_l=1, radial_mlp=(16,),
                            avg_num_neighbors=average_num_neighbors(batch))
    batch = as_jax(batch)
    params = model.init(jax.random.PRNGKey(0), batch)
    optimiser = optax.adam(1e-2)

    def objective(params):
        energy_fn = lambda g: structure_energies(  # noqa: E731
            scale_shift(model.apply(params, g), g.nodes["atomic_numbers"]), g)
        return loss(energy_forces_stress(energy_fn, batch, stress=False), batch)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(objective)(params)
        updates, state = optimiser.update(grads, state)
        return optax.apply_updates(params, updates), state, value

    state = optimiser.init(params)
    values = []
    for _ in range(40):
        params, state, value = step(params, state)
        values.append(float(value))
    assert np.all(np.isfinite(values))
    assert values[-1] < 0.5 * values[0]
