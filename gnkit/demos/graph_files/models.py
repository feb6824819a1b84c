"""The graph-files demo's models: per-node outputs for node tasks, per-graph for graph tasks.
Jittable.

Node tasks use the WordNet demo's classifiers as they are (`gnkit.demos.wordnet.models`: two
GCN or GraphSAGE layers with a ReLU between, or an MLP on the node features); a graph task
runs the same module to `hidden` node outputs, a ReLU, the mean over each graph's nodes and a
linear layer (`GraphClassifier`). Label propagation, the floor of node tasks, is WordNet's too.
"""

from __future__ import annotations

import flax.linen as nn
import jax

from gnkit import segment
from gnkit.demos.wordnet.models import classifier, label_propagation
from gnkit.graph import GraphsTuple, node_graph_index, num_graphs

__all__ = ["GraphClassifier", "build_model", "label_propagation"]


class GraphClassifier(nn.Module):
    """Node encoder, mean pooling per graph, a linear layer: `graph -> [G, classes]`."""

    model_family: str
    hidden: int
    classes: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        nodes = nn.relu(classifier(self.model_family, self.hidden, self.hidden)(graph))
        pooled = segment.segment_mean(nodes, node_graph_index(graph), num_graphs(graph),
                                      indices_are_sorted=True)
        return nn.Dense(self.classes)(pooled)


def build_model(name: str, task: str, hidden: int, classes: int) -> nn.Module:
    """Model `name` (`gcn`, `sage`, `mlp`) for a `task` (`'node'` or `'graph'`): logits
    `[N, classes]` or `[G, classes]`."""
    if task == "graph":
        return GraphClassifier(name, hidden, classes)
    return classifier(name, hidden, classes)
