"""Neighbourhood convolutions: GCN, GraphSAGE and GIN.

Messages flow along edges from sender to receiver, so a node's neighbours are the senders of its
incoming edges; use a graph with both directions of each edge for undirected convolution. Node
features are arrays `[N, F]` (or ArrayTrees of them for `gcn` and `gin`). The blocks hold no
parameters: the caller's callables carry the weights. Jittable, vmappable, differentiable;
`indices_are_sorted` declares `graph.receivers` sorted.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from gnkit.blocks import Aggregator, GraphFn, aggregate_received_edges, aggregate_sent_edges
from gnkit.graph import ArrayTree, GraphsTuple, require

tree_map = jax.tree_util.tree_map


# Edges per step of the chunked neighbour sum: about this many bytes of gathered rows, which
# stay in cache between the gather and the scatter.
_CHUNK_BYTES = 1 << 23


def _gather_sum(x, senders, receivers, indices_are_sorted):
    """`out[i] = sum of x[j] over the edges j -> i`, `[N, ...] -> [N, ...]`, a chunk of edges at a
    time: the `[E, ...]` gathered rows are never materialised, which on the CPU ran the sum of
    1.2 M rows of 128 floats 2.8x faster than a gather followed by a segment sum."""
    row_bytes = x.dtype.itemsize * math.prod(x.shape[1:])
    chunk = max(1024, _CHUNK_BYTES // max(row_bytes, 1))
    n_chunks = senders.shape[0] // chunk
    total = jnp.zeros_like(x)
    if n_chunks >= 2:

        def add_chunk(total, edges):
            chunk_senders, chunk_receivers = edges
            return total.at[chunk_receivers].add(
                x[chunk_senders], indices_are_sorted=indices_are_sorted
            ), None

        split = n_chunks * chunk
        chunks = (senders[:split], receivers[:split])
        total, _ = jax.lax.scan(
            add_chunk, total, tree_map(lambda i: i.reshape(n_chunks, -1), chunks)
        )
        senders, receivers = senders[split:], receivers[split:]
    return total.at[receivers].add(x[senders], indices_are_sorted=indices_are_sorted)


def _neighbour_sum(features, graph, aggregator, indices_are_sorted):
    """Sum of the senders' features over each node's incoming edges: `[N, ...] -> [N, ...]`."""
    if aggregator is None:
        return tree_map(
            lambda x: _gather_sum(x, graph.senders, graph.receivers, indices_are_sorted), features
        )
    return aggregate_received_edges(
        graph._replace(edges=tree_map(lambda x: x[graph.senders], features)),
        aggregator,
        indices_are_sorted=indices_are_sorted,
    )


def gcn(
    update_fn: Callable[[ArrayTree], ArrayTree],
    *,
    add_self_edges: bool = True,
    symmetric_normalization: bool = True,
    project_first: bool = True,
    aggregator: Aggregator | None = None,
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

    `project_first=False` propagates the raw features and applies `update_fn` after: the same
    result when `update_fn` is linear (a Dense without bias, `(A X) W = A (X W)`), not otherwise.
    The edge-sized gather and scatter then carry `F` columns instead of `F'`, and when `x` needs
    no gradient (a first layer on input features) the backward pass has no edge-sized work at
    all; keep the default when `F' < F` and `x` needs a gradient. The neighbour sums gather
    and add a chunk of edges at a time (no `[E, F]` array); an `aggregator`, a segment sum such as
    the edge-sharded `gnkit.parallel.sharded_aggregator('sum')`, instead reduces the gathered
    `[E, F]` messages and counts the degrees. The self-edge term is added after the reduction,
    so `add_self_edges` stays correct with edges sharded over devices.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="gcn")
        features = update_fn(graph.nodes) if project_first else graph.nodes
        if not symmetric_normalization:
            aggregated = _neighbour_sum(features, graph, aggregator, indices_are_sorted)
            if add_self_edges:
                aggregated = tree_map(jnp.add, aggregated, features)
        else:
            in_scale, out_scale = _degree_scales(
                graph, aggregator, add_self_edges, indices_are_sorted
            )
            scaled = tree_map(lambda x: x * _column(out_scale, x), features)
            aggregated = _neighbour_sum(scaled, graph, aggregator, indices_are_sorted)
            if add_self_edges:
                aggregated = tree_map(jnp.add, aggregated, scaled)
            aggregated = tree_map(lambda x: x * _column(in_scale, x), aggregated)
        return graph._replace(nodes=aggregated if project_first else update_fn(aggregated))

    return apply


def _degree_scales(graph, aggregator, add_self_edges, indices_are_sorted):
    """`1/sqrt(deg_in)` and `1/sqrt(deg_out)`, `[N]` each, degrees counted by `aggregator`."""
    aggregator = "sum" if aggregator is None else aggregator
    ones = graph._replace(edges=jnp.ones(graph.senders.shape[0]))
    self_degree = 1.0 if add_self_edges else 0.0
    in_degree = aggregate_received_edges(ones, aggregator, indices_are_sorted=indices_are_sorted)
    out_degree = aggregate_sent_edges(ones, aggregator)
    return (
        jax.lax.rsqrt(jnp.maximum(in_degree + self_degree, 1.0)),
        jax.lax.rsqrt(jnp.maximum(out_degree + self_degree, 1.0)),
    )


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
    aggregator: Aggregator | None = None,
    indices_are_sorted: bool = False,
) -> GraphFn:
    """A graph isomorphism layer (Xu et al. 2019): `x'_i = mlp((1 + eps) x_i + sum_j x_j)`.

    The sum runs over the senders `j` of `i`'s incoming edges. `epsilon` may be a float or a
    traced scalar (a learned parameter, GIN-eps). The neighbour sum is chunked as in `gcn`; an
    `aggregator` (a segment sum, such as `gnkit.parallel.sharded_aggregator('sum')` for edge
    sharding) instead reduces the gathered `[E, F]` messages.
    Leaves `[N, F] -> [N, F']`. Replaces `graph.nodes`.
    """

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="gin")
        neighbour_sum = _neighbour_sum(graph.nodes, graph, aggregator, indices_are_sorted)
        combined = tree_map(lambda x, s: (1.0 + epsilon) * x + s, graph.nodes, neighbour_sum)
        return graph._replace(nodes=mlp(combined))

    return apply
