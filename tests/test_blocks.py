"""Native blocks (gnkit.blocks, gnkit.attention, gnkit.convolutions) against NumPy references.

The test graph: two graphs of three nodes; graph 0 has five edges, graph 1 has two, and node 5 of
graph 1 has no edge at all (an empty segment for every reduction). Update functions are fixed
random linear maps; the references recompute gathers, reductions, softmaxes and propagation with
NumPy loops.
"""

import functools
import zlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.test_util import check_grads

from gnkit import attention, blocks, convolutions
from gnkit.blocks import concatenated_args
from gnkit.graph import GraphsTuple

RNG = np.random.default_rng(0)
N_NODE = np.array([3, 3])
N_EDGE = np.array([5, 2])
SENDERS = np.array([0, 1, 1, 2, 0, 3, 4])
RECEIVERS = np.array([1, 0, 2, 1, 2, 4, 3])
NODES = RNG.normal(size=(6, 3))
EDGES = RNG.normal(size=(7, 2))
GLOBALS = RNG.normal(size=(2, 4))
NODE_GRAPH = np.array([0, 0, 0, 1, 1, 1])
EDGE_GRAPH = np.array([0, 0, 0, 0, 0, 1, 1])
HEADS = 2
ATTENTION_SENDER = RNG.normal(size=(HEADS, 2))
ATTENTION_RECEIVER = RNG.normal(size=(HEADS, 2))


def make_graph(dtype=np.float32, **changes):
    graph = GraphsTuple(
        nodes=jnp.asarray(NODES, dtype),
        edges=jnp.asarray(EDGES, dtype),
        receivers=jnp.asarray(RECEIVERS),
        senders=jnp.asarray(SENDERS),
        globals=jnp.asarray(GLOBALS, dtype),
        n_node=jnp.asarray(N_NODE),
        n_edge=jnp.asarray(N_EDGE),
    )
    return graph._replace(**changes)


def weights(name, in_dim, out_dim):
    seed = [zlib.crc32(name.encode()), in_dim, out_dim]
    return np.random.default_rng(seed).normal(size=(in_dim, out_dim)) / np.sqrt(in_dim)


def dense(out_dim, name="dense"):
    """`x @ W`, W fixed by (name, sizes); works on NumPy and JAX arrays."""
    return lambda x: x @ weights(name, x.shape[-1], out_dim).astype(x.dtype)


def linear_update(out_dim, name="update"):
    """A keyword-argument update: tanh of the sum of one linear map per named input."""

    def update(**inputs):
        total = sum(dense(out_dim, f"{name}/{key}")(x) for key, x in inputs.items())
        return jnp.tanh(total)

    return update


def reduce_np(values, segment_ids, num_segments, how):
    out = np.zeros((num_segments,) + values.shape[1:])
    for segment in range(num_segments):
        rows = values[segment_ids == segment]
        if len(rows):
            out[segment] = {"sum": np.sum, "mean": np.mean, "max": np.max}[how](rows, axis=0)
    return out


def softmax_np(logits):
    exps = np.exp(logits - logits.max(axis=0))
    return exps / exps.sum(axis=0)


def assert_close(actual, expected, tol=1e-5):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------- GN blocks


@pytest.mark.parametrize(
    "switches",
    [{}, {"use_globals": False, "use_edges": False}, {"use_sender_nodes": False}],
)
def test_edge_block(switches):
    update = linear_update(5)
    out = blocks.edge_block(update, **switches)(make_graph())
    inputs = {
        "edges": EDGES,
        "sender_nodes": NODES[SENDERS],
        "receiver_nodes": NODES[RECEIVERS],
        "globals": GLOBALS[EDGE_GRAPH],
    }
    inputs = {k: v for k, v in inputs.items() if switches.get(f"use_{k}", True)}
    assert_close(out.edges, update(**inputs))
    assert_close(out.nodes, NODES)


@pytest.mark.parametrize("aggregator", ["sum", "mean", "max"])
def test_node_block(aggregator):
    update = linear_update(4)
    out = blocks.node_block(update, aggregator=aggregator, use_sent_edges=True)(make_graph())
    expected = update(
        nodes=NODES,
        received_edges=reduce_np(EDGES, RECEIVERS, 6, aggregator),
        sent_edges=reduce_np(EDGES, SENDERS, 6, aggregator),
        globals=GLOBALS[NODE_GRAPH],
    )
    assert_close(out.nodes, expected)
    assert np.all(np.isfinite(np.asarray(out.nodes)))


def test_global_block():
    update = linear_update(3)
    out = blocks.global_block(update, edge_aggregator="mean", node_aggregator="max")(make_graph())
    expected = update(
        edges=reduce_np(EDGES, EDGE_GRAPH, 2, "mean"),
        nodes=reduce_np(NODES, NODE_GRAPH, 2, "max"),
        globals=GLOBALS,
    )
    assert_close(out.globals, expected)


def graph_network_np(edge_fn, node_fn, global_fn):
    edges = edge_fn(
        edges=EDGES,
        sender_nodes=NODES[SENDERS],
        receiver_nodes=NODES[RECEIVERS],
        globals=GLOBALS[EDGE_GRAPH],
    )
    edges = np.asarray(edges)
    nodes = node_fn(
        nodes=NODES,
        received_edges=reduce_np(edges, RECEIVERS, 6, "sum"),
        globals=GLOBALS[NODE_GRAPH],
    )
    nodes = np.asarray(nodes)
    globals_ = global_fn(
        edges=reduce_np(edges, EDGE_GRAPH, 2, "sum"),
        nodes=reduce_np(nodes, NODE_GRAPH, 2, "sum"),
        globals=GLOBALS,
    )
    return nodes, edges, np.asarray(globals_)


def test_graph_network_is_algorithm_1():
    edge_fn, node_fn, global_fn = (
        linear_update(4, "e"),
        linear_update(5, "n"),
        linear_update(2, "g"),
    )
    out = blocks.graph_network(edge_fn, node_fn, global_fn)(make_graph())
    nodes, edges, globals_ = graph_network_np(edge_fn, node_fn, global_fn)
    assert_close(out.edges, edges)
    assert_close(out.nodes, nodes)
    assert_close(out.globals, globals_)


def test_graph_network_on_array_trees():
    def edge_fn(edges, sender_nodes, receiver_nodes):
        return {"sum": edges["a"] + sender_nodes["x"][:, :2], "pair": receiver_nodes["y"]}

    def node_fn(nodes, received_edges):
        return received_edges["sum"] * nodes["y"]

    graph = make_graph(
        nodes={"x": jnp.asarray(NODES), "y": jnp.asarray(NODES[:, :1])},
        edges={"a": jnp.asarray(EDGES)},
    )
    out = blocks.graph_network(edge_fn, node_fn, use_globals=False)(graph)
    assert_close(out.edges["pair"], NODES[RECEIVERS][:, :1])
    expected = reduce_np(EDGES + NODES[SENDERS][:, :2], RECEIVERS, 6, "sum") * NODES[:, :1]
    assert_close(out.nodes, expected)


def test_graph_independent():
    out = blocks.graph_independent(dense(2, "e"), dense(3, "n"), None)(make_graph())
    assert_close(out.edges, dense(2, "e")(EDGES))
    assert_close(out.nodes, dense(3, "n")(NODES))
    assert_close(out.globals, GLOBALS)


@pytest.mark.parametrize("use_sent_edges", [False, True])
def test_interaction_network(use_sent_edges):
    edge_fn, node_fn = linear_update(4, "e"), linear_update(3, "n")
    out = blocks.interaction_network(edge_fn, node_fn, use_sent_edges=use_sent_edges)(make_graph())
    edges = np.asarray(
        edge_fn(edges=EDGES, sender_nodes=NODES[SENDERS], receiver_nodes=NODES[RECEIVERS])
    )
    node_inputs = {"nodes": NODES, "received_edges": reduce_np(edges, RECEIVERS, 6, "sum")}
    if use_sent_edges:
        node_inputs["sent_edges"] = reduce_np(edges, SENDERS, 6, "sum")
    assert_close(out.edges, edges)
    assert_close(out.nodes, node_fn(**node_inputs))
    assert_close(out.globals, GLOBALS)


def test_relation_network_conditions_pairs_on_globals():
    edge_fn, global_fn = linear_update(4, "e"), dense(2, "g")
    out = blocks.relation_network(edge_fn, lambda edges: global_fn(edges), use_globals=True)(
        make_graph()
    )
    pairs = np.asarray(
        edge_fn(
            sender_nodes=NODES[SENDERS],
            receiver_nodes=NODES[RECEIVERS],
            globals=GLOBALS[EDGE_GRAPH],
        )
    )
    assert_close(out.globals, global_fn(reduce_np(pairs, EDGE_GRAPH, 2, "sum")))


def test_deep_sets_needs_no_edges():
    node_fn = linear_update(4, "phi")
    graph = make_graph(edges=None, senders=None, receivers=None, globals=None)
    out = blocks.deep_sets(node_fn, lambda nodes: 2.0 * nodes, aggregator="mean")(graph)
    phi = np.asarray(node_fn(nodes=NODES))
    assert_close(out.nodes, phi)
    assert_close(out.globals, 2.0 * reduce_np(phi, NODE_GRAPH, 2, "mean"))


def test_comm_net_averages_other_nodes():
    # Fully connected graphs without self-edges: mean over incoming = mean of the other nodes.
    pairs = [(j, i) for g in (0, 3) for i in range(g, g + 3) for j in range(g, g + 3) if i != j]
    senders, receivers = np.array(pairs).T
    graph = make_graph(
        senders=jnp.asarray(senders),
        receivers=jnp.asarray(receivers),
        edges=None,
        n_edge=jnp.array([6, 6]),
    )
    node_fn = linear_update(3)
    out = blocks.comm_net(node_fn, message_fn=dense(2, "m"))(graph)
    messages = dense(2, "m")(NODES)
    graph_totals = np.stack([messages[NODE_GRAPH == NODE_GRAPH[i]].sum(0) for i in range(6)])
    others = (graph_totals - messages) / 2
    assert_close(out.nodes, node_fn(nodes=NODES, messages=others))


# ---------------------------------------------------------------------------------- attention


def attention_np(logits_of, values, add_self_edges):
    """Per receiver: softmax of `logits_of(j, i)` `[H]` over senders j, weighted sum of values."""
    out = np.zeros((6,) + values.shape[1:])
    for i in range(6):
        sources = list(SENDERS[RECEIVERS == i]) + ([i] if add_self_edges else [])
        if not sources:
            continue
        weights_ = softmax_np(np.stack([logits_of(j, i) for j in sources]))  # [n, H]
        out[i] = np.einsum("nh,nhd->hd", weights_, values[sources])
    return out


@pytest.mark.parametrize("add_self_edges", [False, True])
def test_graph_attention(add_self_edges):
    query, key, value = dense(2 * HEADS, "q"), dense(2 * HEADS, "k"), dense(3 * HEADS, "v")
    out = attention.graph_attention(
        query, key, value, num_heads=HEADS, add_self_edges=add_self_edges
    )(make_graph())
    q, k, v = (f(NODES).reshape(6, HEADS, -1) for f in (query, key, value))
    expected = attention_np(lambda j, i: np.sum(q[i] * k[j], -1) / np.sqrt(2), v, add_self_edges)
    assert_close(out.nodes, expected.reshape(6, -1))
    if not add_self_edges:
        assert_close(out.nodes[5], np.zeros(3 * HEADS))


def gat_logits(sender_nodes, receiver_nodes, edges=None):
    logits = jnp.einsum("ehd,hd->eh", sender_nodes, ATTENTION_SENDER)
    logits = logits + jnp.einsum("ehd,hd->eh", receiver_nodes, ATTENTION_RECEIVER)
    return logits if edges is None else logits + edges


@pytest.mark.parametrize(
    "options",
    [{"add_self_edges": True}, {"combine_heads": "mean"}, {"use_edges": True}],
)
def test_gat(options):
    out = attention.gat(dense(2 * HEADS, "w"), gat_logits, num_heads=HEADS, **options)(make_graph())
    z = dense(2 * HEADS, "w")(NODES).reshape(6, HEADS, 2)

    def logit(j, i):
        raw = np.sum(ATTENTION_SENDER * z[j], -1) + np.sum(ATTENTION_RECEIVER * z[i], -1)
        if options.get("use_edges"):
            (edge,) = np.flatnonzero((SENDERS == j) & (RECEIVERS == i))
            raw = raw + EDGES[edge]
        return np.where(raw > 0, raw, 0.2 * raw)

    expected = attention_np(logit, z, options.get("add_self_edges", False))
    if options.get("combine_heads") == "mean":
        assert_close(out.nodes, expected.mean(1))
    else:
        assert_close(out.nodes, expected.reshape(6, -1))


# ------------------------------------------------------------------------------- convolutions


def adjacency_np():
    """`A[i, j]` = number of edges j -> i."""
    adjacency = np.zeros((6, 6))
    np.add.at(adjacency, (RECEIVERS, SENDERS), 1.0)
    return adjacency


@pytest.mark.parametrize("add_self_edges", [False, True])
@pytest.mark.parametrize("symmetric_normalization", [False, True])
def test_gcn(add_self_edges, symmetric_normalization):
    out = convolutions.gcn(
        dense(4),
        add_self_edges=add_self_edges,
        symmetric_normalization=symmetric_normalization,
    )(make_graph())
    adjacency = adjacency_np() + (np.eye(6) if add_self_edges else 0.0)
    if symmetric_normalization:
        in_scale = 1 / np.sqrt(np.maximum(adjacency.sum(1), 1))
        out_scale = 1 / np.sqrt(np.maximum(adjacency.sum(0), 1))
        adjacency = in_scale[:, None] * adjacency * out_scale[None, :]
    assert_close(out.nodes, adjacency @ dense(4)(NODES))


# Graph 0 of `make_graph` with self-edges added: one on node 0, two on node 2. Directed: node 0
# sends to 1 and 2 and receives from 1 only.
LOOP_SENDERS = np.concatenate([SENDERS, [0, 2, 2]])
LOOP_RECEIVERS = np.concatenate([RECEIVERS, [0, 2, 2]])


def self_edge_graph():
    return make_graph(
        senders=jnp.asarray(LOOP_SENDERS),
        receivers=jnp.asarray(LOOP_RECEIVERS),
        edges=None,
        n_edge=jnp.asarray([8, 2]),
    )


def gcn_propagation_np(convention, add_self_edges):
    """The propagation matrix by hand, `[6, 6]`, on `self_edge_graph`.

    jraph: `D_in^-1/2 (A + I) D_out^-1/2`, `A` with the graph's self-edges, degrees floored at 1.
    pyg: `D^-1/2 (A_off + I) D^-1/2`, `A_off` without them, `D` the in-degree at both ends, 0
    where it is 0.
    """
    adjacency = np.zeros((6, 6))
    np.add.at(adjacency, (LOOP_RECEIVERS, LOOP_SENDERS), 1.0)
    if convention == "jraph":
        adjacency += np.eye(6) if add_self_edges else 0.0
        in_scale = 1 / np.sqrt(np.maximum(adjacency.sum(1), 1))
        out_scale = 1 / np.sqrt(np.maximum(adjacency.sum(0), 1))
        return in_scale[:, None] * adjacency * out_scale[None, :]
    if add_self_edges:
        np.fill_diagonal(adjacency, 1.0)
    degree = adjacency.sum(1)
    scale = np.where(degree > 0, 1 / np.sqrt(np.maximum(degree, 1)), 0.0)
    return scale[:, None] * adjacency * scale[None, :]


@pytest.mark.parametrize("convention", ["jraph", "pyg"])
@pytest.mark.parametrize("add_self_edges", [False, True])
@pytest.mark.parametrize("aggregator", [None, "sum"])
def test_gcn_conventions_on_directed_graph_with_self_edges(convention, add_self_edges, aggregator):
    out = convolutions.gcn(
        dense(4), add_self_edges=add_self_edges, convention=convention, aggregator=aggregator
    )(self_edge_graph())
    expected = gcn_propagation_np(convention, add_self_edges) @ dense(4)(NODES)
    assert_close(out.nodes, expected)


def test_gcn_pyg_convention_without_normalization_counts_each_self_edge_once():
    out = convolutions.gcn(
        dense(4), symmetric_normalization=False, convention="pyg", project_first=False
    )(self_edge_graph())
    adjacency = np.zeros((6, 6))
    np.add.at(adjacency, (LOOP_RECEIVERS, LOOP_SENDERS), 1.0)
    np.fill_diagonal(adjacency, 1.0)
    assert_close(out.nodes, dense(4)(adjacency @ NODES))


@pytest.mark.parametrize("add_self_edges", [False, True])
def test_gcn_default_convention_is_jraphs_graph_convolution(add_self_edges):
    jraph = pytest.importorskip("jraph")
    graph = self_edge_graph()
    expected = jraph.GraphConvolution(dense(4), add_self_edges=add_self_edges)(graph)
    out = convolutions.gcn(dense(4), add_self_edges=add_self_edges)(graph)
    assert_close(out.nodes, expected.nodes)


def test_gcn_rejects_an_unknown_convention():
    with pytest.raises(ValueError, match="convention must be one of"):
        convolutions.gcn(dense(4), convention="kipf")


@pytest.mark.parametrize("split_logits", [False, True])
def test_gat_self_edges_replace_the_graphs_own(split_logits):
    """With `add_self_edges`, each node attends to itself exactly once, whatever self-edges the
    graph held: the same as the graph without them."""
    logit_options = (
        dict(
            sender_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, ATTENTION_SENDER),
            receiver_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, ATTENTION_RECEIVER),
        )
        if split_logits
        else dict(logit_fn=gat_logits)
    )
    layer = attention.gat(
        dense(2 * HEADS, "w"), num_heads=HEADS, add_self_edges=True, **logit_options
    )
    out = layer(self_edge_graph())
    z = dense(2 * HEADS, "w")(NODES).reshape(6, HEADS, 2)

    def logit(j, i):
        raw = np.sum(ATTENTION_SENDER * z[j], -1) + np.sum(ATTENTION_RECEIVER * z[i], -1)
        return np.where(raw > 0, raw, 0.2 * raw)

    assert_close(out.nodes, attention_np(logit, z, add_self_edges=True).reshape(6, -1))


@pytest.mark.parametrize("aggregator", ["mean", "max", "sum"])
def test_graph_sage(aggregator):
    pool = lambda x: np.maximum(dense(3, "pool")(x), 0.0)  # noqa: E731
    update = concatenated_args(dense(4, "w"))
    out = convolutions.graph_sage(
        update,
        aggregator=aggregator,
        neighbor_fn=lambda x: jnp.maximum(dense(3, "pool")(x), 0.0),
        normalize=True,
    )(make_graph())
    neighbours = reduce_np(pool(NODES)[SENDERS], RECEIVERS, 6, aggregator)
    w = weights("w", 6, 4)
    expected = neighbours @ w[:3] + NODES @ w[3:]  # sorted keys: neighbors, then nodes
    expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    assert_close(out.nodes, expected)


def test_graph_sage_without_normalization_is_w1_h_plus_w2_mean():
    update = lambda nodes, neighbors: dense(2, "w1")(nodes) + dense(2, "w2")(neighbors)  # noqa: E731
    out = convolutions.graph_sage(update)(make_graph())
    neighbours = reduce_np(NODES[SENDERS], RECEIVERS, 6, "mean")
    assert_close(out.nodes, dense(2, "w1")(NODES) + dense(2, "w2")(neighbours))


@pytest.mark.parametrize("epsilon", [0.0, 0.25])
def test_gin(epsilon):
    mlp = lambda x: jnp.tanh(dense(4)(x))  # noqa: E731
    out = convolutions.gin(mlp, epsilon=epsilon)(make_graph())
    assert_close(out.nodes, np.tanh(dense(4)((1 + epsilon) * NODES + adjacency_np() @ NODES)))


# ------------------------------------------------------------- every block: jit, vmap, grad


def every_block():
    return {
        "edge_block": blocks.edge_block(linear_update(3)),
        "node_block": blocks.node_block(linear_update(3), aggregator="max", use_sent_edges=True),
        "global_block": blocks.global_block(linear_update(3), edge_aggregator="mean"),
        "graph_network": blocks.graph_network(
            linear_update(3, "e"), linear_update(3, "n"), linear_update(3, "g")
        ),
        "graph_independent": blocks.graph_independent(dense(2), dense(2), dense(2)),
        "interaction_network": blocks.interaction_network(linear_update(3), linear_update(3)),
        "relation_network": blocks.relation_network(linear_update(3), linear_update(2)),
        "deep_sets": blocks.deep_sets(linear_update(3), linear_update(2)),
        "comm_net": blocks.comm_net(linear_update(3)),
        "graph_attention": attention.graph_attention(
            dense(4, "q"), dense(4, "k"), dense(4, "v"), num_heads=2, add_self_edges=True
        ),
        "gat": attention.gat(dense(4), gat_logits, num_heads=HEADS),
        "gcn": convolutions.gcn(dense(3)),
        "gcn_pyg": convolutions.gcn(dense(3), convention="pyg"),
        "gat_self_edges": attention.gat(dense(4), gat_logits, num_heads=HEADS, add_self_edges=True),
        "graph_sage": convolutions.graph_sage(linear_update(3), aggregator="max"),
        "gin": convolutions.gin(dense(3), epsilon=0.1),
    }


BLOCK_NAMES = list(every_block())


def features(graph):
    return graph.nodes, graph.edges, graph.globals


def other_graph(dtype=np.float32):
    """Same padded sizes as `make_graph`, other split, topology and features."""
    rng = np.random.default_rng(1)
    return make_graph(
        nodes=jnp.asarray(rng.normal(size=(6, 3)), dtype),
        edges=jnp.asarray(rng.normal(size=(7, 2)), dtype),
        globals=jnp.asarray(rng.normal(size=(2, 4)), dtype),
        senders=jnp.array([0, 1, 2, 3, 3, 1, 4]),
        receivers=jnp.array([1, 2, 3, 0, 1, 3, 5]),
        n_node=jnp.array([4, 2]),
        n_edge=jnp.array([6, 1]),
    )


@pytest.mark.parametrize("name", BLOCK_NAMES)
def test_block_under_jit_vmap_and_grad(name):
    """jit(vmap(block)) over two stacked graphs equals the block applied to each, and its
    reverse-mode gradient matches finite differences (in float64)."""
    block = every_block()[name]
    expected = [features(block(graph)) for graph in (make_graph(), other_graph())]
    with jax.enable_x64(True):
        graphs = make_graph(np.float64), other_graph(np.float64)
        stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *graphs)

        @jax.jit
        def apply(nodes, edges, globals_):
            batch = stacked._replace(nodes=nodes, edges=edges, globals=globals_)
            return jax.vmap(lambda graph: features(block(graph)))(batch)

        batched = apply(*features(stacked))
        for index, single in enumerate(expected):
            actual = jax.tree_util.tree_map(lambda x, i=index: x[i], batched)
            jax.tree_util.tree_map(functools.partial(assert_close, tol=1e-4), actual, single)
        check_grads(apply, features(stacked), order=1, modes=["rev"])


def test_epsilon_of_gin_is_differentiable():
    def loss(epsilon):
        return jnp.sum(convolutions.gin(lambda x: x, epsilon=epsilon)(make_graph()).nodes)

    assert_close(jax.grad(loss)(0.5), NODES.sum())


@pytest.mark.parametrize(
    "name", ["graph_network", "gat", "gat_self_edges", "gcn", "gcn_pyg", "graph_sage"]
)
def test_padding_does_not_change_real_outputs(name):
    block = every_block()[name]
    padded = make_graph(
        nodes=jnp.asarray(np.concatenate([NODES, np.full((2, 3), 7.0)]), jnp.float32),
        edges=jnp.asarray(np.concatenate([EDGES, np.full((3, 2), 5.0)]), jnp.float32),
        globals=jnp.asarray(np.concatenate([GLOBALS, np.ones((1, 4))]), jnp.float32),
        senders=jnp.asarray(np.concatenate([SENDERS, [6, 6, 7]])),
        receivers=jnp.asarray(np.concatenate([RECEIVERS, [6, 6, 6]])),
        n_node=jnp.array([3, 3, 2]),
        n_edge=jnp.array([5, 2, 3]),
    )
    real, with_padding = block(make_graph()), jax.jit(block)(padded)
    assert_close(with_padding.nodes[:6], real.nodes)
    if name == "graph_network":
        assert_close(with_padding.edges[:7], real.edges)
        assert_close(with_padding.globals[:2], real.globals)


@pytest.mark.parametrize(
    "make_block",
    [
        lambda s: blocks.node_block(linear_update(3), aggregator="mean", indices_are_sorted=s),
        lambda s: blocks.graph_network(linear_update(3), linear_update(3), indices_are_sorted=s),
        lambda s: attention.gat(dense(4), gat_logits, num_heads=HEADS, indices_are_sorted=s),
        lambda s: convolutions.gcn(dense(3), indices_are_sorted=s),
        lambda s: convolutions.gcn(dense(3), convention="pyg", indices_are_sorted=s),
        lambda s: convolutions.gin(dense(3), indices_are_sorted=s),
    ],
)
def test_sorted_receivers_fast_path(make_block):
    order = np.argsort(RECEIVERS, kind="stable")
    sorted_graph = make_graph(
        senders=jnp.asarray(SENDERS[order]),
        receivers=jnp.asarray(RECEIVERS[order]),
        edges=jnp.asarray(EDGES[order], jnp.float32),
        n_edge=jnp.asarray(N_EDGE),
    )
    assert np.all(EDGE_GRAPH[order] == EDGE_GRAPH)  # edges stay inside their graph
    assert_close(make_block(True)(sorted_graph).nodes, make_block(False)(make_graph()).nodes)


# ------------------------------------------------------------------- kinds of update callable


class LinenGraphNetwork(nn.Module):
    @nn.compact
    def __call__(self, graph):
        return blocks.graph_network(
            concatenated_args(nn.Dense(4, name="edge")),
            concatenated_args(nn.Dense(4, name="node")),
            concatenated_args(nn.Dense(2, name="global")),
        )(graph)


def test_flax_linen_submodules_as_updates():
    graph = make_graph()
    model = LinenGraphNetwork()
    params = model.init(jax.random.key(0), graph)
    out = model.apply(params, graph)

    def layer(name):
        dense_params = params["params"][name]
        return lambda **inputs: (
            np.concatenate([inputs[k] for k in sorted(inputs)], axis=-1) @ dense_params["kernel"]
            + dense_params["bias"]
        )

    nodes, edges, globals_ = graph_network_np(layer("edge"), layer("node"), layer("global"))
    assert_close(out.edges, edges, 1e-4)
    assert_close(out.nodes, nodes, 1e-4)
    assert_close(out.globals, globals_, 1e-4)


def test_nnx_module_as_update():
    linear = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    graph = make_graph()
    out = nnx.jit(lambda model, g: convolutions.gcn(model)(g).nodes)(linear, graph)
    adjacency = adjacency_np() + np.eye(6)
    degree_in, degree_out = adjacency.sum(1), adjacency.sum(0)
    propagation = adjacency / np.sqrt(degree_in[:, None] * degree_out[None, :])
    kernel, bias = np.asarray(linear.kernel[...]), np.asarray(linear.bias[...])
    assert_close(out, propagation @ (NODES @ kernel + bias), 1e-4)
    grads = nnx.grad(lambda model: jnp.sum(convolutions.gcn(model)(graph).nodes))(linear)
    expected_kernel = np.outer((propagation @ NODES).sum(0), np.ones(4))
    assert_close(grads.kernel[...], expected_kernel, 1e-4)


def test_plain_function_with_keyword_arguments():
    def edge_fn(*, edges, receiver_nodes):
        return edges * receiver_nodes[:, :2]

    out = blocks.edge_block(edge_fn, use_sender_nodes=False, use_globals=False)(make_graph())
    assert_close(out.edges, EDGES * NODES[RECEIVERS][:, :2])


def test_concatenated_args_order():
    wrapped = concatenated_args(lambda x: x)
    out = wrapped(jnp.ones((2, 1)), sender_nodes=jnp.full((2, 1), 3.0), edges=jnp.zeros((2, 1)))
    assert_close(out, [[1.0, 0.0, 3.0]] * 2)
    stacked = concatenated_args(axis=0)(lambda x: x)(jnp.ones(2), jnp.zeros(1))
    assert_close(stacked, [1.0, 1.0, 0.0])


# ------------------------------------------------------------------------- missing fields


@pytest.mark.parametrize(
    ("make_block", "field"),
    [
        (lambda: blocks.edge_block(linear_update(2)), "globals"),
        (lambda: blocks.node_block(linear_update(2), use_globals=False), "receivers"),
        (lambda: blocks.global_block(linear_update(2), use_globals=False), "edges"),
        (lambda: blocks.graph_independent(None, dense(2)), "nodes"),
        (lambda: blocks.relation_network(linear_update(2), dense(2)), "senders"),
        (lambda: blocks.comm_net(linear_update(2)), "receivers"),
        (lambda: attention.gat(dense(2), gat_logits), "nodes"),
        (lambda: attention.graph_attention(dense(2), dense(2), dense(2)), "senders"),
        (lambda: convolutions.gcn(dense(2)), "senders"),
        (lambda: convolutions.graph_sage(linear_update(2)), "receivers"),
        (lambda: convolutions.gin(dense(2)), "nodes"),
    ],
)
def test_missing_field_raises_value_error(make_block, field):
    graph = make_graph(**{field: None})
    with pytest.raises(ValueError, match=f"graph.{field}"):
        jax.jit(make_block())(graph)


def test_switching_every_input_off_is_an_error():
    with pytest.raises(ValueError, match="every input is switched off"):
        blocks.global_block(linear_update(2), use_edges=False, use_nodes=False, use_globals=False)


def test_bad_head_shape_is_reported():
    with pytest.raises(ValueError, match="query_fn returned shape"):
        attention.graph_attention(dense(3), dense(4), dense(4), num_heads=2)(make_graph())


def test_numpy_graph_closed_over_inside_jit():
    graph = GraphsTuple(
        nodes=np.ones((3, 2), np.float32),
        edges=np.ones((2, 1), np.float32),
        senders=np.array([0, 1]),
        receivers=np.array([1, 2]),
        globals=np.ones((1, 2), np.float32),
        n_node=np.array([3]),
        n_edge=np.array([2]),
    )
    network = blocks.graph_network(
        edge_fn=lambda edges, sender_nodes, receiver_nodes, globals: edges + globals[:, :1],
        node_fn=lambda nodes, received_edges, globals: nodes + received_edges + globals,
    )
    # node 0 receives nothing: 1 + 0 + 1; nodes 1 and 2 receive one edge of 1 + 1.
    np.testing.assert_allclose(jax.jit(lambda: network(graph).nodes)(), [[2, 2], [4, 4], [4, 4]])
