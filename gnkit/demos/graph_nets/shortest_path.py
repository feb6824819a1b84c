"""Find shortest paths with a graph network, after graph_nets' shortest-path demo.

    python -m gnkit.demos.shortest_path train                                # default config
    python -m gnkit.demos.shortest_path eval --run-dir runs/shortest_path    # re-evaluate a run

Random geographic graphs (8-16 nodes in training) with a start and an end node; an
`EncodeProcessDecode` with 10 processing steps labels the nodes and edges on the shortest path.
The report gives node and edge accuracy and the fraction of graphs solved (every label right) on
8-16 and 16-32 nodes; `--run-dir` (default `runs/shortest_path`) gets `train.json` /
`eval.json`, `metrics.jsonl`, checkpoints, `training.png` and `example.png`. Host driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gnkit import experiments
from gnkit.demos.graph_nets import config as common_config
from gnkit.demos.graph_nets import labelling
from gnkit.tasks import shortest_path

CONFIGS = {
    "default": common_config.DemoConfig(updates=4000),
    "quick": common_config.DemoConfig(updates=1000),
    "tiny": common_config.tiny_config(6),
}
PRESET_NOTES = {
    "default": "4,000 updates (2.7 CPU-minutes on 2 cores)",
    "quick": "a first look: 1,000 updates",
    "tiny": "a few updates on tiny graphs, for tests",
}


def plot_example(axes, inputs, targets, node_logits, edge_logits, label: str) -> None:
    """One graph drawn twice: the true path, and the predicted probabilities of being on it.

    Args:
      axes: two matplotlib axes, target and prediction.
      inputs: the input graph.
      targets: its target graph (one-hot node and edge classes).
      node_logits: the model's node logits `[N, 2]`.
      edge_logits: the model's edge logits `[E, 2]`.
      label: the test set's name (its size range).
    """
    node_probability = np.exp(node_logits[:, 1]) / np.exp(node_logits).sum(-1)
    edge_probability = np.exp(edge_logits[:, 1]) / np.exp(edge_logits).sum(-1)
    positions = inputs.nodes[:, :2]
    panels = (
        (f"target ({label} nodes)", targets.nodes[:, 1], targets.edges[:, 1]),
        ("predicted probability of being on the path", node_probability, edge_probability),
    )
    for axis, (title, on_node, on_edge) in zip(axes, panels, strict=True):
        for sender, receiver, weight in zip(inputs.senders, inputs.receivers, on_edge, strict=True):
            segment = positions[[sender, receiver]]
            axis.plot(*segment.T, color="0.85", lw=0.8, zorder=1)
            if weight > 0.05:
                axis.plot(*segment.T, color="tab:red", lw=3 * weight, alpha=weight, zorder=2)
        axis.scatter(*positions.T, c=on_node, cmap="Reds", vmin=0, vmax=1, edgecolors="k", zorder=3)
        for flag, marker, name in ((2, "s", "start"), (3, "*", "end")):
            at = positions[inputs.nodes[:, flag] > 0]
            axis.scatter(*at.T, marker=marker, s=160, facecolors="none", edgecolors="b", label=name)
        axis.set(title=title, xticks=[], yticks=[], aspect="equal")
    axes[0].legend(loc="lower left", fontsize=8)


TASK = labelling.ClassificationTask(
    name="shortest_path",
    generate=shortest_path.generate_graphs,
    metrics=shortest_path.metrics,
    example=lambda: shortest_path.generate_graph(0, 3)[0],
    typical_edges=lambda size: 3 * size,
    plot_example=plot_example,
)


DEMO = labelling.classification_demo(TASK, CONFIGS, __doc__.split("\n")[0], PRESET_NOTES)


def train(config: common_config.DemoConfig, run_dir: str | Path, progress: bool = True) -> dict:
    """Train `config` in `run_dir` (resuming), then test and plot, as `gnkit shortest-path train`;
    returns the results."""
    return experiments.run_verb(DEMO, "train", config, run_dir, progress=progress)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit shortest-path train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)

