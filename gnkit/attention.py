"""Multi-head attention over a graph's edges: dot-product self-attention and GAT.

Each node attends over its incoming edges: the weights are a softmax over the edges that share a
receiver (the safe softmax, so a node without incoming edges gets zeros, never NaN), and the new
node features are the weighted sum of the senders' values. Node features are arrays `[N, F]`.
`add_self_edges=True` makes every node attend to itself exactly once, as PyTorch Geometric's
attention layers do (`remove_self_loops` then `add_self_loops`): the graph's own self-edges get
no weight and one self-edge per node is added.
The blocks hold no parameters: projections come from the caller's update callables, which may
return `[N, H * D]` (split into `H` heads here) or `[N, H, D]`. Jittable, vmappable, differentiable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from gnkit.aggregators import get_aggregator
from gnkit.blocks import Aggregator, GraphFn
from gnkit.convolutions import is_bipartite, node_tables, require_one_node_set
from gnkit.graph import GraphsTuple, require
from gnkit.segment import safe_segment_softmax

_HEAD_COMBINERS = ("concat", "mean")


def _split_heads(features: jax.Array, num_heads: int, source: str) -> jax.Array:
    """`[N, H * D] -> [N, H, D]`; an `[N, H, D]` input is checked and kept."""
    if features.ndim == 3 and features.shape[1] == num_heads:
        return features
    if features.ndim == 2 and features.shape[1] % num_heads == 0:
        return features.reshape(features.shape[0], num_heads, -1)
    raise ValueError(
        f"{source} returned shape {features.shape}; expected [N, {num_heads} * D] or "
        f"[N, {num_heads}, D] for num_heads={num_heads}."
    )


def _combine_heads(per_head: jax.Array, combine_heads: str) -> jax.Array:
    """`[N, H, D] -> [N, H * D]` (concat) or `[N, D]` (mean)."""
    if combine_heads == "concat":
        return per_head.reshape(per_head.shape[0], -1)
    return per_head.mean(axis=1)


def _check_combine(combine_heads: str) -> None:
    if combine_heads not in _HEAD_COMBINERS:
        raise ValueError(f"combine_heads must be one of {_HEAD_COMBINERS}, got {combine_heads!r}.")


def _edges_split_over_devices(graph: GraphsTuple) -> bool:
    """Whether, under `shard_map`, the edges vary over a mesh axis that the nodes do not: one
    graph's edges split over devices, as `gnkit.parallel.edge_sharded` runs a model."""
    edge_axes = jax.typeof(graph.senders).mat.varying
    node_axes = set().union(*(jax.typeof(x).mat.varying for x in jax.tree.leaves(graph.nodes)))
    return bool(edge_axes - node_axes)


class _AttentionEdges(NamedTuple):
    """The edges attention runs over: `senders`, `receivers` `[E']`, whether the receivers are
    sorted, and `replaced` (bool `[E']`, or None): the graph's own self-edges, which get no
    weight because an added self-edge stands in for them."""

    senders: jax.Array
    receivers: jax.Array
    indices_are_sorted: bool
    replaced: jax.Array | None


def _edge_index(
    graph: GraphsTuple, add_self_edges: bool, indices_are_sorted: bool, block: str
) -> _AttentionEdges:
    """The graph's edges or, with `add_self_edges`, those with exactly one self-edge per node.

    As PyTorch Geometric's `remove_self_loops` then `add_self_loops`: one self-edge per node is
    appended and the graph's own self-edges are marked `replaced` (static shapes: they stay in the
    edge list and `_attend` gives them weight 0). Appending breaks the receiver order, so the
    sorted flag is then dropped. With the edges split over devices every device would append
    them, counting each self-edge once per device, and on a bipartite graph a node has no
    self-edge: both raise a `ValueError` naming `block`.
    """
    if not add_self_edges:
        return _AttentionEdges(graph.senders, graph.receivers, indices_are_sorted, None)
    if is_bipartite(graph.nodes):
        widths = [table.shape[-1] for table in graph.nodes]
        raise ValueError(
            f"{block}: add_self_edges=True needs one node set, but the graph is bipartite "
            f"(sender and receiver nodes of widths {widths[0]} and {widths[1]}), where a node "
            "has no self-edge; pass add_self_edges=False."
        )
    if _edges_split_over_devices(graph):
        raise ValueError(
            f"{block}: add_self_edges=True with edges sharded over devices would add each "
            "self-edge once per device; add them to the graph before sharding it "
            "(gnkit.batching.add_self_edges, on a graph without self-edges for one per node) "
            "and pass add_self_edges=False."
        )
    every_node = jnp.arange(graph.nodes.shape[0], dtype=graph.senders.dtype)
    replaced = jnp.concatenate(
        [graph.senders == graph.receivers, jnp.zeros(every_node.shape, bool)]
    )
    return _AttentionEdges(
        senders=jnp.concatenate([graph.senders, every_node]),
        receivers=jnp.concatenate([graph.receivers, every_node]),
        indices_are_sorted=False,
        replaced=replaced,
    )


def _attend(logits, values, edges, n_node, softmax, aggregator):
    """Softmax `[E, H]` logits over each receiver's edges (replaced self-edges get logit -inf,
    weight 0); sum the senders' `[N, H, D]` values, weighted: `[N, H, D]`."""
    if edges.replaced is not None:
        logits = jnp.where(edges.replaced[:, None], -jnp.inf, logits)
    is_sorted = edges.indices_are_sorted
    weights = softmax(logits, edges.receivers, n_node, indices_are_sorted=is_sorted)
    messages = values[edges.senders] * weights[..., None]
    sorted_flag = {"indices_are_sorted": True} if is_sorted else {}
    return get_aggregator(aggregator)(messages, edges.receivers, n_node, **sorted_flag)


def graph_attention(
    query_fn: Callable[[jax.Array], jax.Array],
    key_fn: Callable[[jax.Array], jax.Array],
    value_fn: Callable[[jax.Array], jax.Array],
    *,
    num_heads: int = 1,
    add_self_edges: bool = False,
    combine_heads: str = "concat",
    softmax: Callable[..., jax.Array] = safe_segment_softmax,
    aggregator: Aggregator = "sum",
    indices_are_sorted: bool = False,
) -> GraphFn:
    r"""Multi-head scaled dot-product self-attention along the edges.

    With `q, k, v = query_fn(x), key_fn(x), value_fn(x)` split into `H` heads (`[N, H, D]`,
    values `[N, H, Dv]`), each edge :math:`j \to i` gets the logit
    :math:`q_i \cdot k_j / \sqrt{D}` per head, the weights :math:`w_{ij}` are a softmax over the
    edges into :math:`i`, and :math:`x'_i = \sum_j w_{ij} v_j`. Heads are
    concatenated (`[N, H * Dv]`) or averaged (`[N, Dv]`). `add_self_edges` lets every node attend
    to itself exactly once (self-edges already in the graph get no weight); without it a node
    with no incoming edges gets zeros. `softmax` and `aggregator` are as in `gat`, for edge
    sharding. Jittable.

    Args:
      query_fn: node features `[N, F]` -> queries `[N, H * D]`.
      key_fn: node features `[N, F]` -> keys `[N, H * D]`.
      value_fn: node features `[N, F]` -> values `[N, H * Dv]`.
      num_heads: `H`; the outputs of the three functions are split into that many heads.
      add_self_edges: let every node attend to itself exactly once (self-edges already in the
        graph get no weight); without it a node with no incoming edges gets zeros.
      combine_heads: `"concat"` (`[N, H * Dv]`) or `"mean"` (`[N, Dv]`).
      softmax: normalises the logits over each receiver's edges, as in `gat`.
      aggregator: sums the weighted messages, as in `gat`.
      indices_are_sorted: declares `graph.receivers` sorted.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes` (no output projection
      or activation).
    """
    _check_combine(combine_heads)

    def apply(graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="graph_attention")
        require_one_node_set(graph, "graph_attention")
        nodes = graph.nodes
        queries = _split_heads(query_fn(nodes), num_heads, "query_fn")
        keys = _split_heads(key_fn(nodes), num_heads, "key_fn")
        values = _split_heads(value_fn(nodes), num_heads, "value_fn")
        edges = _edge_index(graph, add_self_edges, indices_are_sorted, "graph_attention")
        logits = jnp.sum(queries[edges.receivers] * keys[edges.senders], axis=-1)
        logits = logits / math.sqrt(queries.shape[-1])
        per_head = _attend(logits, values, edges, nodes.shape[0], softmax, aggregator)
        return graph._replace(nodes=_combine_heads(per_head, combine_heads))

    return apply


def gat(
    project_fn: Callable[[jax.Array], jax.Array],
    logit_fn: Callable[..., jax.Array] | None = None,
    *,
    sender_logit_fn: Callable[[jax.Array], jax.Array] | None = None,
    receiver_logit_fn: Callable[[jax.Array], jax.Array] | None = None,
    receiver_project_fn: Callable[[jax.Array], jax.Array] | None = None,
    num_heads: int = 1,
    negative_slope: float = 0.2,
    use_edges: bool = False,
    add_self_edges: bool = False,
    combine_heads: str = "concat",
    softmax: Callable[..., jax.Array] = safe_segment_softmax,
    aggregator: Aggregator = "sum",
    indices_are_sorted: bool = False,
) -> GraphFn:
    r"""A graph attention layer (Velickovic et al. 2018), multi-head.

    `z = project_fn(x)` is split into `H` heads, `[N, H, D]`. For each edge :math:`j \to i`,
    `logit_fn(sender_nodes=z_j, receiver_nodes=z_i[, edges=e_ij])` (per-head features
    `[E, H, D]`, edges `[E, ...]`) returns raw scores `[E, H]`; the paper's
    :math:`a \cdot [z_i \,\|\, z_j]` is
    `einsum('ehd,hd->eh', z_i, a_r) + einsum('ehd,hd->eh', z_j, a_s)`. The block applies
    LeakyReLU(`negative_slope`), softmaxes over the edges into :math:`i` and sets
    :math:`x'_i = \sum_j w_{ij} z_j`, heads concatenated (`[N, H * D]`) or averaged (`[N, D]`),
    with no output activation. The paper includes :math:`i` in its own neighbourhood:
    `add_self_edges=True` (not combinable with `use_edges`) attends to each node itself exactly
    once, as PyTorch Geometric's `GATConv`: self-edges already in the graph get no weight (logit
    -inf) and one per node is added. Jittable.

    Fast path: instead of `logit_fn`, pass `sender_logit_fn` and `receiver_logit_fn`, each mapping
    the per-head node table `[N, H, D]` to scores `[N, H]`; the edge logit is then
    `sender_logit_fn(z)[j] + receiver_logit_fn(z)[i]`. That is the paper's form, computed once
    per node and gathered as `[E, H]` scalars instead of `[E, H, D]` rows.

    Bipartite graphs, as `GATConv`'s `(x_src, x_dst)`: `graph.nodes` a
    `gnkit.convolutions.BipartiteNodes(sender_nodes [N_s, F_s], receiver_nodes [N_r, F_r])`,
    senders indexing the first and receivers the
    second. The values and the sender scores come from `project_fn(sender_nodes)`, the receiver
    scores from `receiver_project_fn(receiver_nodes)` (`GATConv`'s `lin_dst`; `project_fn` when
    None), and the output is `[N_r, ...]`; `add_self_edges` is then an error.

    Edge sharding: `softmax` normalises the logits and `aggregator` sums the weighted messages;
    pass `gnkit.parallel.sharded_softmax()` and `sharded_aggregator('sum')` to run the layer
    inside `gnkit.parallel.edge_sharded`. There every device would append its own copy of the
    self-edges, so `add_self_edges=True` raises a `ValueError`: add them to the graph's edge
    list before sharding it instead.

    Args:
      project_fn: node features `[N, F]` -> `[N, H * D]`, split into the heads `z` `[N, H, D]`.
      logit_fn: `(sender_nodes=z_j, receiver_nodes=z_i[, edges=e_ij]) -> [E, H]` raw scores from
        per-head features `[E, H, D]` (and edges `[E, ...]`); pass it or the two functions below.
      sender_logit_fn: the fast path's `z` `[N, H, D]` -> sender scores `[N, H]`.
      receiver_logit_fn: the fast path's `z` `[N, H, D]` -> receiver scores `[N, H]`.
      receiver_project_fn: receiver features `[N_r, F_r]` -> `[N_r, H * D]`, the `z` of the
        receiver side of the scores; None uses `project_fn`.
      num_heads: `H`.
      negative_slope: of the LeakyReLU applied to the logits.
      use_edges: pass `graph.edges` to `logit_fn` as `edges` (needs `logit_fn`, no added
        self-edges).
      add_self_edges: attend to each node itself exactly once, as the paper and `GATConv`.
      combine_heads: `"concat"` (`[N, H * D]`) or `"mean"` (`[N, D]`).
      softmax: `(logits [E, H], receivers, num_segments, indices_are_sorted) -> [E, H]`; must map a
        `-inf` logit to weight 0, as the default `safe_segment_softmax` does.
      aggregator: a segment sum of the weighted messages (name or `Aggregator`).
      indices_are_sorted: declares `graph.receivers` sorted.

    Returns:
      A function `GraphsTuple -> GraphsTuple` that replaces `graph.nodes`.

    Example:
        Constant logits give uniform weights: node 2, which hears from nodes 0 and 1, gets their
        mean; node 0 hears from no one and gets 0 (the safe softmax):

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.GraphsTuple(
        ...     nodes=jnp.array([[1.0], [2.0], [3.0]]), edges=None, senders=jnp.array([0, 1, 0]),
        ...     receivers=jnp.array([1, 2, 2]), globals=None, n_node=jnp.array([3]),
        ...     n_edge=jnp.array([3]))
        >>> def zeros(z):  # per-head node table [N, H, D] -> scores [N, H]
        ...     return jnp.zeros(z.shape[:2])
        >>> layer = gn.gat(lambda x: x, sender_logit_fn=zeros, receiver_logit_fn=zeros)
        >>> print(layer(graph).nodes[:, 0])
        [0.  1.  1.5]
    """
    _check_combine(combine_heads)
    split_logits = sender_logit_fn is not None or receiver_logit_fn is not None
    if split_logits == (logit_fn is not None) or (
        split_logits and (sender_logit_fn is None or receiver_logit_fn is None)
    ):
        raise ValueError(
            "gat: pass either logit_fn, or both sender_logit_fn and receiver_logit_fn."
        )
    if use_edges and (add_self_edges or split_logits):
        raise ValueError(
            "gat: use_edges needs logit_fn (edge features reach the logits only through it) "
            "and no added self-edges (they have no edge features)."
        )

    def apply(graph: GraphsTuple) -> GraphsTuple:
        fields = ("nodes", "senders", "receivers") + (("edges",) if use_edges else ())
        require(graph, *fields, block="gat")
        sender_nodes, receiver_nodes = node_tables(graph)
        projected = _split_heads(project_fn(sender_nodes), num_heads, "project_fn")
        receiver_projected = projected
        if receiver_project_fn is not None:
            receiver_projected = _split_heads(
                receiver_project_fn(receiver_nodes), num_heads, "receiver_project_fn")
        elif receiver_nodes is not sender_nodes:
            receiver_projected = _split_heads(project_fn(receiver_nodes), num_heads, "project_fn")
        edges = _edge_index(graph, add_self_edges, indices_are_sorted, "gat")
        if split_logits:
            logits = jnp.take(sender_logit_fn(projected), edges.senders, axis=0) + jnp.take(
                receiver_logit_fn(receiver_projected),
                edges.receivers,
                axis=0,
                indices_are_sorted=edges.indices_are_sorted,
            )
        else:
            inputs = {
                "sender_nodes": projected[edges.senders],
                "receiver_nodes": receiver_projected[edges.receivers],
            }
            if use_edges:
                inputs["edges"] = graph.edges
            logits = logit_fn(**inputs)
        logits = jax.nn.leaky_relu(logits, negative_slope)
        n_receiver = receiver_nodes.shape[0]
        per_head = _attend(logits, projected, edges, n_receiver, softmax, aggregator)
        return graph._replace(nodes=_combine_heads(per_head, combine_heads))

    return apply
