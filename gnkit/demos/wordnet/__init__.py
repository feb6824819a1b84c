"""WordNet 3.0 at full size: lexicographer classes of held-out synsets, and held-out hypernyms.

    python -m gnkit.demos.wordnet train                  # the default run (also: gnkit wordnet)
    python -m gnkit.demos.wordnet train --config quick   # a first look
    python -m gnkit.demos.wordnet eval --run-dir DIR     # the report of a finished run

The 117,659 synsets of `gnkit.tasks.wordnet`, joined by their 377,592 typed pointers, with
hashed bag-of-words gloss features. `train` trains each model of `config.models` in turn in one
run directory (resumable; each in `checkpoints/<name>`, its log in `metrics_<name>.jsonl`):
classifiers of the 45 lexicographer classes of 10% held-out synsets (GraphSAGE on fixed-shape
neighbour samples, full-batch GCN, full-batch R-GCN over the pointer groups of the typed graph,
an MLP on the gloss features), on every pointer and without hypernym / hyponym pointers
(`_no_taxonomy`); and `link`, a GraphSAGE predictor of held-out hypernym pointers trained on
link samples. The report tests each model's best validated state (accuracy; MRR and Hits@10
among all synsets, filtered) beside the floors it computes (label propagation on each graph;
gloss cosine and hyponym count for hypernyms), with each model's epoch time and step memory.
Results are on the docs' WordNet results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.wordnet import data, report, training
from gnkit.demos.wordnet.config import CONFIGS, PRESET_NOTES, WordNetConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=data.make_batch,
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: config.batch_size,
    log_every=20,
)

DEMO = experiments.Demo(
    "wordnet",
    "WordNet 3.0: sampled GraphSAGE, GCN, R-GCN, MLP and label propagation on lexicographer "
    "classes; link prediction of held-out hypernyms.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "WordNetConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit wordnet train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
