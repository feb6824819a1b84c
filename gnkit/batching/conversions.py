"""Edge order, graph builders and conversions. Host-side (NumPy), except where a function says.

Receiver-sorted edges and self-edges, complete graphs (`fully_connected_graph`, jraph's
`get_fully_connected_graph`), edge lists (PyG's `edge_index`), dense adjacency matrices and
networkx graphs. Difference from jraph, deliberate: `get_fully_connected_graph` with `n_graph=0`
gives empty `n_node` and `n_edge` (jraph gives `n_edge=[0]`).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np
from jax.tree_util import tree_map

from gnkit.graph import ArrayTree, GraphsTuple, num_graphs, num_nodes, require


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
        edges=tree_map(lambda leaf: np.asarray(leaf)[order], graph.edges),
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
        edges=tree_map(extend_edges, graph.edges),
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

    Args:
      n_node_per_graph: the size of each graph, ints `>= 0`.
      node_features: `ArrayTree` with `sum(n_node_per_graph)` rows, passed through unchanged; or
        None.
      global_features: `ArrayTree` with one row per graph, passed through unchanged; or None.
      add_self_edges: include the edge `i -> i` of every node.

    Returns:
      A NumPy-indexed `GraphsTuple` with `edges=None`.
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

    Args:
      n_node_per_graph: nodes in each graph (static int).
      n_graph: graphs in the batch (static int).
      node_features: `ArrayTree` with `n_node_per_graph * n_graph` rows (may be traced), or None.
      global_features: `ArrayTree` with `n_graph` rows (may be traced), or None.
      add_self_edges: include the edge `i -> i` of every node.

    Returns:
      A `GraphsTuple` with device-array indices and `edges=None`.
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

    For a batch, edges must be grouped by graph (each graph's edges contiguous, in graph
    order) and never cross graphs; `n_edge` is counted from the senders. Raises `ValueError` on
    out-of-range indices or edges that break that layout.

    Args:
      senders: int `[E]`, the global index of each edge's source node.
      receivers: int `[E]`, the global index of each edge's target node.
      n_node: an int (one graph) or one size per graph (a batch).
      nodes: node features, leaves `[N, ...]`, or None; stored as given.
      edges: edge features, leaves `[E, ...]`, or None; stored as given.
      globals: global features, leaves `[G, ...]`, or None; stored as given.

    Returns:
      The `GraphsTuple`, int32 indices, `n_edge` counted from the senders.
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
        nx_graph.graph[feature_key] = tree_map(lambda leaf: leaf[0], graph.globals)
    for node in range(int(np.sum(graph.n_node))):
        attributes = {}
        if graph.nodes is not None:
            attributes[feature_key] = tree_map(lambda leaf, i=node: leaf[i], graph.nodes)
        nx_graph.add_node(node, **attributes)
    for edge, (sender, receiver) in enumerate(
        zip(senders.tolist(), receivers.tolist(), strict=True)
    ):
        attributes = {}
        if graph.edges is not None:
            attributes[feature_key] = tree_map(lambda leaf, i=edge: leaf[i], graph.edges)
        nx_graph.add_edge(sender, receiver, **attributes)
    return nx_graph


def _stack_attribute(items: list[dict], feature_key: str, what: str):
    has_key = [feature_key in attributes for attributes in items]
    if not any(has_key):
        return None
    if not all(has_key):
        raise ValueError(f"from_networkx: some {what} have '{feature_key}' and some do not.")
    return tree_map(lambda *rows: np.stack(rows), *[a[feature_key] for a in items])


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
