"""Directed message passing on bonds (D-MPNN; Yang et al. 2019), as chemprop v2's
`BondMessagePassing` defines it.

Hidden states live on directed edges. With `x` the node features, `e` the edge features,
`tau` the activation and `E_in(v)` the edges into node `v`::

    h0[s -> r]  = input_fn([x[s], e[s -> r]])
    h           = tau(h0)
    repeat depth - 1 times:
        m[s -> r] = sum over k -> s in E_in(s) of h[k -> s], minus h[r -> s]   (its reverse)
        h         = tau(h0 + hidden_fn(m))
    m_v         = sum over edges into v of h                                    (zeros if none)
    nodes'      = tau(output_fn([x_v, m_v]))

so each edge's message leaves out the edge that points back along it. `reverse_edges[e]` is the
index of edge `e`'s reverse. Graphs from `gnkit.chem` store each bond as the edge pair `2k`,
`2k + 1`, so the default reverses are `arange(E) ^ 1` (`paired_reverse_edges`), which also
holds in a batch and after padding to an even edge count (every `BucketPolicy` edge budget is
even); then the block swaps the rows of each pair in place of a gather, whose gradient would be
a scatter. For any other layout, `reverse_edge_index` finds the reverses on the host. Jittable
on padded batches: padding edges only reach padding nodes, so real outputs do not depend on the
padding.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.graph import GraphsTuple, require


def paired_reverse_edges(n_edge: int) -> jax.Array:
    """`[n_edge]` int32 `arange(n_edge) ^ 1`: the reverses of edges stored as pairs `2k`,
    `2k + 1` (gnkit.chem's and chemprop's layout). Jittable (`n_edge` static)."""
    return jnp.arange(n_edge, dtype=jnp.int32) ^ 1


def swap_edge_pairs(values: jax.Array) -> jax.Array:
    """`values[paired_reverse_edges(E)]` for `[E, ...]` values with `E` even, as a reshape
    (its gradient is the same swap, not a scatter). Jittable."""
    n_edge = values.shape[0]
    if n_edge % 2:
        raise ValueError(
            f"edges stored as reverse pairs must be even in number, got {n_edge}: pad to an even "
            "n_edge (BucketPolicy's edge budgets are even) or pass reverse_edges"
        )
    pairs = values.reshape(n_edge // 2, 2, *values.shape[1:])
    return pairs[:, ::-1].reshape(values.shape)


def reverse_edge_index(senders: np.ndarray, receivers: np.ndarray) -> np.ndarray:
    """`[E]` int32: for each edge `s -> r`, the index of an edge `r -> s`, matched one to one
    (repeated edges pair off in order; a self-edge is its own reverse). Raises ValueError
    naming the first edge without a reverse. Host NumPy."""
    senders, receivers = np.asarray(senders), np.asarray(receivers)
    if senders.shape != receivers.shape or senders.ndim != 1:
        raise ValueError(
            f"senders and receivers must be 1-D of one length, got {senders.shape} and "
            f"{receivers.shape}"
        )
    forward = np.lexsort((receivers, senders))
    backward = np.lexsort((senders, receivers))
    matched = (senders[forward] == receivers[backward]) & (receivers[forward] == senders[backward])
    if not matched.all():
        edge = int(forward[np.argmin(matched)])
        raise ValueError(
            f"edge {edge} ({int(senders[edge])} -> {int(receivers[edge])}) has no reverse edge"
        )
    reverse = np.empty(len(senders), np.int32)
    reverse[forward] = backward
    return reverse


def bond_message_passing(
    input_fn: Callable[[jax.Array], jax.Array],
    hidden_fn: Callable[[jax.Array], jax.Array],
    output_fn: Callable[[jax.Array], jax.Array],
    *,
    depth: int = 3,
    activation: Callable[[jax.Array], jax.Array] = jax.nn.relu,
) -> Callable[..., GraphsTuple]:
    """The D-MPNN encoder as a block: `apply(graph, reverse_edges=None) -> graph`.

    `input_fn`: `[E, Fv + Fe] -> [E, H]` (chemprop's `W_i`); `hidden_fn`: `[E, H] -> [E, H]`
    (`W_h`, shared by the steps); `output_fn`: `[N, Fv + H] -> [N, D]` (`W_o`). `depth` counts
    chemprop's way: `depth - 1` edge updates, then the node readout. `graph.nodes` `[N, Fv]` and
    `graph.edges` `[E, Fe]` must be float arrays; `reverse_edges` `[E]` int (default
    `paired_reverse_edges`). Returns the graph with `nodes` `[N, D]` (atom encodings) and
    `edges` `[E, H]` (the last directed-edge states). Jittable.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")

    def apply(graph: GraphsTuple, reverse_edges: jax.Array | None = None) -> GraphsTuple:
        require(graph, "nodes", "edges", "senders", "receivers", block="bond_message_passing")
        n_node = graph.nodes.shape[0]
        if reverse_edges is None:
            reverse = swap_edge_pairs
        else:
            reverse = lambda hidden: hidden[reverse_edges]  # noqa: E731

        def incoming_sum(hidden):
            return jax.ops.segment_sum(hidden, graph.receivers, n_node)

        initial = input_fn(jnp.concatenate([graph.nodes[graph.senders], graph.edges], axis=-1))
        hidden = activation(initial)
        for _ in range(depth - 1):
            messages = incoming_sum(hidden)[graph.senders] - reverse(hidden)
            hidden = activation(initial + hidden_fn(messages))
        node_messages = incoming_sum(hidden)
        nodes = activation(output_fn(jnp.concatenate([graph.nodes, node_messages], axis=-1)))
        return graph._replace(nodes=nodes, edges=hidden)

    return apply
