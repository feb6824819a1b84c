"""Batch and unbatch: many graphs into one `GraphsTuple` and back.

`batch_np` / `unbatch_np` work on the host in NumPy; jraph's `batch` (jittable) and `unbatch`
give `jnp` arrays. Differences from jraph, both deliberate: senders / receivers keep their input
dtype (jraph's NumPy path widens them to int64 as a side effect of summing with NumPy), and
`batch_np` joins a feature leaf whose dtype differs between graphs in JAX's promoted dtype, as
`batch` does (float32 with int32 gives float32; jraph's NumPy path gives float64).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import tree_map

from gnkit.graph import GraphsTuple


def _concat_leaves(leaves: Sequence, xp) -> Any:
    """Concatenates arrays along axis 0 in JAX's promoted dtype of theirs.

    Equal dtypes are kept as they are (any dtype, float64 included). Mixed dtypes follow
    `jnp.promote_types`, as `jnp.concatenate` does, so `batch_np` and `batch` agree and float32
    mixed with int32 stays float32 (NumPy would widen it to float64).
    """
    if xp is jnp:
        return jnp.concatenate(leaves)
    arrays = [np.asarray(leaf) for leaf in leaves]
    dtypes = {array.dtype for array in arrays}
    if len(dtypes) == 1:
        return np.concatenate(arrays)
    dtype = functools.reduce(jnp.promote_types, dtypes)
    return np.concatenate([array.astype(dtype, copy=False) for array in arrays])


def _concat_field(trees: list, name: str, xp) -> Any:
    """Concatenates one feature field (a pytree or None per graph) along axis 0."""
    try:
        return tree_map(lambda *leaves: _concat_leaves(leaves, xp), *trees)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"batch: cannot concatenate graph.{name} across graphs; its structure, None-ness "
            f"and trailing shapes must match, and its dtypes must promote in JAX: {error}"
        ) from error


def _repeat(xp, values, counts: np.ndarray, total: int):
    if xp is np:
        return np.repeat(values, counts)
    return jnp.repeat(values, counts, total_repeat_length=total)


def _index_field(graphs: list, name: str) -> list | None:
    indices = [getattr(graph, name) for graph in graphs]
    if all(index is None for index in indices):
        return None
    if any(index is None for index in indices):
        raise ValueError(f"batch: graph.{name} is None in some graphs but not in others.")
    return indices


def _batch(graphs: Sequence[GraphsTuple], xp) -> GraphsTuple:
    graphs = list(graphs)
    if not graphs:
        raise ValueError("batch needs at least one graph.")
    n_node_list = [g.n_node for g in graphs]
    graph_counts = np.fromiter(map(len, n_node_list), np.int64, len(graphs))
    n_node = xp.concatenate(n_node_list)
    n_edge = xp.concatenate([g.n_edge for g in graphs])
    node_starts = xp.concatenate([xp.zeros(1, n_node.dtype), xp.cumsum(n_node)])
    node_offsets = node_starts[np.cumsum(graph_counts) - graph_counts]
    senders = _index_field(graphs, "senders")
    receivers = _index_field(graphs, "receivers")
    shifted = []
    shifts, shift_counts = None, None
    for indices in (receivers, senders):
        if indices is None:
            shifted.append(None)
            continue
        concatenated = xp.concatenate(indices)
        edge_counts = np.fromiter(map(len, indices), np.int64, len(indices))
        reusable = (
            shifts is not None
            and shifts.dtype == concatenated.dtype
            and np.array_equal(edge_counts, shift_counts)
        )
        if not reusable:
            offsets = node_offsets.astype(concatenated.dtype)
            shifts = _repeat(xp, offsets, edge_counts, int(edge_counts.sum()))
            shift_counts = edge_counts
        shifted.append(concatenated + shifts)
    return GraphsTuple(
        nodes=_concat_field([g.nodes for g in graphs], "nodes", xp),
        edges=_concat_field([g.edges for g in graphs], "edges", xp),
        receivers=shifted[0],
        senders=shifted[1],
        globals=_concat_field([g.globals for g in graphs], "globals", xp),
        n_node=n_node,
        n_edge=n_edge,
    )


def batch_np(graphs: Sequence[GraphsTuple]) -> GraphsTuple:
    """Batches graphs into one `GraphsTuple` of NumPy arrays. Host-only.

    Features (`[N_i, ...]`, `[E_i, ...]`, `[G_i, ...]` leaves of any pytree) are concatenated
    along axis 0 with one `np.concatenate` per leaf; `senders` / `receivers` are shifted by the
    node offset of their graph, computed in one vectorised pass. Elements may themselves hold
    several graphs. Fields must be None in all graphs or in none. Each leaf keeps its dtype; a
    leaf whose dtype differs between graphs gets `jnp.promote_types` of them (float32 with int32
    gives float32, never float64; equal dtypes, float64 included, are kept).

    Example:
        Two copies of a path graph 0 -> 1 -> 2; the second copy's indices are shifted by 3:

        >>> import numpy as np
        >>> import gnkit as gn
        >>> path = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=None, senders=np.array([0, 1]),
        ...     receivers=np.array([1, 2]), globals=None, n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> batched = gn.batch_np([path, path])
        >>> batched.n_node, batched.senders, batched.receivers
        (array([3, 3]), array([0, 1, 3, 4]), array([1, 2, 4, 5]))
        >>> [graph.n_node for graph in gn.unbatch_np(batched)]
        [array([3]), array([3])]
    """
    return _batch(graphs, np)


def batch(graphs: Sequence[GraphsTuple]) -> GraphsTuple:
    """Batches graphs into one `GraphsTuple` of `jnp` arrays (jraph's `batch`).

    Same layout as `batch_np`. Jittable: all shapes are static, and the node offsets are read
    from the (possibly traced) `n_node` values. Host NumPy inputs are batched in NumPy and moved to
    the device in one `jax.device_put`; device inputs stay on the device.
    """
    graphs = list(graphs)
    on_host = all(
        isinstance(leaf, np.ndarray | np.generic | int | float | bool)
        for graph in graphs
        for leaf in jax.tree_util.tree_leaves(tuple(graph))
    )
    if on_host:
        return jax.device_put(batch_np(graphs))
    return _batch(graphs, jnp)


def _split_field(tree, boundaries: np.ndarray, n_pieces: int) -> list:
    """Splits every leaf of `tree` at `boundaries` and returns one tree per piece."""
    if tree is None:
        return [None] * n_pieces
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    pieces = [np.split(leaf, boundaries) for leaf in leaves]
    return [treedef.unflatten([leaf_pieces[i] for leaf_pieces in pieces]) for i in range(n_pieces)]


def _split_indices(index, node_offsets, n_edge: np.ndarray, boundaries: np.ndarray, n_graph: int):
    if index is None:
        return [None] * n_graph
    index = np.asarray(index)
    if index.shape[0] != n_edge.sum():
        raise ValueError(
            f"unbatch: senders / receivers have {index.shape[0]} entries but sum(n_edge) is "
            f"{n_edge.sum()}."
        )
    local = (index - np.repeat(node_offsets, n_edge)).astype(index.dtype)
    return np.split(local, boundaries)


def unbatch_np(graph: GraphsTuple) -> list[GraphsTuple]:
    """Splits a batched graph into one `GraphsTuple` per graph, as NumPy arrays. Host-only.

    Inverse of `batch_np`: every leaf is split once with `np.split`, and senders / receivers
    are shifted back to per-graph node indices. Each result has `n_node` and `n_edge` of shape
    `[1]`.
    """
    graph = jax.device_get(graph)
    n_node = np.asarray(graph.n_node)
    n_edge = np.asarray(graph.n_edge)
    n_graph = n_node.shape[0]
    if n_graph == 0:
        return []
    node_boundaries = np.cumsum(n_node)[:-1]
    edge_boundaries = np.cumsum(n_edge)[:-1]
    node_offsets = np.concatenate([[0], node_boundaries]).astype(np.int64)
    fields = zip(
        _split_field(graph.nodes, node_boundaries, n_graph),
        _split_field(graph.edges, edge_boundaries, n_graph),
        _split_indices(graph.receivers, node_offsets, n_edge, edge_boundaries, n_graph),
        _split_indices(graph.senders, node_offsets, n_edge, edge_boundaries, n_graph),
        _split_field(graph.globals, np.arange(1, n_graph), n_graph),
        np.split(n_node, np.arange(1, n_graph)),
        np.split(n_edge, np.arange(1, n_graph)),
        strict=True,
    )
    return [GraphsTuple(*field_values) for field_values in fields]


def unbatch(graph: GraphsTuple) -> list[GraphsTuple]:
    """Splits a batched graph into one `GraphsTuple` per graph, as `jnp` arrays (jraph's).

    Not jittable (output shapes depend on `n_node` / `n_edge`). The split runs on the host
    (`unbatch_np`); the pieces are then put on the device.
    """
    return jax.device_put(unbatch_np(graph))
