"""NNX twins of `gnkit.nn.kg`: the R-GCN layer and encoder, and `KGEmbedding`."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import kg
from gnkit.nnx.twin import Twin, sample_graph


class RGCN(Twin, linen=kg.RGCN):
    """A relational graph convolution layer (`gnkit.nn.RGCN`): nodes `[N, in_features] ->
    [N, features]`, `graph.edges` the relation ids `[E]`. Jittable.

    Args:
      in_features: the input node width `F`.
      features: the output width.
      num_relations: relations in the graph; ids lie in `[0, num_relations)`.
      rngs: initialises the parameters.
      **options: the linen twin's other attributes (`num_bases`, `num_blocks`, ...).
    """

    def __init__(
        self, in_features: int, features: int, num_relations: int, *, rngs: nnx.Rngs, **options
    ):
        self._build(kg.RGCN, dict(features=features, num_relations=num_relations, **options),
                    rngs, (sample_graph(nodes=in_features, relation_ids=True),))

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with the layer's node features."""
        return self._apply(graph)


class RGCNEncoder(Twin, linen=kg.RGCNEncoder):
    """Stacked R-GCN layers (`gnkit.nn.RGCNEncoder`): nodes `[N, in_features] ->
    [N, features[-1]]`. Jittable.

    Args:
      in_features: the input node width `F`.
      features: each layer's output width.
      num_relations: relations in the graph.
      rngs: initialises the parameters.
      **options: `num_bases`, `num_blocks`, `activation`, as in the linen twin.
    """

    def __init__(
        self,
        in_features: int,
        features: Sequence[int],
        num_relations: int,
        *,
        rngs: nnx.Rngs,
        **options,
    ):
        self._build(kg.RGCNEncoder, dict(features=features, num_relations=num_relations,
                                         **options),
                    rngs, (sample_graph(nodes=in_features, relation_ids=True),))

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with the encoded node features."""
        return self._apply(graph)


def _method(name: str):
    return lambda module, *args: getattr(module, name)(*args)


class KGEmbedding(Twin, linen=kg.KGEmbedding):
    """Entity and relation embeddings scored by a `gnkit.kg` scorer (`gnkit.nn.KGEmbedding`).

    The methods are the linen twin's, with the same arguments: `__call__`, `score_tails`,
    `score_heads`, `tables`, `penalty`. Jittable.

    Args:
      num_entities: entities in the graph.
      num_relations: relations in the graph.
      dim: the embedding size (complex coordinates for ComplEx and RotatE).
      rngs: initialises the parameters.
      **options: the linen twin's other attributes (`scorer`, `initializer`, `init_scale`,
        `encoder`); an `encoder` is a `gnkit.nnx` module (an `RGCNEncoder` whose `in_features` is
        the entity width) and becomes the submodule `encoder`.
    """

    def __init__(
        self, num_entities: int, num_relations: int, dim: int, *, rngs: nnx.Rngs, **options
    ):
        index = jnp.zeros((1,), jnp.int32)
        graph = None
        if options.get("encoder") is not None:
            graph = sample_graph(relation_ids=True)._replace(
                n_node=jnp.array([num_entities], jnp.int32)
            )
        attributes = dict(num_entities=num_entities, num_relations=num_relations, dim=dim,
                          **options)
        self._build(kg.KGEmbedding, attributes, rngs, (index, index, index, graph))

    def __call__(self, heads, relations, tails, graph: GraphsTuple | None = None) -> jax.Array:
        """Scores of index triples `[B]` each: `[B]`."""
        return self._apply(heads, relations, tails, graph)

    def score_tails(self, heads, relations, graph: GraphsTuple | None = None) -> jax.Array:
        """Every entity as the tail of `(heads[b], relations[b], ?)`: `[B, E]`."""
        return self._apply(heads, relations, graph, method=_method("score_tails"))

    def score_heads(self, relations, tails, graph: GraphsTuple | None = None) -> jax.Array:
        """Every entity as the head of `(?, relations[b], tails[b])`: `[B, E]`."""
        return self._apply(relations, tails, graph, method=_method("score_heads"))

    def tables(self, graph: GraphsTuple | None = None) -> tuple[jax.Array, jax.Array]:
        """The entity table (through the encoder when there is one) and the relation table."""
        return self._apply(graph, method=_method("tables"))

    def penalty(self, heads, relations, tails, kind: str = "n3",
                graph: GraphsTuple | None = None) -> jax.Array:
        """The N3 or L2 regulariser of the batch's embeddings.

        Args:
          heads: int `[B]`, the batch's head indices.
          relations: int `[B]`, its relation indices.
          tails: int `[B]`, its tail indices.
          kind: `'n3'` or `'l2'`, as in `gnkit.nn.KGEmbedding.penalty`.
          graph: the encoder's input graph, needed when there is an encoder.

        Returns:
          A scalar; phases are not penalised.
        """
        return self._apply(heads, relations, tails, kind, graph, method=_method("penalty"))
