"""N-th farthest's report: test accuracy of each model's final and best state, the learning
curves against updates and training CPU minutes (`curves.png`), and the table. Host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.nth_farthest.config import PAPER, NthFarthestConfig, trivial_accuracy
from gnkit.demos.nth_farthest.models import parameter_count
from gnkit.demos.nth_farthest.training import accuracy, build_model


def learning_curve(run_dir: experiments.RunDir, name: str) -> dict[str, list[float]]:
    """Model `name`'s test accuracy during training: `updates`, `cpu_minutes` (training, not
    counting evaluation) and `accuracy`, one entry per evaluation. Host."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    curve: dict[str, list[float]] = {"updates": [], "cpu_minutes": [], "accuracy": []}
    eval_cpu = 0.0
    for record in records:
        if "score" not in record:
            continue
        eval_cpu += record.get("eval_cpu_minutes", 0.0)
        curve["updates"].append(record["step"])
        curve["cpu_minutes"].append(round(record["cpu_minutes"] - eval_cpu, 3))
        curve["accuracy"].append(record["score"])
    return curve


def report(config: NthFarthestConfig, run_dir, options, states, test) -> dict[str, Any]:
    """Test accuracy of each model's final state (`states`) and its best during training,
    curves, table and figure.

    Args:
      config: the run's config.
      run_dir: the run directory (figures go there unless `--plot` says otherwise).
      options: the command's options.
      states: `{model name: gnkit.train.TrainingState}`, each model's latest state.
      test: what the demo's `load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    results: dict[str, Any] = {
        "test_size": config.test_size,
        "num_objects": config.num_objects,
        "num_features": config.num_features,
        "models": {},
        "paper": PAPER,
    }
    for name, final in states.items():
        model = build_model(name, config)
        curve = learning_curve(run_dir, name)
        results["models"][name] = {
            "parameters": parameter_count(name, config),
            "updates": int(final.step),
            "sequences": int(final.step) * config.batch_size,
            "test_accuracy": accuracy(model, final.params, test),
            "best_test_accuracy": max(curve["accuracy"], default=float("nan")),
            "cpu_minutes": round(float(final.cpu_seconds) / 60, 2),
            "training_cpu_minutes": curve["cpu_minutes"][-1] if curve["cpu_minutes"] else None,
            "wall_minutes": round(float(final.wall_seconds) / 60, 2),
            "curve": curve,
        }
    print(format_table(results))
    path = options.plot_path(run_dir, "curves.png")
    results["figures"] = {"curves": str(plot_curves(results, path))} if path else {}
    return results


def format_table(results: dict[str, Any]) -> str:
    """One line per model: parameters, updates, final and best test accuracy, CPU minutes,
    and the paper's number. Host."""
    lines = [
        f"N-th farthest ({results['num_objects']} vectors of {results['num_features']}), test "
        f"accuracy on {results['test_size']} held-out sequences",
        f"{'model':<6}{'params':>11}{'updates':>9}{'final':>8}{'best':>8}{'CPU min':>9}"
        f"{'paper':>7}",
    ]
    for name, entry in results["models"].items():
        lines.append(
            f"{name:<6}{entry['parameters']:>11,}{entry['updates']:>9}"
            f"{entry['test_accuracy']:>8.1%}{entry['best_test_accuracy']:>8.1%}"
            f"{entry['cpu_minutes']:>9.1f}{results['paper'][name]:>7.0%}"
        )
    return "\n".join(lines)


def plot_curves(results: dict[str, Any], path: Path) -> Path:
    """Test accuracy against updates and against training CPU minutes, one curve per model."""
    plt = experiments.pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), sharey=True)
    colors = {"rmc": "tab:blue", "lstm": "tab:orange"}
    labels = {"rmc": "RMC", "lstm": "LSTM"}
    objects = results["num_objects"]
    for name, entry in results["models"].items():
        curve = entry["curve"]
        for ax, x in zip(axes, ("updates", "cpu_minutes"), strict=True):
            ax.plot(
                curve[x],
                curve["accuracy"],
                "o-",
                ms=2.5,
                color=colors[name],
                label=f"{labels[name]} ({entry['parameters'] / 1e6:.2f} M parameters)",
            )
    for ax, xlabel in zip(axes, ("updates", "training CPU minutes"), strict=True):
        ax.axhline(1 / objects, color="0.7", lw=0.8, label=f"chance (1 of {objects})")
        ax.axhline(
            trivial_accuracy(objects),
            color="0.5",
            lw=0.8,
            ls="--",
            label=f"n = {objects - 1} answered (m itself), other n guessed",
        )
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=7, loc="upper left")
    figure.suptitle(
        f"N-th farthest, {objects} vectors of {results['num_features']}: relational memory core "
        "vs LSTM",
        fontsize=10,
    )
    figure.tight_layout()
    return experiments.save_figure(figure, path)
