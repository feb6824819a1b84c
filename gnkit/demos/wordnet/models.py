"""The WordNet demo's models: GraphSAGE and GCN over the pointers, an MLP on the gloss features,
label propagation, and a GraphSAGE encoder scoring node pairs by dot product. Jittable."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit import segment
from gnkit.graph import GraphsTuple
from gnkit.nn import GCN, MLP, GraphSAGE


class SAGE(nn.Module):
    """Two GraphSAGE layers (mean aggregator, root weight), ReLU between: nodes `[N, F] ->
    [N, outputs]`. Runs on a sampled subgraph in training and on the whole graph in tests."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        graph = GraphSAGE(self.hidden)(graph)
        graph = graph._replace(nodes=nn.relu(graph.nodes))
        return GraphSAGE(self.outputs)(graph).nodes


class TwoLayerGCN(nn.Module):
    """Two GCN layers (PyG's normalisation, self-edges added), ReLU between. Full-batch."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        graph = GCN(self.hidden)(graph)
        graph = graph._replace(nodes=nn.relu(graph.nodes))
        return GCN(self.outputs)(graph).nodes


class GlossMLP(nn.Module):
    """An MLP on the gloss features alone, ignoring the pointers: `[N, F] -> [N, outputs]`."""

    hidden: int
    outputs: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        return MLP((self.hidden, self.hidden, self.outputs))(graph.nodes)


def classifier(name: str, hidden: int, classes: int) -> nn.Module:
    """The node classifier called `name` ('sage', 'gcn' or 'mlp')."""
    return {"sage": SAGE, "gcn": TwoLayerGCN, "mlp": GlossMLP}[name](hidden, classes)


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


def pair_scores(embeddings: jax.Array, pairs: jax.Array) -> jax.Array:
    """Dot products `[P]` of the embeddings `[N, D]` of each pair's two rows `pairs` `[P, 2]`."""
    return jnp.sum(embeddings[pairs[:, 0]] * embeddings[pairs[:, 1]], axis=-1)
