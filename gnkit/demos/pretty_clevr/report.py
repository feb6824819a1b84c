"""Pretty-CLEVR's report: test accuracy per model, step and number of jumps; the table, the
paper's Figure 2b (`accuracy.png`) and a test scene with each model's answers (`scene.png`).
Host."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit.demos.pretty_clevr.config import PAPER, PrettyClevrConfig
from gnkit.demos.pretty_clevr.training import accuracy_table, answer_fn, predict
from gnkit.tasks import pretty_clevr as task


def report(config: PrettyClevrConfig, run_dir, options, states, datasets) -> dict[str, Any]:
    """Test accuracy per model (per step for the RRN) and number of jumps; table, figures.

    Args:
      config: the run's config.
      run_dir: the run directory (figures go there unless `--plot` says otherwise).
      options: the command's options.
      states: `{model name: gnkit.train.TrainingState}`, each model's best validated state.
      datasets: what the demo's `load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    test = datasets["test"]
    results: dict[str, Any] = {"test_scenes": config.test_scenes, "models": {}}
    predictions = {}
    for name, state in states.items():
        predictions[name] = predict(answer_fn(name, config), state.params, test)
        table = accuracy_table(predictions[name], test)
        results["models"][name] = {
            "accuracy_by_jumps": table.round(4).tolist(),
            "accuracy": np.nanmean(table, axis=1).round(4).tolist(),
            "updates": int(state.step),
            "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
        }
    results["paper"] = {key: list(values) for key, values in PAPER.items()}
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        figures["accuracy"] = str(plot_accuracy(results, accuracy_path))
    scene_path = options.plot_path(run_dir, "scene.png", main=False)
    if scene_path is not None:
        figures["scene"] = str(plot_scene(test, predictions, scene_path))
    results["figures"] = figures
    return results


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _rows(results: dict[str, Any]) -> list[tuple[str, Sequence[float]]]:
    rows = []
    for name, entry in results["models"].items():
        table = entry["accuracy_by_jumps"]
        if name == "rrn":
            rows += [(f"rrn, {_steps(t + 1)}", row) for t, row in enumerate(table)]
        else:
            rows.append((name, table[0]))
    return rows


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy by number of jumps, one row per model (per step count for the RRN), with
    the paper's rows below. Host."""
    header = f"{'model':<20}" + "".join(f"{jumps:>6}" for jumps in range(task.NUM_JUMPS))
    lines = [f"test accuracy by number of jumps ({results['test_scenes']} scenes)", header]
    for label, row in _rows(results):
        lines.append(f"{label:<20}" + "".join(f"{value:>6.2f}" for value in row))
    for label, row in results["paper"].items():
        lines.append(f"{'paper ' + label:<20}" + "".join(f"{value:>6.2f}" for value in row))
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], path: Path) -> Path:
    """Accuracy vs number of jumps, one curve per model and per RRN step count (Figure 2b)."""
    plt = experiments.pyplot()
    figure, ax = plt.subplots(figsize=(7.6, 4.4))
    jumps = np.arange(task.NUM_JUMPS)
    rrn_rows = results["models"].get("rrn", {}).get("accuracy_by_jumps", [])
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, max(1, len(rrn_rows))))
    for t, row in enumerate(rrn_rows):
        ax.plot(jumps, row, "o-", color=colors[t], ms=3, label=f"RRN, {_steps(t + 1)}")
    styles = {"rn": ("s--", "tab:red", "RN"), "mlp": ("^:", "tab:gray", "MLP")}
    for name, (style, color, label) in styles.items():
        if name in results["models"]:
            ax.plot(jumps, results["models"][name]["accuracy_by_jumps"][0], style, color=color,
                    label=label)
    ax.axhline(1 / 8, color="0.7", lw=0.8, ls="-", label="chance (1 of 8)")
    ax.set_xlabel("jumps")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title("Pretty-CLEVR: accuracy by number of jumps")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.tight_layout()
    return experiments.save_figure(figure, path)


def plot_scene(data, predictions: dict[str, np.ndarray], path: Path, question: int | None = None):
    """One test scene with the path of a question (by default the first 7-jump question) and
    each model's answer (the RRN's after every step).

    Args:
      data: the test split.
      predictions: `{model name: answers after each step [steps, Q]}`.
      path: where to save the figure.
      question: the question to draw (default: the first 7-jump question).

    Returns:
      `path`.
    """
    plt = experiments.pyplot()
    if question is None:
        question = int(np.flatnonzero(data["jumps"] == task.NUM_JUMPS - 1)[0])
    scene = int(data["scene"][question])
    positions, colors, markers = (data[k][scene] for k in ("positions", "colors", "markers"))
    anchor, by_color, jumps = (int(data[k][question]) for k in ("anchor", "anchor_is_color",
                                                                "jumps"))
    start = int(np.flatnonzero((colors if by_color else markers) == anchor)[0])
    path_objects = task.greedy_paths(positions[None])[0, start, : jumps + 1]
    figure, ax = plt.subplots(figsize=(4.8, 5.8), layout="constrained")
    task.draw_scene(ax, positions, colors, markers, path_objects)
    lines = [task.describe_question(bool(by_color), anchor, jumps),
             f"answer: {task.answer_name(int(data['answer'][question]))}"]
    for name, answers in predictions.items():
        said = [task.answer_name(int(a)) for a in answers[:, question]]
        lines.append(f"{name}: {' '.join(said)}" if name == "rrn" else f"{name}: {said[0]}")
    ax.set_title("\n".join(lines), fontsize=7)
    return experiments.save_figure(figure, path)
