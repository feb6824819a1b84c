"""Validation of a `TypedGraph`: on the host (`validate`) and inside `jit` (`checked`).

As `gnkit.validate` for a `GraphsTuple`: both paths run the same checks and raise the same
messages, which name the set, the field and the bad value. Structure, shape and dtype problems
(a key naming a missing node set, mismatched leading sizes, float indices) raise `ValueError`
at trace time; value problems (indices out of range of their own node set, counts that do not
sum to the rows, edges leaving their graph) are checked with NumPy on the host and with
`jax.experimental.checkify` inside a compiled function.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gnkit._checked_mode import checked_call, device_expect, host_expect, repeat
from gnkit.typed_graph.types import EdgeSetKey, TypedGraph, node_rows

tree_map = jax.tree_util.tree_map


def _node_field(name: str, field: str) -> str:
    return f"nodes[{name!r}].{field}"


def _edge_field(key: EdgeSetKey, field: str) -> str:
    return f"edges[{key.name!r}, {key.node_sets}].{field}"


def _dtype(array):
    """The dtype as given (NumPy int64 stays int64, as `jnp.asarray` would not keep it)."""
    return array.dtype if hasattr(array, "dtype") else np.asarray(array).dtype


def _check_counts(where: str, counts, n_graph: int) -> None:
    if counts is None:
        raise ValueError(f"{where} is None; expected an integer array [n_graph].")
    if np.ndim(counts) != 1 or not jnp.issubdtype(_dtype(counts), jnp.integer):
        raise ValueError(
            f"{where} must be 1-D integer [n_graph]; found shape {np.shape(counts)}, dtype "
            f"{_dtype(counts)}."
        )
    if np.shape(counts)[0] != n_graph:
        raise ValueError(
            f"{where} has {np.shape(counts)[0]} entries; expected {n_graph}, one per graph "
            "(len(context.n_graph))."
        )


def _check_rows(where: str, tree, rows: int, rows_name: str) -> None:
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] != rows:
            raise ValueError(
                f"{where}{jax.tree_util.keystr(path)} has shape {np.shape(leaf)}; expected "
                f"{rows} rows ({rows_name})."
            )


def _check_index_array(where: str, array, rows: int | None = None, rows_name: str = "") -> None:
    if np.ndim(array) != 1 or not jnp.issubdtype(_dtype(array), jnp.integer):
        raise ValueError(
            f"{where} must be a 1-D integer array; found shape {np.shape(array)}, dtype "
            f"{_dtype(array)}."
        )
    if rows is not None and np.shape(array)[0] != rows:
        raise ValueError(
            f"{where} has {np.shape(array)[0]} entries; expected {rows} ({rows_name})."
        )


def _check_static(graph: TypedGraph) -> None:
    """Structure, shapes and dtypes: everything that does not depend on array values."""
    if not isinstance(graph, TypedGraph):
        raise TypeError(f"expected a TypedGraph; got a {type(graph).__name__}.")
    n_graph = np.shape(graph.context.n_graph)
    if len(n_graph) != 1:
        raise ValueError(f"context.n_graph must be 1-D [n_graph]; found shape {n_graph}.")
    n_graph = n_graph[0]
    _check_rows("context.features", graph.context.features, n_graph, "one row per graph")
    for name, node_set in graph.nodes.items():
        _check_counts(_node_field(name, "n_node"), node_set.n_node, n_graph)
        rows = node_rows(node_set)
        _check_rows(_node_field(name, "features"), node_set.features, rows, "the set's rows")
        for field in ("time", "global_id"):
            value = getattr(node_set, field)
            if value is not None:
                _check_index_array(_node_field(name, field), value, rows, "the set's rows")
        if node_set.time is not None and _dtype(node_set.time) != np.int32:
            raise ValueError(
                f"{_node_field(name, 'time')} must be int32; found {node_set.time.dtype}."
            )
    for key, edge_set in graph.edges.items():
        if not isinstance(key, EdgeSetKey):
            raise ValueError(f"edges key {key!r} is not an EdgeSetKey(name, (sender, receiver)).")
        for role, node_set in zip(("sender", "receiver"), key.node_sets, strict=True):
            if node_set not in graph.nodes:
                raise ValueError(
                    f"edges key {key} names {role} node set {node_set!r}, which is missing; "
                    f"node sets: {sorted(graph.nodes)}."
                )
        _check_counts(_edge_field(key, "n_edge"), edge_set.n_edge, n_graph)
        _check_index_array(_edge_field(key, "senders"), edge_set.senders)
        rows = np.shape(edge_set.senders)[0]
        _check_index_array(_edge_field(key, "receivers"), edge_set.receivers, rows, "len(senders)")
        _check_rows(_edge_field(key, "features"), edge_set.features, rows, "len(senders)")
        if edge_set.time is not None:
            _check_index_array(_edge_field(key, "time"), edge_set.time, rows, "len(senders)")
            if _dtype(edge_set.time) != np.int32:
                raise ValueError(
                    f"{_edge_field(key, 'time')} must be int32; found {edge_set.time.dtype}."
                )


def _check_values(graph: TypedGraph, xp, expect: Callable) -> None:
    """Value checks, written once for NumPy (host) and jax.numpy with checkify (device)."""
    offsets = {}
    for name, node_set in graph.nodes.items():
        n_node = xp.asarray(node_set.n_node)
        where = _node_field(name, "n_node")
        expect(xp.all(n_node >= 0), f"{where} must be >= 0; found minimum {{}}.",
               xp.min(n_node, initial=0))
        rows = node_rows(node_set)
        expect(xp.sum(n_node) == rows,
               f"sum({where}) must equal the set's {rows} rows; found {{}}.", xp.sum(n_node))
        offsets[name] = xp.concatenate([xp.zeros(1, n_node.dtype), xp.cumsum(n_node)])
    for key, edge_set in graph.edges.items():
        n_edge = xp.asarray(edge_set.n_edge)
        rows = np.shape(edge_set.senders)[0]
        where = _edge_field(key, "n_edge")
        expect(xp.all(n_edge >= 0), f"{where} must be >= 0; found minimum {{}}.",
               xp.min(n_edge, initial=0))
        expect(xp.sum(n_edge) == rows,
               f"sum({where}) must equal the set's {rows} edges; found {{}}.", xp.sum(n_edge))
        edge_graph = repeat(xp, xp.arange(n_edge.shape[0]), n_edge, rows)
        for field, node_set in zip(("senders", "receivers"), key.node_sets, strict=True):
            indices = xp.asarray(getattr(edge_set, field))
            if rows == 0:
                continue
            size = graph.num_nodes(node_set)
            outside = (indices < 0) | (indices >= size)
            first = xp.argmax(outside)
            expect(
                ~xp.any(outside),
                f"{_edge_field(key, field)}[{{}}] = {{}} is out of range of node set "
                f"{node_set!r} ({size} nodes).",
                first, indices[first],
            )
            start = offsets[node_set][edge_graph]
            stop = offsets[node_set][edge_graph + 1]
            leaves = (indices < start) | (indices >= stop)
            first = xp.argmax(leaves)
            expect(
                ~xp.any(leaves),
                f"{_edge_field(key, field)}[{{}}] = {{}} lies outside graph {{}} of its edge "
                f"(rows {{}}..{{}} of node set {node_set!r}); an edge must stay in its graph.",
                first, indices[first], edge_graph[first], start[first], stop[first] - 1,
            )


def validate(graph: TypedGraph) -> TypedGraph:
    """Check a typed graph on the host and return it unchanged; raise if it is malformed.

    Checks, naming the set, the field and the bad value: every edge set key is an `EdgeSetKey`
    whose sender and receiver sets exist; counts are 1-D integer `[G]` (one per graph),
    non-negative, and sum to their set's rows; feature leaves, `time` and `global_id` have one
    row per element of their set (`time` int32); senders and receivers are integer, of equal
    length, within their own node set, and inside the graph of their edge. `TypeError` for
    something that is not a `TypedGraph`, `ValueError` for the rest. Host-only (NumPy).

    Example:
        >>> import numpy as np
        >>> from gnkit import typed_graph as tg
        >>> graph = tg.TypedGraph(
        ...     tg.Context(np.array([1])),
        ...     {"author": tg.NodeSet(np.array([1])), "paper": tg.NodeSet(np.array([2]))},
        ...     {tg.EdgeSetKey("writes", ("author", "paper")):
        ...         tg.EdgeSet(np.array([1]), np.array([0]), np.array([2]))})
        >>> tg.validate(graph)
        Traceback (most recent call last):
        ...
        ValueError: edges['writes', ('author', 'paper')].receivers[0] = 2 is out of range of
        node set 'paper' (2 nodes).
    """
    _check_static(graph)
    _check_values(tree_map(np.asarray, graph), np, host_expect)
    return graph


def check_typed_graph(graph: TypedGraph) -> None:
    """The checks of `validate`, for use inside a function transformed by `checkify.checkify`:
    static problems raise at trace time, value problems are recorded with `checkify.check`."""
    _check_static(graph)
    _check_values(graph, jnp, device_expect)


def checked(fn: Callable, *, jit: bool = True) -> Callable:
    """Wrap `fn(graph, *args, **kwargs)` so the typed graph is validated inside the compiled
    call (`checkify`, and `jax.jit` unless `jit=False`); a malformed graph raises the message
    `validate` gives (as a `checkify.JaxRuntimeError`)."""

    return checked_call(check_typed_graph, fn, jit=jit)
