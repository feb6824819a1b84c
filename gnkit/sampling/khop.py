"""`khop_subgraph`: the induced subgraph of seeds' k-hop neighbourhood, padded (ShaDow-style).

ShaDow-GNN (Zeng et al. 2021) runs a deep model on a shallow subgraph around each target: the
nodes within `k` hops and every edge among them. Host NumPy.
"""

from __future__ import annotations

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.sampling import _checks as checks
from gnkit.sampling.csr import CSRGraph, row_positions
from gnkit.sampling.subgraph import SampledSubgraph, assemble


def khop_subgraph(
    graph: GraphsTuple,
    seeds,
    k: int,
    max_nodes: int,
    max_edges: int,
    store: CSRGraph | None = None,
) -> SampledSubgraph:
    """The nodes within `k` hops of `seeds` and every edge among them, padded. Host NumPy.

    Hops follow edges backwards (from a node to its senders), so the subgraph holds every node
    whose messages reach a seed within `k` layers. Rows: the seeds first, then the nodes in
    breadth-first order (nearer hops first), cut to `max_nodes` real rows; then the induced
    edges sorted by receiver, cut to `max_edges`. `max_nodes + 1` node rows and `max_edges`
    edge rows whatever the seeds.

    Args:
      graph: the source graph; its features are gathered.
      seeds: int `[S]` distinct node ids in `[0, N)`, `S <= max_nodes`.
      k: hops, `>= 0`.
      max_nodes: the most real rows.
      max_edges: the most real edges.
      store: a prebuilt `CSRGraph.from_graph(graph)` to reuse.

    Returns:
      The `SampledSubgraph` (`root`: the seed slot whose search first reached each row).
    """
    store = store or CSRGraph.from_graph(graph)
    k = checks.count(k, "k", 0)
    max_nodes = checks.count(max_nodes, "max_nodes", 1)
    max_edges = checks.count(max_edges, "max_edges", 0)
    seeds = checks.ids(seeds, store.num_nodes, "seeds", most=("max_nodes", max_nodes))
    unique, counts = np.unique(seeds, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"seeds must be distinct ids; got {unique[counts > 1][0]} more than once.")
    local = np.full(store.num_nodes, -1, np.int64)
    local[seeds] = np.arange(seeds.size)
    node_ids, roots = [seeds], [np.arange(seeds.size)]
    frontier, frontier_roots, n_rows = seeds, roots[0], seeds.size
    for _ in range(k):
        if frontier.size == 0 or n_rows >= max_nodes:
            break
        positions, owner = row_positions(store.indptr, frontier)
        neighbours = store.senders[positions]
        unseen = local[neighbours] < 0
        _, first = np.unique(neighbours[unseen], return_index=True)
        first = np.sort(first)[: max_nodes - n_rows]
        frontier = neighbours[unseen][first]
        frontier_roots = frontier_roots[owner[unseen][first]]
        local[frontier] = np.arange(n_rows, n_rows + frontier.size)
        node_ids.append(frontier)
        roots.append(frontier_roots)
        n_rows += frontier.size
    node_ids = np.concatenate(node_ids)
    positions, owner = row_positions(store.indptr, node_ids)
    senders = local[store.senders[positions]]
    inside = np.flatnonzero(senders >= 0)[:max_edges]
    seed_mask = np.ones(seeds.size, bool)
    return assemble(graph, node_ids, np.concatenate(roots), store.edge_ids[positions[inside]],
                    senders[inside], owner[inside], seed_mask, max_nodes + 1, max_edges)
