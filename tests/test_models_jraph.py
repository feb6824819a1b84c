"""gnkit.models against jraph 0.0.6 on the same random batched graphs and update functions.

The batch has an empty graph, a graph with nodes but no edges, and nodes without incoming edges,
so every default aggregator meets empty segments. Update functions are called positionally by
both libraries; they are fixed random linear maps with parameter names jraph never uses.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit import models
from gnkit.convolutions import gcn
from gnkit.segment import segment_mean

jraph = pytest.importorskip("jraph")

N_NODE = np.array([3, 0, 4, 2])
N_EDGE = np.array([4, 0, 6, 0])


def random_graph(seed=0, tree_nodes=False):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(N_NODE)[:-1]])
    senders, receivers = [], []
    for offset, n_node, n_edge in zip(offsets, N_NODE, N_EDGE, strict=True):
        senders.append(offset + rng.integers(0, max(n_node, 1), n_edge))
        receivers.append(offset + rng.integers(0, max(n_node, 1), n_edge))
    n_total, e_total = N_NODE.sum(), N_EDGE.sum()
    nodes = jnp.asarray(rng.normal(size=(n_total, 3)), jnp.float32)
    if tree_nodes:
        nodes = {"a": nodes, "b": jnp.asarray(rng.normal(size=(n_total, 2)), jnp.float32)}
    return jraph.GraphsTuple(
        nodes=nodes,
        edges=jnp.asarray(rng.normal(size=(e_total, 2)), jnp.float32),
        senders=jnp.asarray(np.concatenate(senders)),
        receivers=jnp.asarray(np.concatenate(receivers)),
        globals=jnp.asarray(rng.normal(size=(len(N_NODE), 2)), jnp.float32),
        n_node=jnp.asarray(N_NODE),
        n_edge=jnp.asarray(N_EDGE),
    )


def linear(out_dim, seed):
    """Concatenate every leaf of every positional argument, then tanh(x @ W)."""

    def update(*arguments):
        x = jnp.concatenate(jax.tree_util.tree_leaves(arguments), axis=-1)
        w = np.random.default_rng([seed, x.shape[-1]]).normal(size=(x.shape[-1], out_dim))
        return jnp.tanh(x @ w.astype(np.float32))

    return update


def assert_graphs_close(ours, theirs):
    for field in ("nodes", "edges", "globals", "senders", "receivers", "n_node", "n_edge"):
        jax.tree_util.tree_map(
            lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), 1e-5, 1e-5),
            getattr(ours, field),
            getattr(theirs, field),
        )


def both(name, *args, **kwargs):
    return getattr(models, name)(*args, **kwargs), getattr(jraph, name)(*args, **kwargs)


@pytest.mark.parametrize("tree_nodes", [False, True])
def test_graph_network(tree_nodes):
    graph = random_graph(tree_nodes=tree_nodes)
    ours, theirs = both("GraphNetwork", linear(4, 1), linear(3, 2), linear(2, 3))
    assert_graphs_close(ours(graph), theirs(graph))


def test_graph_network_with_other_aggregators_under_jit():
    graph = random_graph()
    updates = linear(4, 1), linear(3, 2), linear(2, 3)
    ours = models.GraphNetwork(
        *updates,
        aggregate_edges_for_nodes_fn=segment_mean,
        aggregate_nodes_for_globals_fn=segment_mean,
    )
    theirs = jraph.GraphNetwork(
        *updates,
        aggregate_edges_for_nodes_fn=jraph.segment_mean,
        aggregate_nodes_for_globals_fn=jraph.segment_mean,
    )
    assert_graphs_close(jax.jit(ours)(graph), theirs(graph))


def attention_logits(edges, sender_nodes, receiver_nodes, globals_):
    return jnp.sum(edges[:, :1] * sender_nodes[:, :1] + receiver_nodes[:, 1:2], -1, keepdims=True)


def attention_reduce(edges, weights):
    return edges * weights


def sigmoid_normalize(logits, segment_ids, num_segments):
    del segment_ids, num_segments
    return jax.nn.sigmoid(logits)


@pytest.mark.parametrize("normalize", [None, sigmoid_normalize])
def test_graph_network_attention(normalize):
    graph = random_graph(1)
    kwargs = {"attention_normalize_fn": normalize} if normalize else {}
    ours, theirs = both(
        "GraphNetwork",
        linear(2, 1),
        linear(3, 2),
        linear(2, 3),
        attention_logit_fn=attention_logits,
        attention_reduce_fn=attention_reduce,
        **kwargs,
    )
    assert_graphs_close(ours(graph), theirs(graph))


def test_graph_net_gat():
    graph = random_graph(2)
    ours, theirs = both(
        "GraphNetGAT", linear(2, 1), linear(3, 2), attention_logits, attention_reduce, linear(2, 3)
    )
    assert_graphs_close(ours(graph), theirs(graph))


@pytest.mark.parametrize("include_sent", [False, True])
def test_interaction_network(include_sent):
    graph = random_graph(3)
    ours, theirs = both(
        "InteractionNetwork",
        linear(4, 1),
        linear(3, 2),
        include_sent_messages_in_node_update=include_sent,
    )
    assert_graphs_close(ours(graph), theirs(graph))


def test_relation_network_deep_sets_and_graph_map_features():
    graph = random_graph(4)
    for name, updates in [
        ("RelationNetwork", (linear(4, 1), linear(2, 2))),
        ("DeepSets", (linear(4, 3), linear(2, 4))),
        ("GraphMapFeatures", (linear(3, 5), linear(3, 6), linear(3, 7))),
    ]:
        ours, theirs = both(name, *updates)
        assert_graphs_close(ours(graph), theirs(graph))


def gat_query(nodes):
    w = np.random.default_rng(5).normal(size=(3, 2, 4)).astype(np.float32)
    return jnp.einsum("nf,fhd->nhd", nodes, w)


def gat_logit(sent, received, edges):
    return jnp.sum(sent * received, axis=-1, keepdims=True) + edges[:, :1, None]


@pytest.mark.parametrize("node_update_fn", [None, lambda nodes: jnp.sum(nodes, axis=1)])
def test_gat(node_update_fn):
    graph = random_graph(5)
    ours, theirs = both("GAT", gat_query, gat_logit, node_update_fn)
    assert_graphs_close(ours(graph), theirs(graph))


@pytest.mark.parametrize("add_self_edges", [False, True])
@pytest.mark.parametrize("symmetric_normalization", [False, True])
def test_graph_convolution_and_native_gcn(add_self_edges, symmetric_normalization):
    graph = random_graph(6)
    config = {"add_self_edges": add_self_edges, "symmetric_normalization": symmetric_normalization}
    update = linear(4, 1)
    ours, theirs = both("GraphConvolution", update, **config)
    expected = theirs(graph)
    assert_graphs_close(ours(graph), expected)
    assert_graphs_close(gcn(update, **config)(graph), expected)


def test_graph_convolution_with_other_aggregator():
    graph = random_graph(6)
    ours = models.GraphConvolution(lambda x: x, segment_mean, add_self_edges=True)
    theirs = jraph.GraphConvolution(lambda x: x, jraph.segment_mean, add_self_edges=True)
    assert_graphs_close(ours(graph), theirs(graph))


def test_indices_are_sorted_passes_through():
    graph = random_graph(7)
    order = np.argsort(np.asarray(graph.receivers), kind="stable")
    sorted_graph = graph._replace(
        senders=graph.senders[order], receivers=graph.receivers[order], edges=graph.edges[order]
    )
    for make in [
        lambda s: models.GraphNetwork(
            linear(2, 1), linear(3, 2), linear(2, 3), indices_are_sorted=s
        ),
        lambda s: models.GAT(gat_query, gat_logit, indices_are_sorted=s),
        lambda s: models.GraphConvolution(linear(3, 1), indices_are_sorted=s),
    ]:
        np.testing.assert_allclose(
            make(True)(sorted_graph).nodes, make(False)(graph).nodes, rtol=1e-5, atol=1e-5
        )


def test_concatenated_args_matches_jraph():
    arguments = (jnp.ones((2, 1)), {"x": jnp.zeros((2, 2))})
    keywords = {"b": jnp.full((2, 1), 2.0), "a": jnp.full((2, 1), 3.0)}
    ours, theirs = models.concatenated_args(lambda x: x), jraph.concatenated_args(lambda x: x)
    np.testing.assert_array_equal(ours(*arguments, **keywords), theirs(*arguments, **keywords))
    ours = models.concatenated_args(axis=0)(lambda x: x)
    theirs = jraph.concatenated_args(axis=0)(lambda x: x)
    np.testing.assert_array_equal(ours(jnp.ones(2), b=jnp.zeros(1)), [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(theirs(jnp.ones(2), b=jnp.zeros(1)), [1.0, 1.0, 0.0])


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (lambda: models.GraphNetwork(None, linear(2, 1)), "nodes"),
        (lambda: models.GraphNetwork(linear(2, 1), None), "receivers"),
        (lambda: models.InteractionNetwork(linear(2, 1), linear(2, 2)), "senders"),
        (lambda: models.GAT(gat_query, gat_logit), "nodes"),
        (lambda: models.GraphConvolution(lambda x: x), "receivers"),
    ],
)
def test_missing_field_raises_value_error(model, field):
    with pytest.raises(ValueError, match=f"graph.{field}"):
        model()(random_graph()._replace(**{field: None}))


def test_deep_sets_needs_no_edge_indices():
    graph = random_graph(8)
    expected = jraph.DeepSets(linear(3, 1), linear(2, 2))(graph)
    no_edges = graph._replace(edges=None, senders=None, receivers=None)
    out = jax.jit(models.DeepSets(linear(3, 1), linear(2, 2)))(no_edges)
    np.testing.assert_allclose(out.globals, expected.globals, rtol=1e-5, atol=1e-5)


def test_attention_functions_come_in_pairs():
    with pytest.raises(ValueError, match="must both be supplied"):
        models.GraphNetwork(None, None, attention_logit_fn=attention_logits)
    with pytest.raises(ValueError, match="not supported"):
        models.GraphNetGAT(linear(2, 1), linear(2, 2), None, attention_reduce)


def recorded(log, name, fn):
    """`fn`, appending `name` to `log` on every call."""

    def wrapped(*args, **kwargs):
        log.append(name)
        return fn(*args, **kwargs)

    return wrapped


def _callbacks(log, library):
    """Every jraph model with each callback (and aggregator) recording its calls in `log`."""
    segment_sum = recorded(log, "aggregate", library.segment_sum)
    gn_updates = {
        "update_edge_fn": recorded(log, "edge", linear(2, 1)),
        "update_node_fn": recorded(log, "node", linear(3, 2)),
        "update_global_fn": recorded(log, "global", linear(2, 3)),
    }
    attention = {
        "attention_logit_fn": recorded(log, "logit", attention_logits),
        "attention_reduce_fn": recorded(log, "reduce", attention_reduce),
    }
    aggregators = {
        "aggregate_edges_for_nodes_fn": segment_sum,
        "aggregate_nodes_for_globals_fn": segment_sum,
        "aggregate_edges_for_globals_fn": segment_sum,
    }
    return {
        "GraphNetwork": dict(
            gn_updates,
            attention_normalize_fn=recorded(log, "normalize", library.segment_softmax),
            **attention,
            **aggregators,
        ),
        "GraphNetGAT": dict(gn_updates, **attention, **aggregators),
        "GraphMapFeatures": {
            "embed_edge_fn": recorded(log, "edge", linear(3, 1)),
            "embed_node_fn": recorded(log, "node", linear(3, 2)),
            "embed_global_fn": recorded(log, "global", linear(3, 3)),
        },
        "InteractionNetwork": {
            "update_edge_fn": recorded(log, "edge", linear(2, 1)),
            "update_node_fn": recorded(log, "node", linear(3, 2)),
            "aggregate_edges_for_nodes_fn": segment_sum,
        },
        "RelationNetwork": {
            "update_edge_fn": recorded(log, "edge", linear(2, 1)),
            "update_global_fn": recorded(log, "global", linear(3, 2)),
            "aggregate_edges_for_globals_fn": segment_sum,
        },
        "DeepSets": {
            "update_node_fn": recorded(log, "node", linear(2, 1)),
            "update_global_fn": recorded(log, "global", linear(3, 2)),
            "aggregate_nodes_for_globals_fn": segment_sum,
        },
        "GAT": {
            "attention_query_fn": recorded(log, "query", gat_query),
            "attention_logit_fn": recorded(log, "logit", gat_logit),
            "node_update_fn": recorded(log, "node", lambda nodes: jnp.sum(nodes, axis=1)),
        },
        "GraphConvolution": {
            "update_node_fn": recorded(log, "node", linear(4, 1)),
            "aggregate_nodes_fn": segment_sum,
        },
    }


@pytest.mark.parametrize(
    "name",
    [
        "GraphNetwork",
        "GraphNetGAT",
        "GraphMapFeatures",
        "InteractionNetwork",
        "RelationNetwork",
        "DeepSets",
        "GAT",
        "GraphConvolution",
    ],
)
def test_callbacks_are_called_in_jraph_order(name):
    tree_nodes = name in ("InteractionNetwork", "RelationNetwork", "DeepSets")
    graph = random_graph(9, tree_nodes=tree_nodes)
    ours_log, theirs_log = [], []
    ours = getattr(models, name)(**_callbacks(ours_log, models)[name])(graph)
    theirs = getattr(jraph, name)(**_callbacks(theirs_log, jraph)[name])(graph)
    assert ours_log == theirs_log
    assert len(set(theirs_log)) > 1
    assert_graphs_close(ours, theirs)


@pytest.mark.parametrize("field", ["nodes", "edges", "globals"])
def test_graph_map_features_calls_functions_on_none_fields(field):
    graph = random_graph(10)._replace(**{field: None})
    created = jnp.full((graph.n_node.shape[0], 2), 7.0)
    embed = {
        "embed_node_fn": lambda nodes: created if nodes is None else nodes * 2.0,
        "embed_edge_fn": lambda edges: created if edges is None else edges * 3.0,
        "embed_global_fn": lambda globals_: created if globals_ is None else globals_ * 4.0,
    }
    ours, theirs = both("GraphMapFeatures", **embed)
    out = ours(graph)
    np.testing.assert_array_equal(getattr(out, field), created)
    assert_graphs_close(out, theirs(graph))


def test_graph_convolution_calls_update_on_none_nodes():
    graph = random_graph(11)._replace(nodes=None)
    embeddings = jnp.arange(2.0 * N_NODE.sum()).reshape(-1, 2)
    ours, theirs = both("GraphConvolution", lambda nodes: embeddings)
    assert_graphs_close(ours(graph), theirs(graph))
    with pytest.raises(ValueError, match="graph.nodes is None"):
        models.GraphConvolution(lambda nodes: nodes)(graph)
