"""A compressed-sparse-row store of a graph's incoming edges, the index every sampler reads.

Row `v` lists the edges that arrive at node `v`: their senders (the neighbours a message comes
from) and their edge ids in the source graph. With times, each row is sorted by the time at
which an edge becomes usable (`max(edge time, sender time)`), so the neighbours usable before a
seed's time are a prefix of the row, found by binary search. Host NumPy.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from gnkit.graph import GraphsTuple, num_nodes
from gnkit.sampling import _checks as checks


def run_positions(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the runs `starts[i] .. stops[i] - 1` `[n]`, concatenated, and the
    index of the run of each."""
    counts = stops - starts
    owner = np.repeat(np.arange(starts.size), counts)
    firsts = np.cumsum(counts) - counts
    return starts[owner] + np.arange(owner.size) - firsts[owner], owner


def row_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every stored position of `rows` `[n]`, concatenated, and the index into `rows` of each."""
    return run_positions(indptr[rows], indptr[rows + 1])


def search_rows(indptr, values, rows, targets, side: str) -> np.ndarray:
    """`np.searchsorted(row's values, target, side)` per row, as a stored position: int64 `[n]`.

    For `rows` and `targets` `[n]`, `values` `[E]` sorted inside each row. A binary search
    vectorised over the rows.
    """
    low = indptr[rows].copy()
    high = indptr[rows + 1].copy()
    while True:
        open_rows = low < high
        if not open_rows.any():
            return low
        middle = (low + high) // 2
        below = np.zeros_like(open_rows)
        found = values[middle[open_rows]]
        below[open_rows] = (found <= targets[open_rows] if side == "right"
                            else found < targets[open_rows])
        low = np.where(open_rows & below, middle + 1, low)
        high = np.where(open_rows & ~below, middle, high)


@dataclasses.dataclass(frozen=True)
class CSRGraph:
    """Incoming edges per node, rows sorted by usable time when there is time. Host NumPy.

    For `N` nodes and `E` edges.

    Attributes:
      indptr: int64 `[N + 1]`; row `v` is `indptr[v] .. indptr[v + 1] - 1`.
      senders: int64 `[E]`, the sender of each stored edge (the neighbour it brings).
      edge_ids: int64 `[E]`, the stored edge's row in the source graph.
      usable_time: `[E]` or None (no time), `max(edge time, sender time)`, nondecreasing inside
        each row.
      node_time: `[N]` or None, each node's time (the default seed time).
    """

    indptr: np.ndarray
    senders: np.ndarray
    edge_ids: np.ndarray
    usable_time: np.ndarray | None = None
    node_time: np.ndarray | None = None

    @classmethod
    def from_graph(
        cls, graph: GraphsTuple, node_time=None, edge_time=None
    ) -> CSRGraph:
        """Builds the store of `graph`'s edges; `node_time` `[N]`, `edge_time` `[E]` optional.

        An edge is usable at time `t` when its own time and its sender's time are both `<= t`.
        With `node_time` alone, edges take their sender's time; with `edge_time` alone, nodes
        have no time of their own (seed times must then be given to the sampler).
        """
        n_node = num_nodes(graph)
        return cls.from_edges(graph.senders, graph.receivers, n_node, n_node, node_time,
                              edge_time, node_time)

    @classmethod
    def from_edges(
        cls,
        senders,
        receivers,
        num_receivers: int,
        num_senders: int,
        sender_time=None,
        edge_time=None,
        node_time=None,
    ) -> CSRGraph:
        """The store of edges from one node set (`num_senders` rows) to another (`num_receivers`).

        Args:
          senders: int `[E]` rows of the sender set.
          receivers: int `[E]` rows of the receiver set.
          num_receivers: rows of the receiver set (the store's rows).
          num_senders: rows of the sender set.
          sender_time: `[num_senders]` sender times, or None.
          edge_time: `[E]` edge times, or None.
          node_time: `[num_receivers]` receiver times kept as the default seed times, or None.

        Returns:
          The `CSRGraph`.
        """
        senders = np.asarray(senders, np.int64)
        receivers = np.asarray(receivers, np.int64)
        if senders.shape != receivers.shape or senders.ndim != 1:
            raise ValueError(f"senders and receivers must be equal 1-D arrays; got "
                             f"{senders.shape} and {receivers.shape}.")
        if senders.size and (min(senders.min(), receivers.min()) < 0 or senders.max() >= num_senders
                             or receivers.max() >= num_receivers):
            raise ValueError(f"senders must lie in [0, {num_senders}) and receivers in "
                             f"[0, {num_receivers}).")
        usable = None
        if sender_time is not None:
            usable = checks.times(sender_time, num_senders, "node_time")[senders]
        if edge_time is not None:
            edge_time = checks.times(edge_time, senders.shape[0], "edge_time")
            usable = edge_time if usable is None else np.maximum(usable, edge_time)
        if node_time is not None:
            node_time = checks.times(node_time, num_receivers, "node_time")
        # Primary key the receiver (the row), then the usable time (or the sender, for a stable
        # order without time), then the edge id.
        secondary = senders if usable is None else usable
        order = np.lexsort((np.arange(senders.shape[0]), secondary, receivers))
        counts = np.bincount(receivers, minlength=num_receivers)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(
            indptr=indptr,
            senders=senders[order],
            edge_ids=order.astype(np.int64),
            usable_time=None if usable is None else usable[order],
            node_time=node_time,
        )

    @functools.cached_property
    def row_sender_keys(self) -> np.ndarray:
        """int64 `[E]` `row * num_nodes + sender` per stored position, computed once.

        For a store without time over one node set the rows are sorted by sender, so these
        keys are nondecreasing and the edges from `u` into row `v` are the run of key
        `v * num_nodes + u`, found by `np.searchsorted`.
        """
        rows = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))
        return rows * self.num_nodes + self.senders

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        return int(self.senders.shape[0])

    @property
    def is_temporal(self) -> bool:
        return self.usable_time is not None

    def in_degree(self, nodes: np.ndarray) -> np.ndarray:
        """The number of incoming edges of each of `nodes` `[n]`: int64 `[n]`."""
        nodes = np.asarray(nodes, np.int64)
        return self.indptr[nodes + 1] - self.indptr[nodes]

    def usable_degree(self, nodes: np.ndarray, times: np.ndarray) -> np.ndarray:
        """How many incoming edges of each of `nodes` are usable at `times` `[n]`: int64 `[n]`.

        A binary search inside each row, vectorised over the rows (rows sorted by usable time).
        """
        nodes = np.asarray(nodes, np.int64)
        ends = search_rows(self.indptr, self.usable_time, nodes, times, "right")
        return ends - self.indptr[nodes]
