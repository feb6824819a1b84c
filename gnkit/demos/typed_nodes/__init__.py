"""Typed node classification on UMLS: typed layers against their homogeneous twin.

    python -m gnkit.demos.typed_nodes train                 # the default run (gnkit typed-nodes)
    python -m gnkit.demos.typed_nodes train --config quick  # a first look
    python -m gnkit.demos.typed_nodes eval --run-dir DIR    # the report of a finished run

The 135 semantic types of UMLS as a `gnkit.TypedGraph`: two node sets (the types under the
*entity* root and under the *event* root) and one edge set per relation and (sender set,
receiver set) pair, with its inverse; `isa` is dropped, since it holds the answer. Each node
is classified into the branch of its root it lies under (`data` says how), with no node
features but its node set. `train` trains replicates of four models full-batch in one run
directory (resumable): R-GCN over the edge sets (`gnkit.nn.TypedRGCN`), GraphSAGE made typed
by `gnkit.nn.to_hetero`, the homogeneous twin GCN on one node set and one edge set, and an MLP
that reads no edges; then prints the test accuracy per model (mean and spread over replicates)
beside the majority class of each node set. Results are on the docs' typed-nodes results page.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.typed_nodes import data, report, training
from gnkit.demos.typed_nodes.config import CONFIGS, PRESET_NOTES, TypedNodesConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=runner.same_batches(data.make_batch),
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: 1,
)

DEMO = experiments.Demo(
    "typed-nodes",
    "UMLS typed node classification: R-GCN and to_hetero(GraphSAGE) vs a homogeneous GCN "
    "and an MLP.",
    presets=CONFIGS,
    verbs=runner.comparison_verbs(COMPARISON),
    preset_notes=PRESET_NOTES,
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "TypedNodesConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit typed-nodes train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
