"""Pretty-CLEVR: an RRN answers n-jump questions after about n steps; an RN one jump, an MLP none.

    python -m gnkit.demos.pretty_clevr train                   # the three models, then the test
    python -m gnkit.demos.pretty_clevr eval --run-dir runs/pretty_clevr

The diagnostic of Palm et al. (2018), on state descriptions (see `gnkit.tasks.pretty_clevr`);
`models` describes the three models, `data` the curriculum. `train` trains each model of
`models` in turn in one run directory (resumable), evaluates on the test scenes (accuracy per
number of jumps; per step for the RRN), prints the table and draws the paper's Figure 2b
(`accuracy.png`) and a test scene with a question's path and each model's answers
(`scene.png`). `eval --run-dir DIR` evaluates a finished run again. Results are on the docs'
Pretty-CLEVR results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.pretty_clevr import data, report, training
from gnkit.demos.pretty_clevr.config import CONFIGS, PRESET_NOTES, PrettyClevrConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.make_datasets,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(data.make_batch),
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: config.batch_size,
)

DEMO = experiments.Demo(
    "pretty-clevr",
    "Pretty-CLEVR: RRN (accuracy after 1..8 steps) vs RN vs MLP, by number of reasoning jumps.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "PrettyClevrConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit pretty-clevr train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
