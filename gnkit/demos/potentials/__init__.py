"""Interatomic potentials on rMD17 aspirin and an EMT metal: SchNet, PaiNN, NequIP, MACE.

    gnkit potentials train --data aspirin --model mace
    gnkit potentials train --config quick --model mace,schnet --run-dir runs/aspirin
    gnkit potentials train --data emt --model mace --config quick --run-dir runs/emt
    gnkit potentials eval --run-dir runs/aspirin

`train` reads the shipped aspirin frames (a seeded train / validation split of the 1,200
training frames, the 1,800 test frames for test) or makes the EMT set of fcc Cu / Al cells
(cached in the run directory; held-out structures for test, stress in the loss), fits each
species' E0 by least squares on the training structures and a scale / shift, then trains each
model of `--model` in turn on the comparison runner (`gnkit.experiments.runner`: resumable,
progress, the state with the lowest weighted validation loss kept) and tests it: energy MAE /
RMSE per structure and per atom, force (and stress) MAE / RMSE, the test predictions in
`predictions_<model>.npz`, parity plots (`parity.png`) and learning curves (`curves.png`).
Batches are padded to a bucket ladder (`gnkit.atoms.atoms_bucket_policy`), so training
compiles once per rung. `--data` and `--model` are short for `--set data=...` and
`--set model=...`. Host driver around jitted steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.potentials import training
from gnkit.demos.potentials.config import CONFIGS, PRESET_NOTES, PotentialsConfig
from gnkit.demos.potentials.data import load_data, make_batch
from gnkit.demos.potentials.report import report
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(make_batch),
    validate=training.validate,
    report=report,
    examples_per_step=lambda config: config.batch_size,
    log_every=2**62,
    model_config=lambda name, config, data: config.for_model(name),
)

DEMO = experiments.Demo(
    "potentials",
    "Interatomic potentials on rMD17 aspirin or an EMT metal: SchNet, PaiNN, NequIP, MACE.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
    flag_fields=("data", "model"),
    extra="atoms",
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit potentials train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


__all__ = ["CONFIGS", "COMPARISON", "DEMO", "PotentialsConfig", "main"]
