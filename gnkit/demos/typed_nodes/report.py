"""The typed-nodes demo's report: test accuracy per replicate, the mean and spread per model
family, and the majority floor; as a dict (the run record) and as a printed table. Host."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gnkit.demos.typed_nodes.config import FAMILIES, TypedNodesConfig, family
from gnkit.demos.typed_nodes.data import NODE_SETS, Data
from gnkit.demos.typed_nodes.training import accuracies

NAMES = {"rgcn": "R-GCN (typed)", "hetero_sage": "to_hetero(GraphSAGE)",
         "gcn": "GCN (homogeneous twin)", "mlp": "MLP (no edges)"}


def majority_accuracy(data: Data) -> float:
    """Test accuracy of answering each node set's most common training label."""
    correct = []
    for s in range(len(NODE_SETS)):
        inside = data.node_set == s
        train = data.labels[inside & data.splits["train"]]
        test = data.labels[inside & data.splits["test"]]
        correct.append(test == np.bincount(train).argmax())
    return float(np.mean(np.concatenate(correct)))


def report(config: TypedNodesConfig, run_dir, options, states, data: Data) -> dict[str, Any]:
    """Accuracy of every replicate's best validated state, the families' means, the table.

    Args:
      config: the run's config.
      run_dir: the run directory (unused: the report draws no figure).
      options: the command's options (unused).
      states: `{model name: gnkit.train.TrainingState}`.
      data: what the demo's `load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    del run_dir, options
    models = {}
    for name, state in states.items():
        models[name] = {**{key: round(value, 4) for key, value in
                           accuracies(name, config, data, state.params).items()},
                        "updates": int(state.step),
                        "cpu_minutes": round(float(state.cpu_seconds) / 60, 2)}
    families = {}
    for name in FAMILIES:
        tests = [row["test"] for model, row in models.items() if family(model) == name]
        if tests:
            families[name] = {"test_mean": round(float(np.mean(tests)), 4),
                              "test_std": round(float(np.std(tests)), 4),
                              "replicates": len(tests)}
    results = {
        "nodes": {name: int(np.sum(data.node_set == s)) for s, name in enumerate(NODE_SETS)},
        "edge_sets": len(data.graph.edges),
        "edges": int(data.homogeneous.n_edge[0]),
        "split": {split: int(mask.sum()) for split, mask in data.splits.items()},
        "models": models,
        "families": families,
        "majority": round(majority_accuracy(data), 4),
    }
    print(format_table(results))
    return results


def format_table(results: Mapping[str, Any]) -> str:
    """Test accuracy per model family (mean and standard deviation over its replicates)."""
    lines = [f"UMLS typed node classification: {results['split']['test']} test nodes, "
             f"{results['edge_sets']} edge sets",
             f"{'model':<24} {'replicates':>10} {'test mean':>10} {'std':>7}"]
    for name, row in results["families"].items():
        lines.append(f"{NAMES[name]:<24} {row['replicates']:>10} {row['test_mean']:>10.3f} "
                     f"{row['test_std']:>7.3f}")
    lines.append(f"{'majority of its node set':<24} {'':>10} {results['majority']:>10.3f}")
    return "\n".join(lines)
