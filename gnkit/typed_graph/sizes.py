"""`Budget`, the padded sizes of a typed batch per set, and `sizes_of`, a batch's real sizes.
Host-only."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from gnkit.typed_graph.types import EdgeSetKey, TypedGraph, edge_keys_by


@dataclasses.dataclass(frozen=True)
class Budget:
    """Padded sizes of a typed batch: `n_graph` graphs, `n_node[set]` nodes per node set and
    `n_edge[key]` edges per edge set, keyed by `EdgeSetKey` (or by name where names are
    unique)."""

    n_graph: int
    n_node: Mapping[str, int]
    n_edge: Mapping[EdgeSetKey | str, int]

    def resolved(self, graph: TypedGraph) -> Budget:
        """This budget keyed by the graph's own edge set keys; `ValueError` when it misses
        or adds a set."""
        n_edge = edge_keys_by(self.n_edge, graph.edges, "Budget.n_edge")
        for what, given, present in (
            ("node sets", set(self.n_node), set(graph.nodes)),
            ("edge sets", set(n_edge), set(graph.edges)),
        ):
            if given != present:
                raise ValueError(
                    f"the budget's {what} {sorted(given)} differ from the graph's "
                    f"{sorted(present)}."
                )
        return Budget(self.n_graph, dict(self.n_node), n_edge)

    def overflow(self, budget: Budget) -> list[str]:
        """For real sizes `self`: what does not fit `budget` with room for padding (one more
        graph, one more node per node set), one line per set; empty when it fits."""
        problems = []
        if self.n_graph + 1 > budget.n_graph:
            problems.append(
                f"n_graph {self.n_graph} + 1 padding graph > budget {budget.n_graph}"
            )
        for name, count in self.n_node.items():
            if count + 1 > budget.n_node[name]:
                problems.append(
                    f"node set {name!r}: {count} nodes + 1 padding node > budget "
                    f"{budget.n_node[name]}"
                )
        for key, count in self.n_edge.items():
            if count > budget.n_edge[key]:
                problems.append(
                    f"edge set {key.name!r} {key.node_sets}: {count} edges > budget "
                    f"{budget.n_edge[key]}"
                )
        return problems


def sizes_of(graph: TypedGraph) -> Budget:
    """The real sizes of a batch (graphs, nodes per node set, edges per edge set) as a `Budget`
    without padding. Host-only."""
    return Budget(
        n_graph=graph.num_graphs,
        n_node={name: int(np.sum(np.asarray(s.n_node))) for name, s in graph.nodes.items()},
        n_edge={key: int(np.shape(s.senders)[0]) for key, s in graph.edges.items()},
    )
