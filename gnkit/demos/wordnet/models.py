"""The WordNet demo's models; each maps its batch's `"graph"` to per-node outputs. Jittable.

- `sage`: two GraphSAGE layers (mean aggregator, root weight), on a sampled subgraph in
  training and on the whole graph in tests.
- `gcn`: two GCN layers (PyG's normalisation, self-edges added), full batch.
- `rgcn`: two `gnkit.nn.TypedRGCN` layers over the pointer groups of the typed graph (a weight
  per edge set, a mean over each set's edges, a self-loop weight), full batch.
- `mlp`: an MLP on the gloss features alone, ignoring the pointers.
- `LinkPredictor`: a GraphSAGE encoder and an asymmetric score of a (synset, hypernym) pair,
  `q_s . k_d + b_d`: a hypernym is not its hyponym's sibling, which a symmetric dot product
  of one embedding would score as high as the pair.

ReLU between the two layers of every model. Label propagation (`label_propagation`) has no
parameters.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit import segment
from gnkit.graph import GraphsTuple
from gnkit.nn import GCN, MLP, GraphSAGE, TypedRGCN
from gnkit.typed_graph import TypedGraph


class SAGE(nn.Module):
    """Two GraphSAGE layers: nodes `[N, F] -> [N, outputs]`."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        graph = GraphSAGE(self.hidden)(graph)
        graph = graph._replace(nodes=nn.relu(graph.nodes))
        return GraphSAGE(self.outputs)(graph).nodes


class TwoLayerGCN(nn.Module):
    """Two GCN layers: nodes `[N, F] -> [N, outputs]`."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        graph = GCN(self.hidden)(graph)
        graph = graph._replace(nodes=nn.relu(graph.nodes))
        return GCN(self.outputs)(graph).nodes


class TwoLayerRGCN(nn.Module):
    """Two R-GCN layers over the edge sets of a one-node-set `TypedGraph` (`"synset"`):
    `[N, F] -> [N, outputs]`."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: TypedGraph) -> jax.Array:
        graph = TypedRGCN(self.hidden)(graph)
        synsets = graph.nodes["synset"]
        graph = graph._replace(nodes={"synset": synsets._replace(
            features=nn.relu(synsets.features))})
        return TypedRGCN(self.outputs)(graph).nodes["synset"].features


class GlossMLP(nn.Module):
    """An MLP on the gloss features alone: `[N, F] -> [N, outputs]`."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        return MLP((self.hidden, self.hidden, self.outputs))(graph.nodes)


def classifier(model_family: str, hidden: int, classes: int) -> nn.Module:
    """The node classifier of `model_family` ('sage', 'gcn', 'rgcn' or 'mlp')."""
    modules = {"sage": SAGE, "gcn": TwoLayerGCN, "rgcn": TwoLayerRGCN, "mlp": GlossMLP}
    return modules[model_family](hidden, classes)


class LinkPredictor(nn.Module):
    """A GraphSAGE encoder `h` and three heads: queries `q = W_q h`, keys `k = W_k h`
    `[N, hidden]` and a bias `b = w_b . h` `[N]`; pair `(s, d)` scores `q_s . k_d + b_d`."""

    hidden: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> tuple[jax.Array, jax.Array, jax.Array]:
        embeddings = nn.relu(SAGE(self.hidden, self.hidden, name="encoder")(graph))
        return (nn.Dense(self.hidden, name="query")(embeddings),
                nn.Dense(self.hidden, name="key")(embeddings),
                nn.Dense(1, name="bias")(embeddings)[:, 0])


def pair_scores(heads: tuple[jax.Array, jax.Array, jax.Array], pairs: jax.Array) -> jax.Array:
    """`q_s . k_d + b_d` `[P]` of each pair `(s, d)` of rows `pairs` `[P, 2]`, from the
    `LinkPredictor`'s heads `(q, k, b)`."""
    queries, keys, bias = heads
    sources, targets = pairs[:, 0], pairs[:, 1]
    return jnp.sum(queries[sources] * keys[targets], axis=-1) + bias[targets]


def label_propagation(
    graph: GraphsTuple, seed_labels: jax.Array, steps: int, alpha: float
) -> jax.Array:
    """Label propagation (Zhou et al. 2004): `Y <- alpha * mean_{j -> i} Y_j + (1 - alpha) Y0`.

    Jittable (`steps` and `alpha` static).

    Args:
      graph: the graph whose edges `j -> i` spread the scores (its features are not read).
      seed_labels: `Y0`, `[N, C]`: the one-hot labels of the training nodes and zeros
        elsewhere.
      steps: the iterations.
      alpha: the weight of the neighbours' mean against `Y0`, in `[0, 1]`.

    Returns:
      The class scores `[N, C]` after `steps` iterations.
    """
    n_node = seed_labels.shape[0]
    ones = jnp.ones(graph.senders.shape[0], seed_labels.dtype)
    degree = jnp.maximum(segment.segment_sum(ones, graph.receivers, n_node), 1.0)

    def step(scores, _):
        spread = segment.segment_sum(scores[graph.senders], graph.receivers, n_node)
        return alpha * spread / degree[:, None] + (1 - alpha) * seed_labels, None

    scores, _ = jax.lax.scan(step, seed_labels, None, length=steps)
    return scores
