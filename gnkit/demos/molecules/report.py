"""The molecules demo's report: per-replicate and mean +- std test RMSE and MAE (classification:
AUROC and PRC-AUC, and the expected calibration error), each the mean over the tasks, per task
too when there are several; a parity plot of the test predictions (regression) or a
reliability diagram of the test probabilities (classification), and the learning curves.
Host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.molecules import models
from gnkit.demos.molecules.data import steps_per_epoch
from gnkit.demos.molecules.metrics import (
    calibration_bins,
    mean_metrics,
    metric_names,
    task_metrics,
)
from gnkit.demos.molecules.training import predict_rows, replicate_name

# MoleculeNet's best published test RMSE on random 80/10/10 splits (Wu et al. 2018, Table 8).
MOLECULENET_BEST = {"esol": 0.58, "freesolv": 1.15, "lipophilicity": 0.655}
# Equal-width probability bins of the reliability diagram and its expected calibration error.
CALIBRATION_BINS = 10


def curves(
    run_dir: experiments.RunDir, seed: int, per_epoch: int, metric: str = "rmse"
) -> dict[str, list[float]]:
    """Replicate `seed`'s learning curves by epoch: training loss (the epoch mean) and the
    validation `metric` (as `val_metric`), and its CPU-minutes so far."""
    path = run_dir.path / f"metrics_{replicate_name(seed)}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    train = [r for r in records if r["kind"] == "train"]
    valid = [r for r in records if r["kind"] == "eval"]
    return {
        "train_epoch": [r["step"] / per_epoch for r in train],
        "train_loss": [r["loss"] for r in train],
        "val_epoch": [r["step"] / per_epoch for r in valid],
        "val_metric": [r[f"val_{metric}"] for r in valid],
        "cpu_minutes": records[-1]["cpu_minutes"] if records else 0.0,
    }


def report(config, run_dir: experiments.RunDir, options: experiments.Options, states, data):
    """Test every replicate's best validated state; print the table, draw the figures, return
    the results (per seed, mean and std, MoleculeNet's best for reference; classification:
    each task's expected calibration error over `CALIBRATION_BINS` bins, `calibration`).

    Args:
      config: the run's `MoleculesConfig`.
      run_dir: the run directory.
      options: the command's options.
      states: `{"seed<s>": gnkit.train.TrainingState}`, each replicate's best validated state.
      data: the `MoleculeData`.

    Returns:
      The results dict (also the verb's `--json`).
    """
    names = metric_names(data.task)
    predict = models.make_predict(config, data.max_atoms, len(data.tasks))
    per_seed, per_task, parity, learning = {}, {}, {}, {}
    for seed in config.replicate_seeds:
        state = states[replicate_name(seed)]
        test = data.splits[seed]["test"]
        predictions = predict_rows(config, predict, state.params, data, seed, test)
        per_epoch = steps_per_epoch(len(data.splits[seed]["train"]), config.batch_size)
        learning[seed] = curves(run_dir, seed, per_epoch, names[0])
        per_task[seed] = task_metrics(predictions, data.targets[test], data.task)
        per_seed[seed] = {
            **{f"test_{k}": round(v, 4) for k, v in mean_metrics(per_task[seed]).items()},
            "best_epoch": int(state.step) // per_epoch,
            "cpu_minutes": round(learning[seed]["cpu_minutes"], 2),
            "sizes": [len(data.splits[seed][part]) for part in ("train", "val", "test")],
        }
        parity[seed] = (data.targets[test], predictions)
        if data.classification:
            per_seed[seed]["test_ece"] = round(
                _mean_ece(data.targets[test], predictions, [e["auroc"] for e in per_task[seed]]), 4
            )
    results: dict[str, Any] = {
        "data": config.data,
        "split": "file " + config.splits_file if config.splits_file else config.split,
        "model": config.model,
        "task": data.task,
        "seeds": {str(seed): entry for seed, entry in per_seed.items()},
    }
    for metric in names:
        results[f"test_{metric}"] = _spread([e[f"test_{metric}"] for e in per_seed.values()])
    if len(data.tasks) > 1:
        results["tasks"] = {
            task: {
                f"test_{metric}": _spread(
                    [entries[column][metric] for entries in per_task.values()]
                )
                for metric in names
            }
            for column, task in enumerate(data.tasks)
        }
    if data.classification:
        seed_eces = [entry["test_ece"] for entry in per_seed.values()]
        results["calibration"] = calibration_summary(parity, data.tasks, seed_eces)
    results["cpu_minutes"] = round(sum(entry["cpu_minutes"] for entry in per_seed.values()), 2)
    if config.data in MOLECULENET_BEST:
        results["moleculenet_best_random_split_rmse"] = MOLECULENET_BEST[config.data]
    print(format_table(results, data.dataset.info.unit if data.dataset.info else ""))
    figures = {}
    parity_path = options.plot_path(run_dir, "parity.png")
    if parity_path is not None and not data.classification:
        figures["parity"] = str(plot_parity(parity, results, data.dataset.info, parity_path))
    calibration_path = options.plot_path(run_dir, "calibration.png")
    if calibration_path is not None and data.classification:
        figures["calibration"] = str(
            plot_calibration(parity, data.tasks, results, calibration_path)
        )
    curves_path = options.plot_path(run_dir, "curves.png", main=False)
    if curves_path is not None:
        figures["curves"] = str(plot_curves(learning, curves_path, names[0]))
    results["figures"] = figures
    return results


def _mean_ece(targets: np.ndarray, predictions: np.ndarray, aurocs) -> float:
    """The mean over the tasks `[n, tasks]` of each one's expected calibration error, of the
    tasks whose AUROC is defined (both classes among the test labels), as the other means."""
    values = [
        calibration_bins(targets[:, column], predictions[:, column], CALIBRATION_BINS)["ece"]
        for column, auroc in enumerate(aurocs)
        if np.isfinite(auroc)
    ]
    return float(np.mean(values)) if values else float("nan")


def _pooled(parity: dict, column: int) -> tuple[np.ndarray, np.ndarray]:
    """Task `column`'s test labels and probabilities of every replicate, one after another."""
    labels = np.concatenate([measured[:, column] for measured, _ in parity.values()])
    probabilities = np.concatenate([predicted[:, column] for _, predicted in parity.values()])
    return labels, probabilities


def calibration_summary(parity: dict, tasks, seed_eces) -> dict[str, Any]:
    """The expected calibration error over `CALIBRATION_BINS` bins: `test_ece`, mean +- std of
    the replicates' `seed_eces` (each the mean over the tasks), and each task's (`tasks`) over
    the test molecules of every replicate of `parity` (`{seed: (labels, probabilities)}`, each
    `[n, tasks]`) pooled."""
    return {
        "bins": CALIBRATION_BINS,
        "test_ece": _spread(seed_eces),
        "tasks": {
            task: round(calibration_bins(*_pooled(parity, column), CALIBRATION_BINS)["ece"], 4)
            for column, task in enumerate(tasks)
        },
    }


def _spread(values) -> dict[str, float]:
    """Mean and population std over the seeds, of the seeds where the metric is defined."""
    values = np.array(values, np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return {"mean": float("nan"), "std": float("nan")}
    return {"mean": round(float(values.mean()), 4), "std": round(float(values.std()), 4)}


_LABELS = {"rmse": "RMSE", "mae": "MAE", "auroc": "AUROC", "prc_auc": "PRC-AUC"}


def format_table(results: dict[str, Any], unit: str) -> str:
    """Per-seed test metrics (RMSE and MAE, or AUROC and PRC-AUC; the mean over the tasks), then
    mean +- std (population std over the seeds), then each task's with several tasks."""
    names = [key.removeprefix("test_") for key in results if key.startswith("test_")]
    labels = [_LABELS[name] for name in names]
    where = f"test, {unit}" if unit else "test"
    lines = [
        f"{results['model']} on {results['data']}, {results['split']} split ({where})",
        f"{'seed':>6}"
        + "".join(f"{label:>9}" for label in labels)
        + f"{'best epoch':>12}{'CPU min':>9}",
    ]
    for seed, entry in results["seeds"].items():
        lines.append(
            f"{seed:>6}"
            + "".join(f"{entry[f'test_{name}']:>9.3f}" for name in names)
            + f"{entry['best_epoch']:>12}{entry['cpu_minutes']:>9.1f}"
        )
    spreads = [results[f"test_{name}"] for name in names]
    lines.append(
        f"{'mean':>6}"
        + "".join(f"{spread['mean']:>9.3f}" for spread in spreads)
        + "   "
        + ", ".join(
            f"{label} {spread['mean']:.3f} +- {spread['std']:.3f}"
            for label, spread in zip(labels, spreads, strict=True)
        )
    )
    for task, entry in results.get("tasks", {}).items():
        lines.append(
            f"  {task}: "
            + ", ".join(
                f"{label} {entry[f'test_{name}']['mean']:.3f} +- {entry[f'test_{name}']['std']:.3f}"
                for label, name in zip(labels, names, strict=True)
            )
        )
    if "calibration" in results:
        ece = results["calibration"]["test_ece"]
        lines.append(
            f"expected calibration error ({results['calibration']['bins']} bins): "
            f"{ece['mean']:.3f} +- {ece['std']:.3f}"
        )
    if "moleculenet_best_random_split_rmse" in results:
        lines.append(
            f"MoleculeNet's best published RMSE (random split): "
            f"{results['moleculenet_best_random_split_rmse']}"
        )
    return "\n".join(lines)


def plot_parity(parity: dict, results: dict, info, path: Path) -> Path:
    """Predicted against measured test values, every replicate, with the diagonal."""
    plt = experiments.pyplot()
    figure, ax = plt.subplots(figsize=(4.4, 4.2), layout="constrained")
    for seed, (measured, predicted) in parity.items():
        ax.scatter(measured, predicted, s=9, alpha=0.6, label=f"seed {seed}")
    values = np.concatenate([np.concatenate(pair).ravel() for pair in parity.values()])
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    ax.plot([low, high], [low, high], color="black", linewidth=0.8)
    unit = f" ({info.unit})" if info and info.unit else ""
    ax.set_xlabel(f"measured {info.target if info else 'target'}{unit}")
    ax.set_ylabel(f"predicted{unit}")
    rmse = results["test_rmse"]
    ax.set_title(
        f"{results['model']}, {results['data']} {results['split']}: "
        f"RMSE {rmse['mean']:.3f} +- {rmse['std']:.3f}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    return experiments.save_figure(figure, path)


def plot_calibration(parity: dict, tasks, results: dict, path: Path) -> Path:
    """Reliability diagram: each task's observed fraction of positives against the mean predicted
    probability in `CALIBRATION_BINS` equal-width bins, every replicate's test molecules pooled,
    its expected calibration error in the legend; below, the molecules in each bin."""
    plt = experiments.pyplot()
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(4.6, 5.2), sharex=True, height_ratios=(3, 1), layout="constrained"
    )
    top.plot([0, 1], [0, 1], color="black", linewidth=0.8, label="perfectly calibrated")
    for column, task in enumerate(tasks):
        bins = calibration_bins(*_pooled(parity, column), CALIBRATION_BINS)
        filled = bins["counts"] > 0
        top.plot(
            bins["mean_predicted"][filled],
            bins["observed"][filled],
            marker="o",
            markersize=4,
            label=f"{task} (ECE {bins['ece']:.3f})",
        )
        bottom.stairs(bins["counts"], bins["edges"], label=task)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.set_ylabel("observed fraction of positives")
    top.set_title(
        f"{results['model']}, {Path(results['data']).name}, {results['split']} split\n"
        f"test molecules of {len(parity)} replicate{'s' if len(parity) > 1 else ''}",
        fontsize=9,
    )
    top.legend(fontsize=7)
    bottom.set_xlabel("predicted probability")
    bottom.set_ylabel("molecules")
    return experiments.save_figure(figure, path)


def plot_curves(learning: dict, path: Path, metric: str = "rmse") -> Path:
    """Training loss and the validation `metric` against epochs, one line per replicate."""
    plt = experiments.pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4), layout="constrained")
    for seed, curve in learning.items():
        left.plot(curve["train_epoch"], curve["train_loss"], label=f"seed {seed}")
        right.plot(curve["val_epoch"], curve["val_metric"], label=f"seed {seed}")
    left.set_xlabel("epoch")
    left.set_ylabel("training loss" + (" (BCE)" if metric == "auroc" else " (standardised MSE)"))
    left.set_yscale("log")
    right.set_xlabel("epoch")
    right.set_ylabel(f"validation {_LABELS[metric]}")
    right.legend(fontsize=7)
    return experiments.save_figure(figure, path)
