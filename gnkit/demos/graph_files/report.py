"""The graph-files demo's report: each model's train / valid / test accuracy beside the floors
(the majority class; label propagation for node tasks), a predictions CSV per model in the run
directory, the results dict and the printed table. `eval` of a finished run recomputes it all
from the saved states. Host."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.demos.graph_files import models, training
from gnkit.demos.graph_files.config import GraphFilesConfig
from gnkit.demos.graph_files.data import Data
from gnkit.graph_files import SPLITS

NAMES = {"gcn": "GCN", "sage": "GraphSAGE", "mlp": "MLP (features only)",
         "majority": "majority class", "label_propagation": "label propagation"}


def write_predictions(path: Path, key_column: str, ids, labelled, scores: np.ndarray,
                      split: np.ndarray | None = None) -> None:
    """One row per entity: its id (under `key_column`), `split` (when given), its `label`
    (empty where none), the `prediction`, its `probability` and `p_<class>` for each class."""
    probabilities = training.probabilities(scores)
    classes = labelled.classes
    with Path(path).open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([key_column, *(["split"] if split is not None else []), "label",
                         "prediction", "probability", *(f"p_{name}" for name in classes)])
        for row, key in enumerate(ids):
            label = labelled.labels[row]
            best = int(np.argmax(probabilities[row]))
            part = [] if split is None else [SPLITS[split[row]] if split[row] >= 0 else ""]
            writer.writerow([key, *part, classes[label] if label >= 0 else "", classes[best],
                             f"{probabilities[row, best]:.6f}",
                             *(f"{value:.6f}" for value in probabilities[row])])


def entity_split(data: Data) -> np.ndarray:
    """int8 `[M]`: each entity's part of the run's split (0, 1, 2; -1 unlabelled)."""
    split = np.full(data.labelled.labels.shape[0], -1, np.int8)
    for part, rows in enumerate((data.train, data.valid, data.test)):
        split[rows] = part
    return split


def key_column(config: GraphFilesConfig) -> str:
    """The id column a predictions CSV keys its rows by: the graph or the node id column."""
    return config.graph_column or config.id_column


def floors(config: GraphFilesConfig, data: Data) -> dict[str, dict[str, float]]:
    """The majority training class, and for a node task label propagation from the training
    labels (`propagation_steps`, `propagation_alpha`), as accuracies."""
    labels = data.labelled.labels
    counts = np.bincount(labels[data.train], minlength=data.num_classes)
    majority = np.zeros((labels.shape[0], data.num_classes))
    majority[:, int(np.argmax(counts))] = 1.0
    results = {"majority": training.accuracies(majority, data)}
    if data.labelled.task == "node":
        seeds = np.zeros((labels.shape[0], data.num_classes), np.float32)
        seeds[data.train, labels[data.train]] = 1.0
        propagate = jax.jit(models.label_propagation, static_argnums=(2, 3))
        scores = propagate(data.graph._replace(nodes=None), jnp.asarray(seeds),
                           config.propagation_steps, config.propagation_alpha)
        results["label_propagation"] = training.accuracies(np.asarray(scores), data)
    return results


def report(config: GraphFilesConfig, run_dir, options, states, data: Data) -> dict[str, Any]:
    """Every model's best validated state on the three splits beside the floors; writes
    `predictions_<model>.csv` in the run directory and prints the table.

    Args:
      config: the run's config.
      run_dir: the run directory.
      options: the command's options (unused).
      states: `{model name: gnkit.train.TrainingState}`.
      data: what `data.load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    del options
    labelled = data.labelled
    rows = {}
    split = entity_split(data)
    for name, state in states.items():
        scores = training.logits(name, config, data, state.params)
        path = run_dir.file(f"predictions_{name}.csv")
        write_predictions(path, key_column(config), labelled.entity_ids, labelled, scores,
                          split)
        rows[name] = {**training.accuracies(scores, data), "updates": int(state.step),
                      "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
                      "predictions": str(path)}
    results = {
        "task": labelled.task,
        "tables": data.tables,
        "nodes": int(labelled.node_ids.shape[0]),
        "edges": int(labelled.senders.shape[0]),
        "graphs": None if labelled.graph_ids is None else int(labelled.graph_ids.shape[0]),
        "classes": list(labelled.classes),
        "features": list(labelled.feature_names),
        "split_sizes": {"train": int(data.train.size), "valid": int(data.valid.size),
                        "test": int(data.test.size)},
        "models": rows,
        "floors": floors(config, data),
    }
    print(format_table(results))
    return results


def format_table(results: Mapping[str, Any]) -> str:
    """A line per model and floor: train, valid and test accuracy; then the predictions."""
    sizes = results["split_sizes"]
    what = "graphs" if results["task"] == "graph" else "nodes"
    lines = [f"{results['task']} classification, {len(results['classes'])} classes: "
             f"{sizes['train']} / {sizes['valid']} / {sizes['test']} labelled {what} "
             "(train / valid / test)",
             f"{'model':<22} {'train':>6} {'valid':>6} {'test':>6}"]
    for name, row in [*results["models"].items(), *results["floors"].items()]:
        lines.append(f"{NAMES[name]:<22} {row['train']:6.3f} {row['valid']:6.3f} "
                     f"{row['test']:6.3f}")
    for name, row in results["models"].items():
        lines.append(f"{name} predictions: {row['predictions']}")
    return "\n".join(lines)
