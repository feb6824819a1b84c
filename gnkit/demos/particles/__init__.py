"""Particle fluids on LagrangeBench's TGV 2D and RPF 2D cases: GNS and SEGNN, noise injection.

    gnkit particles train --case tgv2d --model gns
    gnkit particles train --config quick --case rpf2d --api nnx --run-dir runs/rpf
    gnkit particles train --config quick --model gns,segnn --run-dir runs/tgv
    gnkit particles eval --run-dir runs/particles

`train` reads the shipped JAX-SPH set of `--case` (`gnkit.particles.particle_dataset_path`),
trains GNS (`gnkit.particles.gns.GNS`) or SEGNN (`gnkit.particles.segnn.SEGNN`), or their NNX
twins with `--api nnx`, on one-step normalised accelerations with GNS's random-walk input noise,
the input graph built on device by the cell list at a fixed capacity
(`gnkit.particles.one_step`), validating with the one-step loss and a short rollout of each
validation trajectory on the comparison runner (`gnkit.experiments.runner`: resumable, progress,
the state with the lowest validation rollout MSE kept). The test rolls every test trajectory out
with the neighbour list rebuilt each step (`gnkit.particles.rollout.rollout_growing`: on
overflow the capacity doubles and the rollout runs again; past the limit it stops and says at
which step) and reports LagrangeBench's metrics (position MSE per step, `mse5` / `mse10` /
`mse20` / full, kinetic-energy MSE, Sinkhorn divergence) beside a constant-velocity baseline,
the rollouts in `rollouts_<model>.npz`, learning curves (`curves.png`) and the first test
rollout beside the ground truth (`rollout.gif`). `--case`, `--model` and `--api` are short for
`--set case=...`, ... Host driver around jitted steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.particles import training
from gnkit.demos.particles.config import CONFIGS, PRESET_NOTES, ParticlesConfig
from gnkit.demos.particles.data import load_data, make_batch
from gnkit.demos.particles.report import report
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
    log_every=50,
)

DEMO = experiments.Demo(
    "particles",
    "Particle fluids (LagrangeBench TGV 2D, RPF 2D): GNS and SEGNN, noise injection, rollouts.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
    flag_fields=("case", "model", "api"),
    extra="particles",
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit particles train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


__all__ = ["CONFIGS", "COMPARISON", "DEMO", "ParticlesConfig", "main"]
