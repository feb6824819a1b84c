"""Tests for gnkit.nn.RelationNetwork: a NumPy reference over explicit pairs, the dense layout
against the edge-list layout (outputs and gradients), with and without pair features, and masks;
`gnkit.blocks.relation_network`'s pair features."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit import blocks
from gnkit.graph import GraphsTuple
from gnkit.nn import RelationNetwork
from gnkit.nn.relation_network import pair_graph

N_OBJECT, F, Q, P = 5, 3, 4, 2


def _scenes(seed=0, batch=3):
    rng = np.random.default_rng(seed)
    objects = rng.normal(size=(batch, N_OBJECT, F)).astype(np.float32)
    question = rng.normal(size=(batch, Q)).astype(np.float32)
    mask = np.ones((batch, N_OBJECT), bool)
    mask[1, 3:] = False  # scene 1 has 3 objects
    mask[2, [0, 2]] = False  # scene 2 has objects 1, 3, 4
    return objects, question, mask


def _pairs(seed=5, batch=3):
    """Pair features `[B, n, n, P]`, not symmetric, so a swapped sender and receiver shows."""
    return (
        np.random.default_rng(seed).normal(size=(batch, N_OBJECT, N_OBJECT, P)).astype(np.float32)
    )


def _model(self_pairs=True, use_edges=False):
    return RelationNetwork(
        pair_features=(8, 6, 7), output_features=(9, 2), self_pairs=self_pairs, use_edges=use_edges
    )


def _init(model, objects, question, mask, pairs=None):
    return model.init(jax.random.key(1), objects, question, mask, pairs, method="dense")


def _reference(params, objects, question, mask, self_pairs, pairs=None):
    """f(sum over counted pairs (sender i, receiver j) of g([o_i, o_j, e_ji, q])) with the
    unfactorised first layer."""
    p = params["params"]
    rows = [p["pair_0_objects"]["kernel"][:, :8], p["pair_0_objects"]["kernel"][:, 8:]]
    if pairs is not None:
        rows.append(p["pair_0_edges"]["kernel"])
    kernel = np.concatenate(rows + [p["pair_0_question"]["kernel"]], axis=0)  # [s, r, e, q] rows
    out = []
    for b in range(objects.shape[0]):
        total = np.zeros(7)
        for i in range(N_OBJECT):
            for j in range(N_OBJECT):
                if not (mask[b, i] and mask[b, j]) or (i == j and not self_pairs):
                    continue
                pair = [] if pairs is None else [pairs[b, j, i]]
                x = np.concatenate([objects[b, i], objects[b, j], *pair, question[b]])
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
def test_dense_with_pair_features_matches_numpy_pairs(self_pairs):
    objects, question, mask = _scenes(seed=6)
    pairs = _pairs()
    model = _model(self_pairs, use_edges=True)
    params = _init(model, objects, question, mask, pairs)
    assert params["params"]["pair_0_edges"]["kernel"].shape == (P, 8)
    got = model.apply(params, objects, question, mask, pairs, method="dense")
    want = _reference(jax.device_get(params), objects, question, mask, self_pairs, pairs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("use_edges", [False, True])
@pytest.mark.parametrize("self_pairs", [True, False])
def test_dense_equals_edge_list_outputs_and_gradients(self_pairs, use_edges):
    objects, question, mask = _scenes(seed=2)
    pairs = _pairs() if use_edges else None
    model = _model(self_pairs, use_edges)
    params = _init(model, objects, question, mask, pairs)
    graph = pair_graph(objects, question, mask, self_pairs=self_pairs, pairs=pairs)
    assert graph.n_node.tolist() == [5, 3, 3]
    assert (graph.edges is None) == (not use_edges)
    target = jnp.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]])

    def dense_loss(params):
        dense = model.apply(params, objects, question, mask, pairs, method="dense")
        return jnp.sum((dense - target) ** 2)

    def edge_loss(params):
        return jnp.sum((model.apply(params, graph) - target) ** 2)

    np.testing.assert_allclose(
        model.apply(params, graph),
        model.apply(params, objects, question, mask, pairs, method="dense"),
        rtol=1e-5,
        atol=1e-5,
    )
    dense_grads = jax.grad(dense_loss)(params)
    edge_grads = jax.grad(edge_loss)(params)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), dense_grads, edge_grads
    )


@pytest.mark.parametrize("use_edges", [False, True])
def test_parameters_initialised_by_either_layout_are_the_same_tree(use_edges):
    objects, question, mask = _scenes()
    pairs = _pairs() if use_edges else None
    model = _model(use_edges=use_edges)
    dense = _init(model, objects, question, mask, pairs)
    edges = model.init(jax.random.key(1), pair_graph(objects, question, mask, pairs=pairs))
    shapes = jax.tree_util.tree_map(np.shape, dense)
    assert shapes == jax.tree_util.tree_map(np.shape, edges)
    assert ("pair_0_edges" in dense["params"]) == use_edges


def test_without_use_edges_the_graph_edges_change_nothing():
    objects, question, mask = _scenes()
    model = _model()
    plain = pair_graph(objects, question, mask)
    with_edges = pair_graph(objects, question, mask, pairs=_pairs())
    params = model.init(jax.random.key(1), plain)
    np.testing.assert_array_equal(model.apply(params, plain), model.apply(params, with_edges))


def test_pairs_must_come_exactly_with_use_edges():
    objects, question, mask = _scenes()
    with pytest.raises(ValueError, match="use_edges=False"):
        _init(_model(), objects, question, mask, _pairs())
    with pytest.raises(ValueError, match="use_edges=True"):
        _init(_model(use_edges=True), objects, question, mask)
    with pytest.raises(ValueError, match=r"pairs must be \(3, 5, 5\)"):
        pair_graph(objects, question, mask, pairs=_pairs()[:, :4])


def test_block_passes_pair_features_with_use_edges():
    # Two graphs: 2 objects (both ordered pairs) and 1 object (its self-pair).
    graph = GraphsTuple(
        nodes=jnp.array([[1.0], [2.0], [5.0]]),
        edges=jnp.array([[10.0], [20.0], [100.0]]),
        senders=jnp.array([0, 1, 2]),
        receivers=jnp.array([1, 0, 2]),
        globals=None,
        n_node=jnp.array([2, 1]),
        n_edge=jnp.array([2, 1]),
    )

    def pair_fn(sender_nodes, receiver_nodes, edges):
        return sender_nodes * edges - receiver_nodes

    network = blocks.relation_network(pair_fn, lambda edges: 2 * edges, use_edges=True)
    # graph 0: (1 * 10 - 2) + (2 * 20 - 1) = 47; graph 1: 5 * 100 - 5 = 495.
    np.testing.assert_allclose(network(graph).globals, [[94.0], [990.0]])
    without = blocks.relation_network(
        lambda sender_nodes, receiver_nodes: sender_nodes, lambda edges: edges
    )
    np.testing.assert_allclose(without(graph).globals, [[3.0], [5.0]])


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
