"""Flax linen D-MPNN: chemprop's bond message passing (`gnkit.dmpnn`) and a graph readout."""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.dmpnn import bond_message_passing
from gnkit.graph import GraphsTuple, node_graph_index, require
from gnkit.nn.input_width import check_input_width

READOUTS = ("sum", "mean", "norm")


class DMPNN(nn.Module):
    """chemprop v2's `BondMessagePassing` as a linen module: atom encodings `[N, hidden_size]`.

    Parameters `W_i` (`[Fv + Fe, H]`), `W_h` (`[H, H]`), biases only when `bias` (chemprop's
    default is none), and `W_o` (`[Fv + H, H]`, always with a bias). With weights copied from
    chemprop (`kernel = weight.T`) it gives chemprop's outputs. Call with a graph (float nodes
    `[N, Fv]`, edges `[E, Fe]`) and optionally `reverse_edges` `[E]` (default: edge pairs
    `2k`, `2k + 1`, the `gnkit.chem` layout); returns the graph with `nodes` `[N, H]` and
    `edges` `[E, H]`. Jittable.

    Example:
        Two bonds stored as edge pairs (`0 -> 1`, `1 -> 0`, `2 -> 3`, `3 -> 2`), atoms `[4, 5]`,
        bonds `[4, 3]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2, 3], [1, 0, 3, 2], n_node=4,
        ...                           nodes=jnp.ones((4, 5)), edges=jnp.ones((4, 3)))
        >>> model = gn.nn.DMPNN(hidden_size=8)
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.nodes.shape, out.edges.shape
        ((4, 8), (4, 8))
    """

    hidden_size: int = 300
    depth: int = 3
    bias: bool = False
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    @nn.compact
    def __call__(self, graph: GraphsTuple, reverse_edges: jax.Array | None = None) -> GraphsTuple:
        require(graph, "nodes", "edges", block="DMPNN")
        node_width = graph.nodes.shape[-1]
        check_input_width(self, ("W_o", "kernel"), node_width, offset=self.hidden_size)
        check_input_width(self, ("W_i", "kernel"), graph.edges.shape[-1], offset=node_width,
                          what="edge features", argument="in_edge_features")
        block = bond_message_passing(
            nn.Dense(self.hidden_size, use_bias=self.bias, name="W_i"),
            nn.Dense(self.hidden_size, use_bias=self.bias, name="W_h"),
            nn.Dense(self.hidden_size, name="W_o"),
            depth=self.depth,
            activation=self.activation,
        )
        return block(graph, reverse_edges)


def graph_readout(graph: GraphsTuple, readout: str = "mean", norm: float = 100.0) -> jax.Array:
    """Per-graph pooling of `graph.nodes` `[N, F]` -> `[G, F]`: `"sum"`, `"mean"` (0 for a graph
    without nodes) or `"norm"` (the sum divided by `norm`, chemprop's default). Jittable."""
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    n_graph = graph.n_node.shape[0]
    index = node_graph_index(graph)
    total = jax.ops.segment_sum(graph.nodes, index, n_graph, indices_are_sorted=True)
    if readout == "sum":
        return total
    if readout == "norm":
        return total / norm
    counts = jnp.maximum(graph.n_node, 1).astype(total.dtype)
    return total / counts[:, None]
