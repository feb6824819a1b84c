"""Padding typed graphs to a budget, and padding masks per set.

jraph's convention, per set: after the real graphs comes one padding graph that holds every
padding node of every node set (at least one per set) and every padding edge of every edge set,
then empty graphs. A padding edge goes from the first padding node of its sender set to the
first padding node of its receiver set, so it stays inside the padding graph. Padding rows are
zeros (`global_id` -1). `pad_to_budget` and `unpad` run on the host; the masks are jittable
(the padding graph is the last graph holding any node, found from the counts).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.typed_graph.sizes import Budget, sizes_of
from gnkit.typed_graph.types import (
    Context,
    EdgeSet,
    EdgeSetKey,
    NodeSet,
    TypedGraph,
    resolve_edge_key,
)

tree_map = jax.tree_util.tree_map


def _pad_rows(tree, n_rows: int, value=0):
    def pad(leaf):
        leaf = np.asarray(leaf)
        padded = np.full((leaf.shape[0] + n_rows,) + leaf.shape[1:], value, leaf.dtype)
        padded[: leaf.shape[0]] = leaf
        return padded

    return tree_map(pad, tree)


def _pad_counts(counts, padding: int, n_padding_graphs: int) -> np.ndarray:
    counts = np.asarray(counts)
    padded = np.zeros(counts.shape[0] + n_padding_graphs, counts.dtype)
    padded[: counts.shape[0]] = counts
    padded[counts.shape[0]] = padding
    return padded


def pad_to_budget(graph: TypedGraph, budget: Budget) -> TypedGraph:
    """Pads every set of a batch to exactly the sizes of `budget`. Host-only (NumPy).

    Adds `budget.n_graph - G` graphs: the first takes `budget.n_node[s] - N_s` padding nodes of
    every node set `s` and `budget.n_edge[k] - E_k` padding edges of every edge set `k`, each
    from the first padding node of its sender set to the first padding node of its receiver
    set; the rest are empty. Needs at least one padding graph and one padding node per node
    set; raises `ValueError` naming the set that does not fit, and for a budget that misses or
    adds a set.

    Example:
        >>> import numpy as np
        >>> from gnkit import typed_graph as tg
        >>> key = tg.EdgeSetKey("writes", ("author", "paper"))
        >>> graph = tg.TypedGraph(
        ...     tg.Context(np.array([1])),
        ...     {"author": tg.NodeSet(np.array([1])), "paper": tg.NodeSet(np.array([2]))},
        ...     {key: tg.EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))})
        >>> budget = tg.Budget(n_graph=3, n_node={"author": 2, "paper": 4}, n_edge={key: 3})
        >>> padded = tg.pad_to_budget(graph, budget)
        >>> padded.edges[key].senders, padded.edges[key].receivers
        (array([0, 0, 1]), array([0, 1, 2]))
        >>> padded.nodes["paper"].n_node
        array([2, 2, 0])
    """
    budget = budget.resolved(graph)
    sizes = sizes_of(graph)
    problems = sizes.overflow(budget)
    if problems:
        raise ValueError(f"the graph does not fit the budget: {'; '.join(problems)}.")
    pad_graphs = budget.n_graph - sizes.n_graph
    nodes = {}
    for name, node_set in graph.nodes.items():
        pad = budget.n_node[name] - sizes.n_node[name]
        nodes[name] = NodeSet(
            n_node=_pad_counts(node_set.n_node, pad, pad_graphs),
            features=_pad_rows(node_set.features, pad),
            time=_pad_rows(node_set.time, pad),
            global_id=_pad_rows(node_set.global_id, pad, value=-1),
        )
    edges = {}
    for key, edge_set in graph.edges.items():
        pad = budget.n_edge[key] - sizes.n_edge[key]
        sender_set, receiver_set = key.node_sets
        edges[key] = EdgeSet(
            n_edge=_pad_counts(edge_set.n_edge, pad, pad_graphs),
            senders=_pad_rows(edge_set.senders, pad, value=sizes.n_node[sender_set]),
            receivers=_pad_rows(edge_set.receivers, pad, value=sizes.n_node[receiver_set]),
            features=_pad_rows(edge_set.features, pad),
            time=_pad_rows(edge_set.time, pad),
        )
    context = Context(
        n_graph=_pad_rows(graph.context.n_graph, pad_graphs, value=1),
        features=_pad_rows(graph.context.features, pad_graphs),
    )
    return TypedGraph(context=context, nodes=nodes, edges=edges)


def _host_padding_graph(graph: TypedGraph) -> int:
    per_graph = sum(
        (np.asarray(s.n_node) for s in graph.nodes.values()),
        np.zeros(graph.num_graphs, np.int64),
    )
    non_empty = np.flatnonzero(per_graph)
    return int(non_empty[-1]) if non_empty.size else graph.num_graphs - 1


def unpad(graph: TypedGraph) -> TypedGraph:
    """The real graphs of a batch padded by `pad_to_budget` (padding graph and rows dropped).
    Host-only (NumPy)."""
    real = _host_padding_graph(graph)

    def rows(counts) -> int:
        return int(np.sum(np.asarray(counts)[:real]))

    nodes = {}
    for name, node_set in graph.nodes.items():
        keep = rows(node_set.n_node)
        nodes[name] = NodeSet(
            n_node=np.asarray(node_set.n_node)[:real],
            features=tree_map(lambda x, k=keep: np.asarray(x)[:k], node_set.features),
            time=None if node_set.time is None else np.asarray(node_set.time)[:keep],
            global_id=None if node_set.global_id is None else np.asarray(node_set.global_id)[:keep],
        )
    edges = {}
    for key, edge_set in graph.edges.items():
        keep = rows(edge_set.n_edge)
        edges[key] = EdgeSet(
            n_edge=np.asarray(edge_set.n_edge)[:real],
            senders=np.asarray(edge_set.senders)[:keep],
            receivers=np.asarray(edge_set.receivers)[:keep],
            features=tree_map(lambda x, k=keep: np.asarray(x)[:k], edge_set.features),
            time=None if edge_set.time is None else np.asarray(edge_set.time)[:keep],
        )
    context = Context(
        n_graph=np.asarray(graph.context.n_graph)[:real],
        features=tree_map(lambda x: np.asarray(x)[:real], graph.context.features),
    )
    return TypedGraph(context=context, nodes=nodes, edges=edges)


def _padding_graph_index(graph: TypedGraph) -> jax.Array:
    """Index of the padding graph, the last graph holding any node (jittable)."""
    per_graph = sum(jnp.asarray(s.n_node) for s in graph.nodes.values())
    return graph.num_graphs - 1 - jnp.argmax(per_graph[::-1] != 0)


def graph_mask(graph: TypedGraph) -> jax.Array:
    """bool `[G]`: True for the real graphs of a padded batch (those before the padding graph).
    Jittable."""
    return jnp.arange(graph.num_graphs) < _padding_graph_index(graph)


def _rows_before(counts: jax.Array, graph_index: jax.Array, total: int) -> jax.Array:
    real = jnp.sum(jnp.where(jnp.arange(counts.shape[0]) < graph_index, counts, 0))
    return jnp.arange(total) < real


def node_mask(graph: TypedGraph, node_set: str) -> jax.Array:
    """bool `[N_s]`: True for the real nodes of node set `node_set` of a padded batch.
    Jittable."""
    if node_set not in graph.nodes:
        raise KeyError(f"no node set {node_set!r}; node sets: {sorted(graph.nodes)}.")
    return _rows_before(
        jnp.asarray(graph.nodes[node_set].n_node),
        _padding_graph_index(graph),
        graph.num_nodes(node_set),
    )


def edge_mask(graph: TypedGraph, edge_set: EdgeSetKey | str) -> jax.Array:
    """bool `[E_k]`: True for the real edges of an edge set (key or unique name) of a padded
    batch. Jittable."""
    key = resolve_edge_key(graph.edges, edge_set)
    return _rows_before(
        jnp.asarray(graph.edges[key].n_edge), _padding_graph_index(graph), graph.num_edges(key)
    )
