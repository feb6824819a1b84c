"""Padding with graphs, padding counts and padding masks.

jraph's convention: after the real graphs comes one padding graph that holds every padding node
and edge (padding edges point at the first padding node), then empty graphs. `pad_with_graphs`
and `unpad_with_graphs` run on the host; the counts and masks are jittable, computed in NumPy
when `n_node` / `n_edge` are concrete, and return the types jraph's do. Difference from jraph,
deliberate: `zero_out_padding` selects with `jnp.where`, so NaN or inf in padding rows also
become 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import tree_map

from gnkit.graph import GraphsTuple, num_edges, num_graphs, num_nodes


def _pad_rows(leaf, n_rows: int) -> np.ndarray:
    leaf = np.asarray(leaf)
    padded = np.zeros((leaf.shape[0] + n_rows,) + leaf.shape[1:], leaf.dtype)
    padded[: leaf.shape[0]] = leaf
    return padded


def _pad_indices(index, n_rows: int, value: int) -> np.ndarray | None:
    if index is None:
        return None
    index = np.asarray(index)
    padded = np.full(index.shape[0] + n_rows, value, index.dtype)
    padded[: index.shape[0]] = index
    return padded


def _append_padding_graphs(counts: np.ndarray, padding: int, n_padding_graphs: int) -> np.ndarray:
    """`[G + n_padding_graphs]`: `counts`, then `padding` for the padding graph, then zeros."""
    padded = np.zeros(counts.shape[0] + n_padding_graphs, counts.dtype)
    padded[: counts.shape[0]] = counts
    padded[counts.shape[0]] = padding
    return padded


def pad_with_graphs(graph: GraphsTuple, n_node: int, n_edge: int, n_graph: int = 2) -> GraphsTuple:
    """Pads a graph to exactly `n_node` nodes, `n_edge` edges and `n_graph` graphs. Host-only.

    jraph's convention: one padding graph takes every padding node and edge (its edges go from
    and to its first node, `sum(graph.n_node)`), then empty graphs fill up to `n_graph`. Padding
    features are zeros. Needs room for at least one padding node and one padding graph; raises
    `ValueError` for `n_graph < 2` and `RuntimeError` when the graph is too large (both
    messages start with jraph's text).

    Args:
      graph: the NumPy graph (or batch) to pad.
      n_node: nodes after padding, more than `sum(graph.n_node)`.
      n_edge: edges after padding, at least `sum(graph.n_edge)`.
      n_graph: graphs after padding, more than `len(graph.n_node)` and at least 2.

    Returns:
      The padded `GraphsTuple`.

    Example:
        One graph of 3 nodes and 2 edges, padded to 5 nodes, 4 edges and 3 graphs: the padding
        graph takes 2 nodes and 2 edges (from and to node 3), an empty graph fills the last slot.

        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=np.zeros((2, 1)), senders=np.array([0, 1]),
        ...     receivers=np.array([1, 2]), globals=np.zeros((1, 1)), n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> padded = gn.pad_with_graphs(graph, n_node=5, n_edge=4, n_graph=3)
        >>> padded.n_node, padded.n_edge
        (array([3, 2, 0]), array([2, 2, 0]))
        >>> padded.senders, padded.receivers
        (array([0, 1, 3, 3]), array([1, 2, 3, 3]))
        >>> padded.nodes.shape, padded.globals.shape
        ((5, 1), (3, 1))
    """
    if n_graph < 2:
        raise ValueError(
            f"n_graph is {n_graph}, which is smaller than minimum value of 2. Padding needs one "
            "padding graph after the real ones."
        )
    real_n_node = np.asarray(graph.n_node)
    real_n_edge = np.asarray(graph.n_edge)
    real_nodes = int(real_n_node.sum())
    pad_nodes = int(n_node) - real_nodes
    pad_edges = int(n_edge) - int(real_n_edge.sum())
    pad_graphs = int(n_graph) - real_n_node.shape[0]
    if pad_nodes <= 0 or pad_edges < 0 or pad_graphs <= 0:
        raise RuntimeError(
            "Given graph is too large for the given padding. difference: "
            f"n_node {pad_nodes}, n_edge {pad_edges}, n_graph {pad_graphs}. The padding needs "
            "at least 1 node, 0 edges and 1 graph more than the graph has."
        )
    return GraphsTuple(
        nodes=tree_map(lambda leaf: _pad_rows(leaf, pad_nodes), graph.nodes),
        edges=tree_map(lambda leaf: _pad_rows(leaf, pad_edges), graph.edges),
        receivers=_pad_indices(graph.receivers, pad_edges, real_nodes),
        senders=_pad_indices(graph.senders, pad_edges, real_nodes),
        globals=tree_map(lambda leaf: _pad_rows(leaf, pad_graphs), graph.globals),
        n_node=_append_padding_graphs(real_n_node, pad_nodes, pad_graphs),
        n_edge=_append_padding_graphs(real_n_edge, pad_edges, pad_graphs),
    )


def _host_padding_counts(padded_graph: GraphsTuple) -> tuple[int, np.integer, np.integer]:
    """(padding graphs, padding nodes, padding edges) computed in NumPy.

    The padding graph always has at least one node and the graphs after it have none, so it is
    the last graph with nodes (the last graph if none has nodes). The node and edge counts are
    elements of `n_node` / `n_edge` (NumPy scalars of their dtype).
    """
    n_node = np.asarray(padded_graph.n_node)
    n_edge = np.asarray(padded_graph.n_edge)
    non_empty = np.flatnonzero(n_node)
    first_padding = int(non_empty[-1]) if non_empty.size else n_node.shape[0] - 1
    return n_node.shape[0] - first_padding, n_node[first_padding], n_edge[first_padding]


def _padding_counts(padded_graph: GraphsTuple) -> tuple:
    """As `_host_padding_counts`, or as `jnp` scalars when `n_node` / `n_edge` are traced."""
    traced = (
        isinstance(padded_graph.n_node, jax.core.Tracer),
        isinstance(padded_graph.n_edge, jax.core.Tracer),
    )
    if not any(traced):
        return _host_padding_counts(padded_graph)
    n_node = jnp.asarray(padded_graph.n_node)
    pad_graphs = jnp.argmax(n_node[::-1] != 0) + 1
    first_padding = n_node.shape[0] - pad_graphs
    return pad_graphs, n_node[first_padding], jnp.asarray(padded_graph.n_edge)[first_padding]


def _like_counts(count, counts):
    """`count`, an element of `counts`, as jraph's indexing returns it: a NumPy scalar for
    NumPy `counts`, a `jnp` scalar for `jnp` ones. `jax.device_put` moves it without compiling
    anything (`jnp.asarray` compiles a copy per shape)."""
    if isinstance(counts, jax.Array) and not isinstance(count, jax.Array):
        return jax.device_put(count)
    return count


def get_number_of_padding_with_graphs_graphs(padded_graph: GraphsTuple) -> jax.Array:
    """Number of padding graphs in a graph padded by `pad_with_graphs`: a `jnp` scalar.

    One plus the number of trailing graphs without nodes; int32, or int64 under `jax_enable_x64`
    (jraph's types). Jittable; with concrete `n_node` it is computed in NumPy, so calls on
    batches of many shapes compile nothing.
    """
    count = _padding_counts(padded_graph)[0]
    if isinstance(count, jax.Array):
        return count
    return jax.device_put(np.asarray(count, jax.dtypes.canonicalize_dtype(np.int64)))


def get_number_of_padding_with_graphs_nodes(padded_graph: GraphsTuple) -> np.integer | jax.Array:
    """Number of padding nodes in a graph padded by `pad_with_graphs`: `n_node`'s element for
    the padding graph, so a NumPy scalar for NumPy `n_node` and a `jnp` scalar for `jnp` (or
    traced) `n_node`, as in jraph. Jittable."""
    return _like_counts(_padding_counts(padded_graph)[1], padded_graph.n_node)


def get_number_of_padding_with_graphs_edges(padded_graph: GraphsTuple) -> np.integer | jax.Array:
    """Number of padding edges in a graph padded by `pad_with_graphs`: `n_edge`'s element for
    the padding graph, so a NumPy scalar for NumPy `n_edge` and a `jnp` scalar for `jnp` (or
    traced) `n_edge`, as in jraph. Jittable."""
    return _like_counts(_padding_counts(padded_graph)[2], padded_graph.n_edge)


def unpad_with_graphs(padded_graph: GraphsTuple) -> GraphsTuple:
    """Removes the padding graphs, nodes and edges added by `pad_with_graphs`. Host-only.

    The padding counts are read on the host; every field is then sliced, so NumPy inputs give
    NumPy outputs and `jnp` inputs `jnp` outputs. Not jittable (the output shape depends on
    `n_node`).

    Example:
        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=np.zeros((2, 1)), senders=np.array([0, 1]),
        ...     receivers=np.array([1, 2]), globals=np.zeros((1, 1)), n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> gn.unpad_with_graphs(gn.pad_with_graphs(graph, 5, 4, 3)).n_node
        array([3])
    """
    pad_graphs, pad_nodes, pad_edges = _host_padding_counts(padded_graph)
    n_graph = num_graphs(padded_graph) - int(pad_graphs)
    n_node = num_nodes(padded_graph) - int(pad_nodes)
    n_edge = num_edges(padded_graph) - int(pad_edges)

    def keep(stop):
        return lambda leaf: leaf[:stop]

    def keep_index(index):
        return None if index is None else index[:n_edge]

    return GraphsTuple(
        nodes=tree_map(keep(n_node), padded_graph.nodes),
        edges=tree_map(keep(n_edge), padded_graph.edges),
        receivers=keep_index(padded_graph.receivers),
        senders=keep_index(padded_graph.senders),
        globals=tree_map(keep(n_graph), padded_graph.globals),
        n_node=padded_graph.n_node[:n_graph],
        n_edge=padded_graph.n_edge[:n_graph],
    )


def _static_node_count(graph: GraphsTuple) -> int:
    leaves = jax.tree_util.tree_leaves(graph.nodes)
    if leaves:
        return int(np.shape(leaves[0])[0])
    try:
        return int(np.sum(np.asarray(graph.n_node)))
    except jax.errors.JAXTypeError as error:
        raise ValueError(
            "`padded_graph` must have at least one array of node features inside jit: the "
            "padded node count is read from them, and graph.nodes is None. Give the graph node "
            "features, or build the mask outside jit."
        ) from error


def _leading_mask(padded_graph: GraphsTuple, field: int, total: int) -> jax.Array:
    """Bool `[total]`: True on the rows before the padding counted by `_padding_counts[field]`."""
    n_padding = _padding_counts(padded_graph)[field]
    if isinstance(n_padding, jax.Array):
        return jnp.arange(total) < total - n_padding
    return jax.device_put(np.arange(total) < total - n_padding)


def get_node_padding_mask(padded_graph: GraphsTuple) -> jax.Array:
    """Bool `[N]`: True for real nodes, False for padding nodes. Jittable when nodes are given.

    For a graph padded by `pad_with_graphs`. `N` is read from the node features; without node
    features it is `sum(n_node)`, which needs concrete (non-traced) `n_node`. With concrete
    `n_node` / `n_edge` the masks are computed in NumPy (no compile per shape).

    Example:
        3 real nodes padded to 5:

        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=np.zeros((2, 1)), senders=np.array([0, 1]),
        ...     receivers=np.array([1, 2]), globals=None, n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> print(gn.get_node_padding_mask(gn.pad_with_graphs(graph, n_node=5, n_edge=4)))
        [ True  True  True False False]
    """
    return _leading_mask(padded_graph, 1, _static_node_count(padded_graph))


def get_edge_padding_mask(padded_graph: GraphsTuple) -> jax.Array:
    """Bool `[E]`: True for real edges, False for padding edges. Jittable.

    For a graph padded by `pad_with_graphs`. `E` is read from senders, receivers or edge
    features, whichever is present.

    Example:
        >>> import numpy as np
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=np.zeros((3, 1)), edges=None, senders=np.array([0, 1]),
        ...     receivers=np.array([1, 2]), globals=None, n_node=np.array([3]),
        ...     n_edge=np.array([2]))
        >>> print(gn.get_edge_padding_mask(gn.pad_with_graphs(graph, n_node=5, n_edge=4)))
        [ True  True False False]
    """
    return _leading_mask(padded_graph, 2, num_edges(padded_graph))


def get_graph_padding_mask(padded_graph: GraphsTuple) -> jax.Array:
    """Bool `[G]`: True for real graphs, False for padding graphs. Jittable."""
    return _leading_mask(padded_graph, 0, num_graphs(padded_graph))


def _zero_where_padding(tree, mask: jax.Array):
    def zero(leaf):
        row_mask = jnp.reshape(mask, mask.shape + (1,) * (jnp.ndim(leaf) - 1))
        return jnp.where(row_mask, leaf, jnp.zeros((), jnp.result_type(leaf)))

    return tree_map(zero, tree)


def zero_out_padding(graph: GraphsTuple) -> GraphsTuple:
    """Sets the features of padding nodes, edges and graphs to zero. Jittable.

    Real rows are unchanged. Placing it between message-passing layers keeps large values from
    building up in the padding graph (its one node receives every padding edge). Fields that are
    None stay None.
    """
    nodes = graph.nodes
    if nodes is not None:
        nodes = _zero_where_padding(nodes, get_node_padding_mask(graph))
    edges = graph.edges
    if edges is not None:
        edges = _zero_where_padding(edges, get_edge_padding_mask(graph))
    globals_ = graph.globals
    if globals_ is not None:
        globals_ = _zero_where_padding(globals_, get_graph_padding_mask(graph))
    return graph._replace(nodes=nodes, edges=edges, globals=globals_)


def with_zero_out_padding_outputs(
    graph_net: Callable[[GraphsTuple], GraphsTuple],
) -> Callable[[GraphsTuple], GraphsTuple]:
    """Wraps a graph -> graph function so that its output goes through `zero_out_padding`."""

    @functools.wraps(graph_net)
    def wrapper(graph: GraphsTuple) -> GraphsTuple:
        return zero_out_padding(graph_net(graph))

    return wrapper
