"""Neighbourhood convolutions: GCN, GraphSAGE and GIN.

Messages flow along edges from sender to receiver, so a node's neighbours are the senders of its
incoming edges; use a graph with both directions of each edge for undirected convolution. Node
features are arrays `[N, F]` (or ArrayTrees of them for `gcn` and `gin`). The blocks hold no
parameters: the caller's callables carry the weights. Jittable, vmappable, differentiable;
`indices_are_sorted` declares `graph.receivers` sorted.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from gnkit.blocks import Aggregator, GraphFn, aggregate_received_edges
from gnkit.graph import ArrayTree, GraphsTuple, require
from gnkit.segment import safe_segment_sum

tree_map = jax.tree_util.tree_map


def _neighbour_sum(features, graph, indices_are_sorted):
    """Sum of the senders' features over each node's incoming edges: `[N, ...] -> [N, ...]`."""
    n_node = jax.tree_util.tree_leaves(graph.nodes)[0].shape[0]
    return tree_map(
        lambda x: safe_segment_sum(
            x[graph.senders], graph.receivers, n_node, indices_are_sorted=indices_are_sorted
        ),
        features,
    )


def gcn(
    update_fn: Callable[[ArrayTree], ArrayTree],
    *,
    add_self_edges: bool = True,
    symmetric_normalization: bool = True,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A graph convolution (Kipf & Welling 2017): `x' = D_in^-1/2 (A + I) D_out^-1/2 update_fn(x)`.

    `update_fn` (the weight matrix `W`, leaves `[N, F] -> [N, F']`) is applied first, then each
    node sums its neighbours' projected features, each scaled by `1/sqrt(deg_out(sender))` and the
    sum by `1/sqrt(deg_in(receiver))` (degrees counted with the self-edge; a degree of 0 counts
    as 1). For a symmetric adjacency this is the paper's `D^-1/2 (A + I) D^-1/2 X W`.
    `add_self_edges` adds `I` without materialising edges; `symmetric_normalization=False` gives
    the plain sum. No activation. Configured alike (`add_self_edges`, `symmetric_normalization`)
    it equals jraph's `GraphConvolution`. Replaces `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="gcn")
        projected = update_fn(graph.nodes)
        if not symmetric_normalization:
            aggregated = _neighbour_sum(projected, graph, indices_are_sorted)
            if add_self_edges:
                aggregated = tree_map(jnp.add, aggregated, projected)
            return graph._replace(nodes=aggregated)

        n_node = jax.tree_util.tree_leaves(graph.nodes)[0].shape[0]
        ones = jnp.ones(graph.senders.shape[0])
        self_degree = 1.0 if add_self_edges else 0.0
        out_degree = safe_segment_sum(ones, graph.senders, n_node) + self_degree
        in_degree = (
            safe_segment_sum(ones, graph.receivers, n_node, indices_are_sorted=indices_are_sorted)
            + self_degree
        )
        out_scale = jax.lax.rsqrt(jnp.maximum(out_degree, 1.0))
        in_scale = jax.lax.rsqrt(jnp.maximum(in_degree, 1.0))

        def convolve(x):
            scaled = x * _column(out_scale, x)
            aggregated = _neighbour_sum(scaled, graph, indices_are_sorted)
            if add_self_edges:
                aggregated = aggregated + scaled
            return aggregated * _column(in_scale, x)

        return graph._replace(nodes=tree_map(convolve, projected))

    return apply


def _column(scale: jax.Array, like: jax.Array) -> jax.Array:
    """Reshape a per-node `[N]` scale to broadcast against `[N, ...]` features."""
    return scale.reshape(scale.shape + (1,) * (like.ndim - 1)).astype(like.dtype)


def graph_sage(
    update_fn: Callable[..., jax.Array],
    *,
    aggregator: Aggregator = "mean",
    neighbor_fn: Callable[[jax.Array], jax.Array] | None = None,
    normalize: bool = False,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A GraphSAGE layer (Hamilton et al. 2017): `x'_i = update_fn(nodes=x_i, neighbors=a_i)`.

    `a_i` is the `aggregator` reduction ('mean', 'max', 'sum' or any aggregator; 0 for a node
    without neighbours) of `neighbor_fn(x_j)` over the senders `j` of `i`'s incoming edges;
    `neighbor_fn` (None: identity) runs once per node, so a Dense + ReLU there gives the paper's
    pooling aggregator. `update_fn` holds both weight matrices of `W1 x_i + W2 a_i`: for example
    `concatenated_args(nn.Dense(F'))` computes `W [a_i || x_i]`, one matrix holding `W2` and `W1`,
    and any activation. `normalize=True` scales each output row to unit L2 norm (a zero row stays
    zero). Nodes `[N, F] -> [N, F']`. Replaces `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="graph_sage")
        messages = graph.nodes if neighbor_fn is None else neighbor_fn(graph.nodes)
        neighbors = aggregate_received_edges(
            graph._replace(edges=messages[graph.senders]),
            aggregator,
            indices_are_sorted=indices_are_sorted,
        )
        updated = update_fn(nodes=graph.nodes, neighbors=neighbors)
        if normalize:
            squared_norm = jnp.sum(updated * updated, axis=-1, keepdims=True)
            updated = updated * jax.lax.rsqrt(jnp.maximum(squared_norm, 1e-12))
        return graph._replace(nodes=updated)

    return apply


def gin(
    mlp: Callable[[ArrayTree], ArrayTree],
    *,
    epsilon: float | jax.Array = 0.0,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A graph isomorphism layer (Xu et al. 2019): `x'_i = mlp((1 + eps) x_i + sum_j x_j)`.

    The sum runs over the senders `j` of `i`'s incoming edges. `epsilon` may be a float or a
    traced scalar (a learned parameter, GIN-eps). Leaves `[N, F] -> [N, F']`. Replaces
    `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="gin")
        neighbour_sum = _neighbour_sum(graph.nodes, graph, indices_are_sorted)
        combined = tree_map(lambda x, s: (1.0 + epsilon) * x + s, graph.nodes, neighbour_sum)
        return graph._replace(nodes=mlp(combined))

    return apply
