"""The fixed-shape output of every sampler, and its assembly from sampled ids. Host NumPy.

The subgraph is one real graph followed by one padding graph (jraph's convention): its first
`S` node rows are the seed slots, in order, then the sampled nodes hop by hop; its edges point
from a sampled neighbour to the node it was sampled for, sorted by receiver (so segment
reductions may pass `indices_are_sorted=True`); padding edges point at the first padding node.
A seed slot without a seed (the tail of the last batch) is an isolated row of zero features with
`global_id` -1 and `seed_mask` False.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from jax.tree_util import tree_map

from gnkit.graph import GraphsTuple
from gnkit.sampling.buffers import PaddedBuffers


class SampledSubgraph(NamedTuple):
    """A sampled subgraph padded to a fixed budget, with its rows' ids in the source graph.

    For `S` seed slots, a node budget `N` and an edge budget `E` (all static). A pytree (a
    NamedTuple), so it passes through `jit` whole.

    Attributes:
      graph: `GraphsTuple` with `N` node rows and `E` edge rows in 2 graphs (real, padding);
        node and edge features gathered from the source graph (zeros in padding rows),
        read-only (a sampler reuses their memory once they are released; copy to modify).
      global_id: int64 `[N]`, each row's node in the source graph; -1 for padding rows and empty
        seed slots.
      edge_id: int64 `[E]`, each edge row's edge in the source graph; -1 for padding.
      seed_mask: bool `[S]`, True for the seed slots that hold a seed.
      root: int64 `[N]`, the seed slot each row was sampled for (in a shared subgraph, the first
        one that reached it); -1 for padding rows.
    """

    graph: GraphsTuple
    global_id: np.ndarray
    edge_id: np.ndarray
    seed_mask: np.ndarray
    root: np.ndarray


def _gather_rows(tree, ids: np.ndarray, n_rows: int, buffers: PaddedBuffers):
    """Rows `ids` `[n]` of every leaf of `tree` (zeros where `ids` is -1), then zero rows up to
    `n_rows`, as read-only arrays from `buffers`."""
    if tree is None:
        return None
    return tree_map(lambda leaf: buffers.gather(np.asarray(leaf), ids, n_rows), tree)


def _padded(values: np.ndarray, length: int, fill: int) -> np.ndarray:
    out = np.full(length, fill, np.int64)
    out[: values.shape[0]] = values
    return out


def assemble(
    source: GraphsTuple,
    node_ids: np.ndarray,
    roots: np.ndarray,
    edge_ids: np.ndarray,
    senders: np.ndarray,
    receivers: np.ndarray,
    seed_mask: np.ndarray,
    node_budget: int,
    edge_budget: int,
    buffers: PaddedBuffers | None = None,
) -> SampledSubgraph:
    """Pads the sampled rows to the budgets and gathers their features from `source`.

    Args:
      source: the graph sampled from; its `nodes` / `edges` trees are gathered.
      node_ids: int `[n]` global ids of the real rows (seed slots first; -1 for empty slots).
      roots: int `[n]` the seed slot of each real row.
      edge_ids: int `[e]` global ids of the real edges.
      senders: int `[e]` local sender rows.
      receivers: int `[e]` local receiver rows, nondecreasing.
      seed_mask: bool `[S]`.
      node_budget: `N`, more than `n` (one padding node at least).
      edge_budget: `E`, at least `e`.
      buffers: the sampler's `PaddedBuffers`, whose released arrays the features reuse;
        None for new ones.

    Returns:
      The `SampledSubgraph`.
    """
    n_real, e_real = node_ids.shape[0], edge_ids.shape[0]
    if n_real >= node_budget or e_real > edge_budget:
        raise RuntimeError(
            f"a sample of {n_real} nodes and {e_real} edges does not fit the budget of "
            f"{node_budget} nodes (one kept for padding) and {edge_budget} edges."
        )
    buffers = PaddedBuffers() if buffers is None else buffers
    global_id = _padded(node_ids, node_budget, -1)
    edge_id = _padded(edge_ids, edge_budget, -1)
    graph = GraphsTuple(
        nodes=_gather_rows(source.nodes, node_ids, node_budget, buffers),
        edges=_gather_rows(source.edges, edge_ids, edge_budget, buffers),
        senders=_padded(senders, edge_budget, n_real).astype(np.int32),
        receivers=_padded(receivers, edge_budget, n_real).astype(np.int32),
        globals=None,
        n_node=np.array([n_real, node_budget - n_real], np.int32),
        n_edge=np.array([e_real, edge_budget - e_real], np.int32),
    )
    return SampledSubgraph(
        graph=graph,
        global_id=global_id,
        edge_id=edge_id,
        seed_mask=np.asarray(seed_mask, bool),
        root=_padded(roots, node_budget, -1),
    )
