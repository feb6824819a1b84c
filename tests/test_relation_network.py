"""Tests for gnkit.nn.RelationNetwork: a NumPy reference over explicit pairs, the dense layout
against the edge-list layout (outputs and gradients), and masks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.nn import RelationNetwork
from gnkit.nn.relation_network import pair_graph

N_OBJECT, F, Q = 5, 3, 4


def _scenes(seed=0, batch=3):
    rng = np.random.default_rng(seed)
    objects = rng.normal(size=(batch, N_OBJECT, F)).astype(np.float32)
    question = rng.normal(size=(batch, Q)).astype(np.float32)
    mask = np.ones((batch, N_OBJECT), bool)
    mask[1, 3:] = False  # scene 1 has 3 objects
    mask[2, [0, 2]] = False  # scene 2 has objects 1, 3, 4
    return objects, question, mask


def _model(self_pairs=True):
    return RelationNetwork(pair_features=(8, 6, 7), output_features=(9, 2), self_pairs=self_pairs)


def _init(model, objects, question, mask):
    return model.init(jax.random.key(1), objects, question, mask, method="dense")


def _reference(params, objects, question, mask, self_pairs):
    """f(sum over counted pairs (i, j) of g([o_i, o_j, q])) with the unfactorised first layer."""
    p = params["params"]
    first = np.concatenate(
        [p["pair_0_objects"]["kernel"][:, :8], p["pair_0_objects"]["kernel"][:, 8:]], axis=0
    )
    kernel = np.concatenate([first, p["pair_0_question"]["kernel"]], axis=0)  # [s, r, q] rows
    out = []
    for b in range(objects.shape[0]):
        total = np.zeros(7)
        for i in range(N_OBJECT):
            for j in range(N_OBJECT):
                if not (mask[b, i] and mask[b, j]) or (i == j and not self_pairs):
                    continue
                x = np.concatenate([objects[b, i], objects[b, j], question[b]])
                h = np.maximum(x @ kernel + p["pair_0_bias"], 0)
                h = np.maximum(h @ p["pair_1"]["kernel"] + p["pair_1"]["bias"], 0)
                h = np.maximum(h @ p["pair_2"]["kernel"] + p["pair_2"]["bias"], 0)
                total += h
        mlp = p["output"]
        h = np.maximum(total @ mlp["dense_0"]["kernel"] + mlp["dense_0"]["bias"], 0)
        out.append(h @ mlp["dense_1"]["kernel"] + mlp["dense_1"]["bias"])
    return np.array(out)


@pytest.mark.parametrize("self_pairs", [True, False])
def test_dense_matches_numpy_pairs(self_pairs):
    objects, question, mask = _scenes()
    model = _model(self_pairs)
    params = _init(model, objects, question, mask)
    got = model.apply(params, objects, question, mask, method="dense")
    want = _reference(jax.device_get(params), objects, question, mask, self_pairs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("self_pairs", [True, False])
def test_dense_equals_edge_list_outputs_and_gradients(self_pairs):
    objects, question, mask = _scenes(seed=2)
    model = _model(self_pairs)
    params = _init(model, objects, question, mask)
    graph = pair_graph(objects, question, mask, self_pairs=self_pairs)
    assert graph.n_node.tolist() == [5, 3, 3]
    target = jnp.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]])

    def dense_loss(params):
        return jnp.sum((model.apply(params, objects, question, mask, method="dense") - target) ** 2)

    def edge_loss(params):
        return jnp.sum((model.apply(params, graph) - target) ** 2)

    np.testing.assert_allclose(
        model.apply(params, graph),
        model.apply(params, objects, question, mask, method="dense"),
        rtol=1e-5,
        atol=1e-5,
    )
    dense_grads = jax.grad(dense_loss)(params)
    edge_grads = jax.grad(edge_loss)(params)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), dense_grads, edge_grads
    )


def test_parameters_initialised_by_either_layout_are_the_same_tree():
    objects, question, mask = _scenes()
    model = _model()
    dense = _init(model, objects, question, mask)
    edges = model.init(jax.random.key(1), pair_graph(objects, question, mask))
    shapes = jax.tree_util.tree_map(np.shape, dense)
    assert shapes == jax.tree_util.tree_map(np.shape, edges)


def test_masked_objects_change_nothing():
    objects, question, mask = _scenes(seed=3)
    model = _model()
    params = _init(model, objects, question, mask)
    before = model.apply(params, objects, question, mask, method="dense")
    noise = 100.0 * np.random.default_rng(4).normal(size=objects.shape)
    noisy = np.where(mask[..., None], objects, noise)
    after = model.apply(params, noisy.astype(np.float32), question, mask, method="dense")
    np.testing.assert_allclose(before, after, rtol=1e-6)
    # Scene 1's three real objects alone, without padding objects, give the same output.
    alone = model.apply(params, objects[1:2, :3], question[1:2], None, method="dense")
    np.testing.assert_allclose(before[1:2], alone, rtol=1e-5, atol=1e-6)


def test_scene_without_objects_gets_f_of_zero():
    objects, question, mask = _scenes()
    mask[0] = False
    model = _model()
    params = _init(model, objects, question, mask)
    got = model.apply(params, objects, question, mask, method="dense")
    mlp = jax.device_get(params)["params"]["output"]
    hidden = np.maximum(mlp["dense_0"]["bias"], 0)
    np.testing.assert_allclose(got[0], hidden @ mlp["dense_1"]["kernel"] + mlp["dense_1"]["bias"])
    graph = pair_graph(objects, question, mask)
    np.testing.assert_allclose(model.apply(params, graph)[0], got[0], rtol=1e-6)


def test_without_question_and_jitted():
    objects, _, mask = _scenes()
    model = _model()
    params = model.init(jax.random.key(0), objects, None, mask, method="dense")
    assert "pair_0_question" not in params["params"]
    dense_fn = jax.jit(lambda p, o, m: model.apply(p, o, None, m, method="dense"))
    dense = dense_fn(params, objects, mask)
    edges = jax.jit(model.apply)(params, pair_graph(objects, None, mask))
    np.testing.assert_allclose(dense, edges, rtol=1e-5, atol=1e-5)


def test_pair_graph_checks_the_mask_shape():
    objects, question, _ = _scenes()
    with pytest.raises(ValueError, match=r"mask must be \(3, 5\)"):
        pair_graph(objects, question, np.ones((3, 4), bool))
