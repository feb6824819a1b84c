"""The particles demo's report: every test trajectory rolled out in full, LagrangeBench's
metrics beside a constant-velocity baseline, the rollouts saved in the run directory, learning
curves and an animated GIF of one test rollout beside the ground truth. Host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.particles.training import rollout_of


def _sinkhorn_divergence(x, y, box):
    from gnkit.particles.sinkhorn import sinkhorn_divergence

    return sinkhorn_divergence(x, y, box)


_sinkhorn = jax.jit(_sinkhorn_divergence, static_argnums=2)

#: LagrangeBench's horizons of the shorter-rollout MSEs (`mse1`, `mse5`, ...).
HORIZONS = (1, 5, 10, 20)


def constant_velocity(params, graph):
    """The baseline's `apply`: zero normalised acceleration (`a = acc_mean`, about 0) for
    each node, `[n_node, dim]` (the edges hold `dim + 1` features). `params` is unused."""
    return jnp.zeros((graph.nodes.shape[0], graph.edges.shape[1] - 1))


def rollout_metrics(predicted: np.ndarray, target: np.ndarray, config, data) -> dict:
    """LagrangeBench's metrics of one rollout `[steps, N, dim]` against its target frames.

    Returns:
      `mse` (mean over steps of the per-step position MSE), `mse{k}` for the horizons `k` the
      rollout reaches, `e_kin_mse` (kinetic energy `dx**dim sum |v|^2` every `metrics_stride`
      frames; needs two frames), `sinkhorn` (mean Sinkhorn divergence of frames
      `0, stride, ...`) and `per_step_mse` (a list).
    """
    from gnkit.particles.rollout import kinetic_energy_mse, position_mse_per_step

    target = target[: len(predicted)]
    per_step = position_mse_per_step(predicted, target, data.box)
    metrics: dict[str, Any] = {"mse": float(np.mean(per_step))}
    for horizon in HORIZONS:
        if horizon <= len(per_step):
            metrics[f"mse{horizon}"] = float(np.mean(per_step[:horizon]))
    if len(predicted) >= 2:
        metrics["e_kin_mse"] = kinetic_energy_mse(
            predicted, target, data.box, data.frame_dt, float(data.metadata["dx"]),
            config.metrics_stride)
    metrics["sinkhorn"] = float(np.mean([
        float(_sinkhorn(predicted[k], target[k], tuple(data.box)))
        for k in range(0, len(predicted), config.metrics_stride)]))
    metrics["per_step_mse"] = [float(value) for value in per_step]
    return metrics


def _mean_metrics(per_trajectory: list[dict]) -> dict:
    """The mean over trajectories of every scalar metric all of them have (LagrangeBench's
    average over rollouts), the per-step MSE of the first trajectory, steps reached."""
    keys = [key for key, value in per_trajectory[0].items() if isinstance(value, float)
            and all(key in entry for entry in per_trajectory)]
    mean = {key: round(float(np.mean([entry[key] for entry in per_trajectory])), 10)
            for key in keys}
    mean["per_step_mse_first"] = per_trajectory[0]["per_step_mse"]
    return mean


def test_rollouts(name: str, config, data, params, apply_fn=None) -> dict:
    """Roll every test trajectory out in full (at most `test_rollout_steps`) and score it.

    Returns:
      `{"metrics": _mean_metrics, "steps_reached": [...], "steps_requested": [...],
      "messages": [...], "rollouts": [positions [steps_reached, N, dim], ...]}`.
    """
    scored, reached, requested, messages, rollouts = [], [], [], [], []
    for positions in data.splits["test"]:
        steps = positions.shape[0] - config.history - 1
        if config.test_rollout_steps:
            steps = min(steps, config.test_rollout_steps)
        result = rollout_of(name, config, data, params, positions, steps, apply_fn)
        target = positions[config.history + 1:][:steps]
        if result.steps_reached:
            scored.append(rollout_metrics(result.positions, target, config, data))
        reached.append(result.steps_reached)
        requested.append(steps)
        if result.message:
            messages.append(result.message)
        rollouts.append(result.positions)
    return {"metrics": _mean_metrics(scored) if scored else {}, "steps_reached": reached,
            "steps_requested": requested, "messages": messages, "rollouts": rollouts}


def curves(run_dir: experiments.RunDir, name: str) -> dict[str, Any]:
    """Model `name`'s learning curves: training loss by update, validation one-step loss and
    rollout MSE by update, and the CPU-minutes of its training so far."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    train = [record for record in records if record["kind"] == "train"]
    valid = [record for record in records if record["kind"] == "eval"]
    return {
        "train_update": [record["step"] for record in train],
        "train_loss": [record["loss"] for record in train],
        "val_update": [record["step"] for record in valid],
        "val_one_step": [record["val_one_step"] for record in valid],
        "val_rollout_mse": [record["val_rollout_mse"] for record in valid],
        "cpu_minutes": records[-1]["cpu_minutes"] if records else 0.0,
    }


def report(config, run_dir: experiments.RunDir, options: experiments.Options, states, data):
    """Test every model's best validated state and the constant-velocity baseline; save the
    rollouts, print the table, draw the figures, return the results.

    Args:
      config: the run's `ParticlesConfig`.
      run_dir: the run directory.
      options: the command's options.
      states: `{model: gnkit.train.TrainingState}`, each model's best validated state.
      data: the `ParticlesData`.

    Returns:
      The results dict (also the verb's `--json`).
    """
    models, learning, gif_rollout = {}, {}, None
    for name in config.models:
        state = states[name]
        tested = test_rollouts(name, config, data, state.params)
        for message in tested["messages"]:
            print(f"{name}: {message}", flush=True)
        path = run_dir.file(f"rollouts_{name}.npz")
        np.savez(path, **{f"test_{k}": rollout for k, rollout in enumerate(tested["rollouts"])})
        learning[name] = curves(run_dir, name)
        models[name] = {
            "test": tested["metrics"],
            "steps_reached": tested["steps_reached"],
            "steps_requested": tested["steps_requested"],
            "complete": not tested["messages"],
            "messages": tested["messages"],
            "best_update": int(state.step),
            "parameters": int(sum(np.size(leaf) for leaf in jax.tree.leaves(state.params))),
            "cpu_minutes": round(learning[name]["cpu_minutes"], 2),
            "curve": {key: learning[name][key] for key in
                      ("val_update", "val_one_step", "val_rollout_mse")},
            "rollouts": str(path),
        }
        if gif_rollout is None:
            gif_rollout = (name, tested["rollouts"][0])
    baseline = test_rollouts(config.models[0], config, data, None, constant_velocity)
    results: dict[str, Any] = {
        "case": config.case,
        "api": config.api,
        "sizes": {split: [len(items), int(items[0].shape[0])]
                  for split, items in data.splits.items()},
        "particles": int(data.splits["test"][0].shape[1]),
        "updates": config.updates,
        "models": models,
        "constant_velocity": {"test": baseline["metrics"],
                              "steps_reached": baseline["steps_reached"],
                              "messages": baseline["messages"]},
        "cpu_minutes": round(sum(entry["cpu_minutes"] for entry in models.values()), 2),
    }
    print(format_table(results))
    figures = {}
    curves_path = options.plot_path(run_dir, "curves.png")
    if curves_path is not None:
        figures["curves"] = str(plot_curves(learning, curves_path))
    gif_path = options.plot_path(run_dir, "rollout.gif", main=False)
    if gif_path is not None and config.gif_frames and gif_rollout is not None:
        name, predicted = gif_rollout
        figures["rollout"] = str(rollout_gif(data.splits["test"][0], predicted, config, data,
                                             name, gif_path.with_suffix(".gif")))
    results["figures"] = figures
    return results


def _cell(metrics: dict, key: str) -> str:
    return f"{metrics[key]:.3g}" if key in metrics else "-"


def format_table(results: dict[str, Any]) -> str:
    """One row per model and the baseline: MSE at the horizons, full MSE, e_kin, Sinkhorn."""
    keys = [f"mse{h}" for h in HORIZONS] + ["mse", "e_kin_mse", "sinkhorn"]
    sizes = results["sizes"]
    lines = [
        f"{results['case']} ({results['particles']} particles; {sizes['test'][0]} test "
        f"trajectories of {sizes['test'][1]} frames): test rollouts",
        f"{'model':>18}" + "".join(f"{key:>11}" for key in keys) + f"{'steps':>9}",
    ]
    rows = [(name, entry["test"], entry["steps_reached"])
            for name, entry in results["models"].items()]
    rows.append(("constant velocity", results["constant_velocity"]["test"],
                 results["constant_velocity"]["steps_reached"]))
    for name, metrics, reached in rows:
        lines.append(f"{name:>18}" + "".join(f"{_cell(metrics, key):>11}" for key in keys)
                     + f"{sum(reached):>9}")
    return "\n".join(lines)


def plot_curves(learning: dict, path: Path) -> Path:
    """Training loss, validation one-step loss and validation rollout MSE by update."""
    plt = experiments.pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.4), layout="constrained")
    for name, curve in learning.items():
        axes[0].plot(curve["train_update"], curve["train_loss"], label=name)
        axes[1].plot(curve["val_update"], curve["val_one_step"], marker="o", label=name)
        axes[2].plot(curve["val_update"], curve["val_rollout_mse"], marker="o", label=name)
    for ax, label in zip(axes, ("training loss (noisy inputs)", "validation one-step loss",
                                "validation rollout position MSE"), strict=True):
        ax.set_xlabel("update")
        ax.set_ylabel(label)
        ax.set_yscale("log")
    axes[2].legend(fontsize=7)
    return experiments.save_figure(figure, path)


def rollout_gif(truth: np.ndarray, predicted: np.ndarray, config, data, name: str,
                path: Path) -> Path:
    """An animated GIF: the ground truth beside the model's rollout, particles as dots
    coloured by their initial x, the shared input frames first; at most `gif_frames` frames.
    """
    plt = experiments.pyplot()
    from matplotlib import animation

    inputs = truth[: config.history + 1]
    frames_pred = np.concatenate([inputs, predicted])
    count = min(config.gif_frames, len(frames_pred))
    colours = truth[0, :, 0]
    figure, axes = plt.subplots(1, 2, figsize=(6.4, 3.4), dpi=60, layout="constrained")
    dots = []
    for ax, title in zip(axes, ("ground truth", name), strict=True):
        dots.append(ax.scatter(truth[0, :, 0], truth[0, :, 1], c=colours, s=1.5,
                               cmap="viridis"))
        ax.set_xlim(0, data.box[0])
        ax.set_ylim(0, data.box[1])
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title, fontsize=9)

    def draw(frame):
        dots[0].set_offsets(truth[min(frame, len(truth) - 1)])
        dots[1].set_offsets(frames_pred[frame])
        label = "input" if frame <= config.history else f"step {frame - config.history}"
        figure.suptitle(f"{config.case}, frame {frame} ({label})", fontsize=9)
        return dots

    movie = animation.FuncAnimation(figure, draw, frames=count, blit=False)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    movie.save(path, writer=animation.PillowWriter(fps=6))
    plt.close(figure)
    return path
