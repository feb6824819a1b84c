"""WordNet 3.0 at full size: lexicographer classes of held-out synsets, and held-out hypernyms.

    python -m gnkit.demos.wordnet train                  # the default run (also: gnkit wordnet)
    python -m gnkit.demos.wordnet train --config quick   # a first look

The 117,659 synsets of `gnkit.tasks.wordnet`, joined by their 377,592 typed pointers, with
hashed bag-of-words gloss features. `train` predicts the 45 lexicographer classes of 10% held-out
synsets with GraphSAGE trained on fixed-shape neighbour samples (`gnkit.sampling`), full-batch
GCN, an MLP on the gloss features and label propagation, on every pointer and on a graph without
hypernym / hyponym pointers (`variants`); then predicts held-out hypernym pointers with a
GraphSAGE encoder trained on link samples (MRR, Hits@10 among all synsets, filtered), beside
gloss cosine similarity. Accuracy, epoch time and step memory per model; GraphSAGE's loss per
epoch goes to `metrics_<variant>_sage.jsonl` in the run directory, the table to stderr. A run
continued with a larger `epochs` trains every model again from the start (no checkpoints: the
whole default run takes a few CPU-minutes). Results are on the docs' WordNet results page.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.wordnet import data, report, training
from gnkit.demos.wordnet.config import CONFIGS, PRESET_NOTES, WordNetConfig


def train(config: WordNetConfig, run_dir, options) -> dict:
    """Every model of `config.models` on every variant, then link prediction."""
    loaded = data.load_data(config)
    results = {"classification": {}}
    for variant in config.variants:
        graph, rows = loaded.graphs[variant], {}
        for model in config.models:
            if model == "mlp" and variant != config.variants[0]:
                continue  # the MLP reads no pointers: the same on every graph
            if model == "sage":
                rows[model] = training.train_sage(config, loaded, graph, options.should_stop)
            elif model == "label_propagation":
                rows[model] = training.run_label_propagation(config, loaded, graph)
            else:
                rows[model] = training.train_full_batch(config, loaded, graph, model,
                                                        options.should_stop)
            if options.progress:
                print(f"{variant} {model}: test {rows[model]['test']:.3f}", file=sys.stderr,
                      flush=True)
        results["classification"][variant] = rows
        if run_dir is not None and "sage" in rows:
            lines = [json.dumps(row) for row in rows["sage"]["epochs"]]
            run_dir.file(f"metrics_{variant}_sage.jsonl").write_text("\n".join(lines) + "\n")
    if config.link_epochs:
        results["link"] = training.train_link(config, loaded, options.should_stop)
    print(report.table(results), file=sys.stderr)
    return results


DEMO = experiments.Demo(
    "wordnet",
    "WordNet 3.0: sampled GraphSAGE, GCN, MLP and label propagation on lexicographer classes; "
    "link prediction of held-out hypernyms.",
    presets=CONFIGS,
    verbs=[experiments.Verb("train", train, "train and test every model, then link prediction")],
    preset_notes=PRESET_NOTES,
)

__all__ = ["CONFIGS", "DEMO", "WordNetConfig", "main", "train"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit wordnet train ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
