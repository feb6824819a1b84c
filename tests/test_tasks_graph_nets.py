"""Tests for graph_nets' three demo tasks: shortest path, sorting, mass-spring physics."""

import functools
import itertools

import networkx as nx
import numpy as np
import pytest

from gnkit.batching import batch_np
from gnkit.graph import GraphsTuple
from gnkit.tasks import mass_spring, shortest_path, sorting


def _assert_same_graphs(first, second):
    assert len(first) == len(second)
    for graph_a, graph_b in zip(first, second, strict=True):
        for field in GraphsTuple._fields:
            a, b = getattr(graph_a, field), getattr(graph_b, field)
            assert (a is None) == (b is None), field
            if a is not None:
                np.testing.assert_array_equal(a, b)


def _labelled_batch(node_labels, edge_labels):
    """A batch of graphs holding only one-hot labels, one list of node/edge labels per graph."""
    return GraphsTuple(
        nodes=np.eye(2)[np.concatenate(node_labels)],
        edges=np.eye(2)[np.concatenate(edge_labels)],
        receivers=None,
        senders=None,
        globals=None,
        n_node=np.array([len(labels) for labels in node_labels]),
        n_edge=np.array([len(labels) for labels in edge_labels]),
    )


# Shortest path.


def test_threshold_adjacency_matches_networkx():
    rng = np.random.default_rng(0)
    positions, weights = rng.uniform(size=(30, 2)), rng.exponential(size=30)
    adjacency = shortest_path.threshold_adjacency(positions, weights, theta=20.0)
    reference = nx.geographical_threshold_graph(
        30, 20.0, pos=dict(enumerate(positions)), weight=dict(enumerate(weights))
    )
    assert adjacency.sum() > 0
    assert {tuple(edge) for edge in np.argwhere(np.triu(adjacency))} == {
        tuple(sorted(edge)) for edge in reference.edges
    }


def test_minimum_spanning_tree_matches_networkx():
    positions = np.random.default_rng(1).uniform(size=(25, 2))
    distances = np.linalg.norm(positions[:, None] - positions[None], axis=-1)
    tree = shortest_path.minimum_spanning_tree(distances)
    complete = nx.Graph()
    for u, v in itertools.combinations(range(25), 2):
        complete.add_edge(u, v, weight=distances[u, v])
    reference = nx.minimum_spanning_tree(complete)
    assert {tuple(edge) for edge in np.argwhere(np.triu(tree))} == {
        tuple(sorted(edge)) for edge in reference.edges
    }


def test_dijkstra_matches_networkx_with_unreachable_nodes():
    rng = np.random.default_rng(2)
    lengths = np.where(rng.uniform(size=(12, 12)) < 0.2, rng.uniform(size=(12, 12)), np.inf)
    np.fill_diagonal(lengths, np.inf)
    distance, predecessor = shortest_path.dijkstra(lengths, source=3)
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(12))
    for u, v in np.argwhere(np.isfinite(lengths)):
        digraph.add_edge(int(u), int(v), weight=lengths[u, v])
    reference = nx.single_source_dijkstra_path_length(digraph, 3)
    for node in range(12):
        if node in reference:
            assert distance[node] == pytest.approx(reference[node])
        else:
            assert distance[node] == np.inf and predecessor[node] == -1
    assert np.isinf(distance).any() and predecessor[3] == -1


def test_shortest_path_targets_match_networkx():
    inputs, targets = shortest_path.generate_graphs(np.random.default_rng(3), 20)
    for graph, target in zip(inputs, targets, strict=True):
        n = int(graph.n_node[0])
        assert 8 <= n <= 16 and graph.nodes.shape == (n, 4)
        assert np.all(np.diff(graph.receivers) >= 0)
        positions = graph.nodes[:, :2]
        undirected = nx.Graph()
        for sender, receiver, length in zip(
            graph.senders, graph.receivers, graph.edges[:, 0], strict=True
        ):
            distance = np.linalg.norm(positions[sender] - positions[receiver])
            assert length == pytest.approx(distance, rel=1e-5)
            undirected.add_edge(int(sender), int(receiver), distance=float(length))
        assert undirected.number_of_nodes() == n and nx.is_connected(undirected)
        assert 2 * undirected.number_of_edges() == len(graph.senders)

        (start,) = np.flatnonzero(graph.nodes[:, 2])
        (end,) = np.flatnonzero(graph.nodes[:, 3])
        assert start != end
        path_edges = np.flatnonzero(target.edges[:, 1])
        next_node = dict(zip(graph.senders[path_edges], graph.receivers[path_edges], strict=True))
        walk, length = [start], 0.0
        while walk[-1] != end and len(walk) <= n:
            walk.append(next_node[walk[-1]])
            length += undirected.edges[walk[-2], walk[-1]]["distance"]
        assert walk[-1] == end
        assert len(walk) == len(path_edges) + 1
        assert set(np.flatnonzero(target.nodes[:, 1])) == set(walk)
        np.testing.assert_array_equal(target.nodes.sum(-1), 1.0)
        assert length == pytest.approx(
            nx.dijkstra_path_length(undirected, start, end, weight="distance"), rel=1e-5
        )


def test_shortest_path_sizes_options_and_determinism():
    inputs, _ = shortest_path.generate_graphs(5, 30, min_nodes=16, max_nodes=32)
    sizes = [int(graph.n_node[0]) for graph in inputs]
    assert min(sizes) >= 16 and max(sizes) <= 32 and len(set(sizes)) > 3
    bare, _ = shortest_path.generate_graphs(5, 1, include_position=False)
    assert bare[0].nodes.shape[1] == 2 and bare[0].globals.shape == (1, 1)
    _assert_same_graphs(
        sum(shortest_path.generate_graphs(7, 5), []),
        sum(shortest_path.generate_graphs(np.random.default_rng(7), 5), []),
    )
    first, _ = shortest_path.generate_graphs(7, 1)
    other, _ = shortest_path.generate_graphs(8, 1)
    assert first[0].nodes.shape != other[0].nodes.shape or not np.array_equal(
        first[0].nodes, other[0].nodes
    )


def test_shortest_path_metrics_count_nodes_edges_and_solved():
    targets = _labelled_batch([[1, 0, 1], [0, 1]], [[1, 0], [0, 0, 1]])
    outputs = _labelled_batch([[1, 0, 0], [0, 1]], [[1, 0], [0, 1, 1]])
    assert shortest_path.metrics(targets, targets) == {
        "node_accuracy": 1.0,
        "edge_accuracy": 1.0,
        "solved": 1.0,
    }
    result = shortest_path.metrics(outputs, targets)
    assert result["node_accuracy"] == pytest.approx(4 / 5)
    assert result["edge_accuracy"] == pytest.approx(4 / 5)
    assert result["solved"] == 0.0
    masked = shortest_path.metrics(outputs, targets, graph_mask=np.array([True, False]))
    assert masked == {"node_accuracy": 2 / 3, "edge_accuracy": 1.0, "solved": 0.0}


def test_metrics_on_generated_batches():
    for task in (shortest_path, sorting):
        _, targets = task.generate_graphs(10, 6)
        batch = batch_np(targets)
        wrong = batch._replace(nodes=batch.nodes.copy())
        first_graph_nodes = slice(0, int(batch.n_node[0]))
        wrong.nodes[first_graph_nodes] = wrong.nodes[first_graph_nodes, ::-1]
        result = task.metrics(wrong, batch)
        assert result["node_accuracy"] == pytest.approx(1 - batch.n_node[0] / batch.n_node.sum())
        assert result["edge_accuracy"] == 1.0
        expected_solved = 5 / 6 if task is shortest_path else 1.0
        assert result["solved"] == pytest.approx(expected_solved)


# Sorting.


def test_sort_graph_labels_four_elements_by_hand():
    inputs, targets = sorting.sort_graph(np.array([0.3, 0.1, 0.4, 0.2]))
    # Sorted order is node 1 (0.1), node 3 (0.2), node 0 (0.3), node 2 (0.4).
    np.testing.assert_array_equal(targets.nodes[:, 1], [0, 1, 0, 0])
    labelled = {
        (int(s), int(r))
        for s, r, label in zip(inputs.senders, inputs.receivers, targets.edges[:, 1], strict=True)
        if label
    }
    assert labelled == {(1, 3), (3, 0), (0, 2)}
    assert (
        len(inputs.senders) == 16
        and len(set(zip(inputs.senders, inputs.receivers, strict=True))) == 16
    )
    assert np.all(np.diff(inputs.receivers) >= 0)
    np.testing.assert_allclose(inputs.nodes[:, 0], [0.3, 0.1, 0.4, 0.2])
    assert inputs.edges.shape == (16, 1) and inputs.globals.shape == (1, 1)


def test_sort_targets_spell_out_sorted_order():
    inputs, targets = sorting.generate_graphs(np.random.default_rng(4), 20, 16, 32)
    for graph, target in zip(inputs, targets, strict=True):
        n = int(graph.n_node[0])
        assert 16 <= n <= 32 and graph.n_edge[0] == n * n
        assert target.nodes[:, 1].sum() == 1 and target.edges[:, 1].sum() == n - 1
        labelled = np.flatnonzero(target.edges[:, 1])
        next_node = dict(zip(graph.senders[labelled], graph.receivers[labelled], strict=True))
        walk = [int(np.flatnonzero(target.nodes[:, 1])[0])]
        while walk[-1] in next_node and len(walk) <= n:
            walk.append(next_node[walk[-1]])
        np.testing.assert_array_equal(graph.nodes[walk, 0], np.sort(graph.nodes[:, 0]))


def test_sort_metrics_and_determinism():
    targets = _labelled_batch([[1, 0], [0, 1]], [[0, 1, 0, 0], [0, 0, 1, 0]])
    outputs = _labelled_batch([[0, 0], [0, 1]], [[0, 1, 0, 0], [0, 0, 0, 0]])
    result = sorting.metrics(outputs, targets)
    assert result == {"node_accuracy": 3 / 4, "edge_accuracy": 7 / 8, "solved": 0.5}
    masked = sorting.metrics(outputs, targets, graph_mask=np.array([False, True]))
    assert masked == {"node_accuracy": 1.0, "edge_accuracy": 3 / 4, "solved": 0.0}
    _assert_same_graphs(
        sum(sorting.generate_graphs(9, 4), []), sum(sorting.generate_graphs(9, 4), [])
    )
    sizes = [int(g.n_node[0]) for g in sorting.generate_graphs(9, 30)[0]]
    assert min(sizes) >= 8 and max(sizes) <= 16


# Mass-spring.


def test_chain_graph_layout():
    graph = mass_spring.chain_graph(4, 0.5)
    np.testing.assert_allclose(graph.nodes[:, 0], [-0.75, -0.25, 0.25, 0.75])
    np.testing.assert_array_equal(graph.nodes[:, 1:4], 0.0)
    np.testing.assert_array_equal(graph.nodes[:, 4], [1, 0, 0, 1])
    np.testing.assert_array_equal(graph.receivers, [1, 1, 2, 2])
    np.testing.assert_array_equal(graph.senders, [0, 2, 1, 3])
    np.testing.assert_array_equal(graph.edges, [[50.0, 0.5]] * 4)
    np.testing.assert_array_equal(graph.globals, [[0.0, -10.0]])


def test_one_step_matches_hand_computation():
    graph = mass_spring.chain_graph(3, 1.0)
    nodes = graph.nodes.copy()
    nodes[1, 1] = 0.5  # lift the middle mass: each spring is sqrt(1.25) long, rest length 1
    graph = graph._replace(nodes=nodes)
    stretch = np.sqrt(1.25)
    spring_y = -50.0 * (stretch - 1.0) / stretch * 0.5  # y force of one spring on the middle mass
    expected_velocity_y = 0.1 * (2 * spring_y - 10.0)
    velocities = mass_spring.next_velocities(graph)
    np.testing.assert_allclose(velocities, [[0, 0], [0, expected_velocity_y], [0, 0]], atol=1e-6)
    states = mass_spring.rollout(mass_spring.next_velocities, graph, 1)
    np.testing.assert_allclose(states[1, 1, :2], [0.0, 0.5 + 0.1 * expected_velocity_y], atol=1e-6)
    np.testing.assert_array_equal(states[1, :, 4], [1, 0, 1])


def test_energy_is_conserved_without_gravity_and_fixed_masses_stay():
    graph = mass_spring.chain_graph(5, 0.5)
    nodes = graph.nodes.astype(np.float64)
    nodes[1:4, 1] = [0.1, -0.05, 0.08]
    graph = graph._replace(
        nodes=nodes, edges=graph.edges.astype(np.float64), globals=np.zeros((1, 2))
    )
    step_size = 1e-3
    simulator = functools.partial(mass_spring.next_velocities, step_size=step_size)
    states = mass_spring.rollout(simulator, graph, 2000, step_size)

    def energy(state):
        kinetic = 0.5 * np.sum(state[:, 2:4] ** 2)
        lengths = np.linalg.norm(np.diff(state[:, :2], axis=0), axis=-1)
        return kinetic + np.sum(0.5 * 50.0 * (lengths - 0.5) ** 2), kinetic

    energies = np.array([energy(state) for state in states[::50]])
    assert energies[:, 1].max() > 0.3 * energies[0, 0]  # the chain really oscillates
    np.testing.assert_allclose(energies[:, 0], energies[0, 0], rtol=0.01)
    np.testing.assert_array_equal(
        states[:, [0, 4], :4], np.broadcast_to(nodes[[0, 4], :4], (2001, 2, 4))
    )


def test_perturb_draws_within_bounds_and_resets_rest_lengths():
    base = mass_spring.chain_graph(6, 0.4)
    graph = mass_spring.perturb(np.random.default_rng(5), base)
    position_noise = graph.nodes[:, :2] - base.nodes[:, :2]
    assert np.all(np.abs(position_noise) <= 0.04) and np.abs(position_noise).max() > 0.01
    assert np.all(np.abs(graph.edges[:, 0] - 50.0) <= 5.0) and len(set(graph.edges[:, 0])) > 1
    constants = dict(
        zip(zip(graph.senders, graph.receivers, strict=True), graph.edges[:, 0], strict=True)
    )
    for (sender, receiver), constant in constants.items():
        assert constants.get((receiver, sender), constant) == constant
    np.testing.assert_allclose(
        graph.edges[:, 1],
        np.linalg.norm(graph.nodes[graph.senders, :2] - graph.nodes[graph.receivers, :2], axis=-1),
        rtol=1e-6,
    )
    assert graph.globals[0, 0] == 0.0 and abs(graph.globals[0, 1] + 10.0) <= 1.0
    np.testing.assert_array_equal(graph.nodes[:, 2:], base.nodes[:, 2:])


def test_rollout_integrates_predicted_velocities_and_mse():
    graph = mass_spring.perturb(0, mass_spring.chain_graph(4, 0.5))
    drift = np.array([0.3, -0.2], dtype=np.float32)
    states = mass_spring.rollout(lambda g: np.tile(drift, (4, 1)), graph, 5)
    assert states.shape == (6, 4, 5)
    for t in range(6):
        np.testing.assert_allclose(
            states[t, :, :2], graph.nodes[:, :2] + 0.1 * t * drift, atol=1e-6
        )
    true = mass_spring.rollout(mass_spring.next_velocities, graph, 50)
    still = mass_spring.rollout(lambda g: np.zeros((4, 2)), graph, 50)
    displacement = true[1:, :, :2] - graph.nodes[None, :, :2]
    assert mass_spring.rollout_mse(still[1:], true[1:]) == pytest.approx(
        np.mean(np.sum(displacement**2, axis=-1)), rel=1e-6
    )
    assert mass_spring.rollout_mse(true, true) == 0.0
    np.testing.assert_array_equal(
        true[:, [0, 3], :2], np.broadcast_to(graph.nodes[[0, 3], :2], (51, 2, 2))
    )


def test_mass_spring_generate_graphs():
    inputs, targets = mass_spring.generate_graphs(np.random.default_rng(6), 12)
    for graph, target in zip(inputs, targets, strict=True):
        n = int(graph.n_node[0])
        assert 5 <= n <= 8 and graph.nodes.shape == (n, 5) and graph.n_edge[0] == 2 * n - 4
        assert target.nodes.shape == (n, 2) and target.edges is None
        np.testing.assert_allclose(target.nodes, mass_spring.next_velocities(graph), atol=1e-6)
    assert sum(np.abs(g.nodes[:, 2:4]).max() > 0 for g in inputs) >= 6  # mostly mid-trajectory
    assert mass_spring.metrics(targets[0].nodes + 0.5, targets[0]) == {"velocity_mse": 0.5}
    pair = batch_np(targets[:2])
    outputs = pair.nodes + np.repeat([[0.5], [1.0]], pair.n_node, axis=0)
    assert mass_spring.metrics(outputs, pair, np.array([False, True])) == {"velocity_mse": 2.0}
    _assert_same_graphs(
        sum(mass_spring.generate_graphs(11, 3), []), sum(mass_spring.generate_graphs(11, 3), [])
    )
