"""The graph pytree, index helpers and validation.

`GraphsTuple` has jraph's fields in jraph's order, so a jraph graph can be passed to any gnkit
function and a gnkit graph to any jraph function. Functions here accept any object with those
seven fields (a `typing.NamedTuple` with `_replace`), not only gnkit's class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

ArrayTree = jax.Array | Iterable["ArrayTree"] | Mapping[Any, "ArrayTree"]


class GraphsTuple(NamedTuple):
    """A batch of graphs in sparse (edge-list) form.

    Fields, for a batch of `G` graphs with `N = sum(n_node)` nodes and `E = sum(n_edge)` edges:

    - nodes: `ArrayTree` of leaves `[N, ...]`, or None.
    - edges: `ArrayTree` of leaves `[E, ...]`, or None.
    - receivers: int `[E]`, the node each edge points to (global index in the batch), or None.
    - senders: int `[E]`, the node each edge comes from, or None.
    - globals: `ArrayTree` of leaves `[G, ...]`, or None.
    - n_node: int `[G]`, nodes per graph.
    - n_edge: int `[G]`, edges per graph.

    Nodes of graph `i` occupy the rows `sum(n_node[:i]) .. sum(n_node[:i+1]) - 1`; edges likewise.
    It is a pytree (a NamedTuple), so it passes through `jit`, `vmap`, `grad` and `tree_map`.
    """

    nodes: ArrayTree | None
    edges: ArrayTree | None
    receivers: jax.Array | None
    senders: jax.Array | None
    globals: ArrayTree | None
    n_node: jax.Array
    n_edge: jax.Array


def num_graphs(graph: GraphsTuple) -> int:
    """The number of graphs `G` (static: the length of `n_node`)."""
    return int(np.shape(graph.n_node)[0])


def num_nodes(graph: GraphsTuple) -> int:
    """The number of node rows `N` (static). Read from features when present, else sum(n_node)."""
    leaves = jax.tree_util.tree_leaves(graph.nodes)
    if leaves:
        return int(np.shape(leaves[0])[0])
    return int(np.sum(np.asarray(graph.n_node)))


def num_edges(graph: GraphsTuple) -> int:
    """The number of edge rows `E` (static). Read from index arrays or features."""
    if graph.senders is not None:
        return int(np.shape(graph.senders)[0])
    if graph.receivers is not None:
        return int(np.shape(graph.receivers)[0])
    leaves = jax.tree_util.tree_leaves(graph.edges)
    if leaves:
        return int(np.shape(leaves[0])[0])
    return int(np.sum(np.asarray(graph.n_edge)))


def node_graph_index(graph: GraphsTuple) -> jax.Array:
    """The graph each node belongs to: int `[N]`, sorted. Jittable (N is static).

    Rows past `sum(n_node)` (which a valid graph has none of) get the last graph index.
    """
    n_graph = num_graphs(graph)
    return jnp.repeat(
        jnp.arange(n_graph), graph.n_node, axis=0, total_repeat_length=num_nodes(graph)
    )


def edge_graph_index(graph: GraphsTuple) -> jax.Array:
    """The graph each edge belongs to: int `[E]`, sorted. Jittable (E is static)."""
    n_graph = num_graphs(graph)
    return jnp.repeat(
        jnp.arange(n_graph), graph.n_edge, axis=0, total_repeat_length=num_edges(graph)
    )


def require(graph: GraphsTuple, *fields: str, block: str) -> None:
    """Raise a clear `ValueError` if any named field of `graph` is None.

    Blocks call this at trace time so a missing field is reported by name, not as an
    `IndexError` or `TypeError` from deep inside a gather.
    """
    missing = [name for name in fields if getattr(graph, name) is None]
    if missing:
        raise ValueError(
            f"{block} needs graph.{', graph.'.join(missing)}, but "
            f"{'it is' if len(missing) == 1 else 'they are'} None. Give the graph those "
            "fields, or switch off the option of the block that uses them."
        )
