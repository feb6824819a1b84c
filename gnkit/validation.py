"""Validation of a `GraphsTuple`: on the host (`validate`) and inside `jit` (`checked`).

Both paths run the same checks and raise the same messages, naming the field, what was expected
and what was found: `TypeError` for something that is not a graph of arrays (a Python list, a list
of graphs), `ValueError` for a malformed graph. Type, shape and dtype problems are static and raise
at trace time; value problems (index ranges, counts and their sums, NaN) are checked with NumPy on
the host, and with `jax.experimental.checkify` inside a compiled function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gnkit._checked_mode import checked_call, device_expect, host_expect, repeat
from gnkit.graph import GraphsTuple, require

_FEATURE_FIELDS = ("nodes", "edges", "globals")


def _leaves_with_paths(tree) -> list[tuple[str, Any]]:
    return [
        (jax.tree_util.keystr(path), leaf)
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
    ]


def _check_index_array(name: str, array) -> None:
    if array is None:
        return
    if np.ndim(array) != 1:
        raise ValueError(f"graph.{name} must be 1-D [n_edge]; found shape {np.shape(array)}.")
    if not jnp.issubdtype(array.dtype, jnp.integer):
        raise ValueError(f"graph.{name} must hold integer indices; found dtype {array.dtype}.")


def _check_leading_sizes(field: str, tree, expected: int, expected_name: str) -> None:
    for path, leaf in _leaves_with_paths(tree):
        if np.shape(leaf)[0] != expected:
            raise ValueError(
                f"graph.{field}{path} has {np.shape(leaf)[0]} rows; expected {expected} "
                f"({expected_name})."
            )


def _check_graph_of_arrays(graph: GraphsTuple, caller: str) -> None:
    """The blocks' entry check (`require`): one graph, arrays only, feature leaves with rows."""
    require(graph, block=caller)
    present = [field for field in _FEATURE_FIELDS if getattr(graph, field) is not None]
    require(graph, *present, block=caller)


def _check_static(graph: GraphsTuple, caller: str) -> None:
    """Type, shape and dtype checks: everything that does not depend on array values."""
    _check_graph_of_arrays(graph, caller)
    for field in ("n_node", "n_edge"):
        counts = getattr(graph, field)
        if counts is None:
            raise ValueError(f"graph.{field} is None; expected an integer array [n_graph].")
        if np.ndim(counts) != 1:
            raise ValueError(
                f"graph.{field} must be 1-D [n_graph]; found shape {np.shape(counts)}."
            )
        if not jnp.issubdtype(counts.dtype, jnp.integer):
            raise ValueError(f"graph.{field} must hold integer counts; found dtype {counts.dtype}.")
    n_graph = np.shape(graph.n_node)[0]
    if np.shape(graph.n_edge)[0] != n_graph:
        raise ValueError(
            f"graph.n_edge has {np.shape(graph.n_edge)[0]} entries but graph.n_node has {n_graph}; "
            "both must have one entry per graph."
        )
    if (graph.senders is None) != (graph.receivers is None):
        missing = "senders" if graph.senders is None else "receivers"
        raise ValueError(f"graph.{missing} is None while the other index array is set.")
    _check_index_array("senders", graph.senders)
    _check_index_array("receivers", graph.receivers)
    if graph.senders is not None and np.shape(graph.senders) != np.shape(graph.receivers):
        raise ValueError(
            f"graph.senders has {np.shape(graph.senders)[0]} entries but graph.receivers has "
            f"{np.shape(graph.receivers)[0]}; both must have one entry per edge."
        )
    for field in _FEATURE_FIELDS:
        leaves = _leaves_with_paths(getattr(graph, field))
        sizes = {np.shape(leaf)[0] for _, leaf in leaves}
        if len(sizes) > 1:
            found = ", ".join(
                f"{path or '<root>'}: {np.shape(leaf)}" for path, leaf in leaves
            )
            raise ValueError(
                f"graph.{field} leaves must share their leading size; found {found}."
            )
    _check_leading_sizes("globals", graph.globals, n_graph, "one row per graph, len(n_node)")
    if graph.senders is not None:
        edge_rows = np.shape(graph.senders)[0]
        _check_leading_sizes("edges", graph.edges, edge_rows, "one row per entry of senders")


def _check_values(graph: GraphsTuple, xp, expect: Callable, check_finite: bool) -> None:
    """Value checks, written once for NumPy (host) and jax.numpy with checkify (device).

    `expect(condition, message, *values)` raises (host) or records (checkify) the message
    formatted with the values when `condition` is False.
    """
    n_node, n_edge = xp.asarray(graph.n_node), xp.asarray(graph.n_edge)
    for name, counts in (("n_node", n_node), ("n_edge", n_edge)):
        expect(
            xp.all(counts >= 0),
            f"graph.{name} must be >= 0; found minimum {{}}.",
            xp.min(counts, initial=0),
        )
        _check_sum_fits(name, counts, xp, expect)
    node_leaves = jax.tree_util.tree_leaves(graph.nodes)
    if node_leaves:
        rows = np.shape(node_leaves[0])[0]
        expect(
            xp.sum(n_node) == rows,
            "sum(graph.n_node) must equal the number of node rows ({}); found {}.",
            rows, xp.sum(n_node),
        )
        n_rows = rows
    else:
        n_rows = xp.sum(n_node)
    if graph.senders is not None:
        edge_rows = np.shape(graph.senders)[0]
        expect(
            xp.sum(n_edge) == edge_rows,
            "sum(graph.n_edge) must equal the number of edges in graph.senders ({}); found {}.",
            edge_rows, xp.sum(n_edge),
        )
        node_offsets = xp.concatenate([xp.zeros(1, n_node.dtype), xp.cumsum(n_node)])
        edge_graph = repeat(xp, xp.arange(n_edge.shape[0]), n_edge, edge_rows)
        for name in ("senders", "receivers"):
            indices = xp.asarray(getattr(graph, name))
            expect(
                xp.all(indices >= 0),
                f"graph.{name} must be >= 0; found minimum {{}}.",
                xp.min(indices, initial=0),
            )
            expect(
                xp.all(indices < n_rows),
                f"graph.{name} must be < the number of nodes ({{}}); found maximum {{}}.",
                n_rows, xp.max(indices, initial=-1),
            )
            if edge_rows == 0 or edge_graph.shape[0] != edge_rows:
                continue
            start, stop = node_offsets[edge_graph], node_offsets[edge_graph + 1]
            outside = (indices < start) | (indices >= stop)
            first = xp.argmax(outside)
            expect(
                ~xp.any(outside),
                f"graph.{name}[{{}}] = {{}} lies outside graph {{}} of its edge "
                "(nodes {}..{}); an edge must connect nodes of the graph it belongs to.",
                first, indices[first], edge_graph[first], start[first], stop[first] - 1,
            )
    if check_finite:
        for field in _FEATURE_FIELDS:
            for path, leaf in _leaves_with_paths(getattr(graph, field)):
                leaf = xp.asarray(leaf)
                if xp.issubdtype(leaf.dtype, xp.inexact):
                    expect(
                        xp.all(xp.isfinite(leaf)),
                        f"graph.{field}{path} must be finite; found {{}} NaN or inf values.",
                        xp.sum(~xp.isfinite(leaf)),
                    )


def _check_sum_fits(name: str, counts, xp, expect: Callable) -> None:
    """Expect the running sum of non-negative `counts` [n_graph] not to wrap around its dtype.

    A sum that wraps can land back on the row count, so it is checked without trusting the sum:
    the running sum of non-negative counts never decreases unless it wraps.
    """
    if counts.shape[0] < 2:
        return
    running = xp.cumsum(counts)
    wraps = running[1:] < running[:-1]
    first = xp.argmax(wraps)
    expect(
        ~xp.any(wraps),
        f"sum(graph.{name}) overflows {running.dtype}; the running sum wraps around at "
        f"graph.{name}[{{}}] = {{}} after a total of {{}}. Expected counts that sum to the number "
        "of rows.",
        first + 1, counts[first + 1], running[first],
    )


def validate(graph: GraphsTuple, *, check_finite: bool = False) -> GraphsTuple:
    """Check a graph on the host and return it unchanged; raise if it is malformed.

    Raises `TypeError` unless `graph` is one `GraphsTuple` whose fields hold arrays (not Python
    lists or scalars; a list of graphs is pointed to `gnkit.batch_np`), and `ValueError` for the
    rest. Checks: integer 1-D `n_node` / `n_edge` of equal length, non-negative, with sums that
    do not overflow; `sum(n_node)` equals the node rows and `sum(n_edge)` the edge rows; integer
    `senders` / `receivers` of equal length, within `[0, n_nodes)`, each edge's ends inside the
    graph the edge belongs to; every leaf of a feature tree an array with the same leading size,
    `globals` with one row per graph; with `check_finite=True`, no NaN or inf in float features.
    Host-only (reads values with NumPy).

    Example:
        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=None, senders=np.array([0, 3]),
        ...     receivers=np.array([1, 2]), globals=None, n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> gn.validate(graph)
        Traceback (most recent call last):
        ...
        ValueError: graph.senders must be < the number of nodes (3); found maximum 3.
    """
    _check_static(graph, "validate")
    host_graph = jax.tree_util.tree_map(np.asarray, graph)
    _check_values(host_graph, np, host_expect, check_finite)
    return graph


def check_graph(graph: GraphsTuple, *, check_finite: bool = False) -> None:
    """The checks of `validate`, for use inside a function transformed by `checkify.checkify`.

    Type problems raise `TypeError` and static shape problems `ValueError`, at trace time; value
    problems are recorded with `checkify.check` and raised when the caller throws the returned
    error (see `checked`).
    """
    _check_static(graph, "check_graph")
    _check_values(graph, jnp, device_expect, check_finite)


def checked(fn: Callable, *, check_finite: bool = False, jit: bool = True) -> Callable:
    """Wrap `fn(graph, *args, **kwargs)` so the graph is validated inside the compiled call.

    The returned function runs `check_graph` on its first argument before `fn`, all under
    `checkify` (and `jax.jit` unless `jit=False`), and raises `ValueError` (a
    `checkify.JaxRuntimeError`) with the same message as `validate` when the graph is malformed.
    The checks cost a few reductions over the index arrays; use it while debugging.
    """

    return checked_call(functools.partial(check_graph, check_finite=check_finite), fn, jit=jit)
