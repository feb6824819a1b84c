"""Attention among the nodes of each graph of a batch, the global half of a graph transformer.

A batch holds graphs of different sizes, one after another in the node list. Under `jit` the
shapes must be static, so each graph's nodes are gathered into one row of a dense
`[n_graph, max_nodes, ...]` block with a mask of the real slots (`max_nodes` a Python int, at
least the largest real graph's node count: round it up to a bucket so that batches of varying
size compile a handful of times). Attention runs on that block with the empty slots masked out
of every softmax, and the result is gathered back into the node list. A node attends only to
the nodes of its own graph, so padding graphs change no real output. Jittable, vmappable,
differentiable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _slots(n_node: jax.Array, max_nodes: int):
    """`[n_graph, max_nodes]` node ids of each graph's slots and the mask of the real ones."""
    offsets = jnp.cumsum(n_node) - n_node
    slots = jnp.arange(max_nodes)
    return offsets[:, None] + slots[None, :], slots[None, :] < n_node[:, None]


def to_dense_batch(
    nodes: jax.Array, n_node: jax.Array, max_nodes: int
) -> tuple[jax.Array, jax.Array]:
    """Gather each graph's nodes into one row: `[N, ...] -> [n_graph, max_nodes, ...]`.

    Slot `m` of graph `g` holds node `offset_g + m` (`offset_g = sum(n_node[:g])`) when
    `m < n_node[g]`, else zeros. Also returns the mask of the real slots, bool
    `[n_graph, max_nodes]`. Nodes of a graph beyond `max_nodes` are left out (only acceptable in
    a padding graph). As PyTorch Geometric's `to_dense_batch`, with a static `max_nodes`.
    Jittable.
    """
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValueError(f"to_dense_batch: max_nodes must be a positive int, got {max_nodes!r}.")
    index, mask = _slots(n_node, max_nodes)
    dense = nodes[jnp.minimum(index, nodes.shape[0] - 1)]
    return jnp.where(mask.reshape(mask.shape + (1,) * (nodes.ndim - 1)), dense, 0), mask


def from_dense_batch(dense: jax.Array, n_node: jax.Array, num_nodes: int) -> jax.Array:
    """The inverse of `to_dense_batch`: `[n_graph, max_nodes, ...] -> [num_nodes, ...]`.

    Node `i` of graph `g` reads slot `i - offset_g`; a node beyond `max_nodes` (of a padding
    graph) gets zeros. `num_nodes` is the static node count `N`. Jittable.
    """
    n_graph, max_nodes = dense.shape[:2]
    graph = jnp.repeat(jnp.arange(n_graph), n_node, total_repeat_length=num_nodes)
    slot = jnp.arange(num_nodes) - (jnp.cumsum(n_node) - n_node)[graph]
    fits = slot < max_nodes
    gathered = dense[graph, jnp.minimum(slot, max_nodes - 1)]
    return jnp.where(fits.reshape(fits.shape + (1,) * (dense.ndim - 2)), gathered, 0)


def masked_attention(
    query: jax.Array, key: jax.Array, value: jax.Array, mask: jax.Array
) -> jax.Array:
    """Scaled dot-product attention over the real slots of each row.

    Slot `q` of graph `g` gets `sum_k softmax_k(q . k / sqrt(D)) v_k` over the real slots `k`
    of `g`, per head. A graph without real slots gets zeros (finite gradients). Jittable.

    Args:
      query: `[n_graph, max_nodes, H, D]`.
      key: `[n_graph, max_nodes, H, D]`.
      value: `[n_graph, max_nodes, H, D]`.
      mask: bool `[n_graph, max_nodes]`, True for the real slots (as `to_dense_batch` gives).

    Returns:
      `[n_graph, max_nodes, H, D]`.
    """
    scale = 1.0 / jnp.sqrt(jnp.asarray(query.shape[-1], query.dtype))
    logits = jnp.einsum("gqhd,gkhd->ghqk", query * scale, key)
    keys = mask[:, None, None, :]
    logits = jnp.where(keys, logits, jnp.finfo(logits.dtype).min)
    weights = jnp.where(keys, jax.nn.softmax(logits, axis=-1), 0.0)
    return jnp.einsum("ghqk,gkhd->gqhd", weights, value)


def within_graph_attention(
    query: jax.Array, key: jax.Array, value: jax.Array, n_node: jax.Array, max_nodes: int
) -> jax.Array:
    """Multi-head attention of every node over the nodes of its own graph, on the node list.

    Node `i` of graph `g` gets `sum_{j in g} softmax_j(q_i . k_j / sqrt(D)) v_j` per head,
    through `to_dense_batch` / `masked_attention` / `from_dense_batch`. Jittable.

    Args:
      query: `[N, H, D]`, projected and split into heads by the caller.
      key: `[N, H, D]`.
      value: `[N, H, D]`.
      n_node: int `[n_graph]`, the graphs' node counts.
      max_nodes: static, at least every real graph's node count (a padding graph may exceed
        it; its nodes beyond `max_nodes` get zeros).

    Returns:
      `[N, H, D]`.
    """
    dense = [to_dense_batch(x, n_node, max_nodes)[0] for x in (query, key, value)]
    _, mask = _slots(n_node, max_nodes)
    attended = masked_attention(*dense, mask)
    return from_dense_batch(attended, n_node, query.shape[0])
