"""Node or graph classification on one's own graph tables (CSV or Parquet).

    gnkit graph-files train                                   # a generated example graph
    gnkit graph-files train --edges edges.csv --nodes nodes.csv --label-column class
    gnkit graph-files train --edges e.parquet --nodes n.parquet --labels graphs.csv \\
        --graph-column molecule                               # one label per graph
    gnkit graph-files eval --run-dir runs/graph_files
    gnkit graph-files predict --run-dir runs/graph_files --edges new_e.csv --nodes new_n.csv

`train` reads the tables through `gnkit.graph_files` (DuckDB; every cell as text, so string
ids are kept), checks them (a missing column, a duplicate id, an edge to an unknown node, a
missing label, a non-numeric feature: each one line naming the file, column and line or id),
splits the labelled nodes or graphs at random (`--sizes`, `--seed`) or by `--split-column`,
standardises the features, and trains each model of `--models` in turn, full batch, on the
comparison runner (resumable; the best validation accuracy kept): two GCN or GraphSAGE layers
(the WordNet demo's node classifiers; mean-pooled into a linear layer per graph for graph
tasks) and an MLP on the features alone. The report gives each model's train / valid / test
accuracy beside the majority class and (node tasks) label propagation, and writes
`predictions_<model>.csv` (id, split, label, prediction, probabilities) in the run directory;
`predict` writes one model's predictions for the run's or new tables. Every setting is also a
flag (`--edges`, `--id-column`, `--graph-column`, ...: `--set KEY=VALUE` the same). Host
driver around jitted steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.graph_files import data, predict, report, training
from gnkit.demos.graph_files.config import CONFIGS, PRESET_NOTES, GraphFilesConfig
from gnkit.experiments import runner

COMPARISON = runner.Comparison(
    load_data=data.load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=data.make_batch,
    validate=training.make_evaluate,
    report=report.report,
    examples_per_step=lambda config: 1,
    log_every=10,
)

DEMO = experiments.Demo(
    "graph-files",
    "Node or graph classification on your own CSV / Parquet graph tables: GCN, GraphSAGE, MLP "
    "beside label propagation.",
    presets=CONFIGS,
    verbs=[
        *runner.comparison_verbs(COMPARISON),
        experiments.Verb("predict", predict.predict,
                         "write a trained model's predictions for the run's or new tables",
                         run_dir="existing", add_flags=predict.add_flags),
    ],
    preset_notes=PRESET_NOTES,
    # `--edges PATH` is short for `--set edges=PATH`, and so on.
    flag_fields=("edges", "nodes", "labels", "id_column", "source_column", "target_column",
                 "label_column", "feature_columns", "graph_column", "split_column",
                 "missing_labels", "directed", "models", "updates"),
)

__all__ = ["COMPARISON", "CONFIGS", "DEMO", "GraphFilesConfig", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit graph-files train|eval|predict ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
