"""Functional graph-network blocks: edge, node and global updates, and the networks built from them.

A block factory takes update callables and switches and returns a pure function
`GraphsTuple -> GraphsTuple`. Blocks hold no parameters: an update can be a Flax linen submodule
(called inside the parent module's `__call__`), an NNX module or a plain function. Updates with
several inputs are called with keyword arguments naming them (`edges=`, `sender_nodes=`, ...),
passing only the inputs the block's switches enable, so one function signature documents what it
sees; wrap a single-input layer with `concatenated_args` to feed it all of them. Updates with one
input are called positionally, so a `Dense` or `nnx.Linear` plugs in as is.

Features may be ArrayTrees: every leaf has a leading `[N]` (nodes), `[E]` (edges) or `[G]`
(globals) axis. Everything here is jittable, vmappable over stacked graphs of equal padded size,
and differentiable. Every public function checks its graph at trace time with
`gnkit.graph.require`: a field the block needs that is None raises a `ValueError` naming it, and
a Python list in a field (or a list of graphs instead of one batched graph) a `TypeError` naming
the field and what was expected.

Reductions use aggregators (`gnkit.aggregators`): a name, which resolves to a safe reduction (0 on
an empty segment), or any callable `f(data, segment_ids, num_segments, indices_are_sorted=False)`.
`indices_are_sorted=True` declares the receivers sorted (as in gnkit's receiver-sorted batches)
and turns on the sorted fast path for reductions over receivers. Per-graph reductions always use
it: the node and edge graph indices are sorted by construction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from gnkit.aggregators import get_aggregator
from gnkit.graph import (
    ArrayTree,
    GraphsTuple,
    edge_graph_index,
    node_graph_index,
    num_nodes,
    require,
)

Aggregator = str | Callable[..., jax.Array]
GraphFn = Callable[[GraphsTuple], GraphsTuple]
tree_map = jax.tree_util.tree_map


def concatenated_args(update: Callable[..., Any] | None = None, *, axis: int = -1):
    """Wrap `update` so it receives its inputs concatenated into one array.

    The wrapper flattens its positional arguments, then its keyword arguments in sorted key order
    (jraph's order), and concatenates all leaves along `axis` before calling `update`. Keyword
    order is therefore alphabetical: for an edge block, `edges, globals, receiver_nodes,
    sender_nodes`. Usable as `concatenated_args(f)`, `@concatenated_args` or
    `@concatenated_args(axis=0)`. Jittable.
    """

    def decorate(fn):
        @functools.wraps(fn, updated=())
        def wrapper(*args, **kwargs):
            leaves = jax.tree_util.tree_leaves(args) + jax.tree_util.tree_leaves(kwargs)
            return fn(jnp.concatenate(leaves, axis=axis))

        return wrapper

    return decorate if update is None else decorate(update)


def _node_count(graph: GraphsTuple, block: str) -> int:
    """The static number of node rows `N`, read from `graph.nodes` (or from a concrete `n_node`).

    Inside `jit` a graph without node features has no static node count; that raises a
    `ValueError` naming `block`.
    """
    leaves = jax.tree_util.tree_leaves(graph.nodes)
    if leaves:
        return leaves[0].shape[0]
    try:
        return num_nodes(graph)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError) as error:
        raise ValueError(
            f"{block} needs graph.nodes to know the number of nodes inside jit, but it is None."
        ) from error


def _reduce(aggregator, features, segment_ids, num_segments, indices_are_sorted):
    """Apply an aggregator to every leaf; the sorted flag is passed only when True."""
    reduce_fn = get_aggregator(aggregator)
    if indices_are_sorted:
        return tree_map(
            lambda x: reduce_fn(x, segment_ids, num_segments, indices_are_sorted=True), features
        )
    return tree_map(lambda x: reduce_fn(x, segment_ids, num_segments), features)


def _has_leaves(tree) -> bool:
    return bool(jax.tree_util.tree_leaves(tree))


def broadcast_sender_nodes_to_edges(graph: GraphsTuple) -> ArrayTree:
    """Each edge's sender node features: leaves `[N, ...] -> [E, ...]`. Jittable."""
    require(graph, "senders", block="broadcast_sender_nodes_to_edges")
    return tree_map(lambda x: x[graph.senders], graph.nodes)


def broadcast_receiver_nodes_to_edges(graph: GraphsTuple) -> ArrayTree:
    """Each edge's receiver node features: leaves `[N, ...] -> [E, ...]`. Jittable."""
    require(graph, "receivers", block="broadcast_receiver_nodes_to_edges")
    return tree_map(lambda x: x[graph.receivers], graph.nodes)


def broadcast_globals_to_edges(graph: GraphsTuple) -> ArrayTree:
    """Each edge's graph's globals: leaves `[G, ...] -> [E, ...]`; None stays None. Jittable."""
    require(graph, block="broadcast_globals_to_edges")
    if not _has_leaves(graph.globals):
        return graph.globals
    graph_index = edge_graph_index(graph)
    return tree_map(lambda g: jnp.asarray(g)[graph_index], graph.globals)


def broadcast_globals_to_nodes(graph: GraphsTuple) -> ArrayTree:
    """Each node's graph's globals: leaves `[G, ...] -> [N, ...]`; None stays None. Jittable."""
    require(graph, block="broadcast_globals_to_nodes")
    if not _has_leaves(graph.globals):
        return graph.globals
    graph_index = node_graph_index(graph)
    return tree_map(lambda g: jnp.asarray(g)[graph_index], graph.globals)


def aggregate_received_edges(
    graph: GraphsTuple, aggregator: Aggregator = "sum", *, indices_are_sorted: bool = False
) -> ArrayTree:
    """Reduce each node's incoming edges: leaves `[E, ...] -> [N, ...]`. Jittable.

    `indices_are_sorted` declares `graph.receivers` sorted. None edges stay None.
    """
    require(graph, block="aggregate_received_edges")
    if not _has_leaves(graph.edges):
        return graph.edges
    require(graph, "receivers", block="aggregate_received_edges")
    n_node = _node_count(graph, "aggregate_received_edges")
    return _reduce(aggregator, graph.edges, graph.receivers, n_node, indices_are_sorted)


def aggregate_sent_edges(graph: GraphsTuple, aggregator: Aggregator = "sum") -> ArrayTree:
    """Reduce each node's outgoing edges: leaves `[E, ...] -> [N, ...]`. Jittable.

    None edges stay None.
    """
    require(graph, block="aggregate_sent_edges")
    if not _has_leaves(graph.edges):
        return graph.edges
    require(graph, "senders", block="aggregate_sent_edges")
    n_node = _node_count(graph, "aggregate_sent_edges")
    return _reduce(aggregator, graph.edges, graph.senders, n_node, False)


def aggregate_edges_to_globals(
    graph: GraphsTuple, aggregator: Aggregator = "sum", *, indices_are_sorted: bool = True
) -> ArrayTree:
    """Reduce the edges of each graph: leaves `[E, ...] -> [G, ...]`. Jittable.

    The edge graph index is sorted, so the aggregator gets `indices_are_sorted=True` unless this
    is set False (for an aggregator that takes only three arguments). None edges stay None.
    """
    require(graph, block="aggregate_edges_to_globals")
    if not _has_leaves(graph.edges):
        return graph.edges
    n_graph = graph.n_node.shape[0]
    return _reduce(aggregator, graph.edges, edge_graph_index(graph), n_graph, indices_are_sorted)


def aggregate_nodes_to_globals(
    graph: GraphsTuple, aggregator: Aggregator = "sum", *, indices_are_sorted: bool = True
) -> ArrayTree:
    """Reduce the nodes of each graph: leaves `[N, ...] -> [G, ...]`. Jittable.

    As `aggregate_edges_to_globals`, for nodes. None nodes stay None.
    """
    require(graph, block="aggregate_nodes_to_globals")
    if not _has_leaves(graph.nodes):
        return graph.nodes
    n_graph = graph.n_node.shape[0]
    return _reduce(aggregator, graph.nodes, node_graph_index(graph), n_graph, indices_are_sorted)


def _enabled(**flags: bool) -> list[str]:
    return [name for name, flag in flags.items() if flag]


def _check_some_input(block: str, **switches: bool) -> None:
    if not any(switches.values()):
        raise ValueError(f"{block}: every input is switched off ({', '.join(switches)}).")


def edge_block(
    update_fn: Callable[..., ArrayTree],
    *,
    use_edges: bool = True,
    use_sender_nodes: bool = True,
    use_receiver_nodes: bool = True,
    use_globals: bool = True,
) -> GraphFn:
    """An edge update: `edges' = update_fn(edges=, sender_nodes=, receiver_nodes=, globals=)`.

    Only the switched-on inputs are passed. Jittable when `update_fn` is.

    Args:
      update_fn: takes the switched-on inputs by keyword, each with leaves `[E, ...]`, and
        returns the new edges, leaves `[E, ...]`.
      use_edges: pass the edge features as `edges`.
      use_sender_nodes: pass each edge's sender node features as `sender_nodes`.
      use_receiver_nodes: pass each edge's receiver node features as `receiver_nodes`.
      use_globals: pass each edge's graph's globals as `globals`.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.edges`.

    Example:
        A path 0 -> 1 -> 2; the update names the inputs it takes (globals switched off):

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=jnp.array([[1.0], [2.0], [3.0]]), edges=jnp.array([[10.0], [20.0]]),
        ...     senders=jnp.array([0, 1]), receivers=jnp.array([1, 2]), globals=jnp.array([[0.5]]),
        ...     n_node=jnp.array([3]), n_edge=jnp.array([2]))
        >>> block = gn.edge_block(
        ...     lambda edges, sender_nodes, receiver_nodes: edges + sender_nodes - receiver_nodes,
        ...     use_globals=False)
        >>> print(block(graph).edges)
        [[ 9.]
         [19.]]
    """
    _check_some_input(
        "edge_block",
        use_edges=use_edges,
        use_sender_nodes=use_sender_nodes,
        use_receiver_nodes=use_receiver_nodes,
        use_globals=use_globals,
    )

    def apply(graph: GraphsTuple) -> GraphsTuple:
        needed = _enabled(
            edges=use_edges,
            nodes=use_sender_nodes or use_receiver_nodes,
            senders=use_sender_nodes,
            receivers=use_receiver_nodes,
            globals=use_globals,
        )
        require(graph, *needed, block="edge_block")
        inputs = {}
        if use_edges:
            inputs["edges"] = graph.edges
        if use_sender_nodes:
            inputs["sender_nodes"] = broadcast_sender_nodes_to_edges(graph)
        if use_receiver_nodes:
            inputs["receiver_nodes"] = broadcast_receiver_nodes_to_edges(graph)
        if use_globals:
            inputs["globals"] = broadcast_globals_to_edges(graph)
        return graph._replace(edges=update_fn(**inputs))

    return apply


def node_block(
    update_fn: Callable[..., ArrayTree],
    *,
    aggregator: Aggregator = "sum",
    use_received_edges: bool = True,
    use_sent_edges: bool = False,
    use_nodes: bool = True,
    use_globals: bool = True,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A node update: `nodes' = update_fn(nodes=, received_edges=, sent_edges=, globals=)`.

    Only the switched-on inputs are passed. Jittable when `update_fn` is.

    Args:
      update_fn: takes the switched-on inputs by keyword, each with leaves `[N, ...]`, and
        returns the new nodes, leaves `[N, ...]`.
      aggregator: reduces the edges into and out of each node (name or `Aggregator`); the default
        safe aggregators give 0 for a node with no such edge.
      use_received_edges: pass the reduction of each node's incoming edges as `received_edges`.
      use_sent_edges: pass the reduction of each node's outgoing edges as `sent_edges`.
      use_nodes: pass the node features as `nodes`.
      use_globals: pass each node's graph's globals as `globals`.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes`.

    Example:
        Each node adds the sum of its incoming edges (node 0 has none: 0):

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=jnp.array([[1.0], [2.0], [3.0]]), edges=jnp.array([[10.0], [20.0]]),
        ...     senders=jnp.array([0, 1]), receivers=jnp.array([1, 2]), globals=jnp.array([[0.5]]),
        ...     n_node=jnp.array([3]), n_edge=jnp.array([2]))
        >>> block = gn.node_block(lambda nodes, received_edges: nodes + received_edges,
        ...                       use_globals=False)
        >>> print(block(graph).nodes)
        [[ 1.]
         [12.]
         [23.]]
    """
    _check_some_input(
        "node_block",
        use_received_edges=use_received_edges,
        use_sent_edges=use_sent_edges,
        use_nodes=use_nodes,
        use_globals=use_globals,
    )

    def apply(graph: GraphsTuple) -> GraphsTuple:
        needed = _enabled(
            nodes=use_nodes,
            edges=use_received_edges or use_sent_edges,
            receivers=use_received_edges,
            senders=use_sent_edges,
            globals=use_globals,
        )
        require(graph, *needed, block="node_block")
        inputs = {}
        if use_nodes:
            inputs["nodes"] = graph.nodes
        if use_received_edges:
            inputs["received_edges"] = aggregate_received_edges(
                graph, aggregator, indices_are_sorted=indices_are_sorted
            )
        if use_sent_edges:
            inputs["sent_edges"] = aggregate_sent_edges(graph, aggregator)
        if use_globals:
            inputs["globals"] = broadcast_globals_to_nodes(graph)
        return graph._replace(nodes=update_fn(**inputs))

    return apply


def global_block(
    update_fn: Callable[..., ArrayTree],
    *,
    edge_aggregator: Aggregator = "sum",
    node_aggregator: Aggregator = "sum",
    use_edges: bool = True,
    use_nodes: bool = True,
    use_globals: bool = True,
) -> GraphFn:
    """A global update: `globals' = update_fn(edges=, nodes=, globals=)`.

    Only the switched-on inputs are passed. Jittable when `update_fn` is.

    Args:
      update_fn: takes the switched-on inputs by keyword, each with leaves `[G, ...]`, and
        returns the new globals, leaves `[G, ...]`.
      edge_aggregator: reduces each graph's edges (name or `Aggregator`).
      node_aggregator: reduces each graph's nodes.
      use_edges: pass the reduction of each graph's edges as `edges`.
      use_nodes: pass the reduction of each graph's nodes as `nodes`.
      use_globals: pass the globals as `globals`.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.globals`.
    """
    _check_some_input(
        "global_block", use_edges=use_edges, use_nodes=use_nodes, use_globals=use_globals
    )

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(
            graph,
            *_enabled(edges=use_edges, nodes=use_nodes, globals=use_globals),
            block="global_block",
        )
        inputs = {}
        if use_edges:
            inputs["edges"] = aggregate_edges_to_globals(graph, edge_aggregator)
        if use_nodes:
            inputs["nodes"] = aggregate_nodes_to_globals(graph, node_aggregator)
        if use_globals:
            inputs["globals"] = graph.globals
        return graph._replace(globals=update_fn(**inputs))

    return apply


def _chain(*stages: GraphFn) -> GraphFn:
    def apply(graph: GraphsTuple) -> GraphsTuple:
        for stage in stages:
            graph = stage(graph)
        return graph

    return apply


def graph_network(
    edge_fn: Callable[..., ArrayTree] | None = None,
    node_fn: Callable[..., ArrayTree] | None = None,
    global_fn: Callable[..., ArrayTree] | None = None,
    *,
    aggregator: Aggregator = "sum",
    global_aggregator: Aggregator = "sum",
    use_sent_edges: bool = False,
    use_globals: bool = True,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A full graph network (Battaglia et al. 2018, Algorithm 1): edge, node, then global update.

    For other switches compose `edge_block`, `node_block` and `global_block` directly.

    Args:
      edge_fn: `(edges=, sender_nodes=, receiver_nodes=[, globals=]) -> new edges`, leaves
        `[E, ...]`; None skips the edge stage.
      node_fn: `(nodes=, received_edges=[, sent_edges=][, globals=]) -> new nodes`, leaves
        `[N, ...]`, from the new edges reduced by `aggregator`; None skips the node stage.
      global_fn: `(edges=, nodes=[, globals=]) -> new globals`, leaves `[G, ...]`, from the new
        edges and nodes reduced per graph by `global_aggregator`; None skips the global stage.
      aggregator: reduces edges per node for `node_fn` (name or `Aggregator`).
      global_aggregator: reduces edges and nodes per graph for `global_fn`.
      use_sent_edges: also pass each node's reduced outgoing edges to `node_fn`.
      use_globals: pass `globals` to every update; False drops them from all three.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Returns:
      A function `GraphsTuple -> GraphsTuple`.

    Example:
        Messages `sender * edge` (10 and 40), nodes add what they receive, globals sum everything
        (1 + 12 + 43 nodes, 10 + 40 edges):

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=jnp.array([[1.0], [2.0], [3.0]]), edges=jnp.array([[10.0], [20.0]]),
        ...     senders=jnp.array([0, 1]), receivers=jnp.array([1, 2]), globals=jnp.array([[0.5]]),
        ...     n_node=jnp.array([3]), n_edge=jnp.array([2]))
        >>> network = gn.graph_network(
        ...     edge_fn=lambda edges, sender_nodes, receiver_nodes, globals: sender_nodes * edges,
        ...     node_fn=lambda nodes, received_edges, globals: nodes + received_edges,
        ...     global_fn=lambda nodes, edges, globals: nodes + edges)
        >>> out = network(graph)
        >>> print(out.nodes[:, 0], out.globals[:, 0])
        [ 1. 12. 43.] [106.]
    """
    stages = []
    if edge_fn is not None:
        stages.append(edge_block(edge_fn, use_globals=use_globals))
    if node_fn is not None:
        stages.append(
            node_block(
                node_fn,
                aggregator=aggregator,
                use_sent_edges=use_sent_edges,
                use_globals=use_globals,
                indices_are_sorted=indices_are_sorted,
            )
        )
    if global_fn is not None:
        stages.append(
            global_block(
                global_fn,
                edge_aggregator=global_aggregator,
                node_aggregator=global_aggregator,
                use_globals=use_globals,
            )
        )
    return _chain(*stages)


def graph_independent(
    edge_fn: Callable[[ArrayTree], ArrayTree] | None = None,
    node_fn: Callable[[ArrayTree], ArrayTree] | None = None,
    global_fn: Callable[[ArrayTree], ArrayTree] | None = None,
) -> GraphFn:
    """Update edges, nodes and globals each on its own: `edges' = edge_fn(edges)`, and so on.

    Each function gets its field positionally (leaves `[E, ...]`, `[N, ...]`, `[G, ...]`) and
    returns the new field; a None function leaves its field as is. Nothing flows between fields.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        updates = {"edges": edge_fn, "nodes": node_fn, "globals": global_fn}
        active = {field: fn for field, fn in updates.items() if fn is not None}
        require(graph, *active, block="graph_independent")
        return graph._replace(**{field: fn(getattr(graph, field)) for field, fn in active.items()})

    return apply


def interaction_network(
    edge_fn: Callable[..., ArrayTree],
    node_fn: Callable[..., ArrayTree],
    *,
    aggregator: Aggregator = "sum",
    use_sent_edges: bool = False,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """An interaction network (Battaglia et al. 2016): a graph network without globals.

    The edge update, then the node update from the new edges.

    Args:
      edge_fn: `(edges=, sender_nodes=, receiver_nodes=) -> new edges`, leaves `[E, ...]`.
      node_fn: `(nodes=, received_edges=[, sent_edges=]) -> new nodes`, leaves `[N, ...]`.
      aggregator: reduces the new edges per node (name or `Aggregator`).
      use_sent_edges: also pass each node's reduced outgoing edges as `sent_edges`.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.edges` and `graph.nodes`;
      globals are untouched.
    """
    return graph_network(
        edge_fn,
        node_fn,
        aggregator=aggregator,
        use_sent_edges=use_sent_edges,
        use_globals=False,
        indices_are_sorted=indices_are_sorted,
    )


def relation_network(
    edge_fn: Callable[..., ArrayTree],
    global_fn: Callable[[ArrayTree], ArrayTree],
    *,
    aggregator: Aggregator = "sum",
    use_globals: bool = False,
    use_edges: bool = False,
) -> GraphFn:
    """A relation network (Santoro et al. 2017): `globals' = global_fn(edges=agg_e g(o_s, o_r))`.

    Use a fully connected graph (all ordered pairs) to match the paper.

    Args:
      edge_fn: `(sender_nodes=, receiver_nodes=[, globals=][, edges=])` -> the score of each
        ordered pair of objects, leaves `[E, ...]`.
      global_fn: `(edges=) -> new globals`, from the pair scores reduced per graph, leaves
        `[G, ...]`.
      aggregator: reduces the pair scores per graph (name or `Aggregator`).
      use_globals: also pass each graph's globals to `edge_fn` (the question embedding of a
        visual QA task).
      use_edges: also pass each pair's own features, `graph.edges` (e.g. the distance of the two
        objects).

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.edges` with the pair scores and
      `graph.globals` with the result.
    """
    return _chain(
        edge_block(edge_fn, use_edges=use_edges, use_globals=use_globals),
        global_block(global_fn, edge_aggregator=aggregator, use_nodes=False, use_globals=False),
    )


def deep_sets(
    node_fn: Callable[..., ArrayTree],
    global_fn: Callable[..., ArrayTree],
    *,
    aggregator: Aggregator = "sum",
    use_globals: bool = False,
) -> GraphFn:
    """DeepSets (Zaheer et al. 2017): `globals' = global_fn(nodes=agg_i node_fn(nodes=x_i))`.

    No edges are needed.

    Args:
      node_fn: `(nodes=[, globals=])` -> each set element mapped, leaves `[N, ...]`.
      global_fn: `(nodes=) -> new globals`, from the mapped elements reduced per graph, leaves
        `[G, ...]`.
      aggregator: reduces the mapped elements per graph (name or `Aggregator`).
      use_globals: also pass each element's graph's globals to `node_fn`.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes` and `graph.globals`.
    """
    return _chain(
        node_block(node_fn, use_received_edges=False, use_globals=use_globals),
        global_block(global_fn, node_aggregator=aggregator, use_edges=False, use_globals=False),
    )


def comm_net(
    node_fn: Callable[..., ArrayTree],
    *,
    message_fn: Callable[[ArrayTree], ArrayTree] | None = None,
    aggregator: Aggregator = "mean",
    indices_are_sorted: bool = False,
) -> GraphFn:
    r"""A CommNet step (Sukhbaatar et al. 2016): `nodes' = node_fn(nodes=h, messages=c)`.

    Each node's communication vector `c_i` is the `aggregator` reduction over its incoming edges
    of the sender's message, `message_fn(h_j)`. On a fully connected graph without self-edges the
    mean is the paper's :math:`c_i = \frac{1}{J - 1} \sum_{j \neq i} h_j`.

    Args:
      node_fn: `(nodes=h, messages=c) -> new nodes`, leaves `[N, ...]`.
      message_fn: maps node features to each sender's message, once per node before the gather;
        None sends the node features themselves.
      aggregator: reduces the messages into each node (name or `Aggregator`); the mean gives the
        paper's `c_i`.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="comm_net")
        messages = graph.nodes if message_fn is None else message_fn(graph.nodes)
        messages = tree_map(lambda m: m[graph.senders], messages)
        communication = aggregate_received_edges(
            graph._replace(edges=messages), aggregator, indices_are_sorted=indices_are_sorted
        )
        return graph._replace(nodes=node_fn(nodes=graph.nodes, messages=communication))

    return apply
