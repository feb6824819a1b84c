"""Relational deep learning on the Lahman baseball database: a temporal typed GNN against
LightGBM, on RelBench-style player tasks.

    python -m gnkit.demos.rdl train                                # player-churn, 3 replicates
    python -m gnkit.demos.rdl train --task player-allstar --run-dir runs/rdl_allstar
    python -m gnkit.demos.rdl train --task all --run-dir runs/rdl_all  # the three, one table
    python -m gnkit.demos.rdl eval --run-dir runs/rdl

The database (`gnkit.rdl.lahman`, read through DuckDB) is one temporal typed graph: a node set
per table, an edge set per foreign key and its reverse. A task is an SQL query (RelBench's
protocol: an entity, a seed season, a label from the next season; `--task NAME`, the same as
`--set task=NAME`: `player-churn`, `player-allstar`, `player-games`, or `all`, each task in a
folder of the run directory, `verbs`); training seeds are seasons up to 2018, validation
2020-2021, test 2022-2023. The GNN (`models`) sees a fixed-shape temporal sample of each seed,
every row no newer than its seed season (`data`); the report fits the baselines on the same
splits (`baselines`: LightGBM on the player's own columns, LightGBM on SQL aggregates up to the
seed season, and the floors) and prints one table. Results are on the docs' relational deep
learning results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.rdl import data, report, training, verbs
from gnkit.demos.rdl.config import CONFIGS, PRESET_NOTES, RDLConfig
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
)

DEMO = experiments.Demo(
    "rdl",
    "Relational deep learning on the Lahman database: a temporal typed GNN against LightGBM.",
    presets=CONFIGS,
    verbs=verbs.verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
    flag_fields=("task",),
    extra="rdl",
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "RDLConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit rdl train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
