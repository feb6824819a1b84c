"""The long-range pairs task: labels and distances recomputed by networkx's shortest paths."""

import networkx as nx
import numpy as np
import pytest

from gnkit.tasks import long_range


@pytest.mark.parametrize("kind", long_range.KINDS)
def test_labels_and_distances_match_networkx(kind):
    threshold = 7
    examples = long_range.generate(
        0, 40, threshold=threshold, kind=kind, min_nodes=20, max_nodes=60
    )
    assert examples.labels.sum() == 20  # balanced
    for graph, label, distance, marked in zip(*examples, strict=True):
        n = int(graph.n_node[0])
        assert 20 <= n <= 60
        nx_graph = nx.Graph()
        nx_graph.add_nodes_from(range(n))
        nx_graph.add_edges_from(zip(graph.senders.tolist(), graph.receivers.tolist(), strict=True))
        assert nx.is_tree(nx_graph)
        if kind == "path":
            assert max(degree for _, degree in nx_graph.degree) == 2
        hops = nx.shortest_path_length(nx_graph, int(marked[0]), int(marked[1]))
        assert hops == distance >= 1
        assert label == int(hops > threshold)
        np.testing.assert_array_equal(np.flatnonzero(graph.nodes[:, 0]), np.sort(marked))
        assert graph.edges.shape == (2 * (n - 1), 1) and np.all(graph.edges == 1.0)
        # Both directions of every edge.
        pairs = set(zip(graph.senders.tolist(), graph.receivers.tolist(), strict=True))
        assert all((v, u) in pairs for u, v in pairs)


def test_long_distances_occur_and_generation_is_deterministic():
    first = long_range.generate(3, 30, threshold=10, kind="tree")
    again = long_range.generate(3, 30, threshold=10, kind="tree")
    np.testing.assert_array_equal(first.distances, again.distances)
    np.testing.assert_array_equal(first.marked, again.marked)
    assert first.distances.max() > 10 and first.distances.min() <= 10


def test_hop_distances_by_hand():
    edges = np.array([[0, 1], [1, 2], [1, 3], [3, 4]])
    np.testing.assert_array_equal(long_range.hop_distances(6, edges, 4), [3, 2, 3, 1, 0, -1])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="kind must be one of"):
        long_range.tree_edges(np.random.default_rng(0), 5, "cycle")
    with pytest.raises(ValueError, match="threshold must be at least 1"):
        long_range.generate(0, 2, threshold=0)
    with pytest.raises(ValueError, match="need threshold \\+ 2 <= min_nodes"):
        long_range.generate(0, 2, threshold=30, min_nodes=20)
