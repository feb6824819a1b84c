"""`NeighborSampler`: fixed-shape multi-hop neighbour samples of seed nodes, batch by batch.

GraphSAGE-style sampling (Hamilton et al. 2017) with PyG's `NeighborLoader` semantics: up to
`fanouts[h]` incoming edges of each node at hop `h`, without replacement where the degree
allows. The output's shapes depend only on the fanouts, the batch size and the subgraph kind,
so a jitted step compiles once per run. Host NumPy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np

from gnkit.graph import GraphsTuple, num_nodes
from gnkit.sampling import _checks as checks
from gnkit.sampling.buffers import PaddedBuffers
from gnkit.sampling.csr import CSRGraph
from gnkit.sampling.expansion import Expansion, expand_disjoint, expand_shared
from gnkit.sampling.one_hop import STRATEGIES, Strategy
from gnkit.sampling.subgraph import SampledSubgraph, assemble

SubgraphKind = Literal["disjoint", "shared"]


def tree_sizes(fanouts: Sequence[int], n_seed: int) -> tuple[int, int]:
    """The most nodes and edges of disjoint trees below `n_seed` seeds: `(nodes, edges)`.

    `nodes = n_seed * (1 + f1 + f1 f2 + ...)`, `edges = nodes - n_seed`.
    """
    width, edges = 1, 0
    for fanout in fanouts:
        width *= fanout
        edges += width
    return n_seed * (1 + edges), n_seed * edges


class NeighborSampler:
    """Samples a padded subgraph around each batch of seed nodes. Host NumPy.

    `subgraph="disjoint"` grows a separate tree below each seed (a node reached from two seeds
    appears twice), `N = S (1 + f1 + f1 f2 + ...) + 1` node rows and `N - S - 1` edge rows
    for `S = batch_size` seed slots. `"shared"` keeps one deduplicated subgraph for the batch,
    each node expanded once, cut to `max_nodes` / `max_edges` (default: the disjoint budget,
    or the graph's size if smaller). With `node_time` or `edge_time` the sampling is temporal:
    every sampled node and edge has time `<=` its seed's time, at every hop (always disjoint).

    Batch `i` of epoch `e` depends only on `(seed, e, i)`, so it is the same whichever order
    or thread makes it. Its feature arrays are read-only: the sampler reuses their memory
    (`buffers`) once nothing refers to them. The last batch of an epoch is filled with empty
    seed slots (`seed_mask` False) unless `drop_last`.

    Args:
      graph: the source graph; its `nodes` / `edges` features are gathered into each sample.
      fanouts: edges drawn per node at each hop, `(f1, f2, ...)`, ints >= 1: PyG's
        `num_neighbors` list, without its -1 (every neighbour, no fixed shape); a bare int is
        refused, write `(f,)` for one hop.
      batch_size: seed slots per batch, `S`.
      seeds: int `[n]` the node ids in `[0, N)` an epoch iterates over (default: every node).
      shuffle: a fresh permutation of `seeds` per epoch.
      seed: the base of every random draw.
      subgraph: "disjoint" or "shared".
      max_nodes: shared only: the most real rows (seed slots included).
      max_edges: shared only: the most real edges.
      node_time: `[N]` node times, or None.
      edge_time: `[E]` edge times, or None.
      seed_time: `[n]` a time per entry of `seeds` (default: `node_time` of the seed).
      strategy: temporal only: "uniform" draws or the "last" (most recent) edges.
      drop_last: leave out the last batch when it is not full.
      store: a prebuilt `CSRGraph.from_graph(graph, node_time, edge_time)` to reuse.
    """

    def __init__(
        self,
        graph: GraphsTuple,
        fanouts: Sequence[int],
        batch_size: int,
        *,
        seeds: np.ndarray | None = None,
        shuffle: bool = True,
        seed: int = 0,
        subgraph: SubgraphKind = "disjoint",
        max_nodes: int | None = None,
        max_edges: int | None = None,
        node_time: np.ndarray | None = None,
        edge_time: np.ndarray | None = None,
        seed_time: np.ndarray | None = None,
        strategy: Strategy = "uniform",
        drop_last: bool = False,
        store: CSRGraph | None = None,
    ):
        self.fanouts = checks.fanouts(fanouts)
        self.batch_size = checks.count(batch_size, "batch_size", 1)
        if subgraph not in ("disjoint", "shared"):
            raise ValueError(f"subgraph must be 'disjoint' or 'shared'; got {subgraph!r}.")
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}; got {strategy!r}.")
        self.graph = graph
        self.store = store or CSRGraph.from_graph(graph, node_time, edge_time)
        self.shuffle, self.seed = shuffle, int(seed)
        self.subgraph, self.strategy, self.drop_last = subgraph, strategy, drop_last
        n_node = num_nodes(graph)
        self.seeds = (np.arange(n_node, dtype=np.int64) if seeds is None
                      else checks.ids(seeds, n_node, "seeds"))
        self.seed_time = self._seed_times(seed_time)
        if self.store.is_temporal and subgraph != "disjoint":
            raise ValueError("temporal sampling is disjoint per seed; got subgraph='shared'.")
        if strategy == "last" and not self.store.is_temporal:
            raise ValueError("strategy='last' needs node_time or edge_time.")
        nodes, edges = tree_sizes(self.fanouts, self.batch_size)
        if subgraph == "shared":
            nodes = min(nodes, self.batch_size + self.store.num_nodes)
            edges = min(edges, self.store.num_edges)
            if max_nodes is not None:
                nodes = checks.count(max_nodes, "max_nodes", 1)
            if max_edges is not None:
                edges = checks.count(max_edges, "max_edges", 0)
        elif max_nodes is not None or max_edges is not None:
            raise ValueError("max_nodes / max_edges apply to subgraph='shared' only.")
        if nodes < self.batch_size:
            raise ValueError(f"max_nodes ({nodes}) must hold the {self.batch_size} seed slots.")
        self.max_nodes, self.max_edges = int(nodes), int(edges)
        self.buffers = PaddedBuffers()
        self._cached_order = (None, None)

    def _seed_times(self, seed_time) -> np.ndarray | None:
        if not self.store.is_temporal:
            if seed_time is not None:
                raise ValueError("seed_time needs node_time or edge_time.")
            return None
        if seed_time is None:
            if self.store.node_time is None:
                raise ValueError("temporal sampling with edge_time alone needs seed_time.")
            return self.store.node_time[self.seeds]
        return checks.times(seed_time, self.seeds.size, "seed_time")

    @property
    def node_budget(self) -> int:
        """Node rows of every sample: the real budget and one padding row."""
        return self.max_nodes + 1

    @property
    def edge_budget(self) -> int:
        """Edge rows of every sample."""
        return self.max_edges

    def __len__(self) -> int:
        """Batches per epoch."""
        full, rest = divmod(self.seeds.size, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def expand(
        self,
        seeds: np.ndarray,
        seed_mask: np.ndarray,
        rng: np.random.Generator,
        seed_times: np.ndarray | None = None,
        excluded_pairs: np.ndarray | None = None,
    ) -> Expansion:
        """The unpadded sample around `S` seed slots (see `expand_disjoint` / `expand_shared`).

        Args:
          seeds: int `[S]` seed ids (ignored where `seed_mask` is False).
          seed_mask: bool `[S]`.
          rng: the generator of the draws.
          seed_times: `[S]` or None; with it, every hop draws only edges usable at its seed's
            time (disjoint subgraphs only; a shared subgraph ignores it).
          excluded_pairs: sorted int64 keys (`pair_keys`) of node pairs whose edges are never
            drawn, in either direction: each row draws from its other edges; or None.

        Returns:
          The `Expansion`: `S` seed rows, then the sampled rows hop by hop.
        """
        if self.subgraph == "shared":
            return expand_shared(self.store, seeds, seed_mask, self.fanouts, rng,
                                 self.max_nodes, self.max_edges, excluded_pairs)
        return expand_disjoint(self.store, seeds, seed_mask, self.fanouts, rng, seed_times,
                               self.strategy, excluded_pairs)

    def sample(
        self, seeds, seed_times=None, rng: np.random.Generator | int = 0
    ) -> SampledSubgraph:
        """The padded sample around up to `batch_size` seed ids `[s]` (times `[s]` if temporal).

        `rng` is a NumPy generator or an int seed for one. Ids outside `[0, N)`, float ids and
        seed times of another length than the seeds are refused.
        """
        seeds = checks.ids(seeds, self.store.num_nodes, "seeds",
                           most=("batch_size", self.batch_size))
        if seed_times is not None:
            if not self.store.is_temporal:
                raise ValueError("seed_times needs node_time or edge_time.")
            seed_times = checks.times(seed_times, seeds.size, "seed_times")
        elif self.store.is_temporal:
            if self.store.node_time is None:
                raise ValueError("temporal sampling with edge_time alone needs seed_times.")
            seed_times = self.store.node_time[seeds]
        slots = np.zeros(self.batch_size, np.int64)
        slots[: seeds.size] = seeds
        mask = np.arange(self.batch_size) < seeds.size
        times = None
        if seed_times is not None:
            times = np.zeros(self.batch_size, np.asarray(seed_times).dtype)
            times[: seeds.size] = seed_times
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        expansion = self.expand(slots, mask, rng, times)
        return assemble(self.graph, *expansion, mask, self.node_budget, self.edge_budget,
                        self.buffers)

    def empty(self) -> SampledSubgraph:
        """A sample of the same shapes without seeds (every seed slot masked)."""
        times = None if self.seed_time is None else np.zeros(0, self.seed_time.dtype)
        return self.sample(np.zeros(0, np.int64), times)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The positions in `seeds` that epoch `epoch` visits, in order: int `[n]`."""
        if not self.shuffle:
            return np.arange(self.seeds.size)
        cached_epoch, order = self._cached_order
        if cached_epoch != epoch:
            order = np.random.default_rng((self.seed, epoch)).permutation(self.seeds.size)
            self._cached_order = (epoch, order)
        return order

    def batch(self, epoch: int, index: int) -> SampledSubgraph:
        """Batch `index` of epoch `epoch`, the same on every call."""
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches.")
        positions = self.epoch_order(epoch)[index * self.batch_size : (index + 1) * self.batch_size]
        times = None if self.seed_time is None else self.seed_time[positions]
        rng = np.random.default_rng((self.seed, epoch, index))
        return self.sample(self.seeds[positions], times, rng)

    def epoch(self, epoch: int = 0) -> Iterator[SampledSubgraph]:
        """The batches of epoch `epoch`, in order, made here (see `prefetch` for background)."""
        for index in range(len(self)):
            yield self.batch(epoch, index)
