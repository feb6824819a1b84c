"""CLEVR's report (test accuracy per model and question family, the table and figure) and
the `generate` verb. Host."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit.demos.clevr.config import PAPER, ClevrConfig
from gnkit.demos.clevr.training import accuracy_by_family, answer_fn, predict
from gnkit.tasks import clevr as task
from gnkit.tasks.clevr import vocab


def report(config: ClevrConfig, run_dir, options, states, data) -> dict[str, Any]:
    """Test accuracy per model, overall and per family; the table and `accuracy.png`.

    Args:
      config: the run's config.
      run_dir: the run directory (figures go there unless `--plot` says otherwise).
      options: the command's options.
      states: `{model name: gnkit.train.TrainingState}`, each model's best validated state.
      data: what the demo's `load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    test = data["test"]
    counts = np.bincount(test["family"], minlength=len(vocab.FAMILIES))
    results: dict[str, Any] = {
        "test_questions": int(len(test["answer"])),
        "test_scenes": int(len(test["objects"])),
        "questions_per_family": dict(zip(vocab.FAMILIES, counts.tolist(), strict=True)),
        "models": {},
    }
    for name, state in states.items():
        correct = predict(answer_fn(name, config), state.params, test) == test["answer"]
        table = accuracy_by_family(correct, test["family"])
        results["models"][name] = {
            "accuracy": {key: round(value, 4) for key, value in table.items()},
            "updates": int(state.step),
            "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
        }
    results["paper"] = PAPER
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        figures["accuracy"] = str(plot_accuracy(results, accuracy_path))
    results["figures"] = figures
    return results


_COLUMNS = ("overall", *vocab.FAMILIES)


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy overall and per family, one row per model, with the paper's row. Host."""
    header = f"{'model':<26}" + "".join(f"{name:>18}" for name in _COLUMNS)
    lines = [f"test accuracy ({results['test_questions']} questions on "
             f"{results['test_scenes']} scenes)", header]
    for name, entry in results["models"].items():
        cells = "".join(f"{entry['accuracy'][column]:>18.3f}" for column in _COLUMNS)
        lines.append(f"{name:<26}{cells}  ({entry['cpu_minutes']} CPU-min)")
    for label, row in results["paper"].items():
        cells = "".join(
            f"{row[column]:>18.3f}" if column in row else f"{'-':>18}" for column in _COLUMNS
        )
        lines.append(f"{'paper ' + label:<26}{cells}")
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], path: Path) -> Path:
    """Grouped bars: test accuracy overall and per family for each model."""
    plt = experiments.pyplot()
    figure, ax = plt.subplots(figsize=(7.6, 3.8), layout="constrained")
    names = list(results["models"])
    width = 0.8 / max(1, len(names))
    positions = np.arange(len(_COLUMNS))
    for i, name in enumerate(names):
        accuracy = results["models"][name]["accuracy"]
        ax.bar(positions + i * width, [accuracy[c] for c in _COLUMNS], width,
               label={"rn": "RN", "mlp": "MLP baseline"}.get(name, name))
    ax.axhline(results["paper"]["rn (state descriptions)"]["overall"], color="0.4", ls="--",
               lw=0.8, label="paper RN, overall")
    ax.set_xticks(positions + 0.4 - width / 2, [c.replace("_", " ") for c in _COLUMNS],
                  fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.set_title("CLEVR from state descriptions", fontsize=9)
    ax.legend(fontsize=7)
    return experiments.save_figure(figure, path)


def generate_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenes", type=experiments.at_least(1), required=True,
                        help="number of scenes")
    parser.add_argument("--out", required=True, help="folder for scenes.json and questions.json")
    parser.add_argument("--seed", dest="generator_seed", type=int, default=0,
                        help="random seed of the scenes and questions")
    parser.add_argument("--split", default="new", help="split name written into the files")


def generate(config, run_dir, options: experiments.Options) -> dict[str, Any]:
    """The `generate` verb: `--scenes N` scenes and their questions into `--out DIR`
    (`scenes.json`, `questions.json`, CLEVR's formats)."""
    flags = options.flags
    out = Path(flags.out)
    experiments.check_writable(out, "--out", directory=True)
    start = time.perf_counter()
    scenes, questions = task.generate(flags.scenes, seed=flags.generator_seed, split=flags.split)
    task.write_split(out, scenes, questions, flags.split)
    families = np.bincount([vocab.FAMILIES.index(vocab.family(q["program"])) for q in questions],
                           minlength=len(vocab.FAMILIES))
    results = {
        "scenes": len(scenes),
        "questions": len(questions),
        "questions_per_family": dict(zip(vocab.FAMILIES, families.tolist(), strict=True)),
        "seconds": round(time.perf_counter() - start, 1),
        "files": [str(out / "scenes.json"), str(out / "questions.json")],
    }
    print(f"{len(scenes)} scenes, {len(questions)} questions -> {out} "
          f"({results['seconds']} s)")
    return results
