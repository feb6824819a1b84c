"""Relation network (Santoro et al., 2017): `f(sum_{i,j} g(o_i, o_j, q))` over ordered object pairs.

`g` (an MLP with ReLU after every layer, as in the paper) scores every ordered pair of objects,
conditioned on a question embedding `q`; the pair outputs are summed per scene and `f` (an MLP)
maps the sum to the answer. Two layouts compute the same function with the same parameters:

- the edge list (`RelationNetwork.__call__`): a `GraphsTuple` whose nodes are the objects, whose
  globals are the questions and whose edges are the pairs (a fully connected graph, e.g. from
  `pair_graph`), run through the functional `gnkit.blocks.relation_network`; object sets of any
  sizes are batched as graphs;
- dense (`RelationNetwork.dense`): objects `[B, n, F]` and pairs `[B, n, n, H]`, no gather or
  scatter, for small fixed-size sets; a mask `[B, n]` marks the real objects of scenes with fewer.

With `use_edges=True`, `g` also sees features of each pair itself, `e_ij` (e.g. the distance of
the two objects, as a recurrent relational network gets it on its edges): `g(o_i, o_j, e_ij, q)`;
`graph.edges` in the edge list, `pairs` `[B, n, n, P]` in the dense layout.

The first layer of `g` is factorised in both (see DESIGN.md): `Dense([o_s, o_r, e, q]) = A o_s +
B o_r + E e + C q + b`, so each object and question is projected once (`O(n F H)`) and the
projections are gathered (edge list) or broadcast (dense) to the `n^2` pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from gnkit.batching import fully_connected_graph
from gnkit.blocks import relation_network
from gnkit.graph import GraphsTuple, require
from gnkit.nn.mlp import MLP


class RelationNetwork(nn.Module):
    """A relation network over sets of objects, optionally conditioned on a question.

    Attributes:
      pair_features: layer sizes of `g`, the pair MLP (ReLU after every layer, the last too).
      output_features: layer sizes of `f`, the MLP from the summed pairs to the output (the last
        layer is linear), e.g. `(256, 256, num_answers)`.
      self_pairs: whether the dense layout includes the pairs `(i, i)`; the edge list sums over
        the graph's edges, so build it to match (`pair_graph(..., self_pairs=)`).
      use_edges: whether `g` also takes each pair's own features (`graph.edges` `[E, P]`, or
        the dense layout's `pairs` `[B, n, n, P]`); off: pair features are ignored.
      normalize_sum: whether the summed pair outputs pass through a layer norm before `f`
        (off: `f` sees the plain sum, as in the paper).

    Both layouts take the same parameters: a model initialised with one runs with the other.
    Jittable.

    Example:
        Three objects `[3, 4]` and a question `[1, 5]`, every ordered pair an edge:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.fully_connected_graph([3], jnp.ones((3, 4)), jnp.ones((1, 5)))
        >>> model = gn.nn.RelationNetwork(pair_features=(8,), output_features=(8, 2))
        >>> model.apply(model.init(jax.random.key(0), graph), graph).shape
        (1, 2)
    """

    pair_features: Sequence[int] = (256, 256, 256, 256)
    output_features: Sequence[int] = (256, 256, 10)
    self_pairs: bool = True
    use_edges: bool = False
    normalize_sum: bool = False

    def setup(self):
        first = self.pair_features[0]
        self.pair_objects = nn.Dense(2 * first, use_bias=False, name="pair_0_objects")
        self.pair_question = nn.Dense(first, use_bias=False, name="pair_0_question")
        self.pair_edges = nn.Dense(first, use_bias=False, name="pair_0_edges")
        self.pair_bias = self.param("pair_0_bias", nn.initializers.zeros, (first,))
        self.pair_rest = [
            nn.Dense(width, name=f"pair_{i}")
            for i, width in enumerate(self.pair_features[1:], start=1)
        ]
        self.output = MLP(tuple(self.output_features), name="output")
        self.sum_norm = nn.LayerNorm(name="sum_norm") if self.normalize_sum else None

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """The edge-list layout: one output per graph, `[G, output_features[-1]]`.

        `graph.nodes` are the objects `[N, F]`, `graph.globals` the questions `[G, Q]` (or None
        for an unconditioned network), `senders` / `receivers` `[E]` the ordered pairs and, with
        `use_edges`, `graph.edges` `[E, P]` their features. A graph without edges gets `f(0)`.
        """
        needed = ("nodes", "senders", "receivers") + (("edges",) if self.use_edges else ())
        require(graph, *needed, block="RelationNetwork")
        sender_part, receiver_part = jnp.split(self.pair_objects(graph.nodes), 2, axis=-1)
        use_question = graph.globals is not None
        projected = graph._replace(
            nodes={"sender": sender_part, "receiver": receiver_part},
            edges=self.pair_edges(graph.edges) if self.use_edges else None,
            globals=self.pair_question(graph.globals) if use_question else None,
        )

        def pair_fn(sender_nodes, receiver_nodes, globals=None, edges=None):
            first = sender_nodes["sender"] + receiver_nodes["receiver"] + self.pair_bias
            if edges is not None:
                first = first + edges
            if globals is not None:
                first = first + globals
            return self._pair_layers(first)

        network = relation_network(
            pair_fn,
            lambda edges: self._output(edges),
            use_globals=use_question,
            use_edges=self.use_edges,
        )
        return network(projected).globals

    def dense(
        self,
        objects: jax.Array,
        question: jax.Array | None = None,
        mask: jax.Array | None = None,
        pairs: jax.Array | None = None,
    ) -> jax.Array:
        """The dense layout: one array of objects per scene instead of a graph. Jittable.

        A pair counts when both its objects are real (and, without `self_pairs`, they differ), so
        a masked object's features change nothing.

        Args:
          objects: `[B, n, F]`, each scene's objects.
          question: `[B, Q]`, each scene's question, or None for an unconditioned network.
          mask: bool `[B, n]`, true for real objects; None: all real.
          pairs: `[B, n, n, P]`, each pair's features (`pairs[b, r, s]`: receiver `r`, sender `s`);
            given exactly when `use_edges` is on.

        Returns:
          `[B, output_features[-1]]`.
        """
        if (pairs is not None) != self.use_edges:
            raise ValueError(
                f"pairs must be given exactly when use_edges is on (use_edges={self.use_edges})."
            )
        batch, n_object = objects.shape[:2]
        sender_part, receiver_part = jnp.split(self.pair_objects(objects), 2, axis=-1)
        first = receiver_part[:, :, None, :] + sender_part[:, None, :, :] + self.pair_bias
        if pairs is not None:
            first = first + self.pair_edges(pairs)
        if question is not None:
            first = first + self.pair_question(question)[:, None, None, :]
        pairs = self._pair_layers(first.reshape(batch * n_object * n_object, -1))
        pairs = pairs.reshape(batch, n_object * n_object, -1)
        weights = self._pair_weights(batch, n_object, mask, pairs.dtype)
        return self._output(jnp.einsum("bph,bp->bh", pairs, weights))

    def _output(self, summed: jax.Array) -> jax.Array:
        return self.output(summed if self.sum_norm is None else self.sum_norm(summed))

    def _pair_layers(self, first: jax.Array) -> jax.Array:
        hidden = nn.relu(first)
        for layer in self.pair_rest:
            hidden = nn.relu(layer(hidden))
        return hidden

    def _pair_weights(self, batch: int, n_object: int, mask, dtype) -> jax.Array:
        """1 for the pairs that count, 0 for the others: `[B, n * n]`, row-major (receiver,
        sender)."""
        real = jnp.ones((batch, n_object), bool) if mask is None else jnp.asarray(mask, bool)
        counted = real[:, :, None] & real[:, None, :]
        if not self.self_pairs:
            counted = counted & ~jnp.eye(n_object, dtype=bool)
        return counted.reshape(batch, n_object * n_object).astype(dtype)


def pair_graph(
    objects: np.ndarray,
    question: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    self_pairs: bool = True,
    pairs: np.ndarray | None = None,
) -> GraphsTuple:
    """The edge-list input of `RelationNetwork` for dense scenes. Host (NumPy).

    The same pairs count as in `RelationNetwork.dense`: those of real objects.

    Args:
      objects: `[B, n, F]`, each scene's objects.
      question: `[B, Q]`, each scene's question (the graphs' globals), or None.
      mask: bool `[B, n]`, true for real objects; None: all real.
      self_pairs: also make `(i, i)` an edge.
      pairs: `[B, n, n, P]`, each pair's features (`pairs[b, r, s]`: receiver `r`, sender `s`, as
        `RelationNetwork.dense` takes them), or None.

    Returns:
      One fully connected graph per scene over its real objects (in order), every ordered pair an
      edge with its row of `pairs` as the edge features `[E, P]`.
    """
    objects = np.asarray(objects)
    real = np.ones(objects.shape[:2], bool) if mask is None else np.asarray(mask, bool)
    if real.shape != objects.shape[:2]:
        raise ValueError(f"mask must be {objects.shape[:2]} (scenes, objects), got {real.shape}.")
    graph = fully_connected_graph(
        real.sum(axis=1),
        node_features=objects[real],
        global_features=None if question is None else np.asarray(question),
        add_self_edges=self_pairs,
    )
    if pairs is None:
        return graph
    pairs = np.asarray(pairs)
    if pairs.shape[:3] != real.shape + real.shape[1:]:
        raise ValueError(
            f"pairs must be {real.shape + real.shape[1:]} + (features,), got {pairs.shape}."
        )
    scene, position = np.nonzero(real)  # the scene and object index of each graph node
    receivers, senders = graph.receivers, graph.senders
    return graph._replace(edges=pairs[scene[receivers], position[receivers], position[senders]])
