"""CLEVR from state descriptions: a relation network against a non-relational baseline.

    python -m gnkit.demos.clevr train                   # both models, then the test table
    python -m gnkit.demos.clevr eval --run-dir runs/clevr
    python -m gnkit.demos.clevr generate --scenes 100 --out clevr_data

The setting of Santoro et al. (2017), section 5.1: the model sees the scene's object table
(3-D position, one-hot colour, shape, material and size per object; `gnkit.tasks.clevr`) and the
question's words, and answers with one of CLEVR's 28 answers. Both models encode the question the
same way (word embedding, then an LSTM; its last state is the question vector); `models` says
what each does with it, `data` where scenes and questions come from.

`train` trains each model of `models` in turn in one run directory (resumable), reports test
accuracy overall and per question family (exist, count, compare integer, compare attribute,
query attribute) beside the RN paper's, and draws `accuracy.png`; `eval --run-dir DIR` tests a
finished run again; `generate --scenes N --out DIR` writes a data set. Results and the options
tried are on the docs' CLEVR results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.clevr import data, report, training
from gnkit.demos.clevr.config import CONFIGS, PRESET_NOTES, ClevrConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(data.make_batch),
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: config.batch_size,
)

DEMO = experiments.Demo(
    "clevr",
    "CLEVR from state descriptions: relation network vs an MLP, accuracy per question family.",
    presets=CONFIGS,
    verbs=[
        *runner.comparison_verbs(COMPARISON),
        experiments.Verb("generate", report.generate, "write scenes.json and questions.json",
                         run_dir=None, add_flags=report.generate_flags, configured=False),
    ],
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "ClevrConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit clevr train|eval|generate ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
