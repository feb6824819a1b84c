"""The relational demo's report: the GNN's replicates and the baselines on validation and test,
with the task's metric, as one table. Host."""

from __future__ import annotations

from typing import Any

import numpy as np

from gnkit.demos.rdl.baselines import baselines
from gnkit.demos.rdl.config import RDLConfig
from gnkit.demos.rdl.data import RDLData, eval_batches
from gnkit.demos.rdl.training import predictions
from gnkit.rdl import task_metrics

SPLITS = ("valid", "test")


def _mean_std(values: list[dict]) -> dict:
    keys = values[0].keys()
    return {key: {"mean": float(np.mean([v[key] for v in values])),
                  "std": float(np.std([v[key] for v in values]))} for key in keys}


def report(config: RDLConfig, run_dir, options, states, data: RDLData) -> dict[str, Any]:
    """The GNN replicates' metrics (each, and mean +- std) and the baselines', on validation
    and test; prints the table.

    Args:
      config: the run's config.
      run_dir: the run directory.
      options: the command's options.
      states: `{replicate: gnkit.train.TrainingState}`, each replicate's best validated state.
      data: the `RDLData`.

    Returns:
      The results dict (also the verb's `--json`).
    """
    kind = data.task.kind
    batches = {split: eval_batches(config, data, split) for split in SPLITS}
    replicates = {}
    for name, state in states.items():
        replicates[name] = {
            split: task_metrics(kind, data.tables[split].label,
                                predictions(config, data, state.params, batches[split]))
            for split in SPLITS
        }
        replicates[name]["updates"] = int(state.step)
        replicates[name]["cpu_minutes"] = round(float(state.cpu_seconds) / 60, 2)
    results: dict[str, Any] = {
        "task": data.task.name,
        "kind": kind,
        "seeds": {split: int(data.tables[split].label.size) for split in ("train", *SPLITS)},
        "gnn": {split: _mean_std([replicates[name][split] for name in replicates])
                for split in SPLITS},
        "replicates": replicates,
        "baselines": baselines(config, data.connection, data.task),
    }
    print(format_table(results))
    return results


def format_table(results: dict[str, Any]) -> str:
    """One row per model (the GNN as mean +- std over its replicates), a column per split and
    metric. Host."""
    metrics = ("auroc", "average_precision") if results["kind"] == "binary" else ("mae",)
    header = f"{'model':<18}" + "".join(f"{split + ' ' + metric:>26}" for split in SPLITS
                                         for metric in metrics)
    seeds = results["seeds"]
    lines = [f"{results['task']}: {seeds['train']} training, {seeds['valid']} validation, "
             f"{seeds['test']} test seeds", header]
    gnn = results["gnn"]
    lines.append(f"{'GNN (' + str(len(results['replicates'])) + ' runs)':<18}" + "".join(
        f"{gnn[split][metric]['mean']:>19.4f} ± {gnn[split][metric]['std']:.3f}"
        for split in SPLITS for metric in metrics))
    for name, entry in results["baselines"].items():
        lines.append(f"{name:<18}" + "".join(f"{entry[split][metric]:>26.4f}"
                                             for split in SPLITS for metric in metrics))
    return "\n".join(lines)


def format_summary(results: dict[str, Any]) -> str:
    """Every task of a `task=all` run as one table: a row per task and split, its main metric
    (AUROC, or MAE) for the GNN (mean +- std) and each baseline. Host."""
    tasks = results["tasks"]
    baselines = list(dict.fromkeys(name for task in tasks.values() for name in task["baselines"]))
    header = f"{'task':<16}{'metric':>8}{'split':>7}{'GNN':>17}" + "".join(
        f"{name:>17}" for name in baselines)
    lines = [header]
    for task, entry in tasks.items():
        metric = "auroc" if entry["kind"] == "binary" else "mae"
        for split in SPLITS:
            gnn = entry["gnn"][split][metric]
            cells = [f"{gnn['mean']:.4f} ± {gnn['std']:.3f}".rjust(17)]
            for name in baselines:
                value = entry["baselines"].get(name, {}).get(split, {}).get(metric)
                cells.append(f"{'-' if value is None else f'{value:.4f}':>17}")
            lines.append(f"{task:<16}{metric:>8}{split:>7}" + "".join(cells))
    return "\n".join(lines)
