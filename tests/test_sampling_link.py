"""Link-neighbour sampling and k-hop subgraphs: pairs point at the right nodes, the batch's
positive edges never carry messages, shapes are fixed; the k-hop subgraph is the brute-force
k-hop neighbourhood with every edge among its nodes."""

import jax
import numpy as np
import pytest
from test_sampling import check_edges_exist, random_graph, real_edges, row_hops

import gnkit as gn
from gnkit.sampling import LinkNeighborSampler, khop_subgraph, pair_keys


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_pairs_hold_the_positive_edges_and_their_negatives(subgraph):
    graph = random_graph()
    edges = np.arange(0, 900, 7)
    sampler = LinkNeighborSampler(graph, (3, 2), 16, edges=edges, num_negatives=2,
                                  subgraph=subgraph, seed=1)
    order = sampler.epoch_order(0)
    shapes = set()
    for index, sample in enumerate(sampler.epoch(0)):
        check_edges_exist(graph, sample.subgraph)
        shapes.add(jax.tree_util.tree_map(np.shape, sample))
        positives = edges[order[index * 16 : (index + 1) * 16]]
        count = positives.size
        ids = sample.subgraph.global_id
        np.testing.assert_array_equal(ids[sample.pairs[:count, 0]], graph.senders[positives])
        np.testing.assert_array_equal(ids[sample.pairs[:count, 1]], graph.receivers[positives])
        negatives = sample.pairs[16:].reshape(16, 2, 2)
        np.testing.assert_array_equal(negatives[:, :, 0], sample.pairs[:16, :1].repeat(2, 1))
        np.testing.assert_array_equal(sample.labels, np.r_[np.ones(16), np.zeros(32)])
        np.testing.assert_array_equal(sample.pair_mask[:16], np.arange(16) < count)
        np.testing.assert_array_equal(sample.pair_mask[16:], np.repeat(np.arange(16) < count, 2))
        assert (ids[sample.pairs[sample.pair_mask].reshape(-1)] >= 0).all()
        # No sampled edge joins a positive pair, in either direction.
        senders, receivers, _ = real_edges(sample.subgraph)
        sampled = pair_keys(ids[senders], ids[receivers], 120)
        blocked = pair_keys(graph.senders[positives], graph.receivers[positives], 120)
        assert not np.isin(sampled, blocked).any()
    assert len(shapes) == 1 and len(sampler) == 9


def remaining_edges(graph, node, blocked):
    """Brute force: the edges into `node` that join no pair of `blocked` (`pair_keys`)."""
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    incoming = np.flatnonzero(receivers == node)
    return incoming[~np.isin(pair_keys(senders[incoming], node, 120), blocked)]


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_removing_seed_edges_draws_the_fanout_from_the_remaining_edges(subgraph):
    graph = random_graph()
    fanouts = (3, 2)
    sampler = LinkNeighborSampler(graph, fanouts, 16, num_negatives=1, subgraph=subgraph, seed=1)
    cases = set()
    for index in range(3):
        sample = sampler.batch(0, index)
        positives = sampler.edges[sampler.epoch_order(0)[index * 16 : (index + 1) * 16]]
        blocked = pair_keys(graph.senders[positives], graph.receivers[positives], 120)
        ids = sample.subgraph.global_id
        _, receivers, edge_ids = real_edges(sample.subgraph)
        # Disjoint: every row of the first hop too; shared: the seed rows (nothing cut there).
        hops = row_hops(sample.subgraph, 48)
        rows = np.flatnonzero(hops < (len(fanouts) if subgraph == "disjoint" else 1))
        for row in rows[(rows >= 48) | sample.subgraph.seed_mask[np.minimum(rows, 47)]]:
            remaining = remaining_edges(graph, ids[row], blocked)
            drawn = edge_ids[receivers == row]
            assert set(drawn) <= set(remaining) and np.unique(drawn).size == drawn.size
            assert drawn.size == min(fanouts[hops[row]], remaining.size), (row, ids[row])
            cases.add(remaining.size > fanouts[hops[row]])
    assert cases == {True, False}, "both cases occur in these batches"


def test_removed_seed_edges_leave_uniform_draws_over_the_rest():
    # Node 10 receives from 0..9; each of 500 copies of the pair (3, 10) draws 3 of the other 9.
    graph = gn.GraphsTuple(nodes=None, edges=None, senders=np.arange(10),
                           receivers=np.full(10, 10), globals=None, n_node=np.array([11]),
                           n_edge=np.array([10]))
    sampler = LinkNeighborSampler(graph, (3,), 500, num_negatives=0)
    sample = sampler.sample(np.full(500, 3), np.full(500, 10), rng=0)
    senders, receivers, _ = real_edges(sample.subgraph)
    drawn = sample.subgraph.global_id[senders[receivers >= 500]]
    assert drawn.size == 1500 and 3 not in drawn
    counts = np.bincount(drawn, minlength=10)
    # 1,500 draws, 166.7 expected for each of the 9; binomial sd ~ 12, so 5 sd is 60.
    assert np.abs(np.delete(counts, 3) - 1500 / 9).max() < 60, counts


def test_seed_edges_are_kept_when_asked():
    graph = random_graph()
    kept = LinkNeighborSampler(graph, (30,), 8, remove_seed_edges=False, num_negatives=0)
    sample = kept.batch(0, 0)
    positives = kept.edges[kept.epoch_order(0)[:8]]
    ids = sample.subgraph.global_id
    senders, receivers, edge_ids = real_edges(sample.subgraph)
    assert set(positives) <= set(edge_ids), "a fanout above every degree draws the seed edges"
    assert sample.pairs.shape == (8, 2)
    np.testing.assert_array_equal(ids[sample.pairs[:, 1]], graph.receivers[positives])


def test_link_batches_are_deterministic_and_empty_batches_are_masked():
    graph = random_graph()
    sampler = LinkNeighborSampler(graph, (3, 2), 16, seed=3)
    first, second = sampler.batch(2, 5), sampler.batch(2, 5)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(first),
                                                    jax.tree_util.tree_leaves(second), strict=True))
    empty = sampler.empty()
    assert not empty.pair_mask.any() and int(empty.subgraph.graph.n_edge[0]) == 0
    assert jax.tree_util.tree_map(np.shape, empty) == jax.tree_util.tree_map(np.shape, first)


def brute_force_khop(graph, seeds, k):
    reached, frontier = set(seeds), set(seeds)
    for _ in range(k):
        frontier = {int(s) for s, r in zip(graph.senders, graph.receivers, strict=True)
                    if r in frontier} - reached
        reached |= frontier
    return reached


def test_khop_subgraph_is_the_induced_k_hop_neighbourhood():
    graph = random_graph(n_edge=200)
    seeds = np.array([5, 60, 7])
    sample = khop_subgraph(graph, seeds, 2, max_nodes=120, max_edges=200)
    n_real = int(sample.graph.n_node[0])
    ids = sample.global_id[:n_real]
    np.testing.assert_array_equal(ids[:3], seeds)
    assert set(ids) == brute_force_khop(graph, seeds, 2) and np.unique(ids).size == n_real
    inside = np.isin(graph.senders, ids) & np.isin(graph.receivers, ids)
    _, _, edge_ids = real_edges(sample)
    assert sorted(edge_ids) == list(np.flatnonzero(inside))
    check_edges_exist(graph, sample)
    one_hop = brute_force_khop(graph, seeds, 1)
    assert set(ids[: len(one_hop)]) == one_hop, "nearer hops come first"


def test_khop_subgraph_cuts_to_its_budgets():
    graph = random_graph()
    sample = khop_subgraph(graph, np.array([1, 2]), 3, max_nodes=30, max_edges=40)
    assert sample.graph.nodes.shape[0] == 31 and sample.graph.senders.shape[0] == 40
    assert int(sample.graph.n_node[0]) == 30 and int(sample.graph.n_edge[0]) <= 40
    check_edges_exist(graph, sample)
    with pytest.raises(ValueError, match="distinct"):
        khop_subgraph(graph, np.array([1, 1]), 1, max_nodes=30, max_edges=40)
