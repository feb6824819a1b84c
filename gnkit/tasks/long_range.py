"""Long-range pairs: is the marked pair of nodes more than `threshold` hops apart?

Each example is a path or a thin random tree of `min_nodes..max_nodes` nodes with two marked
nodes; its label is 1 when their hop distance exceeds `threshold`, else 0, half of each. After
`L` rounds of message passing a node knows only its `L`-hop neighbourhood, so a model that reads
the two marked nodes after `L < threshold` rounds cannot tell a distance of `L + 1` from one of
`threshold + 1`; attention over the whole graph with positional encodings can.

Features (float32) of one graph with `n` nodes and `2 (n - 1)` directed edges (both directions
of each tree edge): nodes `[n, 1]` (1 on the two marked nodes, else 0), edges `[2 (n - 1), 1]`
(ones), globals None. Node ids are shuffled, so they say nothing about position.

All functions are host-side NumPy and deterministic given the `numpy.random.Generator` (or seed).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gnkit.graph import GraphsTuple

KINDS = ("path", "tree")
# A tree node's parent is one of the `_TREE_SPAN` nodes added just before it: thin trees whose
# diameter grows linearly with their size, so that long distances are common.
_TREE_SPAN = 3


class LongRangeExamples(NamedTuple):
    """A set of `n` examples, host NumPy.

    Attributes:
      graphs: one `GraphsTuple` per example.
      labels: int `[n]`, 1 when the marked pair is more than `threshold` hops apart, else 0.
      distances: int `[n]`, the marked pair's hop distance.
      marked: int `[n, 2]`, the marked nodes' ids within their graph.
    """

    graphs: list[GraphsTuple]
    labels: np.ndarray
    distances: np.ndarray
    marked: np.ndarray


def tree_edges(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """The `n - 1` undirected edges `[n - 1, 2]` of a random path (`"path"`) or thin tree
    (`"tree"`: node `i` hangs from one of the three nodes before it), with node ids shuffled."""
    if kind not in KINDS:
        raise ValueError(f"tree_edges: kind must be one of {KINDS}, got {kind!r}.")
    if n < 2:
        raise ValueError(f"tree_edges: n must be at least 2, got {n}.")
    children = np.arange(1, n)
    if kind == "path":
        parents = children - 1
    else:
        parents = rng.integers(np.maximum(children - _TREE_SPAN, 0), children)
    relabel = rng.permutation(n)
    return np.stack([relabel[parents], relabel[children]], axis=1)


def hop_distances(n: int, edges: np.ndarray, source: int) -> np.ndarray:
    """Breadth-first hop distances from `source` over undirected `edges` `[m, 2]`: int `[n]`,
    -1 where unreachable."""
    neighbours = [[] for _ in range(n)]
    for u, v in edges:
        neighbours[u].append(v)
        neighbours[v].append(u)
    distance = np.full(n, -1, dtype=np.int64)
    distance[source] = 0
    frontier = [source]
    while frontier:
        following = []
        for node in frontier:
            for other in neighbours[node]:
                if distance[other] < 0:
                    distance[other] = distance[node] + 1
                    following.append(other)
        frontier = following
    return distance


def _graph(n: int, edges: np.ndarray, marked: tuple[int, int]) -> GraphsTuple:
    nodes = np.zeros((n, 1), np.float32)
    nodes[list(marked), 0] = 1.0
    directed = np.concatenate([edges, edges[:, ::-1]])
    return GraphsTuple(
        nodes=nodes,
        edges=np.ones((len(directed), 1), np.float32),
        senders=directed[:, 0].astype(np.int32),
        receivers=directed[:, 1].astype(np.int32),
        globals=None,
        n_node=np.array([n], np.int32),
        n_edge=np.array([len(directed)], np.int32),
    )


def generate(
    rng: np.random.Generator | int,
    num_examples: int,
    *,
    threshold: int,
    kind: str = "path",
    min_nodes: int = 20,
    max_nodes: int = 60,
) -> LongRangeExamples:
    """Draw `num_examples` examples; labels alternate 1, 0, 1, ... before shuffling.

    For each: `n` uniform in `[min_nodes, max_nodes]`, a random path or tree (`tree_edges`), a
    first marked node uniform over the nodes, and the second uniform over the nodes more than
    `threshold` hops away (label 1) or between 1 and `threshold` hops away (label 0); a first
    node without such partners is drawn again.

    Args:
        rng: a NumPy generator or a seed.
        num_examples: how many examples.
        threshold: the hop distance the label compares against, >= 1.
        kind: `"path"` or `"tree"`.
        min_nodes: smallest graph, more than `threshold + 1` nodes.
        max_nodes: largest graph.

    Returns:
        `LongRangeExamples`.
    """
    rng = np.random.default_rng(rng)
    if threshold < 1:
        raise ValueError(f"generate: threshold must be at least 1, got {threshold}.")
    if not threshold + 2 <= min_nodes <= max_nodes:
        raise ValueError(
            f"generate: need threshold + 2 <= min_nodes <= max_nodes, got threshold={threshold}, "
            f"min_nodes={min_nodes}, max_nodes={max_nodes}."
        )
    graphs, labels, distances, marked = [], [], [], []
    for index in range(num_examples):
        label = 1 - index % 2
        while True:
            n = int(rng.integers(min_nodes, max_nodes + 1))
            edges = tree_edges(rng, n, kind)
            first = int(rng.integers(n))
            distance = hop_distances(n, edges, first)
            far = distance > threshold
            candidates = np.flatnonzero(far if label else (distance >= 1) & ~far)
            if candidates.size:
                break
        second = int(rng.choice(candidates))
        graphs.append(_graph(n, edges, (first, second)))
        labels.append(label)
        distances.append(distance[second])
        marked.append((first, second))
    order = rng.permutation(num_examples)
    return LongRangeExamples(
        graphs=[graphs[i] for i in order],
        labels=np.asarray(labels, np.int32)[order],
        distances=np.asarray(distances, np.int64)[order],
        marked=np.asarray(marked, np.int64).reshape(-1, 2)[order],
    )
