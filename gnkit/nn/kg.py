"""Flax modules for knowledge graphs: the R-GCN layer and encoder, and `KGEmbedding`.

`RGCN` creates the relation weights (full, a basis decomposition, or block-diagonal) and calls
`gnkit.convolutions.rgcn`; it classifies nodes as a stack of layers, or encodes entities for
link prediction as `RGCNEncoder`. `KGEmbedding` holds entity and relation embeddings and scores
triples with any `gnkit.kg` scorer, optionally through an encoder over the training graph (the
R-GCN paper's link-prediction setup: an R-GCN encoder and a DistMult decoder). Jittable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.convolutions import rgcn
from gnkit.graph import GraphsTuple, require
from gnkit.kg.scorers import Scorer, get_scorer
from gnkit.kg.training import penalty
from gnkit.nn.input_width import check_input_width


class RGCN(nn.Module):
    r"""A relational graph convolution layer (Schlichtkrull et al. 2018).

    .. math:: x'_i = x_i W_0 + \sum_r \sum_{j \xrightarrow{r} i} \frac{1}{c_{i,r}} x_j W_r + b

    `graph.edges` holds each edge's relation id, int `[E]`. The relation weights
    :math:`W_r` (`[F, features]` each) are, by the settings:

    - `num_bases=None, num_blocks=None`: one full matrix per relation, `"kernels"` `[R, F, F']`;
    - `num_bases=B`: :math:`W_r = \sum_b a_{rb} V_b`, `"bases"` `[B, F, F']` and
      `"coefficients"` `[R, B]`;
    - `num_blocks=K`: :math:`W_r` block-diagonal with `K` blocks, `"blocks"` `[R, K, F/K, F'/K]`
      (`F` and `features` divisible by `K`).

    No activation. Nodes `[N, F] -> [N, features]`. Jittable.

    Attributes:
      features: output width `F'`.
      num_relations: `R`; relation ids lie in `[0, R)`.
      num_bases: `B` shared bases for the basis decomposition, or None.
      num_blocks: `K` diagonal blocks for the block decomposition, or None (not with
        `num_bases`).
      self_loop: add :math:`x_i W_0` (`"self"`, a Dense without bias).
      use_bias: add the bias :math:`b` (`"bias"`).
      normalization: :math:`c_{i,r}` as in `gnkit.convolutions.rgcn`: `'in_degree'` (mean per
        relation) or `'none'`.
      kernel_init: initialiser of the relation weights (kernels, bases and coefficients, or
        blocks).
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle whose edges have relation ids 0, 1, 1:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.array([0, 1, 1]))
        >>> model = gn.nn.RGCN(features=8, num_relations=2)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: int
    num_relations: int
    num_bases: int | None = None
    num_blocks: int | None = None
    self_loop: bool = True
    use_bias: bool = True
    normalization: str = "in_degree"
    kernel_init: Callable = nn.initializers.glorot_uniform()
    indices_are_sorted: bool = False

    def _relation_fn(self, in_features: int) -> Callable[[jax.Array], jax.Array]:
        """`[N, F] -> [N, R, F']`: every node's features through every relation's weight."""
        relations, out = self.num_relations, self.features
        if self.num_bases is not None and self.num_blocks is not None:
            raise ValueError("RGCN: give num_bases or num_blocks, not both")
        if self.num_bases is not None:
            bases = self.param("bases", self.kernel_init, (self.num_bases, in_features, out))
            coefficients = self.param(
                "coefficients", self.kernel_init, (relations, self.num_bases)
            )
            return lambda x: jnp.einsum("nbo,rb->nro", jnp.einsum("nf,bfo->nbo", x, bases),
                                        coefficients)
        if self.num_blocks is not None:
            blocks = self.num_blocks
            if in_features % blocks or out % blocks:
                raise ValueError(
                    f"RGCN: num_blocks={blocks} must divide the input width {in_features} "
                    f"and features={out}"
                )
            shape = (relations, blocks, in_features // blocks, out // blocks)
            weights = self.param("blocks", self.kernel_init, shape)

            def block_diagonal(x):
                split = x.reshape(x.shape[0], blocks, in_features // blocks)
                return jnp.einsum("nki,rkio->nrko", split, weights).reshape(
                    x.shape[0], relations, out
                )

            return block_diagonal
        kernels = self.param("kernels", self.kernel_init, (relations, in_features, out))
        return lambda x: jnp.einsum("nf,rfo->nro", x, kernels)

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", block="RGCN")
        width = graph.nodes.shape[-1]
        check_input_width(self, ("kernels",), width, axis=1)
        check_input_width(self, ("bases",), width, axis=1)
        check_input_width(self, ("self", "kernel"), width)
        self_fn = nn.Dense(self.features, use_bias=False, name="self") if self.self_loop else None
        graph = rgcn(
            self._relation_fn(graph.nodes.shape[-1]),
            self_fn,
            num_relations=self.num_relations,
            normalization=self.normalization,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)
        if not self.use_bias:
            return graph
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return graph._replace(nodes=graph.nodes + bias)


class RGCNEncoder(nn.Module):
    """Stacked `RGCN` layers with `activation` between them (none after the last), as the
    R-GCN paper's link-prediction encoder. Nodes `[N, F] -> [N, features[-1]]`. Jittable.

    Attributes:
      features: each layer's output width.
      num_relations: relations in the graph, as in `RGCN`.
      num_bases: every layer's basis decomposition, as in `RGCN`.
      num_blocks: every layer's block decomposition, as in `RGCN`.
      activation: between the layers.

    Example:
        On a three-node cycle whose edges have relation ids 0, 1, 1:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.array([0, 1, 1]))
        >>> model = gn.nn.RGCNEncoder(features=(16, 8), num_relations=2)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: Sequence[int]
    num_relations: int
    num_bases: int | None = None
    num_blocks: int | None = None
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        for layer, width in enumerate(self.features):
            if layer:
                graph = graph._replace(nodes=self.activation(graph.nodes))
            graph = RGCN(width, self.num_relations, num_bases=self.num_bases,
                         num_blocks=self.num_blocks, name=f"layer_{layer}")(graph)
        return graph


_INITS = ("xavier_uniform", "normal", "uniform")


def _entity_init(kind: str, scale: float) -> Callable:
    if kind == "xavier_uniform":
        return nn.initializers.xavier_uniform()
    if kind == "normal":
        return nn.initializers.normal(scale)
    if kind == "uniform":
        return nn.initializers.uniform(2 * scale)
    raise ValueError(f"KGEmbedding: init must be one of {_INITS}, got {kind!r}")


def _shifted(init: Callable, shift: float) -> Callable:
    return lambda key, shape, dtype=jnp.float32: init(key, shape, dtype) - shift


class KGEmbedding(nn.Module):
    """Entity and relation embeddings scored by a `gnkit.kg` scorer.

    Parameters: `"entities"` `[num_entities, W]` and `"relations"` `[num_relations, Wr]`, with
    `W = scorer.entity_width(dim)` (`2 * dim` for ComplEx and RotatE: real parts, then
    imaginary) and `Wr = scorer.relation_width(dim)` (RotatE: `dim` phases, initialised uniform
    in `[-pi, pi)`). With an `encoder`, every method takes its input `graph`. Methods (all
    jittable):

    - `__call__(heads, relations, tails, graph=None) -> [B]`: scores of index triples `[B]` each;
    - `score_tails(heads, relations, graph=None) -> [B, E]`, `score_heads(relations, tails,
      graph=None) -> [B, E]`;
    - `tables(graph=None) -> (entities [E, W], relations [R, Wr])`, what `gnkit.kg.evaluate`
      takes;
    - `penalty(heads, relations, tails, kind, graph=None) -> ()`: the N3 or L2 regulariser.

    Attributes:
      num_entities: rows of `"entities"`.
      num_relations: rows of `"relations"`.
      dim: the embedding size (complex coordinates for ComplEx and RotatE).
      scorer: a `Scorer` or its name in `gnkit.kg.SCORERS`.
      initializer: `'xavier_uniform'`, `'normal'` (std `init_scale`) or `'uniform'` (in
        `[-init_scale, init_scale)`), for the entities and for relations other than phases.
      init_scale: the scale of `'normal'` and `'uniform'`.
      encoder: a module mapping the graph (nodes: the entity table; edges: relation ids) to the
        entity table used for scoring, output width `W` (an `RGCNEncoder`, say); None uses the
        table itself.

    Example:
        Five entities, two relations, two triples scored, then every tail:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> model = gn.nn.KGEmbedding(num_entities=5, num_relations=2, dim=4, scorer="distmult")
        >>> heads, relations, tails = jnp.array([0, 1]), jnp.array([1, 0]), jnp.array([3, 4])
        >>> params = model.init(jax.random.key(0), heads, relations, tails)
        >>> model.apply(params, heads, relations, tails).shape
        (2,)
        >>> model.apply(params, heads, relations, method=model.score_tails).shape
        (2, 5)
    """

    num_entities: int
    num_relations: int
    dim: int
    scorer: str | Scorer = "distmult"
    initializer: str = "xavier_uniform"
    init_scale: float = 1e-3
    encoder: nn.Module | None = None

    def setup(self):
        scorer = get_scorer(self.scorer)
        init = _entity_init(self.initializer, self.init_scale)
        self.entities = self.param(
            "entities", init, (self.num_entities, scorer.entity_width(self.dim))
        )
        if scorer.relation_is_phase:
            relation_init = _shifted(nn.initializers.uniform(2 * math.pi), math.pi)
        else:
            relation_init = init
        self.relations = self.param(
            "relations", relation_init, (self.num_relations, scorer.relation_width(self.dim))
        )

    def tables(self, graph: GraphsTuple | None = None) -> tuple[jax.Array, jax.Array]:
        """The entity table (through the encoder when there is one) and the relation table."""
        entities = self.entities
        if self.encoder is not None:
            if graph is None:
                raise ValueError("KGEmbedding: a model with an encoder needs the graph")
            entities = self.encoder(graph._replace(nodes=entities)).nodes
        return entities, self.relations

    def __call__(self, heads, relations, tails, graph: GraphsTuple | None = None) -> jax.Array:
        entities, relation_table = self.tables(graph)
        scorer = get_scorer(self.scorer)
        return scorer.score(entities[heads], relation_table[relations], entities[tails])

    def score_tails(self, heads, relations, graph: GraphsTuple | None = None) -> jax.Array:
        """Every entity as the tail of `(heads[b], relations[b], ?)`: `[B, E]`."""
        entities, relation_table = self.tables(graph)
        return get_scorer(self.scorer).score_tails(
            entities[heads], relation_table[relations], entities
        )

    def score_heads(self, relations, tails, graph: GraphsTuple | None = None) -> jax.Array:
        """Every entity as the head of `(?, relations[b], tails[b])`: `[B, E]`."""
        entities, relation_table = self.tables(graph)
        return get_scorer(self.scorer).score_heads(
            relation_table[relations], entities[tails], entities
        )

    def penalty(self, heads, relations, tails, kind: str = "n3",
                graph: GraphsTuple | None = None) -> jax.Array:
        """The N3 or L2 regulariser of the batch's embeddings (phases are not penalised).

        Args:
          heads: int `[B]`, the batch's head indices.
          relations: int `[B]`, its relation indices.
          tails: int `[B]`, its tail indices.
          kind: `'n3'` (Lacroix et al. 2018: the mean over the batch of the summed cubed moduli
            of the three embeddings) or `'l2'` (of the squares).
          graph: the encoder's input graph, needed when there is an encoder.

        Returns:
          A scalar.
        """
        entities, relation_table = self.tables(graph)
        scorer = get_scorer(self.scorer)
        factors = [entities[heads], entities[tails]]
        if not scorer.relation_is_phase:
            factors.append(relation_table[relations])
        return penalty(factors, kind, scorer.complex_entities)
