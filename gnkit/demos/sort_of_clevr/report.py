"""Sort-of-CLEVR's report: test accuracy per model and question type, the table and figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit.demos.sort_of_clevr.config import PAPER, SortOfClevrConfig
from gnkit.demos.sort_of_clevr.training import answers
from gnkit.experiments import runner
from gnkit.tasks import sort_of_clevr as task


def report(config: SortOfClevrConfig, run_dir, options, states, datasets) -> dict[str, Any]:
    """Test accuracy per model on relational and non-relational questions; table, figures.

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
    minority = task.against_the_majority(
        test["shapes"], test["color"], test["relational"], test["kind"], test["answer"]
    )
    results: dict[str, Any] = {
        "test_questions": int(test["answer"].size),
        "against_the_majority_questions": int(minority.sum()),
        "models": {},
    }
    predictions = {}
    for name, state in states.items():
        predictions[name] = answers(name, config, state.params, datasets, "test")
        correct = predictions[name] == test["answer"]
        accuracy = task.accuracy_by_kind(correct, test["relational"])
        by_type = task.accuracy_by_type(correct, test["relational"], test["kind"])
        questions = int(state.step) * config.images_per_batch * config.questions_per_image
        cpu_seconds = float(state.cpu_seconds)
        results["models"][name] = {
            **{key: round(value, 4) for key, value in accuracy.items()},
            "updates": int(state.step),
            "cpu_minutes": round(cpu_seconds / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
            "questions_per_cpu_second": round(questions / max(cpu_seconds, 1e-9), 1),
            "by_type": {key: round(value, 4) for key, value in by_type.items()},
            "against_the_majority": round(float(correct[minority].mean()), 4),
        }
    results["paper"] = PAPER
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        keys = ("step", "relational", "non_relational")
        curves = {name: runner.eval_records(run_dir, name, keys) for name in states}
        figures["accuracy"] = str(plot_accuracy(results, curves, accuracy_path))
    examples_path = options.plot_path(run_dir, "examples.png", main=False)
    if examples_path is not None:
        figures["examples"] = str(plot_examples(test, predictions, examples_path))
    results["figures"] = figures
    return results


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy on relational and non-relational questions, one row per model, then per
    question type, then the paper's figures for the same models. Host."""
    lines = [
        f"test accuracy ({results['test_questions']} questions)",
        f"{'model':<14}{'relational':>12}{'non-rel.':>10}{'updates':>9}{'CPU min':>9}"
        f"{'q/CPU-s':>9}",
    ]
    for name, entry in results["models"].items():
        lines.append(
            f"{'CNN+' + name.upper():<14}{entry['relational']:>12.3f}"
            f"{entry['non_relational']:>10.3f}{entry['updates']:>9}{entry['cpu_minutes']:>9.1f}"
            f"{entry['questions_per_cpu_second']:>9.0f}"
        )
    types = list(task.NON_RELATIONAL_TYPES + task.RELATIONAL_TYPES)
    lines.append("by question type: " + ", ".join(types))
    for name, entry in results["models"].items():
        values = " ".join(f"{entry['by_type'].get(key, float('nan')):.3f}" for key in types)
        lines.append(f"{'CNN+' + name.upper():<14}{values}")
    lines.append(
        "closest / farthest whose answer is the minority shape of the other objects"
        f" ({results['against_the_majority_questions']} questions):"
    )
    for name, entry in results["models"].items():
        lines.append(f"{'CNN+' + name.upper():<14}{entry['against_the_majority']:>12.3f}")
    for name in results["models"]:
        entry = results["paper"][name]
        lines.append(
            f"{'paper CNN+' + name.upper():<14}{entry['relational']:>12.2f}"
            f"{entry['non_relational']:>10.2f}"
        )
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], curves: dict[str, dict], path: Path) -> Path:
    """Validation accuracy (relational solid, non-relational dashed) against updates, and the
    test accuracy of each model beside the paper's."""
    plt = experiments.pyplot()
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(9.6, 3.8), layout="constrained", width_ratios=(1.6, 1)
    )
    colors = {"rn": "tab:blue", "mlp": "tab:gray"}
    for name, curve in curves.items():
        label = f"CNN+{name.upper()}"
        for kind, style in (("relational", "-"), ("non_relational", "--")):
            left.plot(
                curve["step"],
                curve[kind],
                style,
                color=colors[name],
                label=f"{label}, {kind.replace('_', '-')}",
            )
    left.set_xlabel("updates")
    left.set_ylabel("validation accuracy")
    left.set_ylim(0, 1.02)
    left.legend(fontsize=7, loc="lower right")
    names = list(results["models"])
    kinds = ("relational", "non_relational")
    for offset, kind in enumerate(kinds):
        places = np.arange(len(names)) + (offset - 0.5) * 0.38
        values = [results["models"][name][kind] for name in names]
        bars = right.bar(
            places,
            values,
            0.36,
            color=("tab:blue", "tab:orange")[offset],
            label=kind.replace("_", "-"),
        )
        right.bar_label(bars, fmt="%.2f", fontsize=7)
        paper = [results["paper"][name][kind] for name in names]
        right.scatter(
            places,
            paper,
            marker="_",
            s=300,
            color="black",
            zorder=3,
            label="paper" if offset == 0 else None,
        )
    right.set_xticks(np.arange(len(names)), [f"CNN+{name.upper()}" for name in names])
    right.set_ylabel("test accuracy")
    right.set_ylim(0, 1.1)
    right.legend(fontsize=7, loc="lower left")
    figure.suptitle("Sort-of-CLEVR from pixels")
    return experiments.save_figure(figure, path)


def plot_examples(data, predictions: dict[str, np.ndarray], path: Path, num_images: int = 8):
    """The first `num_images` test images, each with one question (relational and
    non-relational in turn), its answer and each model's prediction.

    Args:
      data: the test split (images and questions).
      predictions: `{model name: answers [I, 20]}`.
      path: where to save the figure.
      num_images: how many test images to show.

    Returns:
      `path`.
    """
    plt = experiments.pyplot()
    columns = 4
    rows = -(-num_images // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(2.4 * columns, 3.0 * rows), layout="constrained", squeeze=False
    )
    for image, ax in enumerate(axes.ravel()):
        if image >= min(num_images, len(data["images"])):
            ax.axis("off")
            continue
        ax.set_xticks([])
        ax.set_yticks([])
        question = task.QUESTIONS_PER_KIND * (image % 2)
        ax.imshow(data["images"][image])
        color, relational, kind = (
            int(data[key][image, question]) for key in ("color", "relational", "kind")
        )
        lines = [
            task.describe_question(color, bool(relational), kind),
            f"answer: {task.ANSWER_NAMES[int(data['answer'][image, question])]}",
        ]
        for name, given in predictions.items():
            said = task.ANSWER_NAMES[int(given[image, question])]
            lines.append(f"CNN+{name.upper()}: {said}")
        ax.set_title("\n".join(lines), fontsize=7)
    return experiments.save_figure(figure, path)
