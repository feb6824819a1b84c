"""Sampler arguments are checked at the boundary: ids outside their set, float ids, bad fanouts,
counts and times each raise one error naming the argument, and valid input samples as before."""

import re

import jax
import numpy as np
import pytest
from test_sampling import random_graph
from test_sampling_typed import FANOUTS, typed_graph

from gnkit.sampling import LinkNeighborSampler, NeighborSampler, TypedNeighborSampler, khop_subgraph


def same(first, second):
    return all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(first),
                                                    jax.tree_util.tree_leaves(second), strict=True))


def neighbor_sample(graph, seeds):
    return NeighborSampler(graph, (2,), 2).sample(seeds)


def link_sources(graph, ids):
    return LinkNeighborSampler(graph, (2,), 2).sample(ids, np.zeros(len(ids), np.int64))


def link_destinations(graph, ids):
    return LinkNeighborSampler(graph, (2,), 2).sample(np.zeros(len(ids), np.int64), ids)


def khop(graph, seeds):
    return khop_subgraph(graph, seeds, 1, max_nodes=30, max_edges=40)


ID_TAKERS = {"seeds": neighbor_sample, "sources": link_sources,
             "destinations": link_destinations, "khop seeds": khop}


@pytest.mark.parametrize("taker", ID_TAKERS)
def test_ids_outside_the_graph_are_refused(taker):
    graph = random_graph()
    name = taker.split()[-1]
    for bad in (-1, -2, 125):
        message = re.escape(f"{name} must be ids in [0, 120); got {bad} at position 1.")
        with pytest.raises(ValueError, match=message):
            ID_TAKERS[taker](graph, np.array([3, bad]))
    with pytest.raises(TypeError, match=f"{name} must be integer ids; got dtype float64."):
        ID_TAKERS[taker](graph, np.array([1.9]))


def test_too_many_ids_name_their_bound():
    graph = random_graph()
    with pytest.raises(ValueError, match=re.escape("at most batch_size=2 ids; got 3.")):
        neighbor_sample(graph, [1, 2, 3])
    with pytest.raises(ValueError, match=re.escape("at most max_nodes=2 ids; got 3.")):
        khop_subgraph(graph, [1, 2, 3], 1, max_nodes=2, max_edges=40)
    with pytest.raises(ValueError, match=re.escape("seeds must be distinct ids; got 2 more than")):
        khop(graph, [1, 2, 2])


def test_typed_seeds_outside_the_seed_set_are_refused():
    graph = typed_graph()  # 60 papers
    sampler = TypedNeighborSampler(graph, FANOUTS, 4, seed_set="paper")
    for bad in (-1, 60):
        with pytest.raises(ValueError, match=re.escape(f"in [0, 60); got {bad} at position 0.")):
            sampler.sample(np.array([bad]))
    with pytest.raises(TypeError, match="seeds must be integer ids; got dtype float64."):
        sampler.sample([1.9])
    with pytest.raises(ValueError, match=re.escape("seeds must be ids in [0, 60); got 500")):
        TypedNeighborSampler(graph, FANOUTS, 4, seed_set="paper", seeds=[0, 500])


def test_float_ids_at_construction_are_refused():
    graph = random_graph()
    with pytest.raises(TypeError, match="seeds must be integer ids; got dtype float64."):
        NeighborSampler(graph, (2,), 4, seeds=np.array([0.0, 1.5]))
    with pytest.raises(TypeError, match="edges must be integer ids; got dtype float64."):
        LinkNeighborSampler(graph, (2,), 4, edges=np.array([3.7]))
    with pytest.raises(TypeError, match="seeds must be integer ids; got dtype bool."):
        NeighborSampler(graph, (2,), 4, seeds=np.array([True, False]))


def test_fanouts_are_sequences_of_positive_ints():
    graph = random_graph()
    for bad, error in ((3, TypeError), ((2.5,), TypeError), ("35", TypeError), ((), ValueError),
                       ((2, 0), ValueError), ((-1,), ValueError)):
        message = re.escape(f"fanouts must be a sequence of ints >= 1, one per hop, like PyG's "
                            f"num_neighbors (e.g. (10, 5)); got {bad!r}.")
        with pytest.raises(error, match=message):
            NeighborSampler(graph, bad, 4)
    with pytest.raises(TypeError, match=re.escape("fanouts['cites'] must be a sequence of ints")):
        TypedNeighborSampler(typed_graph(), {**FANOUTS, "cites": (2.5, 1)}, 4, seed_set="paper")


@pytest.mark.parametrize("make", [
    lambda size: NeighborSampler(random_graph(), (2,), size),
    lambda size: LinkNeighborSampler(random_graph(), (2,), size),
    lambda size: TypedNeighborSampler(typed_graph(), FANOUTS, size, seed_set="paper"),
])
def test_batch_size_is_a_positive_int(make):
    with pytest.raises(ValueError, match=re.escape("batch_size must be an int >= 1; got 0.")):
        make(0)
    with pytest.raises(TypeError, match=re.escape("batch_size must be an int >= 1; got 2.5.")):
        make(2.5)


def test_counts_of_the_link_sampler_and_khop_are_ints():
    graph = random_graph()
    with pytest.raises(TypeError, match=re.escape("num_negatives must be an int >= 0; got 1.5.")):
        LinkNeighborSampler(graph, (2,), 4, num_negatives=1.5)
    with pytest.raises(TypeError, match=re.escape("k must be an int >= 0; got 1.5.")):
        khop_subgraph(graph, [1], 1.5, max_nodes=30, max_edges=40)
    with pytest.raises(TypeError, match=re.escape("max_nodes must be an int >= 1; got 30.5.")):
        khop_subgraph(graph, [1], 1, max_nodes=30.5, max_edges=40)


def test_seed_times_are_numeric_and_one_per_seed():
    graph = random_graph()
    node_time = np.arange(120)
    with pytest.raises(TypeError, match="seed_time must be numeric; got dtype <U1."):
        NeighborSampler(graph, (2,), 4, edge_time=np.zeros(900), seed_time=np.array(["a"] * 120))
    sampler = NeighborSampler(graph, (2,), 4, node_time=node_time)
    with pytest.raises(ValueError, match=re.escape("seed_times must have shape [3]; got (2,).")):
        sampler.sample([1, 2, 3], seed_times=[5, 6])
    with pytest.raises(TypeError, match="seed_times must be numeric; got dtype <U1."):
        sampler.sample([1], seed_times=["5"])
    with pytest.raises(ValueError, match="seed_times needs node_time or edge_time."):
        NeighborSampler(graph, (2,), 4).sample([1], seed_times=[5])


def test_valid_ids_of_any_integer_dtype_sample_the_same():
    graph = random_graph()
    sampler = NeighborSampler(graph, (3, 2), 4)
    reference = sampler.sample(np.array([7, 1, 30], np.int64), rng=4)
    assert same(sampler.sample([7, 1, 30], rng=4), reference)
    assert same(sampler.sample(np.array([7, 1, 30], np.uint16), rng=4), reference)
    np.testing.assert_array_equal(reference.global_id[:4], [7, 1, 30, -1])
    assert same(sampler.sample([]), sampler.empty())
