"""One hop of neighbour sampling: up to `fanout` incoming edges of each node, vectorised.

Without replacement: a node with at most `fanout` usable edges keeps all of them; a node with
more gets `fanout` distinct ones, drawn uniformly with Floyd's algorithm run over all rows at
once (`fanout` draws per row, whatever the degree), or its `fanout` most recent ones ("last").
With times, the usable edges of a row are the prefix up to the row's time; excluded edges are
taken out of a row before the draw, so a row still gets `min(fanout, usable edges left)`.
Host NumPy.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from gnkit.sampling.csr import CSRGraph

Strategy = Literal["uniform", "last"]
STRATEGIES: tuple[str, ...] = ("uniform", "last")


def _floyd_offsets(degree: np.ndarray, fanout: int, rng: np.random.Generator) -> np.ndarray:
    """`[n, fanout]` distinct uniform offsets in `[0, degree)` per row (`degree >= fanout`).

    Floyd's algorithm: step `j` draws uniformly in `[0, degree - fanout + j]` and takes the
    bound itself when the draw is already chosen. All `n * fanout` draws come from one
    `rng.integers` call (exact bounded integers, no float rounding); the steps only resolve
    the repeats.
    """
    upper = (degree - fanout)[:, None] + np.arange(fanout)
    chosen = rng.integers(0, upper + 1)
    for j in range(1, fanout):
        taken = (chosen[:, :j] == chosen[:, j : j + 1]).any(axis=1)
        chosen[taken, j] = upper[taken, j]
    return chosen


def _skip_excluded(offsets, start, first, count, excluded):
    """Maps offsets among a row's edges that are left (`[n, fanout]`) to offsets in the row.

    Row `i` excludes the sorted positions `excluded[first[i] : first[i] + count[i]]`. The
    `o`-th edge left is at offset `o + #{j : skipped_j - j <= o}`, for the row's excluded
    offsets `skipped_0 < skipped_1 < ...`; one search over all rows' lists, each row start
    listed once (rows of one node share the list: a longer usable prefix only adds excluded
    edges past every offset drawn in the shorter one).
    """
    rows = np.flatnonzero(count > 0)
    firsts, inverse = np.unique(first[rows], return_inverse=True)
    lengths = np.zeros(firsts.size, np.int64)
    np.maximum.at(lengths, inverse, count[rows])
    row_starts = np.zeros(firsts.size, np.int64)
    row_starts[inverse] = start[rows]
    owner = np.repeat(np.arange(firsts.size), lengths)
    list_starts = np.cumsum(lengths) - lengths
    rank = np.arange(owner.size) - list_starts[owner]
    adjusted = excluded[firsts[owner] + rank] - row_starts[owner] - rank
    span = int(max(offsets[rows].max(), adjusted.max())) + 1
    found = np.searchsorted(owner * span + adjusted,
                            inverse[:, None] * span + offsets[rows], side="right")
    offsets[rows] += found - list_starts[inverse][:, None]
    return offsets


def sample_one_hop(
    store: CSRGraph,
    nodes: np.ndarray,
    valid: np.ndarray,
    fanout: int,
    rng: np.random.Generator,
    times: np.ndarray | None = None,
    strategy: Strategy = "uniform",
    excluded: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Samples up to `fanout` incoming edges of each of `nodes`. Host NumPy.

    Args:
      store: the graph's incoming-edge store.
      nodes: int `[n]` node ids; rows where `valid` is False are ignored.
      valid: bool `[n]`.
      fanout: edges to draw per node (at most; fewer where fewer are usable).
      rng: the NumPy generator the draws come from.
      times: `[n]` or None; with it, only edges usable at `times[i]` (the store's usable time
        `<=` it) are drawn for node `i`.
      strategy: "uniform" (distinct edges, uniformly) or "last" (the most recent ones; needs
        times).
      excluded: sorted int64 positions into `store.senders` never drawn, or None; a row draws
        from its usable edges less these.

    Returns:
      `(positions, mask)`: int64 `[n, fanout]` positions into `store.senders` /
      `store.edge_ids`, and bool `[n, fanout]`, True where a position holds a sampled edge.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}; got {strategy!r}.")
    nodes = np.where(valid, nodes, 0).astype(np.int64)
    start = store.indptr[nodes]
    if times is None:
        degree = store.indptr[nodes + 1] - start
    else:
        degree = store.usable_degree(nodes, times)
    degree = np.where(valid, degree, 0)
    count = None
    if excluded is not None and excluded.size:
        first = np.searchsorted(excluded, start)
        count = np.searchsorted(excluded, start + degree) - first
        degree = degree - count
    slots = np.arange(fanout)
    mask = slots[None, :] < degree[:, None]
    if strategy == "last":
        offsets = np.maximum(degree - fanout, 0)[:, None] + slots[None, :]
    else:
        offsets = np.broadcast_to(slots, (nodes.shape[0], fanout)).copy()
        large = degree > fanout
        if large.any():
            offsets[large] = _floyd_offsets(degree[large], fanout, rng)
    if count is not None and count.any():
        offsets = _skip_excluded(offsets, start, first, count, excluded)
    positions = np.where(mask, start[:, None] + offsets, 0)
    return positions, mask
