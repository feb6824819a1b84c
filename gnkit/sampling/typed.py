"""`TypedNeighborSampler`: fixed-shape neighbour samples of a `TypedGraph`, fanouts per edge set.

At hop `h`, each node reached in node set `R` draws up to `fanouts[k][h]` incoming edges of
every edge set `k` that ends in `R`; the neighbours join the sender set of `k`. Trees are disjoint
per seed, so every set's budget follows from the fanouts and the batch size alone. With
`temporal=True` the node sets' and edge sets' `time` fields bound every hop by the seed's time.
Host NumPy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np
from jax.tree_util import tree_map

from gnkit.sampling import _checks as checks
from gnkit.sampling.csr import CSRGraph
from gnkit.sampling.one_hop import STRATEGIES, Strategy, sample_one_hop
from gnkit.typed_graph import Budget, Context, EdgeSet, NodeSet, TypedGraph, pad_to_budget
from gnkit.typed_graph.types import EdgeSetKey, edge_keys_by, node_rows


class TypedSample(NamedTuple):
    """A sampled `TypedGraph` padded to a fixed budget per set.

    Attributes:
      graph: the `TypedGraph`, one real graph and one padding graph; each node set's
        `global_id` holds its rows' ids in the source set (-1 for padding and empty seed slots).
      seed_mask: bool `[S]`, the seed slots (the first `S` rows of the seed set) that hold a
        seed.
      roots: `{node set: int64 [N_set]}`, the seed slot each row was sampled for (-1: padding).
      edge_ids: `{EdgeSetKey: int64 [E_k]}`, each edge row's edge in the source set (-1:
        padding).
    """

    graph: TypedGraph
    seed_mask: np.ndarray
    roots: dict
    edge_ids: dict


def _gather(tree, ids: np.ndarray):
    if tree is None:
        return None
    rows = np.where(ids < 0, 0, ids)

    def gather(leaf):
        out = np.take(np.asarray(leaf), rows, axis=0)
        out[ids < 0] = 0
        return out

    return tree_map(gather, tree)


def _padded(values: np.ndarray, length: int) -> np.ndarray:
    out = np.full(length, -1, np.int64)
    out[: values.shape[0]] = values
    return out


class TypedNeighborSampler:
    """Samples disjoint padded trees below batches of seeds of one node set. Host NumPy.

    Args:
      graph: the source `TypedGraph` (one graph); features, times and ids are gathered.
      fanouts: `{edge set (key or unique name): (f1, f2, ...)}`, ints >= 1, one per hop (PyG's
        `num_neighbors` dict, without its -1), every tuple of the same length; edge sets left
        out are not sampled.
      batch_size: seed slots per batch, `S`.
      seed_set: the node set the seeds come from.
      seeds: int `[n]` rows of `seed_set` an epoch iterates over, in `[0, rows)` (default: all).
      shuffle: a fresh permutation of `seeds` per epoch.
      seed: the base of every random draw.
      temporal: bound every hop by the seed's time (`NodeSet.time` / `EdgeSet.time`; the seed
        time is the seed's `time`).
      strategy: temporal only: "uniform" or "last".
    """

    def __init__(
        self,
        graph: TypedGraph,
        fanouts: Mapping[EdgeSetKey | str, Sequence[int]],
        batch_size: int,
        *,
        seed_set: str,
        seeds: np.ndarray | None = None,
        shuffle: bool = True,
        seed: int = 0,
        temporal: bool = False,
        strategy: Strategy = "uniform",
    ):
        if seed_set not in graph.nodes:
            raise KeyError(f"seed_set {seed_set!r} is not a node set; node sets: "
                           f"{sorted(graph.nodes)}.")
        self.fanouts = {key: checks.fanouts(counts, f"fanouts[{key.name!r}]")
                        for key, counts in edge_keys_by(fanouts, graph.edges, "fanouts").items()}
        hops = {len(counts) for counts in self.fanouts.values()}
        if len(hops) != 1:
            raise ValueError(f"fanouts must give every edge set the same number of hops; got "
                             f"{self.fanouts}.")
        if strategy not in STRATEGIES or (strategy == "last" and not temporal):
            raise ValueError(f"strategy must be one of {STRATEGIES} ('last' needs temporal); "
                             f"got {strategy!r}.")
        self.graph, self.seed_set = graph, seed_set
        self.batch_size = checks.count(batch_size, "batch_size", 1)
        self.num_hops = hops.pop()
        self.shuffle, self.seed = shuffle, int(seed)
        self.temporal, self.strategy = temporal, strategy
        n_seed_rows = node_rows(graph.nodes[seed_set])
        self.seeds = (np.arange(n_seed_rows, dtype=np.int64) if seeds is None
                      else checks.ids(seeds, n_seed_rows, "seeds"))
        if temporal and graph.nodes[seed_set].time is None:
            raise ValueError(f"temporal sampling needs node set {seed_set!r} to have time.")
        self.stores = {}
        for key in self.fanouts:
            sender_set, receiver_set = key.node_sets
            edges = graph.edges[key]
            self.stores[key] = CSRGraph.from_edges(
                edges.senders, edges.receivers, node_rows(graph.nodes[receiver_set]),
                node_rows(graph.nodes[sender_set]),
                graph.nodes[sender_set].time if temporal else None,
                edges.time if temporal else None,
            )
        self.budget = self._budget()

    def _budget(self) -> Budget:
        """Rows per node set and edge set of every sample (one padding node per set)."""
        layer = {name: 0 for name in self.graph.nodes}
        layer[self.seed_set] = self.batch_size
        nodes = dict(layer)
        edges = {key: 0 for key in self.fanouts}
        for hop in range(self.num_hops):
            following = {name: 0 for name in self.graph.nodes}
            for key, counts in self.fanouts.items():
                sender_set, receiver_set = key.node_sets
                drawn = layer[receiver_set] * counts[hop]
                edges[key] += drawn
                following[sender_set] += drawn
            for name in nodes:
                nodes[name] += following[name]
            layer = following
        return Budget(n_graph=2, n_node={name: count + 1 for name, count in nodes.items()},
                      n_edge=edges)

    def __len__(self) -> int:
        return -(-self.seeds.size // self.batch_size)

    def sample(self, seeds, rng: np.random.Generator | int = 0) -> TypedSample:
        """The padded sample below up to `batch_size` rows `seeds` `[s]` of the seed set.

        Rows outside the seed set and float ids are refused.
        """
        seeds = checks.ids(seeds, node_rows(self.graph.nodes[self.seed_set]), "seeds",
                           most=("batch_size", self.batch_size))
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        mask = np.arange(self.batch_size) < seeds.size
        slot_ids = np.full(self.batch_size, -1, np.int64)
        slot_ids[: seeds.size] = seeds
        seed_times = None
        if self.temporal:
            seed_times = np.zeros(self.batch_size, self.graph.nodes[self.seed_set].time.dtype)
            seed_times[: seeds.size] = np.asarray(self.graph.nodes[self.seed_set].time)[seeds]
        ids = {name: [] for name in self.graph.nodes}
        roots = {name: [] for name in self.graph.nodes}
        ids[self.seed_set].append(slot_ids)
        roots[self.seed_set].append(np.arange(self.batch_size))
        count = {name: 0 for name in self.graph.nodes}
        count[self.seed_set] = self.batch_size
        # The frontier per node set: (ids, valid, roots, local rows).
        frontier = {self.seed_set: (slot_ids, mask, np.arange(self.batch_size),
                                    np.arange(self.batch_size))}
        edge_parts = {key: ([], [], []) for key in self.fanouts}
        for hop in range(self.num_hops):
            following = {name: [] for name in self.graph.nodes}
            for key, counts in self.fanouts.items():
                sender_set, receiver_set = key.node_sets
                if receiver_set not in frontier:
                    continue
                front_ids, valid, front_roots, front_rows = frontier[receiver_set]
                times = None if seed_times is None else seed_times[front_roots]
                positions, drawn = sample_one_hop(self.stores[key], front_ids, valid, counts[hop],
                                                  rng, times, self.strategy)
                drawn = drawn.reshape(-1)
                neighbours = self.stores[key].senders[positions].reshape(-1)[drawn]
                new_roots = np.repeat(front_roots, counts[hop])[drawn]
                rows = np.arange(count[sender_set], count[sender_set] + neighbours.size)
                count[sender_set] += neighbours.size
                edge_ids, senders, receivers = edge_parts[key]
                edge_ids.append(self.stores[key].edge_ids[positions].reshape(-1)[drawn])
                senders.append(rows)
                receivers.append(np.repeat(front_rows, counts[hop])[drawn])
                ids[sender_set].append(neighbours)
                roots[sender_set].append(new_roots)
                following[sender_set].append((neighbours, new_roots, rows))
            frontier = {}
            for name, parts in following.items():
                if parts:
                    frontier[name] = (np.concatenate([p[0] for p in parts]),
                                      np.ones(sum(p[0].size for p in parts), bool),
                                      np.concatenate([p[1] for p in parts]),
                                      np.concatenate([p[2] for p in parts]))
        return self._assemble(ids, roots, edge_parts, mask)

    def _assemble(self, ids, roots, edge_parts, mask) -> TypedSample:
        nodes, row_roots = {}, {}
        for name, node_set in self.graph.nodes.items():
            set_ids = np.concatenate(ids[name]) if ids[name] else np.zeros(0, np.int64)
            nodes[name] = NodeSet(
                n_node=np.array([set_ids.size], np.int32),
                features=_gather(node_set.features, set_ids),
                time=_gather(node_set.time, set_ids),
                global_id=set_ids,
            )
            set_roots = np.concatenate(roots[name]) if roots[name] else np.zeros(0, np.int64)
            row_roots[name] = _padded(set_roots, self.budget.n_node[name])
        edges, edge_rows = {}, {}
        for key in self.fanouts:
            edge_ids, senders, receivers = (np.concatenate(part) if part else np.zeros(0, int)
                                            for part in edge_parts[key])
            source = self.graph.edges[key]
            edges[key] = EdgeSet(
                n_edge=np.array([edge_ids.size], np.int32), senders=senders.astype(np.int32),
                receivers=receivers.astype(np.int32), features=_gather(source.features, edge_ids),
                time=_gather(source.time, edge_ids),
            )
            edge_rows[key] = _padded(edge_ids, self.budget.n_edge[key])
        real = TypedGraph(Context(np.array([1], np.int32)), nodes, edges)
        return TypedSample(pad_to_budget(real, self.budget), mask, row_roots, edge_rows)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The positions in `seeds` that epoch `epoch` visits, in order."""
        if not self.shuffle:
            return np.arange(self.seeds.size)
        return np.random.default_rng((self.seed, epoch)).permutation(self.seeds.size)

    def batch(self, epoch: int, index: int) -> TypedSample:
        """Batch `index` of epoch `epoch`, the same on every call."""
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches.")
        order = self.epoch_order(epoch)[index * self.batch_size : (index + 1) * self.batch_size]
        return self.sample(self.seeds[order], np.random.default_rng((self.seed, epoch, index)))

    def empty(self) -> TypedSample:
        """A sample of the same shapes without seeds."""
        return self.sample(np.zeros(0, np.int64))

    def epoch(self, epoch: int = 0) -> Iterator[TypedSample]:
        """The batches of epoch `epoch`, in order."""
        for index in range(len(self)):
            yield self.batch(epoch, index)
