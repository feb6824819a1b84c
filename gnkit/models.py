"""jraph's models under jraph's names, signatures and semantics.

Code written for jraph 0.0.6 runs unchanged: update callbacks are called positionally in jraph's
order, default aggregators are the jraph-named segment ops (jraph's semantics, not the safe
ones), and `GAT` / `GraphConvolution` compute what jraph's do. Differences are additive: a
keyword-only `indices_are_sorted=False` on each model (True declares `graph.receivers` sorted and
passes `indices_are_sorted=True` to the aggregators, which must then accept it), and a field a
model needs that is None raises a `ValueError` naming it where jraph would fail inside a gather.

Callbacks run in jraph's order (GraphMapFeatures: nodes, edges, globals; GraphNetwork: edges,
attention, nodes, globals; GAT: query, logit, node update), so layers created inside them get the
same random keys (Haiku) and the same automatic names (Flax `Dense_0`, `Dense_1`, ...) as under
jraph, and parameters saved from a jraph model load here. A callback given for a field that is
None is called with None, as in jraph. For new code, the keyword-argument blocks in
`gnkit.blocks` are simpler to write updates for (and reject None fields).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from gnkit.blocks import (
    aggregate_edges_to_globals,
    aggregate_nodes_to_globals,
    aggregate_received_edges,
    aggregate_sent_edges,
    broadcast_globals_to_edges,
    broadcast_globals_to_nodes,
    broadcast_receiver_nodes_to_edges,
    broadcast_sender_nodes_to_edges,
    concatenated_args,
)
from gnkit.graph import ArrayTree, GraphsTuple, require
from gnkit.segment import segment_softmax, segment_sum

__all__ = [
    "AggregateEdgesToGlobalsFn",
    "AggregateEdgesToNodesFn",
    "AggregateNodesToGlobalsFn",
    "AttentionLogitFn",
    "AttentionNormalizeFn",
    "AttentionReduceFn",
    "DeepSets",
    "EmbedEdgeFn",
    "EmbedGlobalFn",
    "EmbedNodeFn",
    "GAT",
    "GATAttentionLogitFn",
    "GATAttentionQueryFn",
    "GATNodeUpdateFn",
    "GNUpdateEdgeFn",
    "GNUpdateGlobalFn",
    "GNUpdateNodeFn",
    "GraphConvolution",
    "GraphMapFeatures",
    "GraphNetGAT",
    "GraphNetwork",
    "InteractionNetwork",
    "InteractionUpdateEdgeFn",
    "InteractionUpdateNodeFn",
    "NodeFeatures",
    "RelationNetwork",
    "concatenated_args",
]

tree_map = jax.tree_util.tree_map

NodeFeatures = EdgeFeatures = SenderFeatures = ReceiverFeatures = Globals = ArrayTree

# (features to reduce, segment ids, number of segments) -> reduced features.
AggregateEdgesToNodesFn = Callable[[EdgeFeatures, jax.Array, int], NodeFeatures]
AggregateNodesToGlobalsFn = Callable[[NodeFeatures, jax.Array, int], Globals]
AggregateEdgesToGlobalsFn = Callable[[EdgeFeatures, jax.Array, int], Globals]
# (edges, sender nodes, receiver nodes, globals), all per edge -> attention logits.
AttentionLogitFn = Callable[[EdgeFeatures, SenderFeatures, ReceiverFeatures, Globals], ArrayTree]
# (edges, attention weights) -> weighted edges.
AttentionReduceFn = Callable[[EdgeFeatures, ArrayTree], EdgeFeatures]
# (logits, segment ids, number of segments) -> normalised weights.
AttentionNormalizeFn = Callable[[EdgeFeatures, jax.Array, int], EdgeFeatures]
# (edges, sender nodes, receiver nodes, globals), all per edge -> new edges.
GNUpdateEdgeFn = Callable[[EdgeFeatures, SenderFeatures, ReceiverFeatures, Globals], EdgeFeatures]
# (nodes, aggregated sent edges, aggregated received edges, globals), all per node -> new nodes.
GNUpdateNodeFn = Callable[[NodeFeatures, SenderFeatures, ReceiverFeatures, Globals], NodeFeatures]
# (aggregated nodes, aggregated edges, globals), all per graph -> new globals.
GNUpdateGlobalFn = Callable[[NodeFeatures, EdgeFeatures, Globals], Globals]
# (nodes, aggregated sent edges, aggregated received edges) -> new nodes; the sent edges are
# left out unless `include_sent_messages_in_node_update`.
InteractionUpdateNodeFn = Callable[
    [NodeFeatures, Mapping[str, SenderFeatures], Mapping[str, ReceiverFeatures]], NodeFeatures
]
InteractionUpdateNodeFnNoSentEdges = Callable[
    [NodeFeatures, Mapping[str, ReceiverFeatures]], NodeFeatures
]
# (edges, sender nodes, receiver nodes) -> new edges.
InteractionUpdateEdgeFn = Callable[[EdgeFeatures, SenderFeatures, ReceiverFeatures], EdgeFeatures]
EmbedEdgeFn = Callable[[EdgeFeatures], EdgeFeatures]
EmbedNodeFn = Callable[[NodeFeatures], NodeFeatures]
EmbedGlobalFn = Callable[[Globals], Globals]
# nodes -> attention queries; (sender queries, receiver queries, edges) -> logits; nodes -> nodes.
GATAttentionQueryFn = Callable[[NodeFeatures], NodeFeatures]
GATAttentionLogitFn = Callable[[SenderFeatures, ReceiverFeatures, EdgeFeatures], EdgeFeatures]
GATNodeUpdateFn = Callable[[NodeFeatures], NodeFeatures]


def _sorted_kwargs(indices_are_sorted: bool) -> dict[str, Any]:
    return {"indices_are_sorted": True} if indices_are_sorted else {}


def GraphNetwork(
    update_edge_fn: GNUpdateEdgeFn | None,
    update_node_fn: GNUpdateNodeFn | None,
    update_global_fn: GNUpdateGlobalFn | None = None,
    aggregate_edges_for_nodes_fn: AggregateEdgesToNodesFn = segment_sum,
    aggregate_nodes_for_globals_fn: AggregateNodesToGlobalsFn = segment_sum,
    aggregate_edges_for_globals_fn: AggregateEdgesToGlobalsFn = segment_sum,
    attention_logit_fn: AttentionLogitFn | None = None,
    attention_normalize_fn: AttentionNormalizeFn | None = segment_softmax,
    attention_reduce_fn: AttentionReduceFn | None = None,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's GraphNetwork: Battaglia et al. 2018, Algorithm 1, with optional edge attention.

    In order: `edges = update_edge_fn(edges, sent, received, globals)` with node and global
    features gathered per edge; if `attention_logit_fn` is set, `edges = attention_reduce_fn(edges,
    w)` with `w = attention_normalize_fn(logits, segment_ids=receivers, num_segments=N)` per leaf
    of `logits = attention_logit_fn(edges, sent, received, globals)`; `nodes =
    update_node_fn(nodes, sent_agg, received_agg, globals)` where the new edges are reduced over
    each node's outgoing and incoming edges; `globals = update_global_fn(nodes_agg, edges_agg,
    globals)` with per-graph reductions. A None update skips its stage; None fields a stage only
    passes along reach the callbacks as None, as in jraph. Jittable.

    Args:
      update_edge_fn: `(edges, sent, received, globals) -> edges`, the last three gathered per
        edge; None skips the edge stage.
      update_node_fn: `(nodes, sent_agg, received_agg, globals) -> nodes`, globals broadcast per
        node; None skips the node stage.
      update_global_fn: `(nodes_agg, edges_agg, globals) -> globals` from per-graph reductions;
        None (default) skips the global stage.
      aggregate_edges_for_nodes_fn: reduces the new edges over each node's outgoing and incoming
        edges: a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      aggregate_nodes_for_globals_fn: reduces the nodes per graph.
      aggregate_edges_for_globals_fn: reduces the edges per graph.
      attention_logit_fn: `(edges, sent, received, globals) -> logits`, a pytree of `[E, ...]`;
        None (default) skips attention. Needs `attention_reduce_fn`.
      attention_normalize_fn: `(logits, segment_ids=receivers, num_segments=N) -> weights`, per
        leaf of the logits; jraph's `segment_softmax` by default.
      attention_reduce_fn: `(edges, weights) -> edges`, e.g. `edges * weights`.
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple`.

    Example:
        The network of `gnkit.graph_network`'s example with jraph's positional callbacks:

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=jnp.array([[1.0], [2.0], [3.0]]), edges=jnp.array([[10.0], [20.0]]),
        ...     senders=jnp.array([0, 1]), receivers=jnp.array([1, 2]), globals=jnp.array([[0.5]]),
        ...     n_node=jnp.array([3]), n_edge=jnp.array([2]))
        >>> network = gn.GraphNetwork(
        ...     update_edge_fn=lambda edges, sent, received, globals_: sent * edges,
        ...     update_node_fn=lambda nodes, sent, received, globals_: nodes + received,
        ...     update_global_fn=lambda nodes, edges, globals_: nodes + edges)
        >>> print(network(graph).globals)
        [[106.]]
    """
    if (attention_logit_fn is None) != (attention_reduce_fn is None):
        raise ValueError("attention_logit_fn and attention_reduce_fn must both be supplied.")
    sorted_kwargs = _sorted_kwargs(indices_are_sorted)

    def apply(graph: GraphsTuple) -> GraphsTuple:
        if update_edge_fn is not None or attention_logit_fn is not None:
            require(graph, "nodes", "senders", "receivers", block="GraphNetwork")
        if update_node_fn is not None:
            require(graph, "nodes", block="GraphNetwork")
        node_leaves = jax.tree_util.tree_leaves(graph.nodes)
        if any(leaf.shape[0] != node_leaves[0].shape[0] for leaf in node_leaves):
            raise ValueError("All node arrays in nest must contain the same number of nodes.")
        needs_per_edge = update_edge_fn is not None or attention_logit_fn is not None
        if needs_per_edge:
            sent = broadcast_sender_nodes_to_edges(graph)
            received = broadcast_receiver_nodes_to_edges(graph)
            edge_globals = broadcast_globals_to_edges(graph)

        if update_edge_fn is not None:
            graph = graph._replace(edges=update_edge_fn(graph.edges, sent, received, edge_globals))

        if attention_logit_fn is not None:
            logits = attention_logit_fn(graph.edges, sent, received, edge_globals)
            n_node = node_leaves[0].shape[0]
            weights = tree_map(
                lambda x: attention_normalize_fn(
                    x, segment_ids=graph.receivers, num_segments=n_node, **sorted_kwargs
                ),
                logits,
            )
            graph = graph._replace(edges=attention_reduce_fn(graph.edges, weights))

        if update_node_fn is not None:
            sent_aggregated = aggregate_sent_edges(graph, aggregate_edges_for_nodes_fn)
            received_aggregated = aggregate_received_edges(
                graph, aggregate_edges_for_nodes_fn, indices_are_sorted=indices_are_sorted
            )
            nodes = update_node_fn(
                graph.nodes, sent_aggregated, received_aggregated, broadcast_globals_to_nodes(graph)
            )
            graph = graph._replace(nodes=nodes)

        if update_global_fn is not None:
            nodes_aggregated = aggregate_nodes_to_globals(
                graph, aggregate_nodes_for_globals_fn, indices_are_sorted=indices_are_sorted
            )
            edges_aggregated = aggregate_edges_to_globals(
                graph, aggregate_edges_for_globals_fn, indices_are_sorted=indices_are_sorted
            )
            graph = graph._replace(
                globals=update_global_fn(nodes_aggregated, edges_aggregated, graph.globals)
            )
        return graph

    return apply


def InteractionNetwork(
    update_edge_fn: InteractionUpdateEdgeFn,
    update_node_fn: InteractionUpdateNodeFn | InteractionUpdateNodeFnNoSentEdges,
    aggregate_edges_for_nodes_fn: AggregateEdgesToNodesFn = segment_sum,
    include_sent_messages_in_node_update: bool = False,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's InteractionNetwork (Battaglia et al. 2016): a GraphNetwork without globals.

    `edges = update_edge_fn(edges, sent, received)`; `nodes = update_node_fn(nodes,
    received_agg)`, or `update_node_fn(nodes, sent_agg, received_agg)` with
    `include_sent_messages_in_node_update`. Globals are left as they are. Jittable.

    Args:
      update_edge_fn: `(edges, sent, received) -> edges`, node features gathered per edge.
      update_node_fn: `(nodes, received_agg) -> nodes`, or `(nodes, sent_agg, received_agg)` with
        `include_sent_messages_in_node_update`.
      aggregate_edges_for_nodes_fn: reduces the new edges per node:
        a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      include_sent_messages_in_node_update: also pass the reduction of each node's outgoing edges.
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.edges` and `graph.nodes`.
    """
    if include_sent_messages_in_node_update:

        def node_fn(nodes, sent, received, _):
            return update_node_fn(nodes, sent, received)
    else:

        def node_fn(nodes, _, received, __):
            return update_node_fn(nodes, received)

    return GraphNetwork(
        lambda edges, sent, received, _: update_edge_fn(edges, sent, received),
        node_fn,
        aggregate_edges_for_nodes_fn=aggregate_edges_for_nodes_fn,
        indices_are_sorted=indices_are_sorted,
    )


def _identity(features: ArrayTree) -> ArrayTree:
    return features


def GraphMapFeatures(
    embed_edge_fn: EmbedEdgeFn | None = None,
    embed_node_fn: EmbedNodeFn | None = None,
    embed_global_fn: EmbedGlobalFn | None = None,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's GraphMapFeatures: embed nodes, edges and globals each on its own.

    Calls `embed_node_fn(nodes)`, then `embed_edge_fn(edges)`, then `embed_global_fn(globals)`
    (jraph's order); a None function keeps its field. As in jraph, a function is called even
    when its field is None, so `embed_global_fn=lambda _: learned_globals` can create globals.
    `gnkit.blocks.graph_independent` is the strict variant. Jittable.
    """
    embed_nodes = embed_node_fn or _identity
    embed_edges = embed_edge_fn or _identity
    embed_globals = embed_global_fn or _identity

    def apply(graph: GraphsTuple) -> GraphsTuple:
        nodes = embed_nodes(graph.nodes)
        edges = embed_edges(graph.edges)
        globals_ = embed_globals(graph.globals)
        return graph._replace(nodes=nodes, edges=edges, globals=globals_)

    return apply


def RelationNetwork(
    update_edge_fn: Callable[[SenderFeatures, ReceiverFeatures], EdgeFeatures],
    update_global_fn: Callable[[EdgeFeatures], NodeFeatures],
    aggregate_edges_for_globals_fn: AggregateEdgesToGlobalsFn = segment_sum,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's RelationNetwork (Santoro et al. 2017).

    `edges = update_edge_fn(sent, received)`, then `globals = update_global_fn(edges_agg)` with
    the per-graph reduction of the new edges. Nodes are left as they are. Jittable.

    Args:
      update_edge_fn: `(sent, received) -> edges`, node features gathered per edge.
      update_global_fn: `(edges_agg) -> globals` from the per-graph reduction of the new edges.
      aggregate_edges_for_globals_fn: reduces the new edges per graph:
        a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.edges` and `graph.globals`.
    """
    return GraphNetwork(
        lambda _, sent, received, __: update_edge_fn(sent, received),
        None,
        lambda _, edges, __: update_global_fn(edges),
        aggregate_edges_for_globals_fn=aggregate_edges_for_globals_fn,
        indices_are_sorted=indices_are_sorted,
    )


def DeepSets(
    update_node_fn: Callable[[NodeFeatures, Globals], NodeFeatures],
    update_global_fn: Callable[[NodeFeatures], Globals],
    aggregate_nodes_for_globals_fn: AggregateNodesToGlobalsFn = segment_sum,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's DeepSets (Zaheer et al. 2017): a set as a graph without edges.

    `nodes = update_node_fn(nodes, globals)` (globals broadcast per node, None if absent), then
    `globals = update_global_fn(nodes_agg)`. Needs no senders or receivers. Jittable.

    Args:
      update_node_fn: `(nodes, globals) -> nodes`, globals broadcast per node (None if absent).
      update_global_fn: `(nodes_agg) -> globals` from the per-graph reduction of the new nodes.
      aggregate_nodes_for_globals_fn: reduces the new nodes per graph:
        a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes` and `graph.globals`.
    """
    return GraphNetwork(
        None,
        lambda nodes, _, __, globals_: update_node_fn(nodes, globals_),
        lambda nodes, _, __: update_global_fn(nodes),
        aggregate_nodes_for_globals_fn=aggregate_nodes_for_globals_fn,
        indices_are_sorted=indices_are_sorted,
    )


def GraphNetGAT(
    update_edge_fn: GNUpdateEdgeFn,
    update_node_fn: GNUpdateNodeFn,
    attention_logit_fn: AttentionLogitFn,
    attention_reduce_fn: AttentionReduceFn,
    update_global_fn: GNUpdateGlobalFn | None = None,
    aggregate_edges_for_nodes_fn: AggregateEdgesToNodesFn = segment_sum,
    aggregate_nodes_for_globals_fn: AggregateNodesToGlobalsFn = segment_sum,
    aggregate_edges_for_globals_fn: AggregateEdgesToGlobalsFn = segment_sum,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's GraphNetGAT: a GraphNetwork whose edges pass through softmax attention.

    As `GraphNetwork` with both attention functions required (ValueError if either is None).
    Jittable.

    Args:
      update_edge_fn: as `GraphNetwork`'s.
      update_node_fn: as `GraphNetwork`'s.
      attention_logit_fn: `(edges, sent, received, globals) -> logits`; required.
      attention_reduce_fn: `(edges, weights) -> edges`; required.
      update_global_fn: as `GraphNetwork`'s; None (default) skips the global stage.
      aggregate_edges_for_nodes_fn: reduces the edges per node:
        a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      aggregate_nodes_for_globals_fn: reduces the nodes per graph.
      aggregate_edges_for_globals_fn: reduces the edges per graph.
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple`.
    """
    if attention_logit_fn is None or attention_reduce_fn is None:
        raise ValueError(
            "`None` value not supported for `attention_logit_fn` or `attention_reduce_fn` in a "
            "Graph Attention network."
        )
    return GraphNetwork(
        update_edge_fn,
        update_node_fn,
        update_global_fn,
        aggregate_edges_for_nodes_fn=aggregate_edges_for_nodes_fn,
        aggregate_nodes_for_globals_fn=aggregate_nodes_for_globals_fn,
        aggregate_edges_for_globals_fn=aggregate_edges_for_globals_fn,
        attention_logit_fn=attention_logit_fn,
        attention_reduce_fn=attention_reduce_fn,
        indices_are_sorted=indices_are_sorted,
    )


def _leaky_relu_and_flatten(nodes: jax.Array) -> jax.Array:
    return jnp.reshape(jax.nn.leaky_relu(nodes), (nodes.shape[0], -1))


def GAT(
    attention_query_fn: GATAttentionQueryFn,
    attention_logit_fn: GATAttentionLogitFn,
    node_update_fn: GATNodeUpdateFn | None = None,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's GAT layer (Velickovic et al. 2018). Node features are arrays `[N, F]`.

    `q = attention_query_fn(nodes)`; per edge, `w = segment_softmax(attention_logit_fn(q_s, q_r,
    edges))` over each receiver's edges; `nodes = node_update_fn(segment_sum(q_s * w))`, where
    the default update is LeakyReLU then flattening heads to `[N, -1]`. Like jraph it adds no
    self-edges (add them to the graph to follow the paper), and uses jraph's (unsafe) softmax.
    For the native multi-head block see `gnkit.attention.gat`. Jittable.

    Args:
      attention_query_fn: nodes `[N, F]` -> queries `q` (e.g. `[N, H, D]`).
      attention_logit_fn: `(q_s, q_r, edges) -> logits`, per edge, softmaxed over each
        receiver's edges.
      node_update_fn: applied to the weighted sum `[N, ...]`; None (default): LeakyReLU, then the
        heads flattened to `[N, -1]`.
      indices_are_sorted: declares `graph.receivers` (and the graph index) sorted, passed to the
        reductions.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes`.
    """
    update = _leaky_relu_and_flatten if node_update_fn is None else node_update_fn
    sorted_kwargs = _sorted_kwargs(indices_are_sorted)

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="GAT")
        n_node = graph.nodes.shape[0]
        queries = attention_query_fn(graph.nodes)
        sent = queries[graph.senders]
        received = queries[graph.receivers]
        weights = segment_softmax(
            attention_logit_fn(sent, received, graph.edges),
            segment_ids=graph.receivers,
            num_segments=n_node,
            **sorted_kwargs,
        )
        aggregated = segment_sum(
            sent * weights, graph.receivers, num_segments=n_node, **sorted_kwargs
        )
        return graph._replace(nodes=update(aggregated))

    return apply


def GraphConvolution(
    update_node_fn: Callable[[NodeFeatures], NodeFeatures],
    aggregate_nodes_fn: AggregateEdgesToNodesFn = segment_sum,
    add_self_edges: bool = False,
    symmetric_normalization: bool = True,
    *,
    indices_are_sorted: bool = False,
) -> Callable[[GraphsTuple], GraphsTuple]:
    """jraph's GraphConvolution (Kipf & Welling 2017), without activation.

    `x = update_node_fn(nodes)`, then each node reduces its senders' `x` with
    `aggregate_nodes_fn`, optionally normalised by the degrees. For the native block see
    `gnkit.convolutions.gcn`. Jittable.

    Args:
      update_node_fn: node leaves `[N, F]` -> `x`, e.g. a Dense; called with None when the graph
        has no node features, as in jraph.
      aggregate_nodes_fn: reduces the senders' `x` into each receiver:
        a segment reduction with jraph's signature (`segment_sum`, `segment_mean`, ...).
      add_self_edges: every node also sends to itself.
      symmetric_normalization: scale each sender's `x` by `1/sqrt(max(out_degree, 1))` before the
        reduction and the result by `1/sqrt(max(in_degree, 1))` after.
      indices_are_sorted: declares `graph.receivers` sorted; used only without added self-edges.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "senders", "receivers", block="GraphConvolution")
        nodes = update_node_fn(graph.nodes)
        node_leaves = jax.tree_util.tree_leaves(nodes)
        if not node_leaves:
            raise ValueError(
                "GraphConvolution needs node features: update_node_fn(graph.nodes) returned no "
                "arrays (graph.nodes is None or empty)."
            )
        n_node = node_leaves[0].shape[0]
        senders, receivers = graph.senders, graph.receivers
        sorted_kwargs = _sorted_kwargs(indices_are_sorted)
        if add_self_edges:
            every_node = jnp.arange(n_node, dtype=senders.dtype)
            senders = jnp.concatenate([senders, every_node])
            receivers = jnp.concatenate([receivers, every_node])
            sorted_kwargs = {}

        def aggregate(x):
            return aggregate_nodes_fn(x[senders], receivers, n_node, **sorted_kwargs)

        if not symmetric_normalization:
            return graph._replace(nodes=tree_map(aggregate, nodes))
        ones = jnp.ones_like(senders)
        out_scale = jax.lax.rsqrt(jnp.maximum(segment_sum(ones, senders, n_node), 1.0))
        in_scale = jax.lax.rsqrt(jnp.maximum(segment_sum(ones, receivers, n_node), 1.0))
        nodes = tree_map(lambda x: aggregate(x * out_scale[:, None]) * in_scale[:, None], nodes)
        return graph._replace(nodes=nodes)

    return apply
