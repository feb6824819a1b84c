"""Neighbour sampling: every sampled edge is an edge of the source graph, fanouts are respected
without replacement, seeds come first with their global ids, batches repeat for a seed, an epoch
compiles once, padding changes no real output, and full fanouts reproduce full-graph GraphSAGE."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gnkit as gn
from gnkit import nn as gnn
from gnkit.sampling import CSRGraph, NeighborSampler, sample_one_hop, tree_sizes


def random_graph(n_node=120, n_edge=900, seed=0, features=4):
    """A directed multigraph; node features carry the node id in column 0, edges their id."""
    rng = np.random.default_rng(seed)
    senders = rng.integers(0, n_node, n_edge)
    receivers = rng.integers(0, n_node, n_edge)
    nodes = rng.normal(size=(n_node, features)).astype(np.float32)
    nodes[:, 0] = np.arange(n_node)
    edges = np.arange(n_edge, dtype=np.float32)[:, None]
    return gn.GraphsTuple(nodes=nodes, edges=edges, senders=senders, receivers=receivers,
                          globals=None, n_node=np.array([n_node]), n_edge=np.array([n_edge]))


def real_edges(sample):
    n_edge = int(sample.graph.n_edge[0])
    return (np.asarray(sample.graph.senders[:n_edge]), np.asarray(sample.graph.receivers[:n_edge]),
            sample.edge_id[:n_edge])


def check_edges_exist(graph, sample):
    senders, receivers, edge_ids = real_edges(sample)
    assert (edge_ids >= 0).all()
    np.testing.assert_array_equal(np.asarray(graph.senders)[edge_ids], sample.global_id[senders])
    np.testing.assert_array_equal(np.asarray(graph.receivers)[edge_ids],
                                  sample.global_id[receivers])
    assert (np.diff(receivers) >= 0).all(), "edges sorted by receiver"


def row_hops(sample, n_seed):
    """Each real row's hop: 0 for seed slots, one more than its edge's receiver otherwise."""
    n_real = int(sample.graph.n_node[0])
    hops = np.full(n_real, -1)
    hops[:n_seed] = 0
    senders, receivers, _ = real_edges(sample)
    for sender, receiver in zip(senders, receivers, strict=True):
        if hops[sender] < 0:
            hops[sender] = hops[receiver] + 1
    return hops


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_sampled_edges_exist_and_rows_carry_their_global_ids(subgraph):
    graph = random_graph()
    sampler = NeighborSampler(graph, (4, 3), 16, subgraph=subgraph, seed=3)
    for sample in sampler.epoch(0):
        gn.validate(sample.graph)
        check_edges_exist(graph, sample)
        n_real = int(sample.graph.n_node[0])
        present = sample.global_id >= 0
        assert not present[n_real:].any()
        np.testing.assert_array_equal(sample.graph.nodes[present, 0], sample.global_id[present])
        np.testing.assert_array_equal(sample.graph.nodes[~present], 0.0)
        n_edge = int(sample.graph.n_edge[0])
        np.testing.assert_array_equal(sample.graph.edges[:n_edge, 0], sample.edge_id[:n_edge])
        np.testing.assert_array_equal(sample.graph.edges[n_edge:], 0.0)
        assert (np.asarray(sample.graph.senders[n_edge:]) == n_real).all()


def test_disjoint_fanouts_draw_min_of_degree_and_fanout_distinct_edges():
    graph = random_graph(n_edge=700)
    fanouts = (5, 2)
    store = CSRGraph.from_graph(graph)
    sampler = NeighborSampler(graph, fanouts, 10, seed=1)
    sample = sampler.batch(0, 0)
    senders, receivers, edge_ids = real_edges(sample)
    hops = row_hops(sample, 10)
    n_real = int(sample.graph.n_node[0])
    seen_degrees = set()
    for row in range(n_real):
        if row < 10 and not sample.seed_mask[row]:
            continue
        incoming = edge_ids[receivers == row]
        assert np.unique(incoming).size == incoming.size, "without replacement"
        if hops[row] == len(fanouts):
            assert incoming.size == 0
        else:
            degree = int(store.in_degree(np.array([sample.global_id[row]]))[0])
            assert incoming.size == min(degree, fanouts[hops[row]])
            seen_degrees.add(degree > fanouts[hops[row]])
    assert seen_degrees == {True, False}, "both cases occur in this graph"
    # Every non-seed row is the sender of exactly one edge: the rows form trees.
    np.testing.assert_array_equal(np.bincount(senders, minlength=n_real)[10:], 1)


def test_shared_subgraph_is_deduplicated_and_expands_each_node_once():
    graph = random_graph()
    sampler = NeighborSampler(graph, (4, 3), 16, subgraph="shared", seed=2)
    sample = sampler.batch(0, 1)
    n_real = int(sample.graph.n_node[0])
    ids = sample.global_id[:n_real]
    assert np.unique(ids).size == ids.size
    _, receivers, edge_ids = real_edges(sample)
    assert np.unique(edge_ids).size == edge_ids.size
    hops = row_hops(sample, 16)
    for row in np.unique(receivers):
        assert (receivers == row).sum() <= (4, 3)[hops[row]]


def test_seeds_come_first_and_an_epoch_visits_every_seed_once():
    graph = random_graph()
    seeds = np.arange(5, 95, 2)
    sampler = NeighborSampler(graph, (3,), 8, seeds=seeds, seed=7)
    visited = []
    for index, sample in enumerate(sampler.epoch(4)):
        order = sampler.epoch_order(4)[index * 8 : (index + 1) * 8]
        count = order.size
        np.testing.assert_array_equal(sample.global_id[:count], seeds[order])
        np.testing.assert_array_equal(sample.seed_mask, np.arange(8) < count)
        np.testing.assert_array_equal(sample.root[:8][:count], np.arange(count))
        np.testing.assert_array_equal(sample.global_id[count:8], -1)
        visited.extend(sample.global_id[:count])
    assert len(sampler) == 6 and sorted(visited) == list(seeds)
    assert len(NeighborSampler(graph, (3,), 8, seeds=seeds, drop_last=True)) == 5


def test_shapes_depend_only_on_fanouts_and_batch_size():
    graph = random_graph()
    nodes, edges = tree_sizes((4, 3), 16)
    assert (nodes, edges) == (16 * 17, 16 * 16)
    sampler = NeighborSampler(graph, (4, 3), 16, seeds=np.arange(50))
    shapes = {jax.tree_util.tree_map(np.shape, sample) for sample in sampler.epoch(0)}
    assert len(shapes) == 1
    assert sampler.node_budget == nodes + 1 and sampler.edge_budget == edges


def test_batches_are_deterministic_for_a_seed():
    graph = random_graph()
    first = NeighborSampler(graph, (4, 3), 16, seed=5)
    second = NeighborSampler(graph, (4, 3), 16, seed=5)
    other = NeighborSampler(graph, (4, 3), 16, seed=6)

    def same(a, b):
        return all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(a),
                                                        jax.tree_util.tree_leaves(b), strict=True))

    assert same(first.batch(2, 3), second.batch(2, 3))
    assert same(first.batch(2, 3), first.batch(2, 3))
    assert not same(first.batch(2, 3), other.batch(2, 3))
    assert not same(first.batch(2, 3), first.batch(3, 3))


def test_uniform_draws_are_uniform_over_a_rows_edges():
    senders = np.arange(10)
    graph = gn.GraphsTuple(nodes=None, edges=None, senders=senders, receivers=np.full(10, 10),
                           globals=None, n_node=np.array([11]), n_edge=np.array([10]))
    store = CSRGraph.from_graph(graph)
    rng = np.random.default_rng(0)
    nodes = np.full(4000, 10)
    positions, mask = sample_one_hop(store, nodes, np.ones(4000, bool), 3, rng)
    assert mask.all()
    drawn = store.senders[positions]
    assert all(np.unique(row).size == 3 for row in drawn)
    counts = np.bincount(drawn.reshape(-1), minlength=10)
    # 12,000 draws, expected 1,200 each; binomial sd ~ 33, so 5 sd is 165.
    assert np.abs(counts - 1200).max() < 165, counts


def test_one_compile_per_epoch():
    graph = random_graph()
    traces = []

    @jax.jit
    def readout(sample):
        traces.append(1)
        return jnp.sum(sample.graph.nodes[: sample.seed_mask.shape[0]] * sample.seed_mask[:, None])

    for subgraph in ("disjoint", "shared"):
        traces.clear()
        sampler = NeighborSampler(graph, (4, 3), 16, seeds=np.arange(90), subgraph=subgraph)
        totals = [float(readout(sample)) for sample in sampler.epoch(0)]
        assert len(totals) == 6 and len(traces) == 1


def sage_model():
    return gnn.GraphSAGE(features=6), gnn.GraphSAGE(features=3)


def apply_sage(params, graph, indices_are_sorted=False):
    first, second = sage_model()
    hidden = first.apply(params[0], graph)
    hidden = hidden._replace(nodes=jax.nn.relu(hidden.nodes))
    return second.apply(params[1], hidden).nodes


def init_sage(graph):
    first, second = sage_model()
    params0 = first.init(jax.random.PRNGKey(0), graph)
    hidden = first.apply(params0, graph)
    return params0, second.init(jax.random.PRNGKey(1), hidden)


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_padding_changes_no_real_output(subgraph):
    graph = random_graph()
    sampler = NeighborSampler(graph, (4, 3), 16, seeds=np.arange(20), subgraph=subgraph)
    sample = sampler.batch(0, 1)  # the last batch: 4 seeds, 12 empty slots
    params = init_sage(sample.graph)
    padded = apply_sage(params, sample.graph)
    unpadded = apply_sage(params, gn.unpad_with_graphs(sample.graph))
    n_real = int(sample.graph.n_node[0])
    np.testing.assert_allclose(padded[:n_real], unpadded, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("subgraph", ["disjoint", "shared"])
def test_full_fanouts_give_full_graph_graphsage_at_the_seeds(subgraph):
    graph = random_graph(n_edge=500)
    max_degree = int(np.bincount(graph.receivers).max())
    seeds = np.array([3, 17, 42, 99, 100])
    sampler = NeighborSampler(graph, (max_degree, max_degree), 5, subgraph=subgraph)
    sample = sampler.sample(seeds, rng=0)
    params = init_sage(graph)
    full = apply_sage(params, graph)
    sampled = apply_sage(params, sample.graph)
    np.testing.assert_allclose(sampled[:5], full[seeds], rtol=1e-4, atol=1e-5)


def test_shared_budget_cuts_later_hops_first():
    graph = random_graph()
    sampler = NeighborSampler(graph, (4, 3), 16, subgraph="shared", max_nodes=40, max_edges=50)
    sample = sampler.batch(0, 0)
    assert sample.graph.nodes.shape[0] == 41 and sample.graph.senders.shape[0] == 50
    assert int(sample.graph.n_node[0]) <= 40 and int(sample.graph.n_edge[0]) <= 50
    check_edges_exist(graph, sample)
    np.testing.assert_array_equal(sample.global_id[:16], sampler.seeds[sampler.epoch_order(0)[:16]])


def test_bad_arguments_are_named():
    graph = random_graph()
    with pytest.raises(ValueError, match="fanouts"):
        NeighborSampler(graph, (), 4)
    with pytest.raises(ValueError, match="batch_size"):
        NeighborSampler(graph, (2,), 0)
    with pytest.raises(ValueError, match="subgraph"):
        NeighborSampler(graph, (2,), 4, subgraph="union")
    with pytest.raises(ValueError, match="temporal sampling is disjoint"):
        NeighborSampler(graph, (2,), 4, subgraph="shared", node_time=np.zeros(120))
    with pytest.raises(ValueError, match="strategy='last' needs"):
        NeighborSampler(graph, (2,), 4, strategy="last")
    with pytest.raises(ValueError, match="seeds must be"):
        NeighborSampler(graph, (2,), 4, seeds=np.array([0, 500]))
    with pytest.raises(ValueError, match="max_nodes"):
        NeighborSampler(graph, (2,), 4, max_nodes=10)
    with pytest.raises(ValueError, match="node_time must have shape"):
        CSRGraph.from_graph(graph, node_time=np.zeros(3))
