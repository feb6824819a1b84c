"""Sort-of-CLEVR from pixels: a CNN + relation network vs a CNN + MLP (Santoro et al., 2017).

    python -m gnkit.demos.sort_of_clevr train                  # the default run, then the test
    python -m gnkit.demos.sort_of_clevr train --config quick   # a first look
    python -m gnkit.demos.sort_of_clevr eval --run-dir runs/sort_of_clevr

Images and questions from `gnkit.tasks.sort_of_clevr` (6 objects, 10 relational and 10
non-relational questions per image). Both models share the image encoder (`models`): strided
3x3 convolutions with batch norm turn a 75x75 image into a small feature map, whose cells are
the relation network's objects or the MLP's flattened input. Each image is encoded once and
`questions_per_image` of its 20 questions are answered from the same map.

`train` generates the data set (cached in the run directory as `data_<split>.npz`), trains each
model of `models` in turn (resumable), keeps the state with the best validation accuracy, and
tests it: accuracy on the relational and non-relational test questions, a figure of validation
curves and test accuracy (`accuracy.png`), and a grid of test images with a question, its answer
and each model's prediction (`examples.png`). `eval` tests a finished run again. Results and the
options tried are on the docs' Sort-of-CLEVR results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.sort_of_clevr import data, report, training
from gnkit.demos.sort_of_clevr.config import CONFIGS, PRESET_NOTES, SortOfClevrConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.load_datasets,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(data.make_batch),
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: config.images_per_batch * config.questions_per_image,
)

DEMO = experiments.Demo(
    "sort-of-clevr",
    "Sort-of-CLEVR from pixels: CNN+RN vs CNN+MLP on relational and non-relational questions.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "SortOfClevrConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit sort-of-clevr train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
