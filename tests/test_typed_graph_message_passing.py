"""gnkit.typed_graph's typed blocks against per-relation NumPy loops: the typed graph network,
`hetero_conv` with GraphSAGE / GIN / GINE per edge set and each combination, R-GCN over edge sets;
and padding invariance (real outputs unchanged by padding)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _typed_graphs import CITES, WIDTH, WRITES, WRITTEN_BY, random_graphs

import gnkit
from gnkit import typed_graph as tg
from gnkit.convolutions import gine

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def graph_and_padded(seed=0, count=3):
    graph = tg.batch(random_graphs(seed, count))
    policy = tg.BucketPolicy(min_nodes=16, min_edges=16, min_graphs=4)
    return graph, tg.pad_to_budget(graph, policy.round(graph))


def matrices(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for shape in shapes]


def incoming(edge_set, node):
    return np.flatnonzero(np.asarray(edge_set.receivers) == node)


def real_rows(graph, padded_out, name):
    return np.asarray(padded_out.nodes[name].features)[: graph.num_nodes(name)]


# --------------------------------------------------------------------- typed graph network


def test_typed_graph_network_matches_a_per_set_loop():
    graph, padded = graph_and_padded(1)
    edge_width = graph.edges[CITES].features.shape[1]
    context_width = graph.context.features.shape[1]
    w_edge = dict(zip(graph.edges, matrices(2, *[(edge_width + 2 * WIDTH + context_width, 4)] * 3),
                      strict=True))
    w_node = {"paper": matrices(3, (WIDTH + 4 + 4, 5))[0], "author": matrices(4, (WIDTH + 4, 5))[0]}
    w_context = matrices(5, (5 + 5 + 4 + 4 + 4 + context_width, 2))[0]

    def edge_fn(key):
        return lambda edges, sender_nodes, receiver_nodes, context: jnp.concatenate(
            [edges, sender_nodes, receiver_nodes, context], -1) @ w_edge[key]

    def node_fn(name):
        def update(nodes, received_edges, sent_edges, context):
            parts = [received_edges[k] for k in sorted(received_edges)]
            return jnp.concatenate([nodes, *parts], -1) @ w_node[name]
        return update

    def context_fn(nodes, edges, context):
        parts = [nodes[n] for n in sorted(nodes)] + [edges[k] for k in sorted(edges)]
        return jnp.concatenate(parts + [context], -1) @ w_context

    network = tg.typed_graph_network({k: edge_fn(k) for k in graph.edges},
                                     {n: node_fn(n) for n in graph.nodes}, context_fn)
    out = jax.jit(network)(graph)

    # The loop: every edge, then every node, then every graph.
    g = jax.tree_util.tree_map(np.asarray, graph)
    new_edges = {}
    for key, edge_set in g.edges.items():
        sender_set, receiver_set = key.node_sets
        edge_graph = np.repeat(np.arange(g.num_graphs), edge_set.n_edge)
        ends = zip(edge_set.senders, edge_set.receivers, strict=True)
        rows = [np.concatenate([edge_set.features[e], g.nodes[sender_set].features[s],
                                g.nodes[receiver_set].features[r],
                                g.context.features[edge_graph[e]]])
                for e, (s, r) in enumerate(ends)]
        new_edges[key] = np.stack(rows) @ w_edge[key]
        np.testing.assert_allclose(out.edges[key].features, new_edges[key], **TOLERANCE)
    new_nodes = {}
    for name, node_set in g.nodes.items():
        into = sorted(k for k in g.edges if k.node_sets[1] == name)
        rows = []
        for node in range(g.num_nodes(name)):
            sums = [new_edges[k][incoming(g.edges[k], node)].sum(0) for k in into]
            rows.append(np.concatenate([node_set.features[node], *sums]))
        new_nodes[name] = np.stack(rows) @ w_node[name]
        np.testing.assert_allclose(out.nodes[name].features, new_nodes[name], **TOLERANCE)
    pooled = []
    for name in sorted(g.nodes):
        index = np.repeat(np.arange(g.num_graphs), g.nodes[name].n_node)
        pooled.append(np.stack([new_nodes[name][index == i].sum(0) for i in range(g.num_graphs)]))
    for key in sorted(g.edges):
        index = np.repeat(np.arange(g.num_graphs), g.edges[key].n_edge)
        pooled.append(np.stack([new_edges[key][index == i].sum(0) for i in range(g.num_graphs)]))
    expected_context = np.concatenate(pooled + [g.context.features], -1) @ w_context
    np.testing.assert_allclose(out.context.features, expected_context, **TOLERANCE)

    padded_out = jax.jit(network)(padded)
    for name in graph.nodes:
        np.testing.assert_allclose(real_rows(graph, padded_out, name), new_nodes[name],
                                   **TOLERANCE)
    np.testing.assert_allclose(padded_out.context.features[: graph.num_graphs],
                               expected_context, **TOLERANCE)


# ------------------------------------------------------------------------------ hetero_conv


def _sage_loop(graph, keys, w_neighbors, w_root, reduce):
    """Per receiving set: the `reduce` over edge sets into it of `W_n mean_j x_j + W_r x_i`."""
    g = jax.tree_util.tree_map(np.asarray, graph)
    out = {}
    for name in g.nodes:
        into = [k for k in keys if k.node_sets[1] == name]
        if not into:
            out[name] = g.nodes[name].features
            continue
        per_relation = []
        for key in into:
            x_sender = g.nodes[key.node_sets[0]].features
            rows = []
            for node in range(g.num_nodes(name)):
                edges = incoming(g.edges[key], node)
                mean = x_sender[g.edges[key].senders[edges]].mean(0) if len(edges) else 0 * \
                    x_sender[0]
                rows.append(mean @ w_neighbors[key] + g.nodes[name].features[node] @ w_root[key])
            per_relation.append(np.stack(rows))
        out[name] = reduce(np.stack(per_relation), axis=0)
    return out


@pytest.mark.parametrize("aggregate, reduce", [("sum", np.sum), ("mean", np.mean),
                                                ("max", np.max)])
def test_hetero_conv_with_sage_matches_a_per_relation_loop(aggregate, reduce):
    graph, padded = graph_and_padded(2)
    keys = [CITES, WRITES]  # both into 'paper'; 'author' receives nothing and keeps its rows
    w_neighbors = dict(zip(keys, matrices(6, (WIDTH, 4), (WIDTH, 4)), strict=True))
    w_root = dict(zip(keys, matrices(7, (WIDTH, 4), (WIDTH, 4)), strict=True))
    convs = {
        key: gnkit.graph_sage(
            lambda nodes, neighbors, k=key: neighbors @ w_neighbors[k] + nodes @ w_root[k])
        for key in keys
    }
    layer = jax.jit(tg.hetero_conv({"cites": convs[CITES], WRITES: convs[WRITES]},
                                   aggregate=aggregate))
    expected = _sage_loop(graph, keys, w_neighbors, w_root, reduce)
    out, padded_out = layer(graph), layer(padded)
    for name in graph.nodes:
        np.testing.assert_allclose(out.nodes[name].features, expected[name], **TOLERANCE)
        np.testing.assert_allclose(real_rows(graph, padded_out, name), expected[name],
                                   **TOLERANCE)


def test_hetero_conv_with_gin_and_gine_matches_a_per_relation_loop():
    graph, padded = graph_and_padded(3)
    (w_gin,) = matrices(8, (WIDTH, 4))
    w_gine, w_edge = matrices(9, (WIDTH, 4), (2, WIDTH))
    epsilon = 0.25
    convs = {
        WRITTEN_BY: gnkit.gin(lambda x: x @ w_gin, epsilon=epsilon),
        WRITES: gine(lambda x: x @ w_gine, edge_fn=lambda e: e @ w_edge),
    }
    layer = jax.jit(tg.hetero_conv(convs))
    g = jax.tree_util.tree_map(np.asarray, graph)
    papers, authors = g.nodes["paper"].features, g.nodes["author"].features
    expected_author = []
    for node in range(g.num_nodes("author")):
        edges = incoming(g.edges[WRITTEN_BY], node)
        total = papers[g.edges[WRITTEN_BY].senders[edges]].sum(0)
        expected_author.append(((1 + epsilon) * authors[node] + total) @ w_gin)
    expected_paper = []
    for node in range(g.num_nodes("paper")):
        edges = incoming(g.edges[WRITES], node)
        messages = np.maximum(authors[g.edges[WRITES].senders[edges]]
                              + g.edges[WRITES].features[edges] @ w_edge, 0)
        expected_paper.append((papers[node] + messages.sum(0)) @ w_gine)
    for out in (layer(graph), layer(padded)):
        np.testing.assert_allclose(real_rows(graph, out, "author"), np.stack(expected_author),
                                   **TOLERANCE)
        np.testing.assert_allclose(real_rows(graph, out, "paper"), np.stack(expected_paper),
                                   **TOLERANCE)


def test_hetero_conv_between_sets_of_different_widths_is_bipartite():
    graph, _ = graph_and_padded(4)
    narrow = graph._replace(nodes={**graph.nodes, "author": graph.nodes["author"]._replace(
        features=graph.nodes["author"].features[:, :2])})
    bipartite, offset = tg.edge_set_graph(narrow, WRITES)
    assert offset == 0 and isinstance(bipartite.nodes, gnkit.convolutions.BipartiteNodes)
    np.testing.assert_array_equal(bipartite.nodes.sender_nodes, narrow.nodes["author"].features)
    np.testing.assert_array_equal(bipartite.nodes.receiver_nodes, narrow.nodes["paper"].features)
    np.testing.assert_array_equal(bipartite.receivers, narrow.edges[WRITES].receivers)
    with pytest.raises(ValueError, match=r"gin takes the nodes of one node set, but the graph is "
                                         r"bipartite \(sender and receiver nodes of widths 2 and "
                                         r"3\).*project both node sets to one width"):
        tg.hetero_conv({WRITES: gnkit.gin(lambda x: x)})(narrow)
    with pytest.raises(ValueError, match="aggregate must be one of"):
        tg.hetero_conv({WRITES: gnkit.gin(lambda x: x)}, aggregate="min")


# ------------------------------------------------------------------------------------- R-GCN


@pytest.mark.parametrize("normalization", ["in_degree", "none"])
def test_rgcn_over_edge_sets_matches_a_per_relation_loop(normalization):
    graph, padded = graph_and_padded(5)
    # Authors get a narrower width: each relation's own matrix maps its sender set's width.
    graph = graph._replace(nodes={**graph.nodes, "author": graph.nodes["author"]._replace(
        features=graph.nodes["author"].features[:, :2])})
    padded = padded._replace(nodes={**padded.nodes, "author": padded.nodes["author"]._replace(
        features=padded.nodes["author"].features[:, :2])})
    widths = {"paper": WIDTH, "author": 2}
    relation = {k: matrices(10 + i, (widths[k.node_sets[0]], 4))[0]
                for i, k in enumerate(graph.edges)}
    self_weight = {"paper": matrices(20, (WIDTH, 4))[0]}
    layer = jax.jit(tg.rgcn({k: (lambda x, w=w: x @ w) for k, w in relation.items()},
                            {"paper": lambda x: x @ self_weight["paper"]},
                            normalization=normalization))
    g = jax.tree_util.tree_map(np.asarray, graph)
    expected = {}
    for name in g.nodes:
        rows = []
        for node in range(g.num_nodes(name)):
            total = g.nodes[name].features[node] @ self_weight[name] if name in self_weight \
                else np.zeros(4)
            for key in (k for k in g.edges if k.node_sets[1] == name):
                edges = incoming(g.edges[key], node)
                if len(edges):
                    x = g.nodes[key.node_sets[0]].features[g.edges[key].senders[edges]]
                    scale = len(edges) if normalization == "in_degree" else 1
                    total = total + (x @ relation[key]).sum(0) / scale
            rows.append(total)
        expected[name] = np.stack(rows)
    for out in (layer(graph), layer(padded)):
        for name in g.nodes:
            np.testing.assert_allclose(real_rows(graph, out, name), expected[name], **TOLERANCE)


def test_typed_blocks_are_differentiable_with_finite_gradients():
    _, padded = graph_and_padded(6)
    (w,) = matrices(30, (WIDTH, WIDTH))

    def loss(weight, graph):
        layer = tg.hetero_conv({k: gnkit.graph_sage(lambda nodes, neighbors: (neighbors + nodes)
                                                    @ weight, aggregator="max")
                                for k in graph.edges}, aggregate="max")
        out = layer(graph)
        return sum(jnp.sum(jnp.where(tg.node_mask(graph, n)[:, None], s.features, 0.0) ** 2)
                   for n, s in out.nodes.items())

    grad = jax.jit(jax.grad(loss))(jnp.asarray(w), padded)
    assert np.all(np.isfinite(grad)) and np.abs(grad).max() > 0
