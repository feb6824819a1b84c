"""`RelationNetwork`, the NNX twin of `gnkit.nn.RelationNetwork`."""

from __future__ import annotations

import jax
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import relation_network
from gnkit.nnx.twin import Twin, sample_graph


def _dense(module: relation_network.RelationNetwork, *args):
    return module.dense(*args)


class RelationNetwork(Twin, linen=relation_network.RelationNetwork):
    """A relation network over sets of objects (`gnkit.nn.RelationNetwork`).

    Args:
      in_features: the object width `F`.
      in_question_features: the question width `Q` (None: an unconditioned network).
      in_pair_features: the width `P` of each pair's own features (with `use_edges=True`).
      rngs: initialises the parameters.
      **options: the linen twin's attributes (`pair_features`, `output_features`, ...).

    `__call__(graph)` is the edge-list layout and `dense(objects, question, mask, pairs)` the
    dense one, both with the same parameters and as in the linen twin. Jittable.
    """

    def __init__(
        self,
        in_features: int,
        *,
        in_question_features: int | None = None,
        in_pair_features: int | None = None,
        rngs: nnx.Rngs,
        **options,
    ):
        sample = sample_graph(nodes=in_features, edges=in_pair_features,
                              globals_=in_question_features)
        self._build(relation_network.RelationNetwork, options, rngs, (sample,))

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """One output per graph, `[G, output_features[-1]]`."""
        return self._apply(graph)

    def dense(self, objects, question=None, mask=None, pairs=None) -> jax.Array:
        """The dense layout, as `gnkit.nn.RelationNetwork.dense`.

        Args:
          objects: `[B, n, F]`, each scene's objects.
          question: `[B, Q]`, each scene's question, or None for an unconditioned network.
          mask: bool `[B, n]`, true for real objects; None: all real.
          pairs: `[B, n, n, P]`, each pair's features (`pairs[b, r, s]`: receiver `r`, sender `s`);
            given exactly when `use_edges` is on.

        Returns:
          `[B, output_features[-1]]`.
        """
        return self._apply(objects, question, mask, pairs, method=_dense)
