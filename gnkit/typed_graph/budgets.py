"""Size budgets per set: real sizes, buckets, tight budgets, fit-or-skip batching. Host-only.

A `Budget` gives the padded number of graphs and, per set, of nodes and edges; `pad_to_budget`
pads a batch to it. As TF-GNN's size constraints: `tight_budget` is the smallest budget that
holds any batch of a data set (for evaluation, where no graph may be dropped), and `FitOrSkip`
batches a training stream under a fixed budget, dropping and counting the batches that do not
fit. `BucketPolicy` rounds each set's size up a geometric ladder, so a stream of batches of
varying size compiles a handful of times.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from gnkit.typed_graph.batching import batch
from gnkit.typed_graph.padding import pad_to_budget
from gnkit.typed_graph.sizes import Budget, sizes_of
from gnkit.typed_graph.types import EdgeSetKey, TypedGraph, edge_keys_by


@dataclasses.dataclass(frozen=True)
class BucketPolicy:
    """Rounds a typed batch's sizes up a geometric ladder, per set.

    Rung `k` holds `ceil(minimum * growth**k)` of each size; the minimum is `min_nodes` (an int
    for every node set, or a mapping per set name), `min_edges` likewise per edge set (keyed by
    `EdgeSetKey` or unique name) and `min_graphs`. With `shared_rung=True` (default) every size
    climbs to the highest rung any of them needs, so a stream spanning `R` rungs compiles at
    most `R` times; set the minimums in the data's proportions. With `shared_rung=False` each
    set climbs its own ladder: tighter padding, more shapes. Room for the padding graph and a
    padding node per node set is included.

    Attributes:
      growth: the ladder's ratio between rungs, > 1.
      min_nodes: rung 0 of every node set, or `{node set: size}`.
      min_edges: rung 0 of every edge set, or `{EdgeSetKey or unique name: size}`.
      min_graphs: rung 0 of the number of graphs, >= 2.
      shared_rung: whether every size climbs to the highest rung any of them needs.

    Example:
        Three graphs of 40 nodes and 10 edges in all need 41 nodes and 4 graphs with padding;
        the node ladder 16, 28, 47 puts 41 on rung 2, and the shared rung lifts the edges to
        `ceil(16 * 1.7**2) = 47` and the graphs to `ceil(4 * 1.7**2) = 12`:

        >>> import numpy as np
        >>> from gnkit import typed_graph as tg
        >>> key = tg.EdgeSetKey("e", ("a", "a"))
        >>> graph = tg.TypedGraph(tg.Context(np.ones(3, int)),
        ...     {"a": tg.NodeSet(np.array([10, 10, 20]))},
        ...     {key: tg.EdgeSet(np.array([5, 5, 0]), np.zeros(10, int), np.zeros(10, int))})
        >>> budget = tg.BucketPolicy(min_nodes=16, min_edges=16, min_graphs=4).round(graph)
        >>> budget.n_graph, budget.n_node, list(budget.n_edge.values())
        (12, {'a': 47}, [47])
    """

    growth: float = 1.7
    min_nodes: int | Mapping[str, int] = 16
    min_edges: int | Mapping[EdgeSetKey | str, int] = 32
    min_graphs: int = 4
    shared_rung: bool = True

    def __post_init__(self):
        if not self.growth > 1:
            raise ValueError(f"BucketPolicy.growth must be > 1, got {self.growth}.")
        if self.min_graphs < 2:
            raise ValueError(f"BucketPolicy.min_graphs must be >= 2, got {self.min_graphs}.")

    def _size(self, minimum: int, rung: int) -> int:
        # Rounded to 9 decimals first, so float noise does not add a slot.
        return math.ceil(round(minimum * self.growth**rung, 9))

    def _rung(self, minimum: int, needed: int) -> int:
        rung = 0
        while self._size(minimum, rung) < needed:
            rung += 1
        return rung

    def _minimums(self, graph: TypedGraph) -> tuple[dict, dict]:
        def per_set(value, names, what):
            if isinstance(value, Mapping):
                if what == "min_edges":
                    value = edge_keys_by(value, graph.edges, "BucketPolicy.min_edges")
                missing = set(names) - set(value)
                if missing:
                    raise ValueError(f"BucketPolicy.{what} has no entry for {sorted(missing)}.")
                return {name: int(value[name]) for name in names}
            return {name: int(value) for name in names}

        return (
            per_set(self.min_nodes, graph.nodes, "min_nodes"),
            per_set(self.min_edges, graph.edges, "min_edges"),
        )

    def round(self, graph: TypedGraph) -> Budget:
        """The bucket of a batch: the budget of its rung(s), with room for padding. Host."""
        sizes = sizes_of(graph)
        min_nodes, min_edges = self._minimums(graph)
        needs = [(self.min_graphs, sizes.n_graph + 1)]
        needs += [(min_nodes[name], sizes.n_node[name] + 1) for name in min_nodes]
        needs += [(min_edges[key], sizes.n_edge[key]) for key in min_edges]
        rungs = [self._rung(minimum, needed) for minimum, needed in needs]
        if self.shared_rung:
            rungs = [max(rungs)] * len(rungs)
        sized = iter(
            self._size(minimum, rung) for (minimum, _), rung in zip(needs, rungs, strict=True)
        )
        n_graph = next(sized)
        n_node = {name: next(sized) for name in min_nodes}
        n_edge = {key: next(sized) for key in min_edges}
        return Budget(n_graph, n_node, n_edge)


def tight_budget(graphs: Iterable[TypedGraph], batch_size: int) -> Budget:
    """The smallest budget that holds any `batch_size` graphs of a data set, with padding.

    TF-GNN's tight size constraints: per set, the sum of the `batch_size` largest counts over
    the data set, plus one padding node per node set; `batch_size + 1` graphs. For evaluation,
    where every graph must be kept. Each element of `graphs` is one graph. Host-only.
    """
    graphs = list(graphs)
    if not graphs or batch_size < 1:
        raise ValueError(f"tight_budget needs graphs and batch_size >= 1, got {batch_size}.")
    sizes = [sizes_of(graph) for graph in graphs]

    def largest(counts) -> int:
        return int(np.sum(np.sort(np.asarray(counts))[::-1][:batch_size]))

    return Budget(
        n_graph=batch_size + 1,
        n_node={name: largest([s.n_node[name] for s in sizes]) + 1 for name in sizes[0].n_node},
        n_edge={key: largest([s.n_edge[key] for s in sizes]) for key in sizes[0].n_edge},
    )


class FitOrSkip:
    """Batches a training stream under one fixed budget, skipping batches that do not fit.

    As TF-GNN's fit-or-skip: each consecutive `batch_size` graphs are batched; a batch within
    `budget` (with room for padding) is padded to it and yielded, one over it is dropped and
    counted in `skipped` (`kept` counts the others). Every yielded batch has the budget's
    shapes, so a training step compiles once. Host-only.

    Example:
        >>> import numpy as np
        >>> from gnkit import typed_graph as tg
        >>> def graph(n):
        ...     return tg.TypedGraph(tg.Context(np.array([1])),
        ...                          {"a": tg.NodeSet(np.array([n]))}, {})
        >>> fit = tg.FitOrSkip(tg.Budget(n_graph=3, n_node={"a": 8}, n_edge={}))
        >>> [b.nodes["a"].n_node.tolist() for b in fit.batches(map(graph, [3, 4, 5, 6]), 2)]
        [[3, 4, 1]]
        >>> fit.kept, fit.skipped
        (1, 1)
    """

    def __init__(self, budget: Budget):
        self.budget = budget
        self.kept = 0
        self.skipped = 0

    def batches(self, graphs: Iterable[TypedGraph], batch_size: int) -> Iterator[TypedGraph]:
        """Padded batches of each consecutive `batch_size` graphs that fit. Host generator; a
        last chunk shorter than `batch_size` is batched too."""
        iterator = iter(graphs)
        while chunk := list(itertools.islice(iterator, batch_size)):
            batched = batch(chunk)
            budget = self.budget.resolved(batched)
            if sizes_of(batched).overflow(budget):
                self.skipped += 1
                continue
            self.kept += 1
            yield pad_to_budget(batched, budget)


def batch_stream(
    graphs: Iterable[TypedGraph], batch_size: int, policy: BucketPolicy
) -> Iterator[TypedGraph]:
    """Batches each consecutive `batch_size` graphs and pads the batch to its bucket under
    `policy`. Host generator; a stream spanning `R` shared rungs gives at most `R` shapes."""
    iterator = iter(graphs)
    while chunk := list(itertools.islice(iterator, batch_size)):
        batched = batch(chunk)
        yield pad_to_budget(batched, policy.round(batched))
