"""Multi-hop expansion from seed slots: disjoint trees per seed, or one shared subgraph.

Both return the pieces `subgraph.assemble` pads: global ids and seed slots of the real rows
(seed slots first, then hop by hop), and the sampled edges with local sender / receiver rows,
receivers nondecreasing. Host NumPy, vectorised over each hop's frontier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gnkit.sampling.csr import CSRGraph, row_positions, run_positions
from gnkit.sampling.one_hop import Strategy, sample_one_hop


class Expansion(NamedTuple):
    """Real rows and edges of a sample, before padding (see `subgraph.assemble`).

    For `n` real rows and `e` sampled edges.

    Attributes:
      node_ids: int64 `[n]`, each row's node in the source graph: the `S` seed slots first
        (-1 for an empty slot), then the sampled rows hop by hop.
      roots: int64 `[n]`, the seed slot each row was sampled for (in a shared subgraph, the
        first one that reached it).
      edge_ids: int64 `[e]`, each sampled edge's row in the source graph.
      senders: int64 `[e]`, local row of each edge's sender (the sampled neighbour).
      receivers: int64 `[e]`, local row of each edge's receiver, nondecreasing.
    """

    node_ids: np.ndarray
    roots: np.ndarray
    edge_ids: np.ndarray
    senders: np.ndarray
    receivers: np.ndarray


def pair_keys(first: np.ndarray, second: np.ndarray, num_nodes: int) -> np.ndarray:
    """One int64 key per unordered node pair: `min * num_nodes + max`, `[n]`."""
    first, second = np.asarray(first, np.int64), np.asarray(second, np.int64)
    return np.minimum(first, second) * num_nodes + np.maximum(first, second)


def pair_positions(store: CSRGraph, keys: np.ndarray | None) -> np.ndarray | None:
    """The positions in `store` of every edge joining a pair of `keys`, in either direction.

    Args:
      store: the incoming-edge store.
      keys: sorted int64 `[m]` keys (`pair_keys`), or None.

    Returns:
      Sorted int64 positions into `store.senders` / `store.edge_ids`, or None for None.
    """
    if keys is None:
        return None
    n = store.num_nodes
    rows = np.concatenate([keys % n, keys // n])
    if store.is_temporal:  # rows sorted by time: scan every row of a pair's ends
        ends = np.unique(rows)
        positions, owner = row_positions(store.indptr, ends)
        return positions[np.isin(pair_keys(store.senders[positions], ends[owner], n), keys)]
    # Rows sorted by sender: the edges from one node into a row are one run of equal keys;
    # distinct sorted keys give disjoint runs in ascending order.
    wanted = np.unique(rows * n + np.concatenate([keys // n, keys % n]))
    starts = np.searchsorted(store.row_sender_keys, wanted, "left")
    stops = np.searchsorted(store.row_sender_keys, wanted, "right")
    return run_positions(starts, stops)[0]


def _hop(store, ids, valid, times, fanout, rng, strategy, excluded):
    """The drawn neighbours of `ids` `[n]` and their edge ids, `[d]` each in slot order (row
    by row), and the flat mask `[n * fanout]` of the slots that drew one."""
    positions, mask = sample_one_hop(store, ids, valid, fanout, rng, times, strategy, excluded)
    mask = mask.reshape(-1)
    drawn = positions.reshape(-1)[mask]
    return store.senders[drawn], store.edge_ids[drawn], mask


def expand_disjoint(
    store: CSRGraph,
    seeds: np.ndarray,
    seed_mask: np.ndarray,
    fanouts: Sequence[int],
    rng: np.random.Generator,
    seed_times: np.ndarray | None = None,
    strategy: Strategy = "uniform",
    excluded_pairs: np.ndarray | None = None,
) -> Expansion:
    """A separate sampled tree below each seed slot; every row descends from one seed.

    Args:
      store: the incoming-edge store.
      seeds: int `[S]` seed ids (ignored where `seed_mask` is False).
      seed_mask: bool `[S]`.
      fanouts: edges drawn per node at each hop.
      rng: the generator of the draws.
      seed_times: `[S]` or None; with it, every hop draws only edges usable at its seed's time.
      strategy: "uniform" or "last" (see `sample_one_hop`).
      excluded_pairs: sorted int64 keys (`pair_keys`) of node pairs whose edges are never drawn,
        in either direction (taken out of each row before its draw); or None.

    Returns:
      The `Expansion`: `S` seed rows, then the sampled rows of hop 1, hop 2, ...
    """
    n_seed = seeds.shape[0]
    excluded = pair_positions(store, excluded_pairs)
    layer_ids, layer_valid = np.where(seed_mask, seeds, -1).astype(np.int64), seed_mask.copy()
    layer_roots, layer_times = np.arange(n_seed), seed_times
    node_ids, roots = [layer_ids], [layer_roots]
    edge_ids, senders, receivers = [], [], []
    layer_rows, next_row = np.arange(n_seed), n_seed
    for fanout in fanouts:
        layer_ids, hop_edges, mask = _hop(
            store, layer_ids, layer_valid, layer_times, fanout, rng, strategy, excluded
        )
        count = layer_ids.size
        rows = np.arange(next_row, next_row + count)
        edge_ids.append(hop_edges)
        senders.append(rows)
        receivers.append(np.repeat(layer_rows, fanout)[mask])
        layer_roots = np.repeat(layer_roots, fanout)[mask]
        if layer_times is not None:
            layer_times = np.repeat(layer_times, fanout)[mask]
        layer_valid = np.ones(count, bool)
        layer_rows = rows
        node_ids.append(layer_ids)
        roots.append(layer_roots)
        next_row += count
    return Expansion(
        node_ids=np.concatenate(node_ids),
        roots=np.concatenate(roots),
        edge_ids=np.concatenate(edge_ids) if edge_ids else np.zeros(0, np.int64),
        senders=np.concatenate(senders) if senders else np.zeros(0, np.int64),
        receivers=np.concatenate(receivers) if receivers else np.zeros(0, np.int64),
    )


def _first_occurrences(local: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The positions in `ids` `[m]` of each id's first occurrence, ascending: int64 `[u]`.

    `local` `[N]` is -1 at every id of `ids` on entry and on return; in between each holds the
    least position it occurs at, as `position - m - 1` (below -1), through one `np.minimum.at`.
    O(m), where a stable sort would be O(m log m).
    """
    positions = np.arange(ids.size) - (ids.size + 1)
    np.minimum.at(local, ids, positions)
    first = np.flatnonzero(local[ids] == positions)
    local[ids] = -1
    return first


def expand_shared(
    store: CSRGraph,
    seeds: np.ndarray,
    seed_mask: np.ndarray,
    fanouts: Sequence[int],
    rng: np.random.Generator,
    max_nodes: int,
    max_edges: int,
    excluded_pairs: np.ndarray | None = None,
) -> Expansion:
    """One deduplicated subgraph around all seeds, cut to `max_nodes` rows and `max_edges` edges.

    Each node appears once and is expanded once, at the hop that first reached it; its sampled
    edges join it to neighbours already present or added at that hop. Past the budgets the
    sample is cut, later hops first: new nodes beyond `max_nodes` are left out with their edges,
    and edges beyond `max_edges`. The valid seeds must be distinct.

    Args:
      store: the incoming-edge store.
      seeds: int `[S]` seed ids (ignored where `seed_mask` is False).
      seed_mask: bool `[S]`.
      fanouts: edges drawn per node at each hop.
      rng: the generator of the draws.
      max_nodes: the most real rows (seed slots included).
      max_edges: the most real edges.
      excluded_pairs: sorted int64 keys (`pair_keys`) of node pairs whose edges are never drawn,
        in either direction (taken out of each row before its draw); or None.

    Returns:
      The `Expansion`.
    """
    n_seed = seeds.shape[0]
    excluded = pair_positions(store, excluded_pairs)
    local = np.full(store.num_nodes, -1, np.int64)
    seed_ids = np.where(seed_mask, seeds, -1).astype(np.int64)
    seed_rows = np.flatnonzero(seed_mask)
    local[seed_ids[seed_rows]] = seed_rows
    if np.any(local[seed_ids[seed_rows]] != seed_rows):  # a repeated id kept one of its rows
        raise ValueError("shared sampling needs distinct seeds; got repeated seed ids.")
    node_ids, roots = [seed_ids], [np.arange(n_seed)]
    edge_ids, senders, receivers = [], [], []
    frontier_rows = np.flatnonzero(seed_mask)
    frontier_ids, frontier_roots = seed_ids[frontier_rows], frontier_rows
    next_row, n_edges = n_seed, 0
    for fanout in fanouts:
        if frontier_rows.size == 0:
            break
        neighbours, hop_edges, mask = _hop(
            store, frontier_ids, np.ones(frontier_rows.size, bool), None, fanout, rng,
            "uniform", excluded,
        )
        hop_receivers = np.repeat(frontier_rows, fanout)[mask]
        hop_roots = np.repeat(frontier_roots, fanout)[mask]
        unseen = local[neighbours] < 0
        candidates = neighbours[unseen]
        first = _first_occurrences(local, candidates)[: max(max_nodes - next_row, 0)]
        new_ids = candidates[first]
        local[new_ids] = np.arange(next_row, next_row + new_ids.size)
        hop_senders = local[neighbours]
        kept = np.flatnonzero(hop_senders >= 0)[: max(max_edges - n_edges, 0)]
        edge_ids.append(hop_edges[kept])
        senders.append(hop_senders[kept])
        receivers.append(hop_receivers[kept])
        node_ids.append(new_ids)
        roots.append(hop_roots[unseen][first])
        frontier_rows = np.arange(next_row, next_row + new_ids.size)
        frontier_ids, frontier_roots = new_ids, roots[-1]
        next_row += new_ids.size
        n_edges += kept.size
    return Expansion(
        node_ids=np.concatenate(node_ids),
        roots=np.concatenate(roots),
        edge_ids=np.concatenate(edge_ids) if edge_ids else np.zeros(0, np.int64),
        senders=np.concatenate(senders) if senders else np.zeros(0, np.int64),
        receivers=np.concatenate(receivers) if receivers else np.zeros(0, np.int64),
    )
