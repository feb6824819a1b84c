"""The graph-files demo's config and presets: the tables, their columns, the split, the models
and their training. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

ModelName = Literal["gcn", "sage", "mlp"]


@dataclasses.dataclass(frozen=True)
class GraphFilesConfig:
    """One run on one's own graph tables (or, without `edges`, a generated example graph).

    A node task labels nodes; with `graph_column` it is a graph task (labels per graph, from
    `labels` or agreed by each graph's nodes). Every model trains full batch: each update sees
    the whole graph and the training entities' labels (transductive for nodes, as on Planetoid
    and OGB node tasks). `gcn` and `sage` are two GCN / GraphSAGE layers (the WordNet demo's
    classifiers), `mlp` an MLP on the node features alone; a graph task mean-pools their node
    outputs per graph into a linear classifier.
    """

    edges: str = setting("", help="edge table (.csv or .parquet); empty: a generated example")
    nodes: str = setting("", help="node table: an id column, features (and labels)")
    labels: str = setting("", help="label table, keyed by node or graph id (empty: in nodes)")
    id_column: str = setting("id", help="the node table's id column")
    source_column: str = setting("source", help="the edge table's source node column")
    target_column: str = setting("target", help="the edge table's target node column")
    label_column: str = setting("label", help="the class column (node or label table)")
    feature_columns: str = setting(
        "", help="the feature columns, comma-separated (empty: all others)"
    )
    graph_column: str = setting("", help="a node table column naming each node's graph")
    split_column: str = setting("", help="train/valid/test per labelled row; empty: random")
    sizes: tuple[float, float, float] = setting((0.8, 0.1, 0.1), minimum=0.0,
                                                help="random split fractions")
    missing_labels: Literal["raise", "predict"] = setting(
        "raise", help="a node or graph without a label: raise, or predict it"
    )
    directed: bool = setting(False, help="keep edges one-way (default: both directions)")
    models: tuple[ModelName, ...] = setting(
        ("gcn", "sage", "mlp"), help="models to train, in turn (gcn, sage, mlp)"
    )
    hidden: int = setting(64, minimum=1, help="hidden width of every model")
    updates: int = setting(200, minimum=1, help="Adam steps per model (full batch)")
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam, warm-up then cosine decay")
    eval_every_updates: int = setting(20, minimum=1)
    propagation_steps: int = setting(20, minimum=1, help="label propagation (node tasks)")
    propagation_alpha: float = setting(0.9, minimum=0.0, help="label propagation's alpha")
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each model at most once; got {list(self.models)}")
        if bool(self.edges) != bool(self.nodes):
            raise ValueError("edges and nodes go together (both empty: the example graph)")
        if self.labels and not self.nodes:
            raise ValueError("labels needs edges and nodes")
        if abs(sum(self.sizes) - 1.0) > 1e-6 or min(self.sizes) <= 0.0:
            raise ValueError(f"sizes must be three positive fractions summing to 1; got "
                             f"{list(self.sizes)}")
        if self.propagation_alpha > 1.0:
            raise ValueError(f"propagation_alpha must lie in [0, 1]; got {self.propagation_alpha}")

    def feature_names(self) -> tuple[str, ...] | None:
        """`feature_columns` as names; None when empty (every other column)."""
        names = tuple(name.strip() for name in self.feature_columns.split(",") if name.strip())
        return names or None


CONFIGS = {
    "default": GraphFilesConfig(),
    "quick": GraphFilesConfig(updates=60, hidden=32, eval_every_updates=20),
    "tiny": GraphFilesConfig(updates=30, hidden=16, eval_every_updates=10, propagation_steps=5),
}

PRESET_NOTES = {
    "default": "GCN, GraphSAGE and an MLP: 200 full-batch updates each, hidden 64",
    "quick": "a first look: 60 updates each, hidden 32",
    "tiny": "30 updates each, hidden 16, for tests",
}
