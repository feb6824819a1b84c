"""Bucketed padding budgets and streaming batchers.

`BucketPolicy` rounds padded sizes up a geometric ladder, so a stream of batches of varying size
compiles a handful of times; `pad_to_bucket` pads one batch to its bucket; jraph's
`dynamically_batch` and gnkit's `batch_stream` group a stream of graphs greedily into padded
batches. All host-side (NumPy).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator

import numpy as np

from gnkit.batching.batch_unbatch import batch_np
from gnkit.batching.padding import pad_with_graphs
from gnkit.graph import GraphsTuple, num_edges

# Edge budgets are multiples of 2, so that edges stored as reverse pairs stay paired.
_EDGE_MULTIPLE = 2

@dataclasses.dataclass(frozen=True)
class BucketPolicy:
    """Rounds padded (nodes, edges, graphs) budgets up a geometric ladder.

    Rung `k` of the ladder holds `ceil(min_nodes * growth**k)` nodes, `ceil(min_edges *
    growth**k)` edges rounded up to an even number, and `ceil(min_graphs * growth**k)` graphs.
    Even edge budgets keep edges stored as reverse pairs (`2k`, `2k + 1`: `gnkit.chem`'s
    molecules, which `gnkit.dmpnn` swaps pair by pair) paired after padding, for one edge slot
    at most. `round` picks, for a batch, the lowest rung with room for its edges and for one
    more node and graph than it has (the padding graph that `pad_with_graphs` needs).

    With `shared_rung=True` (default) the three budgets climb together: the rung is the highest
    any of them needs, so a stream spanning `R` rungs compiles at most `R` times. This pads
    tightly when `min_nodes : min_edges : min_graphs` follows the data: set `min_edges /
    min_nodes` near the mean number of edges per node and `min_nodes / min_graphs` at or below
    the typical graph size (graph slots only cost `globals` rows). With `shared_rung=False` each
    budget climbs its own ladder: tighter padding, but up to `R**3` shapes.

    For batch sizes spread evenly on a log scale, padded / real is `(growth - 1) / ln(growth)`
    on average (1.32 for growth 1.7): a smaller `growth` pads less and compiles more often.
    `benchmarks/bucketing.py` measures compiles and padding on a stream of random batches.

    Attributes:
      growth: the ratio between rungs, above 1; smaller pads less and compiles more often.
      min_nodes: node budget of rung 0 (at least 1).
      min_edges: edge budget of rung 0 (at least 1; rounded up to even).
      min_graphs: graph budget of rung 0 (at least 2: one real graph and the padding graph).
      shared_rung: climb the three budgets together (one rung for all) rather than each on its own
        ladder.

    Example:
        With the defaults, a batch of 17 nodes, 16 edges and 3 graphs fits rung 0 (64 nodes, 128
        edges, 4 graphs); 100 nodes need rung 1, `ceil(64 * 1.7) = 109` nodes, and the edges and
        graphs climb with them (`ceil(128 * 1.7) = 218`, `ceil(4 * 1.7) = 7`). Rung 3's edges,
        `ceil(128 * 1.7**3) = 629`, are rounded up to 630:

        >>> import gnkit as gn
        >>> policy = gn.BucketPolicy()
        >>> policy.round(n_node=17, n_edge=16, n_graph=3)
        (64, 128, 4)
        >>> policy.round(n_node=100, n_edge=100, n_graph=3)
        (109, 218, 7)
        >>> policy.sizes(3)
        (315, 630, 20)
    """

    growth: float = 1.7
    min_nodes: int = 64
    min_edges: int = 128
    min_graphs: int = 4
    shared_rung: bool = True

    def __post_init__(self):
        if not self.growth > 1:
            raise ValueError(f"BucketPolicy.growth must be > 1, got {self.growth}.")
        if self.min_nodes < 1 or self.min_edges < 1 or self.min_graphs < 2:
            raise ValueError(
                "BucketPolicy needs min_nodes >= 1, min_edges >= 1 and min_graphs >= 2, got "
                f"{self.min_nodes}, {self.min_edges}, {self.min_graphs}."
            )

    def _size(self, minimum: int, rung: int, multiple: int = 1) -> int:
        # Rounding to 9 decimals first keeps float noise (100 * 1.1**2 = 121.00000000000001)
        # from adding a slot.
        size = math.ceil(round(minimum * self.growth**rung, 9))
        return -(-size // multiple) * multiple

    def _rung(self, minimum: int, needed: int, multiple: int = 1) -> int:
        """The lowest rung whose size is at least `needed` (sizes grow with the rung)."""
        rung = max(0, math.floor(math.log(max(needed, 1) / minimum, self.growth)))
        while rung > 0 and self._size(minimum, rung - 1, multiple) >= needed:
            rung -= 1
        while self._size(minimum, rung, multiple) < needed:
            rung += 1
        return rung

    def sizes(self, rung: int) -> tuple[int, int, int]:
        """(nodes, edges, graphs) budgets of one rung of the ladder; edges are even."""
        return (
            self._size(self.min_nodes, rung),
            self._size(self.min_edges, rung, _EDGE_MULTIPLE),
            self._size(self.min_graphs, rung),
        )

    def round(self, n_node: int, n_edge: int, n_graph: int) -> tuple[int, int, int]:
        """Padded (nodes, edges, graphs) for a batch of `n_node` nodes, `n_edge` edges and
        `n_graph` graphs (real totals). Always `> n_node`, `>= n_edge` (and even), `> n_graph`."""
        rungs = (
            self._rung(self.min_nodes, int(n_node) + 1),
            self._rung(self.min_edges, int(n_edge), _EDGE_MULTIPLE),
            self._rung(self.min_graphs, int(n_graph) + 1),
        )
        if self.shared_rung:
            return self.sizes(max(rungs))
        return tuple(self.sizes(rung)[field] for field, rung in enumerate(rungs))


def _real_sizes(graph: GraphsTuple) -> tuple[int, int, int]:
    n_node = np.asarray(graph.n_node)
    return int(n_node.sum()), num_edges(graph), n_node.shape[0]


def pad_to_bucket(graph: GraphsTuple, policy: BucketPolicy) -> GraphsTuple:
    """Pads a batched graph to the bucket `policy.round(...)` gives for its size. Host-only."""
    return pad_with_graphs(graph, *policy.round(*_real_sizes(graph)))


def _size_dict(n_node: int, n_edge: int, n_graph: int) -> dict[str, int]:
    return {"n_node": n_node, "n_edge": n_edge, "n_graph": n_graph}


def _group_within(
    graphs: Iterable[GraphsTuple], node_limit: int, edge_limit: int, graph_limit: int
) -> Iterator[list[GraphsTuple]]:
    """Greedy groups whose real totals stay within the limits; raises on a graph that never fits.

    The group collected so far is yielded before the error is raised.
    """
    group: list[GraphsTuple] = []
    nodes = edges = count = 0
    for graph in graphs:
        n_node, n_edge, n_graph = _real_sizes(graph)
        if n_node > node_limit or n_edge > edge_limit or n_graph > graph_limit:
            if group:
                yield group
            raise RuntimeError(
                "Found graph bigger than batch size. Valid Batch Size: "
                f"{_size_dict(node_limit, edge_limit, graph_limit)}, Graph Size: "
                f"{_size_dict(n_node, n_edge, n_graph)}. The valid size leaves one node and one "
                "graph of the budget for padding."
            )
        if group and (
            nodes + n_node > node_limit
            or edges + n_edge > edge_limit
            or count + n_graph > graph_limit
        ):
            yield group
            group, nodes, edges, count = [], 0, 0, 0
        group.append(graph)
        nodes, edges, count = nodes + n_node, edges + n_edge, count + n_graph
    if group:
        yield group


def dynamically_batch(
    graphs_tuple_iterator: Iterator[GraphsTuple], n_node: int, n_edge: int, n_graph: int
) -> Iterator[GraphsTuple]:
    """Batches a stream of graphs greedily, each batch padded to exactly (n_node, n_edge, n_graph).

    jraph's `dynamically_batch`: graphs are added to the current batch until the next one would
    leave no room for padding (`n_node - 1` real nodes, `n_edge` edges, `n_graph - 1` graphs at
    most); the batch is then `batch_np`-ed and `pad_with_graphs`-ed. Host-only generator. Raises
    `ValueError` if `n_graph < 2` and `RuntimeError` on a graph that can never fit (after
    yielding the batch collected before it), with messages that start with jraph's text.

    Args:
      graphs_tuple_iterator: NumPy graphs (or small batches) to group.
      n_node: padded nodes per batch (room for `n_node - 1` real ones).
      n_edge: padded edges per batch.
      n_graph: padded graphs per batch, at least 2 (room for `n_graph - 1` real ones).

    Returns:
      A generator of padded batches, each exactly `(n_node, n_edge, n_graph)`.
    """
    if n_graph < 2:
        raise ValueError(
            "The number of graphs in a batch size must be greater or equal to `2` for padding "
            f"with graphs, got {n_graph}. The last graph of each batch is the padding graph."
        )
    for group in _group_within(graphs_tuple_iterator, n_node - 1, n_edge, n_graph - 1):
        yield pad_with_graphs(batch_np(group), n_node, n_edge, n_graph)


def batch_stream(
    graphs: Iterable[GraphsTuple],
    policy: BucketPolicy,
    *,
    max_nodes: int,
    max_edges: int,
    max_graphs: int,
) -> Iterator[GraphsTuple]:
    """Batches a stream of graphs greedily and pads each batch to a bucket of `policy`.

    Generalises `dynamically_batch`: graphs are grouped the same way under the caps
    (`max_nodes`, `max_edges`, `max_graphs` bound the padded batch), but each batch is padded to
    `policy.round(...)` of its real size, capped at the maxima, instead of always to the maxima.
    Full batches land in the cap; a short batch (the last one, or one cut by a large graph)
    gets a smaller bucket. With a shared-rung policy there is at most one shape per rung up to
    the caps. Host-only generator; errors as `dynamically_batch`.

    Args:
      graphs: NumPy graphs (or small batches) to group.
      policy: the bucket ladder each batch's real size is rounded up on.
      max_nodes: the cap on a padded batch's nodes (room for `max_nodes - 1` real ones).
      max_edges: the cap on a padded batch's edges, used as given (keep it even for edges
        stored as reverse pairs, as the policy's budgets are).
      max_graphs: the cap on a padded batch's graphs, at least 2.

    Returns:
      A generator of padded batches, each of size `policy.round(...)` capped at the maxima.
    """
    if max_graphs < 2:
        raise ValueError(f"max_graphs is {max_graphs}; padding needs at least 2 graphs.")
    caps = (max_nodes, max_edges, max_graphs)
    for group in _group_within(graphs, max_nodes - 1, max_edges, max_graphs - 1):
        batched = batch_np(group)
        bucket = policy.round(*_real_sizes(batched))
        yield pad_with_graphs(
            batched, *(min(size, cap) for size, cap in zip(bucket, caps, strict=True))
        )
