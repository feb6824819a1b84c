"""The molecules demo's report: per-replicate and mean +- std test RMSE and MAE, a parity plot
of the test predictions and the learning curves. Host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.molecules import models
from gnkit.demos.molecules.data import steps_per_epoch
from gnkit.demos.molecules.training import errors, predict_rows, replicate_name

# MoleculeNet's best published test RMSE on random 80/10/10 splits (Wu et al. 2018, Table 8).
MOLECULENET_BEST = {"esol": 0.58, "freesolv": 1.15, "lipophilicity": 0.655}


def curves(run_dir: experiments.RunDir, seed: int, per_epoch: int) -> dict[str, list[float]]:
    """Replicate `seed`'s learning curves by epoch: training loss (standardised MSE, the epoch
    mean) and validation RMSE, and its CPU-minutes so far."""
    path = run_dir.path / f"metrics_{replicate_name(seed)}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    train = [r for r in records if r["kind"] == "train"]
    valid = [r for r in records if r["kind"] == "eval"]
    return {
        "train_epoch": [r["step"] / per_epoch for r in train],
        "train_loss": [r["loss"] for r in train],
        "val_epoch": [r["step"] / per_epoch for r in valid],
        "val_rmse": [r["val_rmse"] for r in valid],
        "cpu_minutes": records[-1]["cpu_minutes"] if records else 0.0,
    }


def report(config, run_dir: experiments.RunDir, options: experiments.Options, states, data):
    """Test every replicate's best validated state; print the table, draw the figures, return
    the results (per seed, mean and std, MoleculeNet's best for reference).

    Args:
      config: the run's `MoleculesConfig`.
      run_dir: the run directory.
      options: the command's options.
      states: `{"seed<s>": gnkit.train.TrainingState}`, each replicate's best validated state.
      data: the `MoleculeData`.

    Returns:
      The results dict (also the verb's `--json`).
    """
    predict = models.make_predict(config, data.max_atoms)
    per_seed, parity, learning = {}, {}, {}
    for seed in config.replicate_seeds:
        state = states[replicate_name(seed)]
        test = data.splits[seed]["test"]
        predictions = predict_rows(config, predict, state.params, data, seed, test)
        per_epoch = steps_per_epoch(len(data.splits[seed]["train"]), config.batch_size)
        learning[seed] = curves(run_dir, seed, per_epoch)
        per_seed[seed] = {
            **{
                f"test_{k}": round(v, 4) for k, v in errors(predictions, data.targets[test]).items()
            },
            "best_epoch": int(state.step) // per_epoch,
            "cpu_minutes": round(learning[seed]["cpu_minutes"], 2),
            "sizes": [len(data.splits[seed][part]) for part in ("train", "val", "test")],
        }
        parity[seed] = (data.targets[test], predictions)
    results: dict[str, Any] = {
        "data": config.data,
        "split": "file " + config.splits_file if config.splits_file else config.split,
        "model": config.model,
        "seeds": {str(seed): entry for seed, entry in per_seed.items()},
    }
    for metric in ("test_rmse", "test_mae"):
        values = np.array([entry[metric] for entry in per_seed.values()])
        results[metric] = {
            "mean": round(float(values.mean()), 4),
            "std": round(float(values.std()), 4),
        }
    results["cpu_minutes"] = round(sum(entry["cpu_minutes"] for entry in per_seed.values()), 2)
    results["moleculenet_best_random_split_rmse"] = MOLECULENET_BEST[config.data]
    print(format_table(results, data.dataset.info.unit))
    figures = {}
    parity_path = options.plot_path(run_dir, "parity.png")
    if parity_path is not None:
        figures["parity"] = str(plot_parity(parity, results, data.dataset.info, parity_path))
    curves_path = options.plot_path(run_dir, "curves.png", main=False)
    if curves_path is not None:
        figures["curves"] = str(plot_curves(learning, curves_path))
    results["figures"] = figures
    return results


def format_table(results: dict[str, Any], unit: str) -> str:
    """Per-seed test RMSE and MAE, then mean +- std (population std over the seeds)."""
    lines = [
        f"{results['model']} on {results['data']}, {results['split']} split (test, {unit})",
        f"{'seed':>6}{'RMSE':>9}{'MAE':>9}{'best epoch':>12}{'CPU min':>9}",
    ]
    for seed, entry in results["seeds"].items():
        lines.append(
            f"{seed:>6}{entry['test_rmse']:>9.3f}{entry['test_mae']:>9.3f}"
            f"{entry['best_epoch']:>12}{entry['cpu_minutes']:>9.1f}"
        )
    rmse, mae = results["test_rmse"], results["test_mae"]
    lines.append(
        f"{'mean':>6}{rmse['mean']:>9.3f}{mae['mean']:>9.3f}   RMSE {rmse['mean']:.3f} +- "
        f"{rmse['std']:.3f}, MAE {mae['mean']:.3f} +- {mae['std']:.3f}"
    )
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
    values = np.concatenate([np.concatenate(pair) for pair in parity.values()])
    low, high = float(values.min()), float(values.max())
    ax.plot([low, high], [low, high], color="black", linewidth=0.8)
    ax.set_xlabel(f"measured {info.target} ({info.unit})")
    ax.set_ylabel(f"predicted ({info.unit})")
    rmse = results["test_rmse"]
    ax.set_title(
        f"{results['model']}, {results['data']} {results['split']}: "
        f"RMSE {rmse['mean']:.3f} +- {rmse['std']:.3f}",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    return experiments.save_figure(figure, path)


def plot_curves(learning: dict, path: Path) -> Path:
    """Training loss and validation RMSE against epochs, one line per replicate."""
    plt = experiments.pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4), layout="constrained")
    for seed, curve in learning.items():
        left.plot(curve["train_epoch"], curve["train_loss"], label=f"seed {seed}")
        right.plot(curve["val_epoch"], curve["val_rmse"], label=f"seed {seed}")
    left.set_xlabel("epoch")
    left.set_ylabel("training loss (standardised MSE)")
    left.set_yscale("log")
    right.set_xlabel("epoch")
    right.set_ylabel("validation RMSE")
    right.legend(fontsize=7)
    return experiments.save_figure(figure, path)
