"""The potentials demo's report: each model's test errors (energy per structure and per atom,
forces, stress on EMT; MAE and RMSE), its test predictions saved in the run directory, parity
plots and learning curves. Host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.potentials import metrics
from gnkit.demos.potentials.training import averaged, predict_split, predictor

#: Published rMD17 aspirin test MAE with 1,000 training frames (energy meV, forces meV/Å).
PUBLISHED_ASPIRIN = {
    "source": "gnkit/data/atoms/SOURCES.md (Batatia et al. 2022; Batzner et al. 2022)",
    "mace": {"energy_mae": 2.2, "forces_mae": 6.6},
    "nequip_l3": {"energy_mae": 2.3, "forces_mae": 8.2},
}


def predictions_path(run_dir: experiments.RunDir, name: str) -> Path:
    """`run_dir/predictions_<name>.npz`: model `name`'s test predictions and references."""
    return run_dir.file(f"predictions_{name}.npz")


def curves(run_dir: experiments.RunDir, name: str, per_epoch: int) -> dict[str, list]:
    """Model `name`'s learning curves by epoch: training loss, validation energy and force
    MAE, and the CPU-minutes of its training so far."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    train = [record for record in records if record["kind"] == "train"]
    valid = [record for record in records if record["kind"] == "eval"]
    return {
        "train_epoch": [record["step"] / per_epoch for record in train],
        "train_loss": [record["loss"] for record in train],
        "val_epoch": [record["step"] / per_epoch for record in valid],
        "val_energy_mae": [record["val_energy_mae"] for record in valid],
        "val_forces_mae": [record["val_forces_mae"] for record in valid],
        "cpu_minutes": records[-1]["cpu_minutes"] if records else 0.0,
    }


def report(config, run_dir: experiments.RunDir, options: experiments.Options, states, data):
    """Test every model's best validated state; save its predictions, print the table, draw
    the figures, return the results.

    Args:
      config: the run's `PotentialsConfig`.
      run_dir: the run directory.
      options: the command's options.
      states: `{model: gnkit.train.TrainingState}`, each model's best validated state.
      data: the `PotentialData`.

    Returns:
      The results dict (also the verb's `--json`).
    """
    per_epoch = config.steps_per_epoch
    models, parity, learning = {}, {}, {}
    for name in config.models:
        state = states[name]
        predictions = predict_split(predictor(name, config, data), config, data, state.params,
                                    "test")
        np.savez(predictions_path(run_dir, name), **predictions)
        learning[name] = curves(run_dir, name, per_epoch)
        models[name] = {
            "test": {key: round(value, 4) for key, value in metrics.errors(predictions).items()},
            "best_epoch": int(state.step) // per_epoch,
            "updates": int(state.step),
            "parameters": int(sum(np.size(x) for x in jax.tree.leaves(averaged(state.params)))),
            "cpu_minutes": round(learning[name]["cpu_minutes"], 2),
            "curve": {key: learning[name][key] for key in
                      ("val_epoch", "val_energy_mae", "val_forces_mae")},
            "predictions": str(predictions_path(run_dir, name)),
        }
        parity[name] = predictions
    results: dict[str, Any] = {
        "data": config.data,
        "sizes": {split: len(graphs) for split, graphs in data.splits.items()},
        "species": list(data.species),
        "epochs": config.epochs,
        "models": models,
        "cpu_minutes": round(sum(entry["cpu_minutes"] for entry in models.values()), 2),
    }
    if config.data == "aspirin":
        results["published_aspirin_1000_frames"] = PUBLISHED_ASPIRIN
    print(format_table(results))
    figures = {}
    parity_path = options.plot_path(run_dir, "parity.png")
    if parity_path is not None:
        figures["parity"] = str(plot_parity(parity, config.data, parity_path))
    curves_path = options.plot_path(run_dir, "curves.png", main=False)
    if curves_path is not None:
        figures["curves"] = str(plot_curves(learning, curves_path))
    results["figures"] = figures
    return results


def format_table(results: dict[str, Any]) -> str:
    """One row per model: test MAE / RMSE of energy, energy per atom, forces (and stress)."""
    names = ["energy", "energy_per_atom", "forces"]
    if any("stress_mae" in entry["test"] for entry in results["models"].values()):
        names.append("stress")
    sizes = results["sizes"]
    lines = [
        f"{results['data']}: test MAE / RMSE ({sizes['train']} train, {sizes['validation']} "
        f"validation, {sizes['test']} test structures)",
        f"{'model':>8}" + "".join(f"{f'{n} ({metrics.UNITS[n]})':>28}" for n in names)
        + f"{'best epoch':>12}{'CPU min':>9}",
    ]
    for name, entry in results["models"].items():
        cells = "".join(
            f"{entry['test'][f'{n}_mae']:>17.2f} / {entry['test'][f'{n}_rmse']:<8.2f}"
            for n in names
        )
        lines.append(f"{name:>8}{cells}{entry['best_epoch']:>12}{entry['cpu_minutes']:>9.1f}")
    return "\n".join(lines)


def plot_parity(parity: dict, data_name: str, path: Path) -> Path:
    """Predicted against reference test energies per atom (relative to their mean) and force
    components, one column per model."""
    plt = experiments.pyplot()
    columns = len(parity)
    figure, axes = plt.subplots(2, columns, figsize=(3.4 * columns, 6.4), layout="constrained",
                                squeeze=False)
    for column, (name, predictions) in enumerate(parity.items()):
        per_atom_ref = predictions["energy_ref"] / predictions["n_atoms"]
        per_atom = predictions["energy"] / predictions["n_atoms"]
        center = float(np.mean(per_atom_ref))
        pairs = (
            ("energy per atom - mean (eV)", per_atom_ref - center, per_atom - center),
            ("force component (eV/Å)", predictions["forces_ref"].ravel(),
             predictions["forces"].ravel()),
        )
        for row, (label, reference, predicted) in enumerate(pairs):
            ax = axes[row, column]
            ax.scatter(reference, predicted, s=3, alpha=0.4)
            low = float(min(reference.min(), predicted.min()))
            high = float(max(reference.max(), predicted.max()))
            ax.plot([low, high], [low, high], color="black", linewidth=0.8)
            ax.set_xlabel(f"reference {label}")
            ax.set_ylabel("predicted")
            ax.set_title(f"{name} on {data_name}", fontsize=9)
    return experiments.save_figure(figure, path)


def plot_curves(learning: dict, path: Path) -> Path:
    """Training loss and validation energy and force MAE against epochs, one line a model."""
    plt = experiments.pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
    for name, curve in learning.items():
        axes[0].plot(curve["train_epoch"], curve["train_loss"], label=name)
        axes[1].plot(curve["val_epoch"], curve["val_energy_mae"], marker="o", label=name)
        axes[2].plot(curve["val_epoch"], curve["val_forces_mae"], marker="o", label=name)
    for ax, label in zip(axes, ("training loss", "validation energy MAE (meV)",
                                "validation force MAE (meV/Å)"), strict=True):
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.set_yscale("log")
    axes[2].legend(fontsize=7)
    return experiments.save_figure(figure, path)
