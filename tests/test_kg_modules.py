"""Tests of the R-GCN convolution and layer against loops in NumPy, the R-GCN as a node
classifier, and `nn.KGEmbedding` against the scorers on its own tables."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import gnkit as gn
from gnkit import kg
from gnkit.convolutions import rgcn
from gnkit.nn import RGCN, KGEmbedding, RGCNEncoder

RNG = np.random.default_rng(0)


def _graph(nodes, senders, receivers, relations):
    return gn.GraphsTuple(
        nodes=jnp.asarray(nodes, jnp.float32), edges=jnp.asarray(relations),
        senders=jnp.asarray(senders), receivers=jnp.asarray(receivers), globals=None,
        n_node=jnp.array([len(nodes)]), n_edge=jnp.array([len(senders)]))


def _random_graph(num_nodes=7, num_edges=20, num_relations=3, features=4, seed=0):
    rng = np.random.default_rng(seed)
    return _graph(rng.normal(size=(num_nodes, features)), rng.integers(0, num_nodes, num_edges),
                  rng.integers(0, num_nodes, num_edges), rng.integers(0, num_relations, num_edges))


def _numpy_rgcn(graph, kernels, self_kernel, bias, normalize=True):
    """`x'_i = x_i W_0 + sum_r sum_{j -r-> i} x_j W_r / c_ir + b`, one edge at a time."""
    nodes = np.asarray(graph.nodes, np.float64)
    senders, receivers, relations = (np.asarray(a) for a in (graph.senders, graph.receivers,
                                                             graph.edges))
    out = nodes @ self_kernel + bias
    for sender, receiver, relation in zip(senders, receivers, relations, strict=True):
        count = np.sum((receivers == receiver) & (relations == relation)) if normalize else 1
        out[receiver] += nodes[sender] @ kernels[relation] / count
    return out


def test_rgcn_block_matches_the_edge_loop():
    graph = _random_graph()
    kernels = RNG.normal(size=(3, 4, 5))
    self_kernel = RNG.normal(size=(4, 5))
    block = rgcn(lambda x: jnp.einsum("nf,rfo->nro", x, kernels), lambda x: x @ self_kernel,
                 num_relations=3)
    expected = _numpy_rgcn(graph, kernels, self_kernel, 0.0)
    np.testing.assert_allclose(block(graph).nodes, expected, rtol=1e-4, atol=1e-4)
    plain = rgcn(lambda x: jnp.einsum("nf,rfo->nro", x, kernels), num_relations=3,
                 normalization="none")(graph)
    np.testing.assert_allclose(plain.nodes, _numpy_rgcn(graph, kernels, np.zeros((4, 5)), 0.0,
                                                        normalize=False), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="normalization"):
        rgcn(lambda x: x, num_relations=3, normalization="mean")


@pytest.mark.parametrize("decomposition", ["full", "bases", "blocks"])
def test_rgcn_layer_matches_numpy_with_its_weights(decomposition):
    graph = _random_graph(features=4)
    settings = {"full": {}, "bases": {"num_bases": 2}, "blocks": {"num_blocks": 2}}[decomposition]
    layer = RGCN(6, num_relations=3, **settings)
    params = layer.init(jax.random.key(0), graph)["params"]
    params["bias"] = jnp.asarray(RNG.normal(size=6), jnp.float32)
    if decomposition == "full":
        kernels = np.asarray(params["kernels"])
    elif decomposition == "bases":
        kernels = np.einsum("rb,bfo->rfo", params["coefficients"], params["bases"])
    else:
        kernels = np.zeros((3, 4, 6))
        for r in range(3):
            for k in range(2):
                kernels[r, 2 * k:2 * k + 2, 3 * k:3 * k + 3] = params["blocks"][r, k]
    expected = _numpy_rgcn(graph, kernels, np.asarray(params["self"]["kernel"]),
                           np.asarray(params["bias"]))
    np.testing.assert_allclose(layer.apply({"params": params}, graph).nodes, expected,
                               rtol=1e-4, atol=1e-4)


def test_rgcn_layer_rejects_bad_decompositions():
    graph = _random_graph(features=4)
    with pytest.raises(ValueError, match="num_blocks=3 must divide"):
        RGCN(6, num_relations=3, num_blocks=3).init(jax.random.key(0), graph)
    with pytest.raises(ValueError, match="not both"):
        RGCN(6, num_relations=3, num_bases=2, num_blocks=2).init(jax.random.key(0), graph)


@pytest.mark.slow
def test_rgcn_classifies_nodes_by_the_relations_they_receive():
    # Each node's class is the relation of the edges it receives (0, 1 or 2), its features are
    # noise: only the relation-specific weights tell the classes apart.
    rng = np.random.default_rng(1)
    num_nodes = 30
    labels = np.arange(num_nodes) % 3
    receivers = np.repeat(np.arange(num_nodes), 2)
    senders = rng.integers(0, num_nodes, 2 * num_nodes)
    graph = _graph(rng.normal(size=(num_nodes, 4)) + 1.0, senders, receivers, labels[receivers])
    model = RGCNEncoder((16, 3), num_relations=3, num_bases=2)
    params = model.init(jax.random.key(0), graph)
    optimizer = optax.adam(0.05)
    opt_state = optimizer.init(params)

    def loss(p):
        logits = model.apply(p, graph).nodes
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    def step(_, carry):
        p, state = carry
        updates, state = optimizer.update(jax.grad(loss)(p), state)
        return optax.apply_updates(p, updates), state

    params, _ = jax.jit(lambda carry: jax.lax.fori_loop(0, 60, step, carry))((params, opt_state))
    predictions = np.argmax(model.apply(params, graph).nodes, -1)
    assert np.mean(predictions == labels) == 1.0


@pytest.mark.parametrize("name", ["transe", "distmult", "complex", "rotate"])
def test_kg_embedding_scores_with_its_tables(name):
    module = KGEmbedding(9, 4, 5, scorer=name)
    heads, relations, tails = jnp.array([0, 3, 8]), jnp.array([1, 0, 3]), jnp.array([2, 2, 7])
    params = module.init(jax.random.key(0), heads, relations, tails)
    entities, relation_table = module.apply(params, method="tables")
    scorer = kg.get_scorer(name)
    assert entities.shape == (9, scorer.entity_width(5))
    assert relation_table.shape == (4, scorer.relation_width(5))
    np.testing.assert_allclose(
        module.apply(params, heads, relations, tails),
        scorer.score(entities[heads], relation_table[relations], entities[tails]), rtol=1e-6)
    tail_scores = module.apply(params, heads, relations, method="score_tails")
    np.testing.assert_allclose(tail_scores[np.arange(3), tails],
                               module.apply(params, heads, relations, tails), rtol=1e-4, atol=1e-5)
    head_scores = module.apply(params, relations, tails, method="score_heads")
    np.testing.assert_allclose(head_scores[np.arange(3), heads],
                               module.apply(params, heads, relations, tails), rtol=1e-4, atol=1e-5)
    if name == "rotate":
        assert np.all(np.abs(relation_table) <= np.pi)
    factors = [entities[heads], entities[tails]]
    if name != "rotate":
        factors.append(relation_table[relations])
    width = entities.shape[1] // 2
    n3 = 0.0
    for factor in np.asarray(factors, np.float64):
        modulus = (np.hypot(factor[:, :width], factor[:, width:]) if scorer.complex_entities
                   else np.abs(factor))
        n3 += (modulus**3).sum() / 3
    penalty = module.apply(params, heads, relations, tails, "n3", method="penalty")
    assert float(penalty) == pytest.approx(n3, rel=1e-4)


def test_kg_embedding_through_an_rgcn_encoder():
    train = np.array([[0, 0, 1], [1, 1, 2], [2, 0, 3], [3, 1, 0]])
    graph = _graph(np.zeros((4, 1)), train[:, 0], train[:, 2], train[:, 1])
    module = KGEmbedding(4, 2, 3, scorer="distmult", encoder=RGCNEncoder((3,), num_relations=2))
    index = jnp.array([0])
    params = module.init(jax.random.key(0), index, index, index, graph)
    raw = params["params"]["entities"]
    layer = params["params"]["encoder"]["layer_0"]
    expected = _numpy_rgcn(graph._replace(nodes=raw), np.asarray(layer["kernels"]),
                           np.asarray(layer["self"]["kernel"]), np.asarray(layer["bias"]))
    entities, _ = module.apply(params, graph, method="tables")
    np.testing.assert_allclose(entities, expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="needs the graph"):
        module.apply(params, index, index, index)
