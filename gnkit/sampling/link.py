"""`LinkNeighborSampler`: fixed-shape neighbour samples around batches of edges, with negatives.

For link prediction (PyG's `LinkNeighborLoader` with uniform negatives): each batch takes `B`
positive edges `(s_i, d_i)` of the source graph and, per positive, `K` negatives `(s_i, n_ij)`
with `n_ij` uniform over all nodes (not checked against the graph), and samples the
neighbourhoods of every endpoint. The batch's positive edges are removed from message passing:
no sampled edge joins `s_i` and `d_i`, in either direction, at any hop; they are taken out of
each node's edges before its draw, so every node draws `min(fanout, its other edges)`. This is
wider than DGL's `exclude="self"` (the positive edge alone, not a parallel or reverse edge) and
PyG's `LinkNeighborLoader` (nothing removed: supervision edges are split off beforehand); DGL
matches it with an `exclude` callable returning every edge of the batch's pairs. Host NumPy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.sampling import _checks as checks
from gnkit.sampling.csr import CSRGraph
from gnkit.sampling.expansion import pair_keys
from gnkit.sampling.neighbor import NeighborSampler, SubgraphKind
from gnkit.sampling.subgraph import SampledSubgraph, assemble


class LinkSample(NamedTuple):
    """A sampled subgraph with the node pairs to score, for `B` positives and `K` negatives each.

    Attributes:
      subgraph: the `SampledSubgraph` around the pairs' endpoints.
      pairs: int32 `[B (1 + K), 2]` local rows `(source, destination)`: the `B` positives
        first, then the negatives of positive `i` at `B + i K .. B + i K + K - 1`.
      labels: float32 `[B (1 + K)]`, 1 for positives, 0 for negatives.
      pair_mask: bool `[B (1 + K)]`, False for the empty slots of a last batch.
    """

    subgraph: SampledSubgraph
    pairs: np.ndarray
    labels: np.ndarray
    pair_mask: np.ndarray


class LinkNeighborSampler:
    """Samples the neighbourhoods of batches of edges and uniform negatives. Host NumPy.

    Seed slots: `"disjoint"` gives every endpoint its own tree, `S = B (2 + K)` slots (sources,
    destinations, negatives, in that order); `"shared"` deduplicates the endpoints into one
    subgraph with `S = B (2 + K)` slots as the most it can need. Batch `i` of epoch `e`
    depends only on `(seed, e, i)`.

    Args:
      graph: the source graph (its features are gathered into each sample).
      fanouts: edges drawn per node at each hop.
      batch_size: positive edges per batch, `B`.
      edges: int `[m]` the edge ids an epoch iterates over (default: every edge).
      num_negatives: negatives per positive, `K` (0 for none).
      shuffle: a fresh permutation of `edges` per epoch.
      seed: the base of every random draw.
      subgraph: "disjoint" or "shared".
      remove_seed_edges: keep the edges joining the batch's positive pairs (every such edge,
        both directions, parallel edges included) out of the sampled edges; a node then draws
        up to its fanout from the rest. DGL's `exclude="self"` drops only the positive edges
        themselves.
      store: a prebuilt `CSRGraph.from_graph(graph)` to reuse.
    """

    def __init__(
        self,
        graph: GraphsTuple,
        fanouts: Sequence[int],
        batch_size: int,
        *,
        edges: np.ndarray | None = None,
        num_negatives: int = 1,
        shuffle: bool = True,
        seed: int = 0,
        subgraph: SubgraphKind = "disjoint",
        remove_seed_edges: bool = True,
        store: CSRGraph | None = None,
    ):
        self.batch_size = checks.count(batch_size, "batch_size", 1)
        self.num_negatives = checks.count(num_negatives, "num_negatives", 0)
        self.neighbors = NeighborSampler(
            graph, fanouts, self.batch_size * (2 + self.num_negatives), shuffle=False,
            seed=seed, subgraph=subgraph, store=store,
        )
        self.graph, self.store = graph, self.neighbors.store
        if self.store.is_temporal:
            raise ValueError("LinkNeighborSampler samples without time; got a temporal store.")
        n_edge = self.store.num_edges
        self.edges = (np.arange(n_edge, dtype=np.int64) if edges is None
                      else checks.ids(edges, n_edge, "edges"))
        self.shuffle, self.seed, self.remove_seed_edges = shuffle, int(seed), remove_seed_edges
        self.senders = np.asarray(graph.senders, np.int64)
        self.receivers = np.asarray(graph.receivers, np.int64)
        self._cached_order = (None, None)

    @property
    def node_budget(self) -> int:
        return self.neighbors.node_budget

    @property
    def edge_budget(self) -> int:
        return self.neighbors.edge_budget

    def __len__(self) -> int:
        return -(-self.edges.size // self.batch_size)

    def sample(
        self, sources, destinations, rng: np.random.Generator | int = 0
    ) -> LinkSample:
        """The sample around up to `B` positive pairs `sources` / `destinations` `[b]`.

        Node ids outside `[0, N)`, float ids and lists of different lengths are refused.
        """
        n_node, most = self.store.num_nodes, ("batch_size", self.batch_size)
        sources = checks.ids(sources, n_node, "sources", most=most)
        destinations = checks.ids(destinations, n_node, "destinations", most=most)
        if sources.shape != destinations.shape:
            raise ValueError(f"sources and destinations must have the same length; got "
                             f"{sources.size} and {destinations.size}.")
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        b, k, n = self.batch_size, self.num_negatives, self.store.num_nodes
        real = np.arange(b) < sources.size
        src = np.zeros(b, np.int64)
        dst = np.zeros(b, np.int64)
        src[real], dst[real] = sources, destinations
        negatives = rng.integers(0, n, (b, k))
        endpoints = np.concatenate([src, dst, negatives.reshape(-1)])
        endpoint_mask = np.concatenate([real, real, np.repeat(real, k)])
        excluded = None
        if self.remove_seed_edges and sources.size:
            excluded = np.unique(pair_keys(sources, destinations, n))
        if self.neighbors.subgraph == "shared":
            unique, inverse = np.unique(endpoints[endpoint_mask], return_inverse=True)
            slots = np.zeros(endpoints.size, np.int64)
            slots[: unique.size] = unique
            seed_mask = np.arange(endpoints.size) < unique.size
            rows = np.zeros(endpoints.size, np.int64)
            rows[endpoint_mask] = inverse
        else:
            slots, seed_mask, rows = endpoints, endpoint_mask, np.arange(endpoints.size)
        expansion = self.neighbors.expand(slots, seed_mask, rng, excluded_pairs=excluded)
        subgraph = assemble(self.graph, *expansion, seed_mask, self.node_budget, self.edge_budget,
                            self.neighbors.buffers)
        source_rows, destination_rows = rows[:b], rows[b : 2 * b]
        negative_rows = rows[2 * b :].reshape(b, k)
        pairs = np.concatenate([
            np.stack([source_rows, destination_rows], axis=1),
            np.stack([np.repeat(source_rows, k), negative_rows.reshape(-1)], axis=1),
        ]).astype(np.int32)
        labels = np.concatenate([np.ones(b), np.zeros(b * k)]).astype(np.float32)
        pair_mask = np.concatenate([real, np.repeat(real, k)])
        return LinkSample(subgraph, pairs, labels, pair_mask)

    def empty(self) -> LinkSample:
        """A sample of the same shapes without pairs (every pair masked)."""
        return self.sample(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The positions in `edges` that epoch `epoch` visits, in order: int `[m]`."""
        if not self.shuffle:
            return np.arange(self.edges.size)
        cached_epoch, order = self._cached_order
        if cached_epoch != epoch:
            order = np.random.default_rng((self.seed, epoch)).permutation(self.edges.size)
            self._cached_order = (epoch, order)
        return order

    def batch(self, epoch: int, index: int) -> LinkSample:
        """Batch `index` of epoch `epoch`, the same on every call."""
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches.")
        order = self.epoch_order(epoch)[index * self.batch_size : (index + 1) * self.batch_size]
        edge_ids = self.edges[order]
        rng = np.random.default_rng((self.seed, epoch, index))
        return self.sample(self.senders[edge_ids], self.receivers[edge_ids], rng)

    def epoch(self, epoch: int = 0) -> Iterator[LinkSample]:
        """The batches of epoch `epoch`, in order."""
        for index in range(len(self)):
            yield self.batch(epoch, index)
