"""The WordNet demo's report: accuracy, epoch time and step memory of every trained model; the
floors (label propagation per graph, and for hypernyms gloss cosine and hyponym count); as a
dict (the run record) and as a printed table. Everything is read from the run directory and
recomputed from the saved states, so `eval` of a finished run prints what `train` printed. Host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.demos.wordnet import models, training
from gnkit.demos.wordnet.config import LINK, WordNetConfig, family, variant
from gnkit.demos.wordnet.data import Data, steps_per_epoch
from gnkit.tasks import wordnet as task
from gnkit.train import read_metrics

NAMES = {"sage": "GraphSAGE (sampled)", "gcn": "GCN (full batch)", "rgcn": "R-GCN (typed)",
         "mlp": "MLP (gloss only)", "label_propagation": "label propagation"}


def seconds_per_update(records: list[Mapping]) -> float | None:
    """The median wall time of one update over the log intervals (between consecutive `train`
    records) that hold no evaluation; None if there is none.

    An evaluation at step `e` is logged after the train record of step `e`, so it falls in the
    interval that starts there.
    """
    train = [record for record in records if record["kind"] == "train"]
    evals = [record["step"] for record in records if record["kind"] == "eval"]
    rates = []
    for start, end in zip(train, train[1:], strict=False):
        if end["step"] > start["step"] and not any(start["step"] <= e < end["step"]
                                                   for e in evals):
            rates.append(60 * (end["wall_minutes"] - start["wall_minutes"])
                         / (end["step"] - start["step"]))
    return float(np.median(rates)) if rates else None


def label_propagation(config: WordNetConfig, data: Data, name: str) -> dict[str, float]:
    """Label propagation from the training labels on graph variant `name`: valid and test
    accuracy and the memory of the whole propagation (MiB)."""
    seed_labels = np.zeros((data.labels.shape[0], task.NUM_CLASSES), np.float32)
    seed_labels[data.train, data.labels[data.train]] = 1.0
    propagate = jax.jit(models.label_propagation, static_argnums=(2, 3))
    arguments = (data.graphs[name]._replace(nodes=None), jnp.asarray(seed_labels),
                 config.propagation_steps, config.propagation_alpha)
    stats = propagate.lower(*arguments).compile().memory_analysis()
    memory = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    return {**training.accuracies(propagate(*arguments), data), "step_memory_mib": memory / 2**20}


def link_floors(data: Data) -> dict[str, dict[str, float]]:
    """Test MRR and Hits@10 of two scorers without training: the gloss cosine of the pair, and
    the candidate's hyponym count in the kept graph (hypernyms are the taxonomy's hubs)."""
    features = data.features
    hyponyms = data.link.graph.nodes[:, features.shape[1]]
    scorers = {"gloss_cosine": lambda rows: features[rows] @ features.T,
               "hyponym_count": lambda rows: np.broadcast_to(hyponyms, (rows.size,
                                                                        hyponyms.size))}
    pairs = data.link.test
    return {name: task.ranking_metrics(task.filtered_ranks(scores, pairs[0], pairs[1],
                                                           data.link.known))
            for name, scores in scorers.items()}


def report(config: WordNetConfig, run_dir, options, states, data: Data) -> dict[str, Any]:
    """Every model's best validated state on the test split, its epoch time and step memory,
    beside the floors; prints the table.

    Args:
      config: the run's config.
      run_dir: the run directory (each model's `metrics_<name>.jsonl` gives its update time).
      options: the command's options (unused).
      states: `{model name: gnkit.train.TrainingState}`.
      data: what the demo's `load_data` returned.

    Returns:
      The results dict (also the verb's `--json`).
    """
    del options
    rows = {}
    for name, state in states.items():
        outputs = training.whole_graph_outputs(name, config, data, state.params)
        if name == LINK:
            metrics = task.ranking_metrics(training.link_ranks(outputs, data.link.test,
                                                               data.link.known))
        else:
            metrics = training.accuracies(outputs, data)
        path = run_dir.path / f"metrics_{name}.jsonl"
        update_seconds = seconds_per_update(read_metrics(path)) if path.exists() else None
        epoch = steps_per_epoch(name, config, data)
        rows[name] = {
            **metrics,
            "epoch_seconds": None if update_seconds is None else update_seconds * epoch,
            "steps_per_epoch": epoch,
            "step_memory_mib": training.step_memory_mib(name, config, data, state.params),
            "updates": int(state.step),
            "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
        }
    results: dict[str, Any] = {
        "synsets": data.wordnet.num_nodes,
        "pointers": {name: int(graph.n_edge[0]) for name, graph in data.graphs.items()},
        "classification": {},
    }
    for name, row in rows.items():
        if name != LINK:
            results["classification"].setdefault(variant(name), {})[family(name)] = row
    for name, models_of_graph in results["classification"].items():
        models_of_graph["label_propagation"] = label_propagation(config, data, name)
    if LINK in rows:
        results["link"] = {"predictor": rows[LINK], **link_floors(data),
                           "test_pairs": int(data.link.test.shape[1])}
    print(format_table(results))
    return results


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(results: Mapping[str, Any]) -> str:
    """The classification table (per graph, each model and the label propagation floor), then
    the hypernym ranking against its floors."""
    lines = [f"{'graph':<13} {'model':<21} {'valid':>6} {'test':>6} {'epoch s':>8} "
             f"{'step MiB':>9}"]
    for graph, rows in results["classification"].items():
        for name, row in rows.items():
            lines.append(f"{graph:<13} {NAMES[name]:<21} {row['valid']:6.3f} {row['test']:6.3f} "
                         f"{_seconds(row.get('epoch_seconds')):>8} "
                         f"{row['step_memory_mib']:9.1f}")
    link = results.get("link")
    if link:
        lines.append(f"held-out hypernyms ({link['test_pairs']} test pairs): filtered ranks "
                     "among all synsets")
        for label, key in (("GraphSAGE link predictor", "predictor"),
                           ("gloss cosine", "gloss_cosine"), ("hyponym count", "hyponym_count")):
            lines.append(f"  {label:<26} MRR {link[key]['mrr']:.4f}  "
                         f"Hits@10 {link[key]['hits_at_10']:.4f}")
    return "\n".join(lines)
