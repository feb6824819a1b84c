"""Tests for gnkit.batching: jraph names against jraph, round trips, buckets, conversions."""

import importlib.util
import pathlib
import re
import sys

import jax
import numpy as np
import pytest

from gnkit.batching import (
    BucketPolicy,
    add_self_edges,
    batch,
    batch_np,
    batch_stream,
    dense_adjacency,
    dynamically_batch,
    edge_list,
    from_dense_adjacency,
    from_edge_list,
    from_networkx,
    fully_connected_graph,
    get_edge_padding_mask,
    get_fully_connected_graph,
    get_graph_padding_mask,
    get_node_padding_mask,
    get_number_of_padding_with_graphs_edges,
    get_number_of_padding_with_graphs_graphs,
    get_number_of_padding_with_graphs_nodes,
    pad_to_bucket,
    pad_with_graphs,
    sort_edges_by_receiver,
    to_networkx,
    unbatch,
    unbatch_np,
    unpad_with_graphs,
    with_zero_out_padding_outputs,
    zero_out_padding,
)
from gnkit.graph import GraphsTuple, node_graph_index

jraph = pytest.importorskip("jraph")

# Sizes (n_node, n_edge) that cover the corner cases: empty graph, no edges, single node.
CORNER_SIZES = [(3, 4), (0, 0), (5, 0), (1, 1), (1, 0), (4, 7)]


def random_graph(rng, n_node, n_edge, *, nested=True, edges=True, globals_=True, make=GraphsTuple):
    nodes = rng.normal(size=(n_node, 3)).astype(np.float32)
    if nested:
        nodes = {"x": nodes, "kind": {"id": rng.integers(0, 9, n_node).astype(np.int32)}}
    return make(
        nodes=nodes,
        edges=rng.normal(size=(n_edge, 2)).astype(np.float32) if edges else None,
        receivers=rng.integers(0, max(n_node, 1), n_edge).astype(np.int32),
        senders=rng.integers(0, max(n_node, 1), n_edge).astype(np.int32),
        globals=rng.normal(size=(1, 4)).astype(np.float32) if globals_ else None,
        n_node=np.array([n_node], np.int32),
        n_edge=np.array([n_edge], np.int32),
    )


def random_graphs(seed, count=None, **kwargs):
    rng = np.random.default_rng(seed)
    sizes = list(CORNER_SIZES)
    if count is not None:
        sizes = [(int(n), int(rng.integers(0, 3 * n + 1))) for n in rng.integers(0, 8, count)]
    return [random_graph(rng, n, e, **kwargs) for n, e in sizes]


def assert_graphs_equal(ours, theirs, index_dtype=True):
    """Every field equal: same None-ness, tree structure, values and dtypes.

    `index_dtype=False` skips the dtype of senders / receivers, which jraph's NumPy path widens
    to int64 and gnkit keeps.
    """
    for name in GraphsTuple._fields:
        a, b = getattr(ours, name), getattr(theirs, name)
        leaves_a, tree_a = jax.tree_util.tree_flatten(a)
        leaves_b, tree_b = jax.tree_util.tree_flatten(b)
        assert tree_a == tree_b, name
        for x, y in zip(leaves_a, leaves_b, strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)
            if index_dtype or name not in ("senders", "receivers"):
                assert np.asarray(x).dtype == np.asarray(y).dtype, name


# ---------------------------------------------------------------------------------------------
# jraph names against jraph


@pytest.mark.parametrize("kwargs", [{}, {"edges": False, "globals_": False}, {"nested": False}])
def test_batch_np_and_batch_match_jraph(kwargs):
    graphs = random_graphs(0, **kwargs)
    assert_graphs_equal(batch_np(graphs), jraph.batch_np(graphs), index_dtype=False)
    ours = batch(graphs)
    assert_graphs_equal(ours, jraph.batch(graphs))
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(ours))
    assert_graphs_equal(jax.jit(batch)(jax.device_put(graphs)), ours)


def test_batch_accepts_jraph_graphs_holding_several_graphs():
    rng = np.random.default_rng(1)
    graphs = [random_graph(rng, n, e, make=jraph.GraphsTuple) for n, e in CORNER_SIZES]
    nested = [jraph.batch_np(graphs[:2]), jraph.batch_np(graphs[2:5]), graphs[5]]
    assert_graphs_equal(batch_np(nested), jraph.batch_np(nested), index_dtype=False)
    assert_graphs_equal(batch_np(nested), batch_np(graphs), index_dtype=False)


def test_batch_hand_computed_offsets():
    one = GraphsTuple(None, None, np.array([1, 2]), np.array([0, 1]), None, [3], [2])
    two = GraphsTuple(None, None, np.array([0]), np.array([1]), None, [2], [1])
    batched = batch_np([one, two])
    np.testing.assert_array_equal(batched.senders, [0, 1, 4])
    np.testing.assert_array_equal(batched.receivers, [1, 2, 3])
    np.testing.assert_array_equal(batched.n_node, [3, 2])


def test_batch_rejects_mixed_none_fields():
    rng = np.random.default_rng(2)
    graphs = [random_graph(rng, 2, 1), random_graph(rng, 2, 1, edges=False)]
    with pytest.raises(ValueError, match="graph.edges"):
        batch_np(graphs)


@pytest.mark.parametrize("jitted", [False, True])
def test_batch_promotes_mixed_leaf_dtypes_as_jax_does(jitted):
    def graph(nodes, globals_):
        return GraphsTuple(
            nodes, None, None, None, globals_, np.array([len(nodes)]), np.array([0])
        )

    first = graph(np.array([[1.5], [2.5]], np.float32), np.array([[1.0]], np.float64))
    second = graph(np.array([[3]], np.int32), np.array([[2]], np.int64))
    batched = batch_np([first, second])
    assert batched.nodes.dtype == np.float32  # np.concatenate would give float64
    np.testing.assert_array_equal(batched.nodes, [[1.5], [2.5], [3.0]])
    assert batched.globals.dtype == np.float64  # float64 stays float64 on the host
    same = batch_np([first, first])
    assert same.nodes.dtype == np.float32 and same.globals.dtype == np.float64
    on_device = (jax.jit(batch) if jitted else batch)(jax.device_put([first, second]))
    assert on_device.nodes.dtype == jax.numpy.float32
    np.testing.assert_array_equal(on_device.nodes, batched.nodes)
    with pytest.raises(ValueError, match="graph.nodes"):
        batch_np([first, graph(np.array([["a"]]), np.array([[2]], np.int64))])


def test_unbatch_np_and_unbatch_match_jraph():
    batched = jraph.batch_np(random_graphs(3))
    for ours, theirs in zip(unbatch_np(batched), jraph.unbatch_np(batched), strict=True):
        assert_graphs_equal(ours, theirs)
    for ours, theirs in zip(unbatch(batched), jraph.unbatch(batched), strict=True):
        assert_graphs_equal(ours, theirs)
        assert isinstance(ours.senders, jax.Array)


@pytest.mark.parametrize("padding", [(40, 40, 9), (30, 19, 7), (26, 12, 8)])
def test_pad_unpad_counts_and_masks_match_jraph(padding):
    batched = batch_np(random_graphs(4))
    ours, theirs = pad_with_graphs(batched, *padding), jraph.pad_with_graphs(batched, *padding)
    assert_graphs_equal(ours, theirs, index_dtype=False)
    assert_graphs_equal(unpad_with_graphs(ours), jraph.unpad_with_graphs(theirs), False)
    names = [
        "get_number_of_padding_with_graphs_graphs",
        "get_number_of_padding_with_graphs_nodes",
        "get_number_of_padding_with_graphs_edges",
        "get_node_padding_mask",
        "get_edge_padding_mask",
        "get_graph_padding_mask",
    ]
    expected = [getattr(jraph, name)(theirs) for name in names]
    ours_fns = [globals()[name] for name in names]
    eager = [fn(ours) for fn in ours_fns]
    jitted = jax.jit(lambda graph: [fn(graph) for fn in ours_fns])(ours)
    for name, want, got_eager, got_jitted in zip(names, expected, eager, jitted, strict=True):
        np.testing.assert_array_equal(got_eager, want, err_msg=name)
        np.testing.assert_array_equal(got_jitted, want, err_msg=name)


@pytest.mark.parametrize("x64", [False, True])
def test_padding_counts_have_jraphs_types_on_numpy_and_jax_inputs(x64):
    # jraph: the graph count is a jnp scalar of the default int type; the node and edge counts
    # index `n_node` / `n_edge`, so they are NumPy scalars of their dtype for NumPy counts.
    names = ["graphs", "nodes", "edges"]
    with jax.enable_x64(x64):
        padded = jraph.pad_with_graphs(batch_np(random_graphs(4)), 40, 40, 9)
        inputs = {
            "numpy int64": padded._replace(
                n_node=padded.n_node.astype(np.int64), n_edge=padded.n_edge.astype(np.int64)
            ),
            "numpy int32": padded,
            "jax": padded._replace(
                n_node=jax.numpy.asarray(padded.n_node), n_edge=jax.numpy.asarray(padded.n_edge)
            ),
        }
        for label, graph in inputs.items():
            for name in names:
                function = f"get_number_of_padding_with_graphs_{name}"
                want = getattr(jraph, function)(graph)
                got = globals()[function](graph)
                where = f"{function} on {label} counts"
                assert type(got) is type(want), where
                assert got.dtype == want.dtype, where
                assert got == want, where


def test_pad_with_graphs_errors_like_jraph():
    batched = batch_np(random_graphs(5))  # 14 nodes, 12 edges, 6 graphs
    jraph_text = "n_graph is 1, which is smaller than minimum value of 2."
    with pytest.raises(ValueError, match=jraph_text):
        jraph.pad_with_graphs(batched, 20, 20, 1)
    with pytest.raises(ValueError, match=jraph_text):
        pad_with_graphs(batched, 20, 20, 1)
    for too_small, difference in [
        ((14, 12, 7), "n_node 0, n_edge 0, n_graph 1"),
        ((15, 11, 7), "n_node 1, n_edge -1, n_graph 1"),
        ((15, 12, 6), "n_node 1, n_edge 0, n_graph 0"),
    ]:
        jraph_text = f"Given graph is too large for the given padding. difference: {difference}"
        with pytest.raises(RuntimeError, match=jraph_text):
            jraph.pad_with_graphs(batched, *too_small)
        with pytest.raises(RuntimeError, match=jraph_text):
            pad_with_graphs(batched, *too_small)


def test_masks_and_counts_hand_checked():
    # Two real graphs (2 nodes/1 edge, 1 node/2 edges), padding graph (3 nodes/1 edge), empty.
    padded = GraphsTuple(
        nodes=np.zeros((6, 1)),
        edges=np.zeros((4, 1)),
        receivers=np.array([1, 2, 2, 3]),
        senders=np.array([0, 2, 2, 3]),
        globals=np.zeros((4, 1)),
        n_node=np.array([2, 1, 3, 0]),
        n_edge=np.array([1, 2, 1, 0]),
    )
    assert int(get_number_of_padding_with_graphs_graphs(padded)) == 2
    assert int(get_number_of_padding_with_graphs_nodes(padded)) == 3
    assert int(get_number_of_padding_with_graphs_edges(padded)) == 1
    np.testing.assert_array_equal(get_node_padding_mask(padded), [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(get_edge_padding_mask(padded), [1, 1, 1, 0])
    np.testing.assert_array_equal(get_graph_padding_mask(padded), [1, 1, 0, 0])
    without_nodes = padded._replace(nodes=None)
    np.testing.assert_array_equal(get_node_padding_mask(without_nodes), [1, 1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match="^`padded_graph` must have at least one array of node"):
        jax.jit(get_node_padding_mask)(without_nodes)


@pytest.mark.parametrize("n_node,n_graph,self_edges", [(3, 2, True), (3, 2, False), (1, 3, False)])
def test_get_fully_connected_graph_matches_jraph(n_node, n_graph, self_edges, monkeypatch):
    # jraph 0.0.6 calls jax.tree_leaves, removed from jax; restore it to compare.
    monkeypatch.setattr(jax, "tree_leaves", jax.tree_util.tree_leaves, raising=False)
    nodes = jax.device_put(np.arange(n_node * n_graph * 2.0, dtype=np.float32).reshape(-1, 2))
    globals_ = jax.device_put(np.ones((n_graph, 3), np.float32))
    expected = jraph.get_fully_connected_graph(n_node, n_graph, nodes, globals_, self_edges)
    ours = get_fully_connected_graph(n_node, n_graph, nodes, globals_, self_edges)
    assert_graphs_equal(ours, expected)
    traced = jax.jit(get_fully_connected_graph, static_argnums=(0, 1, 4))
    assert_graphs_equal(traced(n_node, n_graph, nodes, globals_, self_edges), expected)
    with pytest.raises(ValueError, match="^Number of nodes is not equal to num_nodes_per_graph"):
        get_fully_connected_graph(n_node, n_graph + 1, nodes)
    with pytest.raises(ValueError, match="^The number of globals is not equal to n_graph"):
        get_fully_connected_graph(n_node, n_graph, nodes, globals_[:1])


def test_fully_connected_graph_of_different_sizes():
    graph = fully_connected_graph([2, 3, 1, 0], add_self_edges=False)
    # Receiver-major; for receiver r of an n-node graph the senders are r+1..n-1, 0..r-1.
    np.testing.assert_array_equal(graph.receivers, [0, 1, 2, 2, 3, 3, 4, 4])
    np.testing.assert_array_equal(graph.senders, [1, 0, 3, 4, 4, 2, 2, 3])
    np.testing.assert_array_equal(graph.n_edge, [2, 6, 0, 0])
    with_self = fully_connected_graph([2, 1])
    np.testing.assert_array_equal(with_self.receivers, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(with_self.senders, [0, 1, 0, 1, 2])
    per_size = [jraph.get_fully_connected_graph(n, 1) for n in (3, 2, 3)]
    assert_graphs_equal(fully_connected_graph([3, 2, 3]), jraph.batch_np(per_size), False)


def test_dynamically_batch_matches_jraph_and_raises_like_it():
    graphs = random_graphs(6, count=40)
    budget = (16, 30, 5)
    ours = list(dynamically_batch(iter(graphs), *budget))
    theirs = list(jraph.dynamically_batch(iter(graphs), *budget))
    assert len(ours) == len(theirs) > 1
    for a, b in zip(ours, theirs, strict=True):
        assert_graphs_equal(a, b, index_dtype=False)
    for implementation in (dynamically_batch, jraph.dynamically_batch):
        with pytest.raises(ValueError, match="^The number of graphs in a batch size must be"):
            next(implementation(iter(graphs), 16, 30, 1))
    big = random_graph(np.random.default_rng(0), 20, 3)
    stream = dynamically_batch(iter(graphs[:2] + [big]), *budget)
    first = next(stream)
    assert_graphs_equal(unbatch_np(unpad_with_graphs(first))[0], graphs[0])
    jraph_text = "Found graph bigger than batch size. Valid Batch Size: "
    sizes = "{'n_node': 15, 'n_edge': 30, 'n_graph': 4}, Graph Size: {'n_node': 20, 'n_edge': 3, "
    with pytest.raises(RuntimeError, match="^" + re.escape(jraph_text + sizes)):
        next(stream)
    with pytest.raises(RuntimeError, match="^" + re.escape(jraph_text)):
        next(jraph.dynamically_batch(iter([big]), *budget))


def test_zero_out_padding_matches_jraph_and_zeroes_nan(monkeypatch):
    # jraph 0.0.6 calls jax.tree_map, removed from jax; restore it to compare.
    monkeypatch.setattr(jax, "tree_map", jax.tree_util.tree_map, raising=False)
    padded = pad_with_graphs(batch_np(random_graphs(7)), 25, 20, 8)

    def plus_one(tree):
        return jax.tree_util.tree_map(lambda x: x + 1, tree)

    noisy = padded._replace(
        nodes=plus_one(padded.nodes), edges=plus_one(padded.edges), globals=plus_one(padded.globals)
    )
    assert_graphs_equal(jax.jit(zero_out_padding)(noisy), jraph.zero_out_padding(noisy), False)
    poisoned = noisy._replace(edges=np.concatenate([noisy.edges[:-1], [[np.nan, np.inf]]]))
    zeroed = with_zero_out_padding_outputs(lambda g: g)(poisoned)
    np.testing.assert_array_equal(zeroed.edges[-8:], 0.0)
    assert zero_out_padding(poisoned._replace(globals=None)).globals is None


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("seed", range(4))
def test_batch_unbatch_round_trip(seed):
    graphs = random_graphs(seed, count=12) + random_graphs(seed)
    round_trips = [unbatch_np(batch_np(graphs))]
    if seed == 0:  # unbatch puts every piece on the device: check it once
        round_trips.append(unbatch(batch(graphs)))
    for ours in round_trips:
        assert len(ours) == len(graphs)
        for original, recovered in zip(graphs, ours, strict=True):
            assert_graphs_equal(recovered, original)


@pytest.mark.parametrize("seed", range(4))
def test_pad_unpad_round_trip(seed):
    rng = np.random.default_rng(seed)
    batched = batch_np(random_graphs(seed, count=10, edges=bool(seed % 2)))
    n_node, n_edge, n_graph = int(batched.n_node.sum()), int(batched.n_edge.sum()), 10
    extra = rng.integers(0, 5, 3)
    padded = pad_with_graphs(
        batched, n_node + 1 + extra[0], n_edge + extra[1], n_graph + 1 + extra[2]
    )
    assert_graphs_equal(unpad_with_graphs(padded), batched)
    if seed == 0:  # device arrays are sliced on the device: check it once
        assert_graphs_equal(unpad_with_graphs(jax.device_put(padded)), batched)


def test_round_trip_of_empty_and_edgeless_graphs_alone():
    rng = np.random.default_rng(9)
    for n_node, n_edge in [(0, 0), (5, 0), (1, 0)]:
        graph = random_graph(rng, n_node, n_edge)
        assert_graphs_equal(unpad_with_graphs(pad_with_graphs(graph, n_node + 1, 0)), graph)
        (recovered,) = unbatch_np(batch_np([graph]))
        assert_graphs_equal(recovered, graph)


# ---------------------------------------------------------------------------------------------
# edge order and conversions


def test_sort_edges_by_receiver_is_stable_and_keeps_graphs_contiguous():
    graph = GraphsTuple(
        nodes=None,
        edges={"w": np.array([10, 11, 12, 13, 14, 15])},
        receivers=np.array([2, 0, 2, 4, 3, 3]),
        senders=np.array([0, 1, 1, 3, 4, 3]),
        globals=None,
        n_node=np.array([3, 2]),
        n_edge=np.array([3, 3]),
    )
    ordered = sort_edges_by_receiver(graph)
    np.testing.assert_array_equal(ordered.receivers, [0, 2, 2, 3, 3, 4])
    np.testing.assert_array_equal(ordered.senders, [1, 0, 1, 4, 3, 3])
    np.testing.assert_array_equal(ordered.edges["w"], [11, 10, 12, 14, 15, 13])
    batched = batch_np(random_graphs(10, count=15))
    for original, recovered in zip(
        unbatch_np(batched), unbatch_np(sort_edges_by_receiver(batched)), strict=True
    ):
        order = np.argsort(original.receivers, kind="stable")
        np.testing.assert_array_equal(recovered.senders, original.senders[order])
        np.testing.assert_array_equal(recovered.edges, original.edges[order])


def _sender_major(graph):
    order = np.lexsort((graph.receivers, graph.senders))
    return graph._replace(
        senders=graph.senders[order],
        receivers=graph.receivers[order],
        edges=jax.tree_util.tree_map(lambda x: x[order], graph.edges),
    )


def test_networkx_round_trip():
    networkx = pytest.importorskip("networkx")
    rng = np.random.default_rng(11)
    for n_node, n_edge in CORNER_SIZES:
        graph = _sender_major(random_graph(rng, n_node, n_edge))
        nx_graph = to_networkx(graph)
        assert isinstance(nx_graph, networkx.MultiDiGraph)
        assert nx_graph.number_of_edges() == n_edge
        # Without nodes (edges) networkx holds no features to stack: they come back as None.
        expected = graph._replace(
            nodes=graph.nodes if n_node else None, edges=graph.edges if n_edge else None
        )
        assert_graphs_equal(from_networkx(nx_graph), expected)
    undirected = networkx.Graph([("a", "b"), ("b", "c"), ("c", "c")])
    converted = from_networkx(undirected)
    np.testing.assert_array_equal(converted.senders, [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(converted.receivers, [1, 0, 2, 1, 2])
    assert converted.nodes is None and converted.edges is None and converted.globals is None
    with pytest.raises(ValueError, match="unbatch_np"):
        to_networkx(batch_np(random_graphs(0)))


def test_networkx_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)
    with pytest.raises(ImportError, match=r"gnkit\[networkx\]"):
        to_networkx(random_graphs(0)[0])


def test_dense_adjacency_hand_checked():
    # 3 nodes: 0->1, 1->2, 2->0, a second 0->1, and a self loop on 2.
    graph = GraphsTuple(
        nodes=None,
        edges=np.array([0.5, 1.0, 2.0, 0.25, 3.0], np.float32),
        receivers=np.array([1, 2, 0, 1, 2]),
        senders=np.array([0, 1, 2, 0, 2]),
        globals=None,
        n_node=np.array([3]),
        n_edge=np.array([5]),
    )
    np.testing.assert_array_equal(dense_adjacency(graph), [[0, 2, 0], [0, 0, 1], [1, 0, 1]])
    weighted = dense_adjacency(graph, edge_weights=graph.edges)
    np.testing.assert_array_equal(weighted, [[0, 0.75, 0], [0, 0, 1.0], [2.0, 0, 3.0]])
    rebuilt = from_dense_adjacency(weighted, nodes=np.arange(3))
    np.testing.assert_array_equal(rebuilt.senders, [0, 1, 2, 2])
    np.testing.assert_array_equal(rebuilt.receivers, [1, 2, 0, 2])
    np.testing.assert_array_equal(rebuilt.edges, [0.75, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(rebuilt.n_edge, [4])
    np.testing.assert_array_equal(dense_adjacency(rebuilt, rebuilt.edges), weighted)


def test_edge_list_round_trip_and_errors():
    batched = batch_np(random_graphs(12, count=6))
    rebuilt = from_edge_list(*edge_list(batched), n_node=batched.n_node, nodes=batched.nodes)
    np.testing.assert_array_equal(rebuilt.n_edge, batched.n_edge)
    np.testing.assert_array_equal(rebuilt.senders, batched.senders)
    np.testing.assert_array_equal(rebuilt.receivers, batched.receivers)
    single = from_edge_list([0, 2], [1, 1], n_node=3)
    np.testing.assert_array_equal(single.n_edge, [2])
    with pytest.raises(ValueError, match="within one graph"):
        from_edge_list([0], [3], n_node=[2, 2])
    with pytest.raises(ValueError, match="lie in"):
        from_edge_list([0], [5], n_node=[2, 2])


# ---------------------------------------------------------------------------------------------
# buckets


def test_bucket_ladder_hand_checked():
    policy = BucketPolicy(growth=2.0, min_nodes=4, min_edges=8, min_graphs=2)
    assert [policy.sizes(k) for k in range(3)] == [(4, 8, 2), (8, 16, 4), (16, 32, 8)]
    # 4 nodes need 5 slots (rung 1); 3 edges and 1 graph (+1) fit rung 0.
    assert policy.round(4, 3, 1) == (8, 16, 4)
    own = BucketPolicy(growth=2.0, min_nodes=4, min_edges=8, min_graphs=2, shared_rung=False)
    assert own.round(4, 3, 1) == (8, 8, 2)
    assert policy.round(0, 0, 0) == (4, 8, 2)
    assert policy.round(3, 17, 0) == (16, 32, 8)
    for bad in [{"growth": 1.0}, {"min_graphs": 1}, {"min_nodes": 0}]:
        with pytest.raises(ValueError):
            BucketPolicy(**bad)


def test_bucket_edge_budgets_are_even_so_reverse_pairs_stay_paired():
    # The default ladder's rung 3 is 128 * 1.7**3 = 628.864 edges: 629 rounded up, 630 even.
    policy = BucketPolicy()
    assert policy.sizes(3) == (315, 630, 20)
    assert policy.round(n_node=235, n_edge=506, n_graph=16) == (315, 630, 20)
    assert policy.round(n_node=0, n_edge=630, n_graph=0) == (315, 630, 20)
    # An odd min_edges is rounded up too: 7, 14, 28 become 8, 14, 28.
    odd = BucketPolicy(growth=2.0, min_nodes=4, min_edges=7, min_graphs=2, shared_rung=False)
    assert [odd.sizes(k)[1] for k in range(3)] == [8, 14, 28]
    assert odd.round(n_node=0, n_edge=8, n_graph=0) == (4, 8, 2)
    assert odd.round(n_node=0, n_edge=9, n_graph=0) == (4, 14, 2)


def test_bucket_round_takes_the_lowest_rung_that_fits():
    # Nodes on growth 1.1 from 1: ceil(1.1**k) is 2 for k = 1..7 and 3 from k = 8 (2.14), so 2
    # real nodes (3 slots) need rung 8: (3, ceil(1.1**8) = 3 -> 4 edges, ceil(2 * 1.1**8) = 5).
    policy = BucketPolicy(growth=1.1, min_nodes=1, min_edges=1, min_graphs=2)
    assert policy.round(n_node=2, n_edge=0, n_graph=0) == (3, 4, 5)
    assert policy.sizes(7)[0] == 2


@pytest.mark.parametrize("shared_rung", [True, False])
def test_bucket_ladder_properties(shared_rung):
    policy = BucketPolicy(
        growth=1.5, min_nodes=10, min_edges=20, min_graphs=3, shared_rung=shared_rung
    )
    ladders = [sorted({policy.sizes(k)[d] for k in range(40)}) for d in range(3)]
    rng = np.random.default_rng(13)
    for n_node, n_edge, n_graph in rng.integers(0, 5000, (300, 3)):
        padded = policy.round(n_node, n_edge, n_graph)
        assert padded[0] > n_node and padded[1] >= n_edge and padded[2] > n_graph
        for size, ladder in zip(padded, ladders, strict=True):
            assert size in ladder
        assert padded[1] % 2 == 0
        if not shared_rung:
            # Rounding up to a whole slot adds < 1; edges add < 1 more to stay even.
            for size, need, minimum, rounding in zip(
                padded, (n_node + 1, n_edge, n_graph + 1), (10, 20, 3), (1, 2, 1), strict=True
            ):
                assert size <= max(minimum, 1.5 * need + rounding)


def test_pad_to_bucket_and_batch_stream():
    policy = BucketPolicy(growth=2.0, min_nodes=8, min_edges=8, min_graphs=2)
    graphs = random_graphs(14, count=60)
    batched = batch_np(graphs[:5])
    padded = pad_to_bucket(batched, policy)
    real = (int(batched.n_node.sum()), int(batched.n_edge.sum()), 5)
    assert (padded.n_node.sum(), padded.n_edge.sum(), len(padded.n_node)) == policy.round(*real)
    assert_graphs_equal(unpad_with_graphs(padded), batched)
    caps = {"max_nodes": 40, "max_edges": 64, "max_graphs": 9}
    batches = list(batch_stream(iter(graphs), policy, **caps))
    recovered = [g for b in batches for g in unbatch_np(unpad_with_graphs(b))]
    assert len(recovered) == len(graphs)
    for original, graph in zip(graphs, recovered, strict=True):
        assert_graphs_equal(graph, original)
    for b in batches:
        assert b.n_node.sum() <= 40 and b.n_edge.sum() <= 64 and len(b.n_node) <= 9
    assert len({(b.n_node.sum(), b.n_edge.sum(), len(b.n_node)) for b in batches}) <= 4


# ---------------------------------------------------------------------------------------------
# the compile bound


def random_batch(rng, features=4):
    """A batch of 1-64 graphs, 5-200 nodes each, 2-4 edges per node, built in one go."""
    n_graph = int(rng.integers(1, 65))
    n_node = rng.integers(5, 201, n_graph)
    n_edge = (n_node * rng.uniform(2, 4, n_graph)).astype(np.int64)
    node_offsets = np.repeat(np.cumsum(n_node) - n_node, n_edge)
    sizes = np.repeat(n_node, n_edge)
    total_nodes, total_edges = int(n_node.sum()), int(n_edge.sum())
    return GraphsTuple(
        nodes=rng.normal(size=(total_nodes, features)).astype(np.float32),
        edges=rng.normal(size=(total_edges, features)).astype(np.float32),
        receivers=(node_offsets + rng.integers(0, sizes)).astype(np.int32),
        senders=(node_offsets + rng.integers(0, sizes)).astype(np.int32),
        globals=np.zeros((n_graph, features), np.float32),
        n_node=n_node.astype(np.int32),
        n_edge=n_edge.astype(np.int32),
    )


def test_bucketed_stream_compiles_at_most_8_times():
    # The stream has ~3 edges per node, so min_edges = 3 * min_nodes keeps the shared rung tight.
    policy = BucketPolicy(growth=1.7, min_nodes=192, min_edges=576, min_graphs=8)
    traces = []

    @jax.jit
    def network(graph):
        traces.append(1)
        messages = graph.nodes[graph.senders] * graph.edges
        nodes = jax.ops.segment_sum(messages, graph.receivers, graph.nodes.shape[0])
        return jax.ops.segment_sum(nodes, node_graph_index(graph), graph.n_node.shape[0])

    rng = np.random.default_rng(0)
    real, padded_sizes, ratios = [], [], []
    for step in range(200):
        graph = random_batch(rng)
        padded = pad_to_bucket(graph, policy)
        per_graph = np.asarray(network(padded))
        if step < 3:  # padding never changes the real outputs
            messages = graph.nodes[graph.senders] * graph.edges
            nodes = np.zeros_like(graph.nodes)
            np.add.at(nodes, graph.receivers, messages)
            expected = np.add.reduceat(nodes, np.cumsum(graph.n_node) - graph.n_node)
            np.testing.assert_allclose(
                per_graph[: len(graph.n_node)], expected, rtol=1e-4, atol=1e-4
            )
        sizes = np.array([graph.n_node.sum(), graph.n_edge.sum()])
        padded_size = np.array([padded.n_node.sum(), padded.n_edge.sum()])
        real.append(sizes)
        padded_sizes.append(padded_size)
        ratios.append(padded_size / sizes)
    real_nodes = np.array(real)[:, 0]
    assert real_nodes.max() > 10 * real_nodes.min()
    assert len(traces) <= 8
    assert np.all(np.sum(padded_sizes, axis=0) / np.sum(real, axis=0) <= 1.5)
    assert np.all(np.mean(ratios, axis=0) <= 1.5)


# ---------------------------------------------------------------------------------------------
# the benchmark


def test_bucketing_benchmark_quick(capsys):
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "bucketing.py"
    spec = importlib.util.spec_from_file_location("benchmarks_bucketing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--quick"])
    assert "jraph/gnkit" in capsys.readouterr().out
    stream = results["stream"]
    ours = stream["gnkit pad_to_bucket (shared rung)"]
    exact = stream["jraph pad_with_graphs, exact size"]
    assert ours["compiles"] < exact["compiles"] == exact["batches"]
    assert exact["nodes"] < ours["nodes"] <= 1.5
    for ours_s, jraph_s in results["throughput"].values():
        assert ours_s > 0 and jraph_s > 0


def test_add_self_edges_keeps_each_graphs_edges_together():
    graph = GraphsTuple(
        nodes=np.zeros((3, 1)),
        edges={"w": np.array([[5.0], [7.0]])},
        senders=np.array([0, 2]),
        receivers=np.array([1, 2]),
        globals=None,
        n_node=np.array([2, 1]),
        n_edge=np.array([1, 1]),
    )
    looped = add_self_edges(graph, edge_fill_value=-1.0)
    np.testing.assert_array_equal(looped.senders, [0, 0, 1, 2, 2])
    np.testing.assert_array_equal(looped.receivers, [1, 0, 1, 2, 2])
    np.testing.assert_array_equal(looped.n_edge, [3, 2])
    np.testing.assert_array_equal(looped.edges["w"][:, 0], [5, -1, -1, 7, -1])
    with pytest.raises(ValueError, match="add_self_edges"):
        add_self_edges(graph._replace(senders=None))


def test_package_reexports_every_name_at_both_levels():
    import gnkit
    import gnkit.batching

    assert len(gnkit.batching.__all__) == 28
    for name in gnkit.batching.__all__:
        assert getattr(gnkit, name) is getattr(gnkit.batching, name), name
        assert name in gnkit.__all__, name
