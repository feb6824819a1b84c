"""Shared pieces of the two-class labelling tasks (shortest path, sorting). Host (NumPy)."""

from __future__ import annotations

import numpy as np

from gnkit.graph import GraphsTuple


def one_hot(labels: np.ndarray) -> np.ndarray:
    """Labels 0/1 `[K]` -> float32 one-hot `[K, 2]`."""
    return np.eye(2, dtype=np.float32)[labels.astype(np.int64)]


def labelling_metrics(
    outputs: GraphsTuple,
    targets: GraphsTuple,
    graph_mask: np.ndarray | None,
    *,
    solved_needs_nodes: bool,
) -> dict[str, float]:
    """Node and edge accuracy (argmax of `[N, 2]` / `[E, 2]` scores vs one-hot targets) and the
    fraction of real graphs solved: every edge label right, and every node label too when
    `solved_needs_nodes`. Host (NumPy).

    Args:
      outputs: the model's graph, scores `[N, 2]` on the nodes and `[E, 2]` on the edges.
      targets: the one-hot targets, same layout.
      graph_mask: bool `[G]`, true for the real graphs of a padded batch; None: all real.
      solved_needs_nodes: a graph counts as solved only if its node labels are right too (not
        only its edge labels).

    Returns:
      `{"node_accuracy", "edge_accuracy", "solved"}`, floats over the real graphs.
    """
    n_graph = len(targets.n_node)
    keep = np.ones(n_graph, bool) if graph_mask is None else np.asarray(graph_mask, bool)
    node_graph = np.repeat(np.arange(n_graph), np.asarray(targets.n_node))
    edge_graph = np.repeat(np.arange(n_graph), np.asarray(targets.n_edge))
    node_right = _labels(outputs.nodes) == _labels(targets.nodes)
    edge_right = _labels(outputs.edges) == _labels(targets.edges)
    solved = np.bincount(edge_graph, weights=~edge_right, minlength=n_graph) == 0
    if solved_needs_nodes:
        solved &= np.bincount(node_graph, weights=~node_right, minlength=n_graph) == 0
    return {
        "node_accuracy": float(np.mean(node_right[keep[node_graph]])),
        "edge_accuracy": float(np.mean(edge_right[keep[edge_graph]])),
        "solved": float(np.mean(solved[keep])),
    }


def _labels(scores) -> np.ndarray:
    return np.argmax(np.asarray(scores), axis=-1)
