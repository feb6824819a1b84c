"""`DMPNN`, the NNX twin of `gnkit.nn.DMPNN` (chemprop's bond message passing)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import dmpnn
from gnkit.nnx.twin import Twin, sample_graph


class DMPNN(Twin, linen=dmpnn.DMPNN):
    """chemprop v2's `BondMessagePassing` (`gnkit.nn.DMPNN`, same parameters and numbers):
    atoms `[N, in_features]` and bonds `[E, in_edge_features]` to atom encodings
    `[N, hidden_size]`.

    Args:
      in_features: the atom feature width `Fv`.
      rngs: initialises the parameters.
      in_edge_features: the bond feature width `Fe`.
      **options: `gnkit.nn.DMPNN`'s attributes (`hidden_size`, `depth`, `bias`, `activation`).
    """

    def __init__(self, in_features: int, *, rngs: nnx.Rngs, in_edge_features: int, **options):
        sample = sample_graph(nodes=in_features, edges=in_edge_features)
        self._build(dmpnn.DMPNN, options, rngs, (sample, jnp.zeros((1,), jnp.int32)))

    def __call__(self, graph: GraphsTuple, reverse_edges: jax.Array | None = None) -> GraphsTuple:
        """The graph with `nodes` `[N, H]` and `edges` `[E, H]`; `reverse_edges` `[E]` as in
        `gnkit.nn.DMPNN` (default: edge pairs `2k`, `2k + 1`). Jittable under `nnx.jit`."""
        return self._apply(graph, reverse_edges)
