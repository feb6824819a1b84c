"""N-th farthest: a relational memory core reasons across time where an LSTM does not.

    python -m gnkit.demos.nth_farthest train                 # both models, then the test table
    python -m gnkit.demos.nth_farthest eval --run-dir runs/nth_farthest

The task of Santoro et al. (2018) (see `gnkit.tasks.nth_farthest`): labelled vectors arrive one
per step, with the question "which vector is the n-th farthest from vector m?". Two models
answer it, each a recurrent core over the steps whose final output goes through an MLP
(4 layers of 256, ReLU) to one logit per label (`models`).

The `paper` preset has the paper's task (8 vectors of 16 dimensions) and sizes.

Why training stalls at `trivial_accuracy` (25% for 8 vectors): answering `m` itself when
`n = K - 1` is learnt at once; for every other `n` the answer, averaged over `n`, is uniform over
the other labels whatever the distances, so a feature of the distances that does not yet depend
on `n` gets no gradient on average (what `n = 0` asks for, the nearest ranks ask against). Only
distance and `n` learnt together pay, and on the full task both models sit at the plateau for
all the updates a CPU budget buys. `curriculum_updates` breaks the symmetry: training questions
first ask only `n = 0` (the farthest), then one rank nearer per stage (`curriculum_choices`),
until every `n` is asked; the test set always asks every `n`.

The `default` preset fits a CPU budget with a smaller task, 6 vectors of 2 dimensions, the
curriculum (stages of 1,500 updates), batches of 256 sequences, an RMC with one slot per vector
(6 slots, 4 heads of size 16, 0.34 M parameters with its MLP) and a 148-unit LSTM (0.34 M).
With batches of 64 neither model left the `n = 0` plateau of this task in 3,000 updates; with
256 the RMC leaves it after about 800 updates and the LSTM thousands of updates later (the docs'
N-th farthest results page has what was measured).

The loss is the paper's: cross-entropy of the final step's logits against the target label,
Adam, gradient norm clipped; with `final_learning_rate_fraction` below 1 the learning rate is
constant until every `n` is asked, then decays (cosine) to that fraction at the last update.
Training sequences are sampled afresh for every update (a pure function of the seed and the
update, so a resumed run sees the same data); accuracy is measured on one fixed held-out test
set (every `n`), the same for every seed.

`gnkit nth-farthest train` trains each model of `models` in turn in one run directory
(resumable), evaluating test accuracy every `eval_every_updates` updates; it then prints the
final table and draws the learning curves of both (`curves.png`: test accuracy against updates
and against training CPU minutes). `eval --run-dir DIR` tests a finished run again; `--help`
lists the presets and what each costs.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.nth_farthest import data, report, training
from gnkit.demos.nth_farthest.config import CONFIGS, PRESET_NOTES, NthFarthestConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.held_out_test_set,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(data.make_batch),
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: config.batch_size,
    log_every=50,
    report_best=False,
)

DEMO = experiments.Demo(
    "nth-farthest",
    "N-th farthest: relational memory core vs LSTM, test accuracy and learning curves.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "NthFarthestConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit nth-farthest train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
