"""The typed-nodes demo's four node classifiers; each maps the full batch to logits `[N, 2]` in
row order (node sets in `data.NODE_SETS` order). Jittable.

- `rgcn`: two `gnkit.nn.TypedRGCN` layers over the edge sets (a weight per edge set, a mean
  over each relation's edges, a self-loop weight per node set), ReLU after each, a Dense
  classifier per node set.
- `hetero_sage`: two `gnkit.nn.to_hetero(GraphSAGE)` layers (a GraphSAGE of its own per edge
  set, summed per receiving node set), ReLU after each, a Dense classifier per node set.
- `gcn`: the homogeneous twin, two `gnkit.nn.GCN` layers on one node set and one edge set
  (relations forgotten), ReLU after each, one Dense classifier.
- `mlp`: the floor, an MLP of the node features alone (no edges). The only feature is the
  node set, so the best it can do is each set's majority class.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.demos.typed_nodes.data import NODE_SETS, NUM_CLASSES
from gnkit.nn import GCN, MLP, GraphSAGE, TypedRGCN, to_hetero
from gnkit.typed_graph import TypedGraph


def _relu(graph: TypedGraph) -> TypedGraph:
    return graph._replace(nodes={name: nodes._replace(features=nn.relu(nodes.features))
                                 for name, nodes in graph.nodes.items()})


def _classify(graph: TypedGraph) -> jax.Array:
    """A Dense classifier per node set (`classify_<set>`); logits of all sets in row order."""
    return jnp.concatenate([nn.Dense(NUM_CLASSES, name=f"classify_{name}")(
        graph.nodes[name].features) for name in NODE_SETS])


class RGCNClassifier(nn.Module):
    """Two R-GCN layers over the edge sets, then a classifier per node set."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict) -> jax.Array:
        graph = batch["graph"]
        for layer in range(2):
            graph = _relu(TypedRGCN(self.hidden, name=f"rgcn_{layer}")(graph))
        return _classify(graph)


class HeteroSAGEClassifier(nn.Module):
    """Two `to_hetero(GraphSAGE)` layers, then a classifier per node set."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict) -> jax.Array:
        graph = batch["graph"]
        for layer in range(2):
            conv = to_hetero(GraphSAGE(self.hidden, parent=None), graph.edges)
            graph = _relu(conv.clone(parent=self, name=f"sage_{layer}")(graph))
        return _classify(graph)


class GCNClassifier(nn.Module):
    """Two GCN layers on the homogeneous twin, then one classifier."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict) -> jax.Array:
        graph = batch["homogeneous"]
        for layer in range(2):
            graph = GCN(self.hidden, name=f"gcn_{layer}")(graph)
            graph = graph._replace(nodes=nn.relu(graph.nodes))
        return nn.Dense(NUM_CLASSES, name="classify")(graph.nodes)


class MLPClassifier(nn.Module):
    """An MLP of the node features (the one-hot node set), no edges."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict) -> jax.Array:
        return MLP((self.hidden, self.hidden, NUM_CLASSES), name="mlp")(batch["homogeneous"].nodes)


def build_model(family: str, hidden: int) -> nn.Module:
    """The classifier of model family `family` ('rgcn', 'hetero_sage', 'gcn' or 'mlp')."""
    classes = {"rgcn": RGCNClassifier, "hetero_sage": HeteroSAGEClassifier,
               "gcn": GCNClassifier, "mlp": MLPClassifier}
    return classes[family](hidden)
