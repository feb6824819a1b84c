"""Sorting a list as a graph task, after graph_nets' sort demo.

A list of `n` numbers drawn uniformly from `[0, 1)` is a fully connected directed graph on `n`
nodes, self edges included as in the demo: `n**2` edges, sorted by receiver then sender. The
target marks the smallest element and, for each element, the element that comes right after it
in sorted order, so the labelled edges form the sorted list as a linked list.

Features (float32) of one input graph: nodes `[n, 1]` (the value), edges `[n**2, 1]` (zero),
globals `[1, 1]` (zero). The target graph has the same structure with one-hot labels (class 1 =
true): nodes `[n, 2]` ("is the minimum"), edges `[n**2, 2]` ("the receiver is the next element
after the sender"; `n - 1` edges are true), globals None. graph_nets orders its two columns
`[true, false]`; here column `k` is class `k`, as in the other tasks. Training uses 8-16
elements, testing 16-32, as the demo.

All functions are host-side NumPy and deterministic given the `numpy.random.Generator` (or seed).
"""

from __future__ import annotations

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.tasks._labelling import labelling_metrics, one_hot


def sort_graph(values: np.ndarray) -> tuple[GraphsTuple, GraphsTuple]:
    """The `(input, target)` pair for one list `values` `[n]` (distinct values). Host (NumPy)."""
    values = np.asarray(values, dtype=np.float32)
    n = len(values)
    order = np.argsort(values, kind="stable")
    next_element = np.zeros((n, n), dtype=bool)
    next_element[order[:-1], order[1:]] = True
    is_minimum = np.arange(n) == order[0]

    receivers, senders = (index.reshape(-1) for index in np.indices((n, n)))
    structure = dict(
        receivers=receivers.astype(np.int32),
        senders=senders.astype(np.int32),
        n_node=np.array([n], dtype=np.int32),
        n_edge=np.array([n * n], dtype=np.int32),
    )
    inputs = GraphsTuple(
        nodes=values[:, None],
        edges=np.zeros((n * n, 1), dtype=np.float32),
        globals=np.zeros((1, 1), dtype=np.float32),
        **structure,
    )
    targets = GraphsTuple(
        nodes=one_hot(is_minimum),
        edges=one_hot(next_element[senders, receivers]),
        globals=None,
        **structure,
    )
    return inputs, targets


def generate_graphs(
    rng: np.random.Generator | int,
    n_graphs: int,
    min_elements: int = 8,
    max_elements: int = 16,
) -> tuple[list[GraphsTuple], list[GraphsTuple]]:
    """Input and target graphs, list lengths uniform in `[min_elements, max_elements]`.

    Host (NumPy). Defaults are the demo's training sizes; its test sizes are 16-32. Batch the
    lists with `gnkit.batching.batch_np`.

    Args:
      rng: a `numpy.random.Generator` or a seed.
      n_graphs: pairs to draw.
      min_elements: shortest list.
      max_elements: longest list (inclusive).

    Returns:
      `(inputs, targets)`, lists of `n_graphs` graphs each.
    """
    rng = np.random.default_rng(rng)
    sizes = rng.integers(min_elements, max_elements + 1, size=n_graphs)
    pairs = [sort_graph(rng.uniform(size=int(size))) for size in sizes]
    return [inputs for inputs, _ in pairs], [targets for _, targets in pairs]


def metrics(
    outputs: GraphsTuple, targets: GraphsTuple, graph_mask: np.ndarray | None = None
) -> dict[str, float]:
    """Node and edge accuracy of a batch and the fraction of lists solved. Host (NumPy).

    `outputs.nodes` `[N, 2]` and `outputs.edges` `[E, 2]` are scores (the argmax is the label),
    `targets` the one-hot targets of the same batch. A list is solved when all its edge labels
    are right (they spell out the whole order). `graph_mask` (bool `[G]`, optional) keeps only
    the real graphs of a padded batch.
    """
    return labelling_metrics(outputs, targets, graph_mask, solved_needs_nodes=False)

