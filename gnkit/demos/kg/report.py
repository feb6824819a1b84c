"""The knowledge-graph demo's report: test metrics of the best validated state, the table
beside the published reference, and the learning curve (`curve_<data>_<model>.png`). Host."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.kg.config import PUBLISHED
from gnkit.demos.kg.training import Pair, best_state, evaluate_pair


def learning_curve(run_dir: experiments.RunDir, name: str) -> dict[str, list[float]]:
    """Training loss by epoch and validation MRR by epoch, from the run's metrics. Host."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    curve: dict[str, list[float]] = {"epochs": [], "loss": [], "eval_epochs": [], "valid_mrr": []}
    for record in records:
        if "score" in record:
            curve["eval_epochs"].append(record["step"])
            curve["valid_mrr"].append(record["score"])
        elif "loss" in record:
            curve["epochs"].append(record["step"])
            curve["loss"].append(record["loss"])
    return curve


def _time_per_epoch(run_dir: experiments.RunDir, name: str) -> float | None:
    """Median wall seconds between consecutive training epochs with no evaluation (nor the
    first epoch, which compiles) between them."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    gaps = [
        60 * (later["wall_minutes"] - earlier["wall_minutes"])
        for earlier, later in zip(records, records[1:], strict=False)
        if earlier["kind"] == later["kind"] == "train" and later["step"] == earlier["step"] + 1
    ]
    return float(np.median(gaps)) if gaps else None


def _run_cpu_minutes(run_dir: experiments.RunDir, name: str) -> float | None:
    """CPU minutes of the whole training run (evaluations included), from its last record."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    return round(records[-1]["cpu_minutes"], 2) if records else None


def report_pair(pair: Pair, run_dir: experiments.RunDir, options, data: str, name: str):
    """Test metrics of the best-validation state, the table, the figure.

    Args:
      pair: the (graph, model) `Pair`.
      run_dir: the run directory.
      options: the command's options.
      data: `--data` as given (its last path part names the graph).
      name: the pair's name in the run directory (`umls_rotate`).

    Returns:
      The results dict: test metrics at the top level, validation metrics, timings, the curve.
    """
    state = best_state(pair, run_dir, name)
    test = evaluate_pair(pair, state.params, "test")
    start = time.perf_counter()
    evaluate_pair(pair, state.params, "test")  # timed once compiled
    eval_seconds = time.perf_counter() - start
    graph_name = Path(str(data)).name
    results: dict[str, Any] = {
        "data": graph_name,
        "model": pair.model,
        **{key: test[key] for key in ("mrr", "hits@1", "hits@3", "hits@10", "mean_rank")},
        "valid": evaluate_pair(pair, state.params, "valid"),
        "epoch": int(state.step),
        "test_triples": len(pair.graph.test),
        "entities": pair.graph.num_entities,
        "relations": pair.graph.num_relations,
        "seconds_per_epoch": _time_per_epoch(run_dir, name),
        "test_eval_seconds": round(eval_seconds, 4),
        "cpu_minutes": _run_cpu_minutes(run_dir, name),
        "published": PUBLISHED.get(graph_name),
        "curve": learning_curve(run_dir, name),
    }
    print(format_table(results))
    path = options.plot_path(run_dir, f"curve_{name}.png")
    results["figures"] = {"curve": str(plot_curve(results, path))} if path else {}
    return results


def format_table(results: dict[str, Any]) -> str:
    """The test metrics, and the published ones where known. Host."""
    lines = [
        f"{results['data']}, {results['model']}: filtered ranks of {results['test_triples']} test "
        f"triples as head and tail, best validation state (epoch {results['epoch']})",
        f"{'':<10}{'MRR':>7}{'H@1':>7}{'H@3':>7}{'H@10':>7}",
        f"{'gnkit':<10}{results['mrr']:>7.3f}{results['hits@1']:>7.3f}{results['hits@3']:>7.3f}"
        f"{results['hits@10']:>7.3f}",
    ]
    published = results.get("published")
    if published:
        lines.append(f"{published['model']:<10}{published['mrr']:>7.3f}{'':>14}"
                     f"{published['hits@10']:>7.3f}  (published, Dettmers et al. 2018)")
    return "\n".join(lines)


def plot_curve(results: dict[str, Any], path: Path) -> Path:
    """Training loss and validation MRR against epochs."""
    plt = experiments.pyplot()
    curve = results["curve"]
    figure, loss_axis = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    loss_axis.plot(curve["epochs"], curve["loss"], color="tab:gray", lw=1)
    loss_axis.set_xlabel("epoch")
    loss_axis.set_ylabel("training loss", color="tab:gray")
    mrr_axis = loss_axis.twinx()
    mrr_axis.plot(curve["eval_epochs"], curve["valid_mrr"], "o-", ms=3, color="tab:blue")
    mrr_axis.set_ylabel("validation MRR (filtered)", color="tab:blue")
    mrr_axis.set_ylim(0, 1)
    loss_axis.set_title(f"{results['data']}, {results['model']}: test MRR {results['mrr']:.3f}, "
                        f"Hits@10 {results['hits@10']:.3f}", fontsize=10)
    return experiments.save_figure(figure, path)
