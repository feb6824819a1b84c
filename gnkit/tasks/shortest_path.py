"""Shortest path on random geographic graphs, after graph_nets' shortest-path demo.

A graph has `n` nodes placed uniformly in the unit square. Two nodes are joined when
`(w_u + w_v) >= theta * distance(u, v)**2`, with node weights `w ~ Exponential(1)` (a geographic
threshold graph, networkx's rule with `theta = 20` as in the demo), and the edges of the Euclidean
minimum spanning tree are added so the graph is connected. A start and an end node are drawn
uniformly (distinct); the target marks the nodes and directed edges on the shortest path from
start to end, with an edge's length its Euclidean length.

Features (float32) of one input graph with `n` nodes and `e` directed edges (each undirected
edge appears in both directions, sorted by receiver then sender):

- nodes `[n, 4]`: `[x, y, is_start, is_end]` (`[n, 2]`: `[is_start, is_end]` without positions).
  graph_nets also feeds the threshold weight `w`; it is left out here as it is noise to the task.
- edges `[e, 1]`: the edge's length. globals `[1, 1]`: zero.

The target graph has the same structure with one-hot labels (class 1 = on the path): nodes
`[n, 2]`, edges `[e, 2]` (only the edge from a path node to the next one in travel order is
labelled), globals None. Training uses 8-16 nodes, testing 16-32, as the demo.

All functions are host-side NumPy and deterministic given the `numpy.random.Generator` (or seed).
"""

from __future__ import annotations

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.tasks._labelling import labelling_metrics, one_hot

THETA = 20.0


def threshold_adjacency(positions: np.ndarray, weights: np.ndarray, theta: float) -> np.ndarray:
    """Geographic threshold graph: bool `[n, n]`, symmetric, no self loops. Host (NumPy).

    `positions` is `[n, d]`, `weights` `[n]`; `u` and `v` are joined when
    `(weights[u] + weights[v]) >= theta * |positions[u] - positions[v]|**2`.
    """
    squared = np.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1)
    adjacency = weights[:, None] + weights[None, :] >= theta * squared
    np.fill_diagonal(adjacency, False)
    return adjacency


def minimum_spanning_tree(distances: np.ndarray) -> np.ndarray:
    """Minimum spanning tree of the complete graph with edge lengths `distances` `[n, n]`.

    Returns a bool `[n, n]` symmetric adjacency with `n - 1` undirected edges. Prim's algorithm,
    O(n^2). Host (NumPy).
    """
    n = distances.shape[0]
    tree = np.zeros((n, n), dtype=bool)
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best_length = distances[0].astype(np.float64)
    best_parent = np.zeros(n, dtype=np.int64)
    for _ in range(n - 1):
        candidate = np.where(in_tree, np.inf, best_length)
        node = int(np.argmin(candidate))
        parent = best_parent[node]
        tree[node, parent] = tree[parent, node] = True
        in_tree[node] = True
        closer = distances[node] < best_length
        best_length = np.where(closer, distances[node], best_length)
        best_parent = np.where(closer, node, best_parent)
    return tree


def dijkstra(lengths: np.ndarray, source: int) -> tuple[np.ndarray, np.ndarray]:
    """Single-source shortest paths over a dense length matrix. Host (NumPy).

    `lengths` is `[n, n]` with `lengths[u, v]` the length of edge `u -> v` (non-negative) and
    `inf` where there is no edge. Returns `(distance [n], predecessor [n])`: `distance` is `inf`
    for unreachable nodes, `predecessor` is -1 for the source and for unreachable nodes.
    """
    n = lengths.shape[0]
    distance = np.full(n, np.inf)
    distance[source] = 0.0
    predecessor = np.full(n, -1, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    for _ in range(n):
        node = int(np.argmin(np.where(done, np.inf, distance)))
        if done[node] or not np.isfinite(distance[node]):
            break
        done[node] = True
        through_node = distance[node] + lengths[node]
        shorter = through_node < distance
        distance = np.where(shorter, through_node, distance)
        predecessor = np.where(shorter, node, predecessor)
    return distance, predecessor


def generate_graph(
    rng: np.random.Generator | int,
    n_node: int,
    theta: float = THETA,
    include_position: bool = True,
) -> tuple[GraphsTuple, GraphsTuple]:
    """One `(input, target)` pair with `n_node >= 2` nodes; shapes in the module docstring.

    Args:
      rng: a `numpy.random.Generator` or a seed.
      n_node: nodes in the graph, at least 2.
      theta: the threshold graph's `theta` (larger: fewer edges).
      include_position: put `x, y` in the node features (`[n, 4]`); False: `[n, 2]`.

    Returns:
      `(inputs, targets)`, two single graphs in the module docstring's layout.
    """
    rng = np.random.default_rng(rng)
    positions = rng.uniform(size=(n_node, 2))
    weights = rng.exponential(1.0, size=n_node)
    distances = np.sqrt(np.sum((positions[:, None, :] - positions[None, :, :]) ** 2, axis=-1))
    adjacency = threshold_adjacency(positions, weights, theta) | minimum_spanning_tree(distances)
    start, end = (int(node) for node in rng.choice(n_node, size=2, replace=False))

    _, predecessor = dijkstra(np.where(adjacency, distances, np.inf), start)
    on_path = np.zeros(n_node, dtype=bool)
    node = end
    while node != -1:
        on_path[node] = True
        node = int(predecessor[node])

    receivers, senders = np.nonzero(adjacency)
    edge_on_path = on_path[receivers] & (predecessor[receivers] == senders)
    is_start = np.arange(n_node) == start
    is_end = np.arange(n_node) == end
    node_columns = [is_start, is_end]
    if include_position:
        node_columns = [positions[:, 0], positions[:, 1], *node_columns]

    structure = dict(
        receivers=receivers.astype(np.int32),
        senders=senders.astype(np.int32),
        n_node=np.array([n_node], dtype=np.int32),
        n_edge=np.array([len(receivers)], dtype=np.int32),
    )
    inputs = GraphsTuple(
        nodes=np.stack(node_columns, axis=-1).astype(np.float32),
        edges=distances[receivers, senders][:, None].astype(np.float32),
        globals=np.zeros((1, 1), dtype=np.float32),
        **structure,
    )
    targets = GraphsTuple(
        nodes=one_hot(on_path), edges=one_hot(edge_on_path), globals=None, **structure
    )
    return inputs, targets


def generate_graphs(
    rng: np.random.Generator | int,
    n_graphs: int,
    min_nodes: int = 8,
    max_nodes: int = 16,
    theta: float = THETA,
    include_position: bool = True,
) -> tuple[list[GraphsTuple], list[GraphsTuple]]:
    """Input and target graphs, node counts uniform in `[min_nodes, max_nodes]`.

    Host (NumPy). Defaults are the demo's training sizes; its test sizes are 16-32. Batch the
    lists with `gnkit.batching.batch_np`.

    Args:
      rng: a `numpy.random.Generator` or a seed.
      n_graphs: pairs to draw.
      min_nodes: fewest nodes in a graph.
      max_nodes: most nodes in a graph (inclusive).
      theta: the threshold graph's `theta`.
      include_position: put `x, y` in the node features.

    Returns:
      `(inputs, targets)`, lists of `n_graphs` graphs each.
    """
    rng = np.random.default_rng(rng)
    sizes = rng.integers(min_nodes, max_nodes + 1, size=n_graphs)
    pairs = [generate_graph(rng, int(size), theta, include_position) for size in sizes]
    return [inputs for inputs, _ in pairs], [targets for _, targets in pairs]


def metrics(
    outputs: GraphsTuple, targets: GraphsTuple, graph_mask: np.ndarray | None = None
) -> dict[str, float]:
    """Labelling accuracy of a batch: node and edge accuracy, and the fraction solved. Host.

    `outputs.nodes` `[N, 2]` and `outputs.edges` `[E, 2]` are scores (logits or probabilities;
    the argmax is the label), `targets` the one-hot targets of the same batch. A graph is solved
    when all its node and edge labels are right. `graph_mask` (bool `[G]`, optional) keeps only
    the real graphs of a padded batch.
    """
    return labelling_metrics(outputs, targets, graph_mask, solved_needs_nodes=True)

