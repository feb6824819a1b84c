"""Typed neighbour sampling: every sampled edge is an edge of its edge set, fanouts per edge set
and hop hold without replacement, seeds first, shapes fixed (one compile), no future leakage."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit import typed_graph as tg
from gnkit.sampling import TypedNeighborSampler

CITES = tg.EdgeSetKey("cites", ("paper", "paper"))
WRITES = tg.EdgeSetKey("writes", ("author", "paper"))
WRITTEN = tg.EdgeSetKey("written_by", ("paper", "author"))
FANOUTS = {"cites": (3, 2), "writes": (2, 1), "written_by": (2, 2)}


def typed_graph(seed=0):
    rng = np.random.default_rng(seed)
    n_paper, n_author = 60, 25
    cites = rng.integers(0, n_paper, (2, 300))
    writes = np.stack([rng.integers(0, n_author, 150), rng.integers(0, n_paper, 150)])
    paper_features = rng.normal(size=(n_paper, 3)).astype(np.float32)
    paper_features[:, 0] = np.arange(n_paper)
    author_features = np.arange(n_author, dtype=np.float32)[:, None]

    def edge_set(pair, time):
        return tg.EdgeSet(np.array([pair.shape[1]]), pair[0], pair[1],
                          features=np.arange(pair.shape[1], dtype=np.float32)[:, None], time=time)

    return tg.TypedGraph(
        tg.Context(np.array([1])),
        {"paper": tg.NodeSet(np.array([n_paper]), paper_features,
                             time=rng.integers(0, 20, n_paper).astype(np.int32)),
         "author": tg.NodeSet(np.array([n_author]), author_features,
                              time=rng.integers(0, 20, n_author).astype(np.int32))},
        {CITES: edge_set(cites, rng.integers(0, 20, 300).astype(np.int32)),
         WRITES: edge_set(writes, rng.integers(0, 20, 150).astype(np.int32)),
         WRITTEN: edge_set(writes[::-1].copy(), rng.integers(0, 20, 150).astype(np.int32))},
    )


def real_edges(sample, key):
    count = int(sample.graph.edges[key].n_edge[0])
    edges = sample.graph.edges[key]
    return (np.asarray(edges.senders[:count]), np.asarray(edges.receivers[:count]),
            sample.edge_ids[key][:count])


def row_hops(sample, seed_count):
    """Each real row's hop per node set, from the tree edges (every non-seed row has one)."""
    hops = {name: np.full(int(ns.n_node[0]), -1) for name, ns in sample.graph.nodes.items()}
    hops["paper"][:seed_count] = 0
    for _ in range(3):
        for key in (CITES, WRITES, WRITTEN):
            senders, receivers, _ = real_edges(sample, key)
            sender_set, receiver_set = key.node_sets
            hops[sender_set][senders] = hops[receiver_set][receivers] + 1
    return hops


def test_typed_samples_hold_real_edges_fanouts_and_seeds_first():
    graph = typed_graph()
    sampler = TypedNeighborSampler(graph, FANOUTS, 8, seed_set="paper", seed=1)
    shapes = set()
    for index, sample in enumerate(sampler.epoch(0)):
        shapes.add(str(jax.tree_util.tree_map(np.shape, sample)))
        tg.validate(sample.graph)
        order = sampler.epoch_order(0)[index * 8 : (index + 1) * 8]
        paper = sample.graph.nodes["paper"]
        np.testing.assert_array_equal(paper.global_id[: order.size], order)
        np.testing.assert_array_equal(sample.seed_mask, np.arange(8) < order.size)
        for name, node_set in sample.graph.nodes.items():
            present = node_set.global_id >= 0
            np.testing.assert_array_equal(node_set.features[present, 0],
                                          node_set.global_id[present])
            np.testing.assert_array_equal(node_set.time[present],
                                          graph.nodes[name].time[node_set.global_id[present]])
        hops = row_hops(sample, order.size)
        for key in (CITES, WRITES, WRITTEN):
            senders, receivers, edge_ids = real_edges(sample, key)
            sender_set, receiver_set = key.node_sets
            source = graph.edges[key]
            sender_ids = sample.graph.nodes[sender_set].global_id
            receiver_ids = sample.graph.nodes[receiver_set].global_id
            np.testing.assert_array_equal(source.senders[edge_ids], sender_ids[senders])
            np.testing.assert_array_equal(source.receivers[edge_ids], receiver_ids[receivers])
            assert (np.diff(receivers) >= 0).all()
            degree = np.bincount(source.receivers, minlength=len(receiver_ids))
            for row in range(int(sample.graph.nodes[receiver_set].n_node[0])):
                hop = hops[receiver_set][row]
                if receiver_ids[row] < 0 or hop < 0:
                    continue
                drawn = edge_ids[receivers == row]
                assert np.unique(drawn).size == drawn.size
                expected = 0 if hop >= 2 else min(degree[receiver_ids[row]], FANOUTS[key.name][hop])
                assert drawn.size == expected, (key.name, row, hop)
    assert len(shapes) == 1 and len(sampler) == 8


def test_typed_budget_follows_the_fanouts():
    sampler = TypedNeighborSampler(typed_graph(), FANOUTS, 8, seed_set="paper")
    # Hop 1 from the 8 seed papers: 8 x 3 cited papers, 8 x 2 authors (writes). Hop 2 from
    # those 24 papers: 24 x 2 cited papers and 24 x 1 authors; from the 16 authors: 16 x 2
    # papers (written_by).
    assert sampler.budget.n_node == {"paper": 8 + 24 + 48 + 32 + 1, "author": 16 + 24 + 1}
    assert sampler.budget.n_edge == {CITES: 24 + 48, WRITES: 16 + 24, WRITTEN: 32}


def test_typed_epoch_compiles_once():
    sampler = TypedNeighborSampler(typed_graph(), FANOUTS, 16, seed_set="paper")
    traces = []

    @jax.jit
    def total(sample):
        traces.append(1)
        return jnp.sum(sample.graph.nodes["author"].features) + jnp.sum(sample.seed_mask)

    values = [float(total(sample)) for sample in sampler.epoch(0)]
    assert len(values) == 4 and len(traces) == 1


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_typed_temporal_samples_are_never_later_than_their_seed(strategy):
    graph = typed_graph()
    sampler = TypedNeighborSampler(graph, FANOUTS, 8, seed_set="paper", temporal=True,
                                   strategy=strategy)
    for sample in sampler.epoch(0):
        seed_ids = sample.graph.nodes["paper"].global_id[:8]
        seed_time = np.where(seed_ids >= 0, graph.nodes["paper"].time[np.maximum(seed_ids, 0)], 0)
        for name, node_set in sample.graph.nodes.items():
            present = np.flatnonzero(node_set.global_id >= 0)
            rows_seed_time = seed_time[sample.roots[name][present]]
            assert (graph.nodes[name].time[node_set.global_id[present]] <= rows_seed_time).all()
        for key in (CITES, WRITES, WRITTEN):
            _, receivers, edge_ids = real_edges(sample, key)
            receiver_roots = sample.roots[key.node_sets[1]][receivers]
            assert (graph.edges[key].time[edge_ids] <= seed_time[receiver_roots]).all()


def test_typed_sampler_repeats_and_names_bad_arguments():
    graph = typed_graph()
    first = TypedNeighborSampler(graph, FANOUTS, 8, seed_set="paper", seed=3).batch(1, 2)
    again = TypedNeighborSampler(graph, FANOUTS, 8, seed_set="paper", seed=3).batch(1, 2)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(first),
                                                    jax.tree_util.tree_leaves(again), strict=True))
    with pytest.raises(KeyError, match="seed_set"):
        TypedNeighborSampler(graph, FANOUTS, 8, seed_set="venue")
    with pytest.raises(ValueError, match="same number"):
        TypedNeighborSampler(graph, {"cites": (3, 2), "writes": (2,)}, 8, seed_set="paper")
    with pytest.raises(KeyError, match="fanouts"):
        TypedNeighborSampler(graph, {"cited_by": (3,)}, 8, seed_set="paper")
