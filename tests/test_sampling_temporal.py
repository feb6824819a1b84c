"""Temporal neighbour sampling: no sampled node or edge is later than its seed, at any hop; every
usable edge is drawn where the fanout allows; "last" takes the most recent; draws repeat."""

import jax
import numpy as np
import pytest
from test_sampling import random_graph, real_edges, row_hops

from gnkit.sampling import CSRGraph, NeighborSampler, pair_keys, sample_one_hop
from gnkit.sampling.expansion import pair_positions

FANOUTS = (4, 3)


def times(graph, seed=1, integer=True):
    rng = np.random.default_rng(seed)
    n_node, n_edge = graph.nodes.shape[0], graph.senders.shape[0]
    if integer:  # ties with the seed time test the `<=`
        return rng.integers(0, 30, n_node), rng.integers(0, 30, n_edge)
    return rng.random(n_node), rng.random(n_edge)


def usable_edges(graph, node_time, edge_time, node, time):
    """Brute force: the edges into `node` whose time and sender's time are `<= time`."""
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    return np.flatnonzero((receivers == node) & (edge_time <= time) & (node_time[senders] <= time))


def check_no_future(sample, node_time, edge_time, seed_times):
    n_real = int(sample.graph.n_node[0])
    present = np.flatnonzero(sample.global_id[:n_real] >= 0)
    row_seed_time = seed_times[sample.root[present]]
    assert (node_time[sample.global_id[present]] <= row_seed_time).all()
    senders, receivers, edge_ids = real_edges(sample)
    edge_seed_time = seed_times[sample.root[receivers]]
    assert (edge_time[edge_ids] <= edge_seed_time).all()
    assert (node_time[sample.global_id[senders]] <= edge_seed_time).all()
    np.testing.assert_array_equal(sample.root[senders], sample.root[receivers])


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_no_sampled_node_or_edge_is_later_than_its_seed(strategy):
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)
    sampler = NeighborSampler(graph, FANOUTS, 16, node_time=node_time, edge_time=edge_time,
                              strategy=strategy, seed=4)
    order = sampler.epoch_order(0)
    for index, sample in enumerate(sampler.epoch(0)):
        seed_ids = sampler.seeds[order[index * 16 : (index + 1) * 16]]
        seed_times = np.zeros(16, node_time.dtype)
        seed_times[: seed_ids.size] = node_time[seed_ids]
        check_no_future(sample, node_time, edge_time, seed_times)


def test_explicit_seed_times_with_edge_times_alone():
    graph = random_graph(n_edge=1500)
    _, edge_time = times(graph)
    seed_time = np.random.default_rng(2).integers(0, 30, 120)
    sampler = NeighborSampler(graph, FANOUTS, 16, edge_time=edge_time, seed_time=seed_time)
    node_time = np.zeros(120, int)
    order = sampler.epoch_order(0)
    for index, sample in enumerate(sampler.epoch(0)):
        slot_times = np.zeros(16, int)
        picked = seed_time[order[index * 16 : (index + 1) * 16]]
        slot_times[: picked.size] = picked
        check_no_future(sample, node_time, edge_time, slot_times)
    with pytest.raises(ValueError, match="needs seed_time"):
        NeighborSampler(graph, FANOUTS, 16, edge_time=edge_time)


def test_every_usable_edge_is_drawn_up_to_the_fanout():
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)
    sampler = NeighborSampler(graph, FANOUTS, 16, node_time=node_time, edge_time=edge_time)
    sample = sampler.batch(0, 2)
    seed_times = node_time[sample.global_id[:16]]
    _, receivers, edge_ids = real_edges(sample)
    hops = row_hops(sample, 16)
    cases = set()
    for row in np.flatnonzero(hops[: int(sample.graph.n_node[0])] < len(FANOUTS)):
        usable = usable_edges(graph, node_time, edge_time, sample.global_id[row],
                              seed_times[sample.root[row]])
        drawn = edge_ids[receivers == row]
        assert set(drawn) <= set(usable)
        assert drawn.size == min(usable.size, FANOUTS[hops[row]])
        cases.add(usable.size > FANOUTS[hops[row]])
    assert cases == {True, False}


def test_last_takes_the_most_recent_usable_edges():
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph, integer=False)
    sampler = NeighborSampler(graph, FANOUTS, 16, node_time=node_time, edge_time=edge_time,
                              strategy="last")
    sample = sampler.batch(0, 0)
    seed_times = node_time[sample.global_id[:16]]
    _, receivers, edge_ids = real_edges(sample)
    hops = row_hops(sample, 16)
    usable_time = np.maximum(edge_time, node_time[np.asarray(graph.senders)])
    for row in np.flatnonzero(hops[: int(sample.graph.n_node[0])] < len(FANOUTS)):
        usable = usable_edges(graph, node_time, edge_time, sample.global_id[row],
                              seed_times[sample.root[row]])
        latest = usable[np.argsort(usable_time[usable])][-FANOUTS[hops[row]]:]
        assert set(edge_ids[receivers == row]) == set(latest)


def test_store_rows_are_sorted_by_usable_time():
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)
    store = CSRGraph.from_graph(graph, node_time, edge_time)
    for row in range(store.num_nodes):
        row_times = store.usable_time[store.indptr[row] : store.indptr[row + 1]]
        assert (np.diff(row_times) >= 0).all()
    np.testing.assert_array_equal(
        store.usable_time, np.maximum(edge_time, node_time[graph.senders])[store.edge_ids])
    nodes = np.arange(120)
    at = np.full(120, 15)
    expected = [usable_edges(graph, node_time, edge_time, node, 15).size for node in nodes]
    np.testing.assert_array_equal(store.usable_degree(nodes, at), expected)


def test_temporal_batches_repeat_for_a_seed():
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)

    def leaves(seed):
        sampler = NeighborSampler(graph, FANOUTS, 16, node_time=node_time, edge_time=edge_time,
                                  seed=seed)
        return jax.tree_util.tree_leaves(sampler.batch(1, 3))

    assert all(np.array_equal(a, b) for a, b in zip(leaves(9), leaves(9), strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(leaves(9), leaves(8), strict=True))


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_excluded_edges_are_taken_out_before_the_draw(strategy):
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)
    store = CSRGraph.from_graph(graph, node_time, edge_time)
    rng = np.random.default_rng(3)
    excluded = np.sort(rng.choice(1500, 500, replace=False))
    nodes, at = rng.integers(0, 120, 400), rng.integers(0, 30, 400)
    positions, mask = sample_one_hop(store, nodes, np.ones(400, bool), 4, rng, at, strategy,
                                     excluded)
    cases = set()
    for node, time, drawn, held in zip(nodes, at, positions, mask, strict=True):
        row = np.arange(store.indptr[node], store.indptr[node + 1])
        left = np.setdiff1d(row[store.usable_time[row] <= time], excluded)  # in time order
        drawn = drawn[held]
        assert np.unique(drawn).size == drawn.size and drawn.size == min(4, left.size)
        if strategy == "last" or left.size <= 4:
            assert set(drawn) == set(left[-4:])
        else:
            assert set(drawn) <= set(left)
        cases.add(left.size > 4)
    assert cases == {True, False}


def test_pair_positions_find_every_edge_of_the_pairs_with_and_without_time():
    graph = random_graph(n_edge=1500)
    node_time, edge_time = times(graph)
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    # The pairs of edges 0..39, edge 4 a self-loop (36, 36).
    keys = np.unique(pair_keys(senders[:40], receivers[:40], 120))
    expected = np.flatnonzero(np.isin(pair_keys(senders, receivers, 120), keys))
    assert senders[4] == receivers[4] == 36
    assert expected.size > 40, "the pairs' reverse and repeated edges are found too"
    for store in (CSRGraph.from_graph(graph), CSRGraph.from_graph(graph, node_time, edge_time)):
        positions = pair_positions(store, keys)
        assert (np.diff(positions) > 0).all()
        np.testing.assert_array_equal(np.sort(store.edge_ids[positions]), expected)
