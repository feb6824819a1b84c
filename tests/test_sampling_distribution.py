"""The samplers' draws are uniform without replacement, `min(fanout, degree)` per node: the
frequency of every drawn subset of a node's edges passes a chi-square test against the uniform
law over its `C(degree, fanout)` subsets, as NumPy's `Generator.choice(replace=False)` does on
the same counts; excluded edges (a link sampler's positive pairs) are never drawn and the rest
stay uniform. Counts from fixed seeds, no timing."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import gnkit as gn
from gnkit.sampling import CSRGraph, LinkNeighborSampler, NeighborSampler, sample_one_hop


def graph_of(senders, receivers, n_node):
    senders, receivers = np.asarray(senders), np.asarray(receivers)
    return gn.GraphsTuple(nodes=np.arange(n_node, dtype=np.float32)[:, None], edges=None,
                          senders=senders, receivers=receivers, globals=None,
                          n_node=np.array([n_node]), n_edge=np.array([senders.size]))


def chi_square_p(subsets, population, size):
    """p-value of the subsets' counts `[draws, size]` against the uniform law over all
    `C(len(population), size)` subsets of `population`."""
    index = {subset: i for i, subset in
             enumerate(itertools.combinations(sorted(population), size))}
    assert len(index) == math.comb(len(population), size)
    counts = np.zeros(len(index))
    for row in subsets:
        counts[index[tuple(sorted(int(v) for v in row))]] += 1
    expected = np.full(len(index), counts.sum() / len(index))
    return stats.chisquare(counts, expected).pvalue


def test_numpy_reference_passes_the_same_test():
    rng = np.random.default_rng(1)
    draws = np.stack([rng.choice(6, 3, replace=False) for _ in range(4000)])
    assert chi_square_p(draws, range(6), 3) > 1e-3


@pytest.mark.parametrize(("degree", "fanout"), [(6, 3), (5, 1), (7, 6), (12, 2)])
def test_one_hop_subsets_are_uniform(degree, fanout):
    graph = graph_of(np.arange(degree), np.full(degree, degree), degree + 1)
    store = CSRGraph.from_graph(graph)
    rows = 4000
    positions, mask = sample_one_hop(store, np.full(rows, degree), np.ones(rows, bool), fanout,
                                     np.random.default_rng(0))
    assert mask.all()
    drawn = store.senders[positions]
    assert all(np.unique(row).size == fanout for row in drawn)
    assert chi_square_p(drawn, range(degree), fanout) > 1e-3


def test_a_node_of_degree_at_most_the_fanout_draws_every_edge_once():
    # Node 4 receives from 0, 1, 2; node 5 from 3 alone; node 6 from nothing.
    graph = graph_of([0, 1, 2, 3], [4, 4, 4, 5], 7)
    store = CSRGraph.from_graph(graph)
    positions, mask = sample_one_hop(store, np.array([4, 5, 6]), np.ones(3, bool), 3,
                                     np.random.default_rng(0))
    assert mask.sum(axis=1).tolist() == [3, 1, 0]
    assert sorted(store.senders[positions[0]].tolist()) == [0, 1, 2]
    assert store.senders[positions[1, 0]] == 3


def stars(n_star, degree):
    """`n_star` stars: centre `c * (degree + 1)` receives from its `degree` leaves."""
    centres = np.arange(n_star) * (degree + 1)
    leaves = centres[:, None] + 1 + np.arange(degree)
    return graph_of(leaves.reshape(-1), np.repeat(centres, degree), n_star * (degree + 1)), centres


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_neighbor_sampler_draws_uniform_subsets(subgraph):
    degree, fanout, n_star = 5, 2, 500
    graph, centres = stars(n_star, degree)
    sampler = NeighborSampler(graph, (fanout,), n_star, seeds=centres, subgraph=subgraph)
    offsets = []
    for batch in range(6):
        sample = sampler.batch(batch, 0)
        n_edge = int(sample.graph.n_edge[0])
        senders = sample.global_id[sample.graph.senders[:n_edge]]
        receivers = sample.global_id[sample.graph.receivers[:n_edge]]
        order = np.argsort(receivers, kind="stable")
        assert np.all(np.bincount(receivers // (degree + 1), minlength=n_star) == fanout)
        offsets.append((senders[order] - receivers[order] - 1).reshape(n_star, fanout))
    assert chi_square_p(np.concatenate(offsets), range(degree), fanout) > 1e-3


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_link_sampler_never_draws_a_positive_pairs_edges_and_stays_uniform(subgraph):
    # The positive edge 1 -> 0 and its reverse 0 -> 1; node 0 also receives from 2..6, node 1
    # from 7..9. With the pair's edges out, node 0 draws 2 of {2..6}, node 1 2 of {7, 8, 9}.
    senders = [1, 0, 2, 3, 4, 5, 6, 7, 8, 9]
    receivers = [0, 1, 0, 0, 0, 0, 0, 1, 1, 1]
    graph = graph_of(senders, receivers, 10)
    draws = {0: [], 1: []}
    batches = 1 if subgraph == "disjoint" else 3000
    batch_size = 3000 if subgraph == "disjoint" else 1
    sampler = LinkNeighborSampler(graph, (2,), batch_size, num_negatives=0, subgraph=subgraph)
    for index in range(batches):
        sample = sampler.sample(np.ones(batch_size, np.int64), np.zeros(batch_size, np.int64),
                                rng=index)
        sub = sample.subgraph
        n_edge = int(sub.graph.n_edge[0])
        edge_senders = sub.global_id[sub.graph.senders[:n_edge]]
        edge_receivers = sub.global_id[sub.graph.receivers[:n_edge]]
        pair = {frozenset(p) for p in zip(edge_senders.tolist(), edge_receivers.tolist(),
                                          strict=True)}
        assert frozenset((0, 1)) not in pair
        for node in (0, 1):
            rows = sub.graph.senders[:n_edge][edge_receivers == node]
            draws[node].append(sub.global_id[rows].reshape(-1, 2))
    assert chi_square_p(np.concatenate(draws[0]), range(2, 7), 2) > 1e-3
    assert chi_square_p(np.concatenate(draws[1]), range(7, 10), 2) > 1e-3
