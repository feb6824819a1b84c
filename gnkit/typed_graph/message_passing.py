"""Typed message passing: a typed graph network, any convolution per edge set, R-GCN.

Pure functional blocks as in `gnkit.blocks`: each is built from update callables, holds no
parameters, and returns a function `TypedGraph -> TypedGraph`. Updates and convolutions are
given per set, in mappings keyed by node set name and by edge set (`EdgeSetKey` or unique
name). Jittable, differentiable; every shape depends only on the padded sizes, and padding rows
never reach real ones (padding edges join padding nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp

from gnkit.aggregators import get_aggregator
from gnkit.blocks import Aggregator, GraphFn
from gnkit.convolutions import BipartiteNodes
from gnkit.graph import ArrayTree, GraphsTuple
from gnkit.typed_graph.types import EdgeSetKey, TypedGraph, edge_keys_by

tree_map = jax.tree_util.tree_map
TypedGraphFn = Callable[[TypedGraph], TypedGraph]


def _graph_index(counts: jax.Array, rows: int) -> jax.Array:
    """The graph of each row, `[rows]`, from counts `[G]`."""
    return jnp.repeat(jnp.arange(counts.shape[0]), counts, total_repeat_length=rows)


def _reduce(aggregator: Aggregator, tree, segment_ids, num_segments: int):
    reduce_fn = get_aggregator(aggregator)
    return tree_map(lambda x: reduce_fn(x, segment_ids, num_segments), tree)


def _broadcast_context(graph: TypedGraph, counts, rows: int):
    if graph.context.features is None:
        return None
    index = _graph_index(counts, rows)
    return tree_map(lambda x: jnp.asarray(x)[index], graph.context.features)


def typed_graph_network(
    update_edge_fn: Mapping[EdgeSetKey | str, Callable[..., ArrayTree]],
    update_node_fn: Mapping[str, Callable[..., ArrayTree]],
    update_context_fn: Callable[..., ArrayTree] | None = None,
    *,
    aggregator: Aggregator = "sum",
) -> TypedGraphFn:
    """A typed graph network: edge, node and context updates per type (Battaglia et al. 2018,
    Alg. 1, per set, as GraphCast's typed graph net).

    In order, each a replacement of the set's features:

    1. every edge set `k` in `update_edge_fn`: `edges' = fn(edges=, sender_nodes=,
       receiver_nodes=, context=)`, leaves `[E_k, ...]`: the set's features, those of each
       edge's sender and receiver (from their own node sets) and its graph's context (None
       when the graph has no context features);
    2. every node set `s` in `update_node_fn`: `nodes' = fn(nodes=, received_edges=,
       sent_edges=, context=)`, `received_edges` a dict `{EdgeSetKey: [N_s, ...]}` of the
       `aggregator` reduction of the updated features of each edge set into `s` (0 for a node
       with none), `sent_edges` the same over edge sets out of `s`;
    3. `update_context_fn`, if given: `context' = fn(nodes={set: [G, ...]}, edges={EdgeSetKey:
       [G, ...]}, context=)`, each set's features reduced per graph by `aggregator`.

    Sets without an update keep their features; edge sets without features are left out of
    the aggregates. Jittable.

    Args:
      update_edge_fn: `{EdgeSetKey or unique name: edge update}`.
      update_node_fn: `{node set name: node update}`.
      update_context_fn: the context update, or None to keep the context.
      aggregator: a gnkit aggregator (name or callable) for the edge-to-node and the per-graph
        reductions.

    Returns:
      A function `TypedGraph -> TypedGraph`.
    """

    def apply(graph: TypedGraph) -> TypedGraph:
        edge_fns = edge_keys_by(update_edge_fn, graph.edges, "update_edge_fn")
        edges = dict(graph.edges)
        for key, fn in edge_fns.items():
            edge_set = edges[key]
            sender_set, receiver_set = (graph.nodes[name] for name in key.node_sets)
            rows = edge_set.senders.shape[0]
            senders, receivers = edge_set.senders, edge_set.receivers
            features = fn(
                edges=edge_set.features,
                sender_nodes=tree_map(lambda x, i=senders: jnp.asarray(x)[i], sender_set.features),
                receiver_nodes=tree_map(lambda x, i=receivers: jnp.asarray(x)[i],
                                        receiver_set.features),
                context=_broadcast_context(graph, edge_set.n_edge, rows),
            )
            edges[key] = edge_set._replace(features=features)
        nodes = dict(graph.nodes)
        for name, fn in update_node_fn.items():
            if name not in graph.nodes:
                raise KeyError(f"update_node_fn: no node set {name!r}; node sets: "
                               f"{sorted(graph.nodes)}.")
            node_set = nodes[name]
            rows = graph.num_nodes(name)
            received, sent = {}, {}
            for key, edge_set in edges.items():
                if edge_set.features is None:
                    continue
                if key.node_sets[1] == name:
                    received[key] = _reduce(aggregator, edge_set.features, edge_set.receivers,
                                            rows)
                if key.node_sets[0] == name:
                    sent[key] = _reduce(aggregator, edge_set.features, edge_set.senders, rows)
            features = fn(
                nodes=node_set.features,
                received_edges=received,
                sent_edges=sent,
                context=_broadcast_context(graph, node_set.n_node, rows),
            )
            nodes[name] = node_set._replace(features=features)
        context = graph.context
        if update_context_fn is not None:
            n_graph = graph.num_graphs
            pooled_nodes = {
                name: _reduce(aggregator, s.features,
                              _graph_index(s.n_node, graph.num_nodes(name)), n_graph)
                for name, s in nodes.items() if s.features is not None
            }
            pooled_edges = {
                key: _reduce(aggregator, s.features,
                             _graph_index(s.n_edge, s.senders.shape[0]), n_graph)
                for key, s in edges.items() if s.features is not None
            }
            context = context._replace(features=update_context_fn(
                nodes=pooled_nodes, edges=pooled_edges, context=context.features
            ))
        return TypedGraph(context=context, nodes=nodes, edges=edges)

    return apply


def edge_set_graph(graph: TypedGraph, edge_set: EdgeSetKey | str) -> tuple[GraphsTuple, int]:
    """One edge set as a homogeneous `GraphsTuple`, for a homogeneous layer. Jittable.

    Returns `(graph, offset)`: the receivers' rows are `nodes[offset:]` of the returned graph.
    Within one node set (`offset` 0) the graph is that set's nodes and the edge set. Between two
    sets of one feature width the nodes are the sender set's rows then the receiver set's,
    receivers shifted by the sender set's rows, and `n_node` the two sets' counts added; its rows
    are not grouped by graph, so use it with layers that do not read `node_graph_index`. Between
    two sets of different widths the graph is bipartite (`offset` 0): `nodes` a
    `gnkit.convolutions.BipartiteNodes` of the sender features `[N_s, F_s]` and the receiver
    features `[N_r, F_r]`, as PyTorch Geometric's `(x_src, x_dst)`, `n_node` the receiver set's
    counts; GraphSAGE, GAT and GATv2 take it. Context features are the globals.
    """
    (key,) = edge_keys_by({edge_set: None}, graph.edges, "edge_set_graph")
    edge_set = graph.edges[key]
    sender_name, receiver_name = key.node_sets
    sender_set, receiver_set = graph.nodes[sender_name], graph.nodes[receiver_name]
    if sender_name == receiver_name:
        nodes, offset, n_node, receivers = sender_set.features, 0, sender_set.n_node, None
    else:
        features = (sender_set.features, receiver_set.features)
        if not all(hasattr(f, "shape") for f in features):
            kinds = [type(f).__name__ for f in features]
            raise ValueError(
                f"edge_set_graph: edge set {key} joins node sets whose features are not both "
                f"arrays (sender {kinds[0]}, receiver {kinds[1]}); a homogeneous layer reads one "
                "array per node set."
            )
        if features[0].shape[1:] != features[1].shape[1:]:
            nodes = BipartiteNodes(*features)
            offset, n_node, receivers = 0, receiver_set.n_node, None
        else:
            offset = graph.num_nodes(sender_name)
            nodes = jnp.concatenate(features)
            n_node = sender_set.n_node + receiver_set.n_node
            receivers = edge_set.receivers + offset
    homogeneous = GraphsTuple(
        nodes=nodes,
        edges=edge_set.features,
        receivers=edge_set.receivers if receivers is None else receivers,
        senders=edge_set.senders,
        globals=graph.context.features,
        n_node=n_node,
        n_edge=edge_set.n_edge,
    )
    return homogeneous, offset


_COMBINE = {"sum": jnp.sum, "mean": jnp.mean, "max": jnp.max}


def _combine(aggregate: str, results: list[jax.Array]) -> jax.Array:
    if len(results) == 1:
        return results[0]
    return _COMBINE[aggregate](jnp.stack(results), axis=0)


def _check_aggregate(aggregate: str, caller: str) -> None:
    if aggregate not in _COMBINE:
        raise ValueError(f"{caller}: aggregate must be one of {tuple(_COMBINE)}, got "
                         f"{aggregate!r}.")


def hetero_conv(convs: Mapping[EdgeSetKey | str, GraphFn], *, aggregate: str = "sum"
                ) -> TypedGraphFn:
    """Any homogeneous convolution per edge set, combined per receiving node set.

    `convs` maps edge sets to a gnkit block `GraphsTuple -> GraphsTuple` (`gnkit.gcn`,
    `gnkit.graph_sage`, `gnkit.gin`, `gnkit.gat`, `gnkit.convolutions.gine`, a `gnkit.nn`
    layer's `__call__`, ...), run on `edge_set_graph` of its edge set; its new node features for
    the receiver rows `[N_r, F']` are combined over all edge sets into the same node set by
    `aggregate` ('sum', 'mean' or 'max', elementwise), as PyTorch Geometric's `HeteroConv`.
    Node sets that receive no edge set of `convs` keep their features. Jittable.
    """
    _check_aggregate(aggregate, "hetero_conv")

    def apply(graph: TypedGraph) -> TypedGraph:
        per_set: dict[str, list] = {}
        for key, conv in edge_keys_by(convs, graph.edges, "hetero_conv").items():
            homogeneous, offset = edge_set_graph(graph, key)
            out = conv(homogeneous).nodes
            receiver = key.node_sets[1]
            per_set.setdefault(receiver, []).append(out[offset: offset + graph.num_nodes(receiver)])
        nodes = dict(graph.nodes)
        for name, results in per_set.items():
            nodes[name] = nodes[name]._replace(features=_combine(aggregate, results))
        return graph._replace(nodes=nodes)

    return apply


RGCN_NORMALIZATIONS = ("in_degree", "none")


def _relation_messages(graph, sender_name, receiver_name, members, normalization):
    """`sum_r sum_{j -r-> i} W_r x_j / c_{i,r}` over the edge sets `members` (pairs of key and
    relation function) from one sender set to one receiver set, `[N_r, F']`.

    The edge sets share one gather and one segment sum: the projections are stacked to
    `[N_s * R, F']` and each edge picks row `sender * R + r`, so the number of scatter
    operations grows with the pairs of node sets, not with the relations."""
    count = len(members)
    features = graph.nodes[sender_name].features
    projected = jnp.stack([relation_fn(features) for _, relation_fn in members], axis=1)
    projected = projected.reshape((-1,) + projected.shape[2:])
    senders = jnp.concatenate([graph.edges[key].senders * count + index
                               for index, (key, _) in enumerate(members)])
    receivers = jnp.concatenate([graph.edges[key].receivers for key, _ in members])
    messages = projected[senders]
    n_receiver = graph.num_nodes(receiver_name)
    if normalization == "in_degree":
        relation = senders % count
        slot = receivers * count + relation
        counts = jax.ops.segment_sum(jnp.ones(slot.shape, messages.dtype), slot,
                                     n_receiver * count)
        messages = messages / counts[slot].reshape((-1,) + (1,) * (messages.ndim - 1))
    return jax.ops.segment_sum(messages, receivers, n_receiver)


def rgcn(
    relation_fns: Mapping[EdgeSetKey | str, Callable[[jax.Array], jax.Array]],
    self_fns: Mapping[str, Callable[[jax.Array], jax.Array]] | None = None,
    *,
    normalization: str = "in_degree",
) -> TypedGraphFn:
    """A relational graph convolution over edge sets (Schlichtkrull et al. 2018), one relation
    per edge set: `x'_i = self_fn_t(x_i) + sum_r sum_{j -r-> i} W_r x_j / c_{i,r}`.

    `relation_fns[r]` maps the sender set's features `[N_s, F_s]` to `[N_s, F']` (`x_j W_r`;
    it runs once per node, the edges only gather rows), so sender sets may differ in width.
    `c_{i,r}` is the number of edges of `r` into `i` (`normalization='in_degree'`, the paper's)
    or 1 (`'none'`). `self_fns[t]` (`[N_t, F_t] -> [N_t, F']`, the self-loop weight) is added
    for node set `t` when given. A node set that is neither a receiver nor in `self_fns` keeps
    its features. No activation. Jittable.
    """
    if normalization not in RGCN_NORMALIZATIONS:
        raise ValueError(f"rgcn: normalization must be one of {RGCN_NORMALIZATIONS}, got "
                         f"{normalization!r}.")
    self_fns = dict(self_fns or {})

    def apply(graph: TypedGraph) -> TypedGraph:
        totals: dict[str, jax.Array] = {}
        by_pair: dict[tuple[str, str], list] = {}
        for key, relation_fn in edge_keys_by(relation_fns, graph.edges, "rgcn").items():
            by_pair.setdefault(key.node_sets, []).append((key, relation_fn))
        for (sender_name, receiver_name), members in by_pair.items():
            messages = _relation_messages(graph, sender_name, receiver_name, members,
                                          normalization)
            totals[receiver_name] = totals.get(receiver_name, 0) + messages
        for name, self_fn in self_fns.items():
            if name not in graph.nodes:
                raise KeyError(f"rgcn self_fns: no node set {name!r}; node sets: "
                               f"{sorted(graph.nodes)}.")
            totals[name] = totals.get(name, 0) + self_fn(graph.nodes[name].features)
        nodes = dict(graph.nodes)
        for name, features in totals.items():
            nodes[name] = nodes[name]._replace(features=features)
        return graph._replace(nodes=nodes)

    return apply
