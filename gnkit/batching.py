"""Host-side batching: batch / unbatch, padding, masks, bucketed budgets and conversions.

Anything whose output shape depends on the values of `n_node` / `n_edge` runs on the host in
NumPy, with no device round trip: `batch_np`, `unbatch_np`, `pad_with_graphs`,
`unpad_with_graphs`, the streaming batchers and the conversions. The jraph names keep jraph's
meaning, so `import gnkit as jraph` works: `batch` and `unbatch` return `jnp` arrays (`batch` is
jittable, as in jraph), the padding masks and padding counts are jittable `jnp` functions.

Padding follows jraph's convention: after the real graphs comes one padding graph that holds every
padding node and edge (padding edges point at the first padding node), then empty graphs.
`BucketPolicy` rounds the padded sizes up a geometric ladder so that a stream of batches of varying
size compiles a handful of times.

Differences from jraph, all deliberate: senders / receivers keep their input dtype (jraph's NumPy
path widens them to int64 as a side effect of summing with NumPy); `zero_out_padding` selects with
`jnp.where`, so NaN or inf in padding rows also become 0; `get_fully_connected_graph` with
`n_graph=0` gives empty `n_node` and `n_edge` (jraph gives `n_edge=[0]`); `batch_np` joins a
feature leaf whose dtype differs between graphs in JAX's promoted dtype, as `batch` does (float32
with int32 gives float32; jraph's NumPy path gives float64).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.graph import ArrayTree, GraphsTuple, num_edges, num_graphs, num_nodes, require

_tree_map = jax.tree_util.tree_map


# ----------------------------------------------------------------------------------------------
# batch / unbatch


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
        return _tree_map(lambda *leaves: _concat_leaves(leaves, xp), *trees)
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


# ----------------------------------------------------------------------------------------------
# padding


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
    features are zeros. Needs room for at least one padding node and one padding graph, so
    `n_node > sum(n_node)`, `n_edge >= sum(n_edge)`, `n_graph > len(n_node)` and `n_graph >= 2`;
    raises `ValueError` for `n_graph < 2` and `RuntimeError` when the graph is too large (both
    messages start with jraph's text).
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
        nodes=_tree_map(lambda leaf: _pad_rows(leaf, pad_nodes), graph.nodes),
        edges=_tree_map(lambda leaf: _pad_rows(leaf, pad_edges), graph.edges),
        receivers=_pad_indices(graph.receivers, pad_edges, real_nodes),
        senders=_pad_indices(graph.senders, pad_edges, real_nodes),
        globals=_tree_map(lambda leaf: _pad_rows(leaf, pad_graphs), graph.globals),
        n_node=_append_padding_graphs(real_n_node, pad_nodes, pad_graphs),
        n_edge=_append_padding_graphs(real_n_edge, pad_edges, pad_graphs),
    )


def _host_padding_counts(padded_graph: GraphsTuple) -> tuple[np.integer, np.integer, np.integer]:
    """(padding graphs, padding nodes, padding edges) computed in NumPy.

    The padding graph always has at least one node and the graphs after it have none, so it is
    the last graph with nodes (the last graph if none has nodes).
    """
    n_node = np.asarray(padded_graph.n_node)
    n_edge = np.asarray(padded_graph.n_edge)
    non_empty = np.flatnonzero(n_node)
    first_padding = int(non_empty[-1]) if non_empty.size else n_node.shape[0] - 1
    return np.int32(n_node.shape[0] - first_padding), n_node[first_padding], n_edge[first_padding]


def _to_device(value) -> jax.Array:
    """`value` as a device array; `jax.device_put` moves NumPy data without compiling anything
    (`jnp.asarray` compiles a copy per shape)."""
    return value if isinstance(value, jax.Array) else jax.device_put(value)


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


def get_number_of_padding_with_graphs_graphs(padded_graph: GraphsTuple) -> jax.Array:
    """Number of padding graphs in a graph padded by `pad_with_graphs`: a `jnp` scalar.

    One plus the number of trailing graphs without nodes. Jittable; with concrete `n_node` it is
    computed in NumPy, so calls on batches of many shapes compile nothing.
    """
    return _to_device(_padding_counts(padded_graph)[0])


def get_number_of_padding_with_graphs_nodes(padded_graph: GraphsTuple) -> jax.Array:
    """Number of padding nodes in a graph padded by `pad_with_graphs`: a `jnp` scalar. Jittable."""
    return _to_device(_padding_counts(padded_graph)[1])


def get_number_of_padding_with_graphs_edges(padded_graph: GraphsTuple) -> jax.Array:
    """Number of padding edges in a graph padded by `pad_with_graphs`: a `jnp` scalar. Jittable."""
    return _to_device(_padding_counts(padded_graph)[2])


def unpad_with_graphs(padded_graph: GraphsTuple) -> GraphsTuple:
    """Removes the padding graphs, nodes and edges added by `pad_with_graphs`. Host-only.

    The padding counts are read on the host; every field is then sliced, so NumPy inputs give
    NumPy outputs and `jnp` inputs `jnp` outputs. Not jittable (the output shape depends on
    `n_node`).
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
        nodes=_tree_map(keep(n_node), padded_graph.nodes),
        edges=_tree_map(keep(n_edge), padded_graph.edges),
        receivers=keep_index(padded_graph.receivers),
        senders=keep_index(padded_graph.senders),
        globals=_tree_map(keep(n_graph), padded_graph.globals),
        n_node=padded_graph.n_node[:n_graph],
        n_edge=padded_graph.n_edge[:n_graph],
    )


# ----------------------------------------------------------------------------------------------
# masks


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
    """
    return _leading_mask(padded_graph, 1, _static_node_count(padded_graph))


def get_edge_padding_mask(padded_graph: GraphsTuple) -> jax.Array:
    """Bool `[E]`: True for real edges, False for padding edges. Jittable.

    For a graph padded by `pad_with_graphs`. `E` is read from senders, receivers or edge
    features, whichever is present.
    """
    return _leading_mask(padded_graph, 2, num_edges(padded_graph))


def get_graph_padding_mask(padded_graph: GraphsTuple) -> jax.Array:
    """Bool `[G]`: True for real graphs, False for padding graphs. Jittable."""
    return _leading_mask(padded_graph, 0, num_graphs(padded_graph))


def _zero_where_padding(tree, mask: jax.Array):
    def zero(leaf):
        row_mask = jnp.reshape(mask, mask.shape + (1,) * (jnp.ndim(leaf) - 1))
        return jnp.where(row_mask, leaf, jnp.zeros((), jnp.result_type(leaf)))

    return _tree_map(zero, tree)


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


# ----------------------------------------------------------------------------------------------
# bucketed padding and streaming batchers


@dataclasses.dataclass(frozen=True)
class BucketPolicy:
    """Rounds padded (nodes, edges, graphs) budgets up a geometric ladder.

    Rung `k` of the ladder holds `ceil(min_nodes * growth**k)` nodes, `ceil(min_edges *
    growth**k)` edges and `ceil(min_graphs * growth**k)` graphs. `round` picks, for a batch, the
    lowest rung with room for its edges and for one more node and graph than it has (the padding
    graph that `pad_with_graphs` needs).

    With `shared_rung=True` (default) the three budgets climb together: the rung is the highest
    any of them needs, so a stream spanning `R` rungs compiles at most `R` times. This pads
    tightly when `min_nodes : min_edges : min_graphs` follows the data: set `min_edges /
    min_nodes` near the mean number of edges per node and `min_nodes / min_graphs` at or below
    the typical graph size (graph slots only cost `globals` rows). With `shared_rung=False` each
    budget climbs its own ladder: tighter padding, but up to `R**3` shapes.

    For batch sizes spread evenly on a log scale, padded / real is `(growth - 1) / ln(growth)`
    on average (1.32 for growth 1.7): a smaller `growth` pads less and compiles more often.
    `benchmarks/bucketing.py` measures compiles and padding on a stream of random batches.
    """

    growth: float = 1.7
    min_nodes: int = 64
    min_edges: int = 128
    min_graphs: int = 4
    shared_rung: bool = True

    def __post_init__(self):
        if not self.growth > 1:
            raise ValueError(f"BucketPolicy.growth must be > 1, got {self.growth}.")
        if self.min_nodes < 1 or self.min_edges < 1 or self.min_graphs < 2:
            raise ValueError(
                "BucketPolicy needs min_nodes >= 1, min_edges >= 1 and min_graphs >= 2, got "
                f"{self.min_nodes}, {self.min_edges}, {self.min_graphs}."
            )

    def _size(self, minimum: int, rung: int) -> int:
        # Rounding to 9 decimals first keeps float noise (100 * 1.1**2 = 121.00000000000001)
        # from adding a slot.
        return math.ceil(round(minimum * self.growth**rung, 9))

    def _rung(self, minimum: int, needed: int) -> int:
        if needed <= minimum:
            return 0
        rung = max(0, math.floor(math.log(needed / minimum, self.growth)) - 1)
        while self._size(minimum, rung) < needed:
            rung += 1
        return rung

    def sizes(self, rung: int) -> tuple[int, int, int]:
        """(nodes, edges, graphs) budgets of one rung of the ladder."""
        return (
            self._size(self.min_nodes, rung),
            self._size(self.min_edges, rung),
            self._size(self.min_graphs, rung),
        )

    def round(self, n_node: int, n_edge: int, n_graph: int) -> tuple[int, int, int]:
        """Padded (nodes, edges, graphs) for a batch of `n_node` nodes, `n_edge` edges and
        `n_graph` graphs (real totals). Always `> n_node`, `>= n_edge`, `> n_graph`."""
        rungs = (
            self._rung(self.min_nodes, int(n_node) + 1),
            self._rung(self.min_edges, int(n_edge)),
            self._rung(self.min_graphs, int(n_graph) + 1),
        )
        if self.shared_rung:
            return self.sizes(max(rungs))
        minimums = (self.min_nodes, self.min_edges, self.min_graphs)
        return tuple(
            self._size(minimum, rung) for minimum, rung in zip(minimums, rungs, strict=True)
        )


def _real_sizes(graph: GraphsTuple) -> tuple[int, int, int]:
    n_node = np.asarray(graph.n_node)
    return int(n_node.sum()), num_edges(graph), n_node.shape[0]


def pad_to_bucket(graph: GraphsTuple, policy: BucketPolicy) -> GraphsTuple:
    """Pads a batched graph to the bucket `policy.round(...)` gives for its size. Host-only."""
    return pad_with_graphs(graph, *policy.round(*_real_sizes(graph)))


def _size_dict(n_node: int, n_edge: int, n_graph: int) -> dict[str, int]:
    return {"n_node": n_node, "n_edge": n_edge, "n_graph": n_graph}


def _group_within(
    graphs: Iterable[GraphsTuple], node_limit: int, edge_limit: int, graph_limit: int
) -> Iterator[list[GraphsTuple]]:
    """Greedy groups whose real totals stay within the limits; raises on a graph that never fits.

    The group collected so far is yielded before the error is raised.
    """
    group: list[GraphsTuple] = []
    nodes = edges = count = 0
    for graph in graphs:
        n_node, n_edge, n_graph = _real_sizes(graph)
        if n_node > node_limit or n_edge > edge_limit or n_graph > graph_limit:
            if group:
                yield group
            raise RuntimeError(
                "Found graph bigger than batch size. Valid Batch Size: "
                f"{_size_dict(node_limit, edge_limit, graph_limit)}, Graph Size: "
                f"{_size_dict(n_node, n_edge, n_graph)}. The valid size leaves one node and one "
                "graph of the budget for padding."
            )
        if group and (
            nodes + n_node > node_limit
            or edges + n_edge > edge_limit
            or count + n_graph > graph_limit
        ):
            yield group
            group, nodes, edges, count = [], 0, 0, 0
        group.append(graph)
        nodes, edges, count = nodes + n_node, edges + n_edge, count + n_graph
    if group:
        yield group


def dynamically_batch(
    graphs_tuple_iterator: Iterator[GraphsTuple], n_node: int, n_edge: int, n_graph: int
) -> Iterator[GraphsTuple]:
    """Batches a stream of graphs greedily, each batch padded to exactly (n_node, n_edge, n_graph).

    jraph's `dynamically_batch`: graphs are added to the current batch until the next one would
    leave no room for padding (`n_node - 1` real nodes, `n_edge` edges, `n_graph - 1` graphs at
    most); the batch is then `batch_np`-ed and `pad_with_graphs`-ed. Host-only generator. Raises
    `ValueError` if `n_graph < 2` and `RuntimeError` on a graph that can never fit (after
    yielding the batch collected before it), with messages that start with jraph's text.
    """
    if n_graph < 2:
        raise ValueError(
            "The number of graphs in a batch size must be greater or equal to `2` for padding "
            f"with graphs, got {n_graph}. The last graph of each batch is the padding graph."
        )
    for group in _group_within(graphs_tuple_iterator, n_node - 1, n_edge, n_graph - 1):
        yield pad_with_graphs(batch_np(group), n_node, n_edge, n_graph)


def batch_stream(
    graphs: Iterable[GraphsTuple],
    policy: BucketPolicy,
    *,
    max_nodes: int,
    max_edges: int,
    max_graphs: int,
) -> Iterator[GraphsTuple]:
    """Batches a stream of graphs greedily and pads each batch to a bucket of `policy`.

    Generalises `dynamically_batch`: graphs are grouped the same way under the caps
    (`max_nodes`, `max_edges`, `max_graphs` bound the padded batch), but each batch is padded to
    `policy.round(...)` of its real size, capped at the maxima, instead of always to the maxima.
    Full batches land in the cap; a short batch (the last one, or one cut by a large graph)
    gets a smaller bucket. With a shared-rung policy there is at most one shape per rung up to
    the caps. Host-only generator; errors as `dynamically_batch`.
    """
    if max_graphs < 2:
        raise ValueError(f"max_graphs is {max_graphs}; padding needs at least 2 graphs.")
    caps = (max_nodes, max_edges, max_graphs)
    for group in _group_within(graphs, max_nodes - 1, max_edges, max_graphs - 1):
        batched = batch_np(group)
        bucket = policy.round(*_real_sizes(batched))
        yield pad_with_graphs(
            batched, *(min(size, cap) for size, cap in zip(bucket, caps, strict=True))
        )


# ----------------------------------------------------------------------------------------------
# edge order, builders and conversions


def sort_edges_by_receiver(graph: GraphsTuple) -> GraphsTuple:
    """Reorders edges so that receivers are non-decreasing (stable). Host-only (NumPy).

    Edge features `[E, ...]`, senders and receivers are permuted together; edges with the same
    receiver keep their order. In a valid batch a graph's receivers lie in its own node range, so
    each graph's edges stay one contiguous block and `n_edge` is unchanged; padding edges (which
    point at the last node block) stay last. Enables `indices_are_sorted=True` in segment sums
    over receivers.
    """
    if graph.receivers is None:
        raise ValueError("sort_edges_by_receiver needs graph.receivers, but it is None.")
    receivers = np.asarray(graph.receivers)
    order = np.argsort(receivers, kind="stable")
    return GraphsTuple(
        nodes=graph.nodes,
        edges=_tree_map(lambda leaf: np.asarray(leaf)[order], graph.edges),
        receivers=receivers[order],
        senders=None if graph.senders is None else np.asarray(graph.senders)[order],
        globals=graph.globals,
        n_node=graph.n_node,
        n_edge=graph.n_edge,
    )


def add_self_edges(graph: GraphsTuple, edge_fill_value: float = 0.0) -> GraphsTuple:
    """Adds one edge `i -> i` for every node. Host-only (NumPy).

    Each graph's self-edges follow its own edges, so every graph's edges stay one contiguous
    block; `n_edge` grows by `n_node`. Edge features of the new edges are `edge_fill_value`.
    If the receivers were sorted, re-sort with `sort_edges_by_receiver`. Use it instead of a
    block's `add_self_edges=True` when the edges will be split over devices
    (`gnkit.parallel.shard_edges`), where a block would add every self-edge once per device.
    """
    require(graph, "senders", "receivers", "n_node", "n_edge", block="add_self_edges")
    n_node, n_edge = np.asarray(graph.n_node), np.asarray(graph.n_edge)
    num_old, num_new = int(n_edge.sum()), int(n_node.sum())
    edge_graph = np.repeat(np.arange(len(n_edge)), n_edge)
    node_graph = np.repeat(np.arange(len(n_node)), n_node)
    order = np.argsort(np.concatenate([edge_graph, node_graph]), kind="stable")
    every_node = np.arange(num_new, dtype=np.asarray(graph.senders).dtype)

    def extend(old, new):
        return np.concatenate([np.asarray(old), new])[order]

    def extend_edges(leaf):
        leaf = np.asarray(leaf)
        return extend(leaf, np.full((num_new,) + leaf.shape[1:], edge_fill_value, leaf.dtype))

    if len(np.asarray(graph.senders)) != num_old:
        raise ValueError(f"graph.senders has {len(graph.senders)} edges, n_edge sums to {num_old}.")
    return graph._replace(
        edges=_tree_map(extend_edges, graph.edges),
        senders=extend(graph.senders, every_node),
        receivers=extend(graph.receivers, every_node),
        n_edge=(n_edge + n_node).astype(n_edge.dtype),
    )


def _fully_connected_indices(
    n_node_per_graph: np.ndarray, add_self_edges: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Senders, receivers `[E]` and n_edge `[G]` of complete graphs, edges grouped by receiver.

    Within a graph of `n` nodes, receiver `r` gets senders `0..n-1` with self edges, else
    `r+1, ..., n-1, 0, ..., r-1` (jraph's order).
    """
    sizes = n_node_per_graph.astype(np.int64)
    per_receiver = sizes if add_self_edges else np.maximum(sizes - 1, 0)
    n_edge = sizes * per_receiver
    node_offsets = np.cumsum(sizes) - sizes
    edge_offsets = np.cumsum(n_edge) - n_edge
    edge_graph = np.repeat(np.arange(sizes.shape[0]), n_edge)
    local_edge = np.arange(int(n_edge.sum())) - edge_offsets[edge_graph]
    row_length = np.maximum(per_receiver[edge_graph], 1)
    local_receiver = local_edge // row_length
    position = local_edge % row_length
    if add_self_edges:
        local_sender = position
    else:
        local_sender = (local_receiver + 1 + position) % sizes[edge_graph]
    shift = node_offsets[edge_graph]
    return (
        (local_sender + shift).astype(np.int32),
        (local_receiver + shift).astype(np.int32),
        n_edge,
    )


def _leading_size(tree) -> int | None:
    leaves = jax.tree_util.tree_leaves(tree)
    return None if not leaves else int(np.shape(leaves[0])[0])


def fully_connected_graph(
    n_node_per_graph: Sequence[int],
    node_features: ArrayTree | None = None,
    global_features: ArrayTree | None = None,
    add_self_edges: bool = True,
) -> GraphsTuple:
    """A batch of complete graphs of the given sizes. Host-only (NumPy indices).

    Graph `i` has `n_node_per_graph[i]` nodes and an edge between every ordered pair of its nodes
    (`n**2` edges, or `n*(n-1)` without self edges), grouped by receiver in jraph's order.
    `node_features` must have `sum(n_node_per_graph)` rows and `global_features` one row per
    graph; both are passed through unchanged. Edges features are None.
    """
    sizes = np.asarray(n_node_per_graph, np.int64).reshape(-1)
    if np.any(sizes < 0):
        raise ValueError(f"n_node_per_graph must be >= 0, got {sizes.tolist()}.")
    n_rows = _leading_size(node_features)
    if n_rows is not None and n_rows != sizes.sum():
        raise ValueError(
            f"node_features have {n_rows} rows but n_node_per_graph sums to {sizes.sum()}."
        )
    n_global_rows = _leading_size(global_features)
    if n_global_rows is not None and n_global_rows != sizes.shape[0]:
        raise ValueError(
            f"global_features have {n_global_rows} rows but there are {sizes.shape[0]} graphs."
        )
    senders, receivers, n_edge = _fully_connected_indices(sizes, add_self_edges)
    return GraphsTuple(
        nodes=node_features,
        edges=None,
        receivers=receivers,
        senders=senders,
        globals=global_features,
        n_node=sizes.astype(np.int32),
        n_edge=n_edge.astype(np.int32),
    )


def get_fully_connected_graph(
    n_node_per_graph: int,
    n_graph: int,
    node_features: ArrayTree | None = None,
    global_features: ArrayTree | None = None,
    add_self_edges: bool = True,
) -> GraphsTuple:
    """`n_graph` complete graphs of `n_node_per_graph` nodes each, as `jnp` arrays (jraph's).

    Jittable for static sizes (features may be traced). Same edge order as
    `fully_connected_graph`; raises `ValueError` when features have the wrong number of rows,
    with jraph's message first.
    """
    n_rows = _leading_size(node_features)
    if n_rows is not None and n_rows != n_node_per_graph * n_graph:
        raise ValueError(
            "Number of nodes is not equal to num_nodes_per_graph * n_graph: node_features have "
            f"{n_rows} rows, n_node_per_graph * n_graph = {n_node_per_graph * n_graph}."
        )
    n_global_rows = _leading_size(global_features)
    if n_global_rows is not None and n_global_rows != n_graph:
        raise ValueError(
            f"The number of globals is not equal to n_graph: global_features have "
            f"{n_global_rows} rows, n_graph = {n_graph}."
        )
    graph = fully_connected_graph(
        [n_node_per_graph] * n_graph, node_features, global_features, add_self_edges
    )
    return graph._replace(
        receivers=jax.device_put(graph.receivers),
        senders=jax.device_put(graph.senders),
        n_node=jax.device_put(graph.n_node),
        n_edge=jax.device_put(graph.n_edge),
    )


def _single_graph_indices(graph: GraphsTuple, name: str) -> tuple[np.ndarray, np.ndarray]:
    if graph.senders is None or graph.receivers is None:
        raise ValueError(f"{name} needs graph.senders and graph.receivers, but one is None.")
    return np.asarray(graph.senders), np.asarray(graph.receivers)


def edge_list(graph: GraphsTuple) -> np.ndarray:
    """Int `[2, E]`: row 0 the senders, row 1 the receivers (PyG's `edge_index`). Host-only.

    `from_edge_list(*edge_list(graph), n_node=graph.n_node)` rebuilds the connectivity.
    """
    senders, receivers = _single_graph_indices(graph, "edge_list")
    return np.stack([senders, receivers])


def from_edge_list(
    senders: Sequence[int] | np.ndarray,
    receivers: Sequence[int] | np.ndarray,
    n_node: int | Sequence[int] | np.ndarray,
    nodes: ArrayTree | None = None,
    edges: ArrayTree | None = None,
    globals: ArrayTree | None = None,
) -> GraphsTuple:
    """Builds a `GraphsTuple` from sender and receiver indices `[E]`. Host-only (NumPy).

    `n_node` is an int (one graph) or one size per graph (a batch); indices are global node
    indices. For a batch, edges must be grouped by graph (each graph's edges contiguous, in graph
    order) and never cross graphs; `n_edge` is counted from the senders. Raises `ValueError` on
    out-of-range indices or edges that break that layout.
    """
    senders = np.asarray(senders, np.int32).reshape(-1)
    receivers = np.asarray(receivers, np.int32).reshape(-1)
    sizes = np.asarray(n_node, np.int32).reshape(-1)
    total = int(sizes.sum())
    if senders.shape != receivers.shape:
        raise ValueError(
            f"senders {senders.shape} and receivers {receivers.shape} differ in length."
        )
    for name, index in (("senders", senders), ("receivers", receivers)):
        if index.size and (index.min() < 0 or index.max() >= total):
            raise ValueError(
                f"{name} must lie in [0, {total}), found [{index.min()}, {index.max()}]."
            )
    node_ends = np.cumsum(sizes)
    sender_graph = np.searchsorted(node_ends, senders, side="right")
    receiver_graph = np.searchsorted(node_ends, receivers, side="right")
    if np.any(sender_graph != receiver_graph) or np.any(np.diff(sender_graph) < 0):
        raise ValueError(
            "Edges must stay within one graph and be grouped by graph, in graph order."
        )
    n_edge = np.bincount(sender_graph, minlength=sizes.shape[0]).astype(np.int32)
    return GraphsTuple(nodes, edges, receivers, senders, globals, sizes, n_edge)


def dense_adjacency(graph: GraphsTuple, edge_weights: np.ndarray | None = None) -> np.ndarray:
    """Dense adjacency `[N, N]` with `A[s, r]` = number of edges from node `s` to node `r`.

    With `edge_weights` (`[E]` or `[E, ...]`) the entries sum those weights instead, giving
    `[N, N, ...]` in their dtype. A batch gives one block-diagonal matrix over all its nodes.
    Host-only (NumPy).
    """
    senders, receivers = _single_graph_indices(graph, "dense_adjacency")
    n = num_nodes(graph)
    if edge_weights is None:
        edge_weights = np.ones(senders.shape[0], np.int32)
    edge_weights = np.asarray(edge_weights)
    adjacency = np.zeros((n, n) + edge_weights.shape[1:], edge_weights.dtype)
    np.add.at(adjacency, (senders, receivers), edge_weights)
    return adjacency


def from_dense_adjacency(adjacency: np.ndarray, nodes: ArrayTree | None = None) -> GraphsTuple:
    """One graph with an edge `s -> r` for every nonzero `adjacency[s, r]`. Host-only (NumPy).

    `adjacency` is `[N, N]`. Edges come in row-major order (by sender, then receiver) and their
    features are the entries `[E]`, so `dense_adjacency(g, edge_weights=g.edges)` gives the
    matrix back. `nodes` (leaves `[N, ...]`) are passed through; globals are None.
    """
    adjacency = np.asarray(adjacency)
    if adjacency.ndim != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise ValueError(f"adjacency must be square [N, N], got shape {adjacency.shape}.")
    senders, receivers = np.nonzero(adjacency)
    return GraphsTuple(
        nodes=nodes,
        edges=adjacency[senders, receivers],
        receivers=receivers.astype(np.int32),
        senders=senders.astype(np.int32),
        globals=None,
        n_node=np.array([adjacency.shape[0]], np.int32),
        n_edge=np.array([senders.shape[0]], np.int32),
    )


def _import_networkx():
    try:
        import networkx
    except ImportError as error:
        raise ImportError(
            "gnkit's networkx conversion needs networkx: pip install 'gnkit[networkx]'."
        ) from error
    return networkx


def to_networkx(graph: GraphsTuple, feature_key: str = "features"):
    """A `networkx.MultiDiGraph` from a `GraphsTuple` holding one graph. Host-only.

    Nodes are `0..N-1`; edge `i` goes from `senders[i]` to `receivers[i]` (parallel edges kept).
    Node and edge features (row `i` of every leaf) and globals (row 0) are stored under
    `feature_key` on the nodes, edges and `nx_graph.graph` when not None. Needs networkx (the
    `networkx` extra). For a batch, `unbatch_np` first.
    """
    networkx = _import_networkx()
    graph = jax.device_get(graph)
    if num_graphs(graph) != 1:
        raise ValueError(
            f"to_networkx converts one graph, got {num_graphs(graph)}; unbatch_np it first."
        )
    senders, receivers = _single_graph_indices(graph, "to_networkx")
    nx_graph = networkx.MultiDiGraph()
    if graph.globals is not None:
        nx_graph.graph[feature_key] = _tree_map(lambda leaf: leaf[0], graph.globals)
    for node in range(int(np.sum(graph.n_node))):
        attributes = {}
        if graph.nodes is not None:
            attributes[feature_key] = _tree_map(lambda leaf, i=node: leaf[i], graph.nodes)
        nx_graph.add_node(node, **attributes)
    for edge, (sender, receiver) in enumerate(
        zip(senders.tolist(), receivers.tolist(), strict=True)
    ):
        attributes = {}
        if graph.edges is not None:
            attributes[feature_key] = _tree_map(lambda leaf, i=edge: leaf[i], graph.edges)
        nx_graph.add_edge(sender, receiver, **attributes)
    return nx_graph


def _stack_attribute(items: list[dict], feature_key: str, what: str):
    has_key = [feature_key in attributes for attributes in items]
    if not any(has_key):
        return None
    if not all(has_key):
        raise ValueError(f"from_networkx: some {what} have '{feature_key}' and some do not.")
    return _tree_map(lambda *rows: np.stack(rows), *[a[feature_key] for a in items])


def from_networkx(nx_graph, feature_key: str = "features") -> GraphsTuple:
    """A one-graph `GraphsTuple` from a networkx graph. Host-only.

    Nodes are numbered in `nx_graph.nodes` order. Directed graphs give one edge per networkx
    edge, in `nx_graph.edges` order (grouped by sender); undirected graphs give both directions
    (a self loop once). Features are the `feature_key` attributes of nodes, edges and
    `nx_graph.graph`, stacked along a new axis 0 (None where absent). Needs networkx.
    """
    _import_networkx()
    index_of = {node: i for i, node in enumerate(nx_graph.nodes)}
    senders, receivers, edge_attributes = [], [], []
    for sender, receiver, attributes in nx_graph.edges(data=True):
        pairs = [(sender, receiver)]
        if not nx_graph.is_directed() and sender != receiver:
            pairs.append((receiver, sender))
        for s, r in pairs:
            senders.append(index_of[s])
            receivers.append(index_of[r])
            edge_attributes.append(attributes)
    global_attributes = [nx_graph.graph] if feature_key in nx_graph.graph else [{}]
    return GraphsTuple(
        nodes=_stack_attribute([a for _, a in nx_graph.nodes(data=True)], feature_key, "nodes"),
        edges=_stack_attribute(edge_attributes, feature_key, "edges"),
        receivers=np.asarray(receivers, np.int32),
        senders=np.asarray(senders, np.int32),
        globals=_stack_attribute(global_attributes, feature_key, "graphs"),
        n_node=np.array([len(index_of)], np.int32),
        n_edge=np.array([len(senders)], np.int32),
    )
