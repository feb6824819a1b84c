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

    For a batch of `G` graphs with `N = sum(n_node)` nodes and `E = sum(n_edge)` edges, the nodes
    of graph `i` occupy the rows `sum(n_node[:i]) .. sum(n_node[:i+1]) - 1`; edges likewise. It is
    a pytree (a NamedTuple), so it passes through `jit`, `vmap`, `grad` and `tree_map`.

    Attributes:
      nodes: `ArrayTree` of leaves `[N, ...]`, or None.
      edges: `ArrayTree` of leaves `[E, ...]`, or None.
      receivers: int `[E]`, the node each edge points to (global index in the batch), or None.
      senders: int `[E]`, the node each edge comes from, or None.
      globals: `ArrayTree` of leaves `[G, ...]`, or None.
      n_node: int `[G]`, nodes per graph.
      n_edge: int `[G]`, edges per graph.

    Example:
        A batch of two graphs: a 2-node graph with one edge 0 -> 1, and a 1-node graph with a
        self-edge (node 2, the first node of the second graph):

        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.array([[1.0], [2.0], [3.0]]), edges=np.array([[0.5], [0.1]]),
        ...     senders=np.array([0, 2]), receivers=np.array([1, 2]), globals=None,
        ...     n_node=np.array([2, 1]), n_edge=np.array([1, 1]))
        >>> gn.num_graphs(graph), gn.num_nodes(graph), gn.num_edges(graph)
        (2, 3, 2)
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

    Example:
        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(nodes=np.zeros((5, 1)), edges=None, senders=None,
        ...     receivers=None, globals=None, n_node=np.array([2, 3]), n_edge=np.array([0, 0]))
        >>> print(gn.node_graph_index(graph))
        [0 0 1 1 1]
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


_INDEX_FIELDS = {"receivers": "[n_edge]", "senders": "[n_edge]", "n_node": "[n_graph]",
                  "n_edge": "[n_graph]"}
_FEATURE_FIELDS = {
    "nodes": "[N, ...], one row per node",
    "edges": "[E, ...], one row per edge",
    "globals": "[G, ...], one row per graph",
}


def _is_array(value) -> bool:
    return isinstance(value, np.ndarray | np.generic | jax.Array)


def _has_graph_fields(value) -> bool:
    return all(hasattr(value, name) for name in GraphsTuple._fields)


def _check_one_graph(graph, block: str) -> None:
    """Raise `TypeError` unless `graph` has the seven fields of a `GraphsTuple`."""
    if _has_graph_fields(graph):
        return
    kind = type(graph).__name__
    if isinstance(graph, list | tuple) and graph and all(map(_has_graph_fields, graph)):
        raise TypeError(
            f"{block} got a {kind} of {len(graph)} GraphsTuples; expected one GraphsTuple. "
            "Batch them into one with gnkit.batch_np first."
        )
    raise TypeError(f"{block} expected a GraphsTuple; got a {kind}.")


def _check_field_types(graph: GraphsTuple, block: str) -> None:
    """Raise `TypeError` if a field holds something other than arrays (a list, a Python scalar).

    Lists are rejected, not converted: a nested list is itself a pytree (of scalars), so a
    conversion would have to guess what was meant.
    """
    for name, shape in _INDEX_FIELDS.items():
        value = getattr(graph, name)
        if value is not None and not _is_array(value):
            raise TypeError(
                f"{block} got graph.{name} as a {type(value).__name__}; expected an integer array "
                f"{shape} (np.ndarray or jax.Array). Convert it with np.asarray."
            )
    for name, shape in _FEATURE_FIELDS.items():
        for path, leaf in jax.tree_util.tree_leaves_with_path(getattr(graph, name)):
            if not _is_array(leaf):
                raise TypeError(
                    f"{block} got graph.{name}{jax.tree_util.keystr(path)} as a "
                    f"{type(leaf).__name__}; expected an array {shape}. A nested Python list is "
                    "read as a tree of scalars: convert it with np.asarray."
                )


def _check_leading_axes(graph: GraphsTuple, fields: tuple[str, ...], block: str) -> None:
    """Raise `ValueError` if a leaf of a named feature field is a scalar (it has no row axis)."""
    for name in fields:
        if name not in _FEATURE_FIELDS:
            continue
        for path, leaf in jax.tree_util.tree_leaves_with_path(getattr(graph, name)):
            if np.ndim(leaf) == 0:
                raise ValueError(
                    f"{block} got graph.{name}{jax.tree_util.keystr(path)} as a scalar; expected "
                    f"an array {_FEATURE_FIELDS[name]}. A nested Python list is read as a tree of "
                    "scalars: convert it with np.asarray."
                )


def require(graph: GraphsTuple, *fields: str, block: str) -> None:
    """Raise a clear error unless `graph` is one graph of arrays with the named fields set.

    Every public block calls this when it receives its graph (at trace time, so it costs nothing
    inside a compiled function). It raises, naming `block` and the field:

    - `TypeError` if `graph` is not a `GraphsTuple` (for a list of graphs it says to batch them),
      if an index field (`senders`, `receivers`, `n_node`, `n_edge`) is not an array, or if a
      leaf of a feature field (`nodes`, `edges`, `globals`) is not an array (a Python list or
      scalar);
    - `ValueError` if a named field is None, or a leaf of a named feature field is a scalar
      instead of an array with one row per node, edge or graph.
    """
    _check_one_graph(graph, block)
    missing = [name for name in fields if getattr(graph, name) is None]
    if missing:
        raise ValueError(
            f"{block} needs graph.{', graph.'.join(missing)}, but "
            f"{'it is' if len(missing) == 1 else 'they are'} None. Give the graph those "
            "fields, or switch off the option of the block that uses them."
        )
    _check_field_types(graph, block)
    _check_leading_axes(graph, fields, block)
