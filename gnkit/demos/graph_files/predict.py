"""The graph-files demo's `predict` verb: one trained model's class probabilities for every
node (node task) or graph (graph task) of the run's tables, or of new tables with the same
columns, written as CSV. Host driver around a jitted model."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from gnkit import experiments, graph_files
from gnkit.demos.graph_files import data as data_module
from gnkit.demos.graph_files import report, training
from gnkit.demos.graph_files.config import GraphFilesConfig
from gnkit.experiments import runner
from gnkit.extras import MissingExtraError

FLAGS = ("model", "input_edges", "input_nodes", "input_labels", "output")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """`predict`'s own flags."""
    parser.add_argument("--model", help="the model to predict with (default: the best on "
                        "the validation split)")
    parser.add_argument("--input-edges", metavar="PATH",
                        help="a new edge table to predict (default: the run's tables)")
    parser.add_argument("--input-nodes", metavar="PATH",
                        help="a new node table, with the run's id and feature columns")
    parser.add_argument("--input-labels", metavar="PATH",
                        help="a new label table (optional: known labels give an accuracy)")
    parser.add_argument("--output", metavar="CSV", help="where the predictions go (default: "
                        "<nodes stem>_preds.csv beside --input-nodes, else the run directory)")


def _new_tables(config: GraphFilesConfig, run_data, flags) -> data_module.Data:
    """The new tables as a `Data` of the run's classes and feature scaling (nothing split)."""
    if not (flags["input_edges"] and flags["input_nodes"]):
        raise experiments.UsageError("predict: --input-edges and --input-nodes go together")
    tables = {kind: flags[f"input_{kind}"] or "" for kind in ("edges", "nodes", "labels")}
    try:
        read = {kind: graph_files.read_table(path, f"--input-{kind} {path}")
                for kind, path in tables.items() if path}
        kind = "labels" if "labels" in read else "nodes"
        if config.label_column not in read[kind].columns:  # no labels: every row predicted
            empty = np.full(read[kind].num_rows, None, object)
            read[kind] = dataclasses.replace(
                read[kind], columns={**read[kind].columns, config.label_column: empty})
        names = run_data.labelled.feature_names
        if names == ("log_degree",) and "log_degree" not in read["nodes"].columns:
            names = ()  # the run had no feature columns: log(1 + degree) again
        labelled = graph_files.from_tables(
            read["nodes"], read["edges"], read.get("labels"), id_column=config.id_column,
            source_column=config.source_column, target_column=config.target_column,
            label_column=config.label_column, feature_columns=names,
            graph_column=config.graph_column or None, missing_labels="predict",
            classes=run_data.labelled.classes,
        )
    except (graph_files.GraphFileError, MissingExtraError) as error:
        raise experiments.UsageError(str(error)) from None
    graph = graph_files.to_graphs_tuple(labelled, config.directed)
    order = (slice(None) if labelled.node_graph is None
             else np.argsort(labelled.node_graph, kind="stable"))
    nodes = data_module.standardise(labelled.features[order], run_data.mean, run_data.std)
    empty = np.zeros(0, np.int64)
    return data_module.Data(labelled, graph._replace(nodes=nodes), run_data.mean,
                            run_data.std, empty, empty, empty, tables)


def predict(config: GraphFilesConfig, run_dir: experiments.RunDir, options) -> dict:
    """Write `--model`'s predictions (id, label, prediction, probability, `p_<class>`) for the
    run's tables, or for new `--input-edges` / `--input-nodes` tables; returns a summary."""
    from gnkit.demos.graph_files import COMPARISON

    flags = {name: getattr(options.flags, name, None) for name in FLAGS}
    if flags["model"] is not None and flags["model"] not in config.models:
        raise experiments.UsageError(f"--model {flags['model']}: not a model of this run "
                                     f"({', '.join(config.models)})")
    run_data = data_module.load_data(config, run_dir, progress=False)
    states = runner.trained_states(COMPARISON, config, run_dir, run_data)
    name = flags["model"] or max(
        config.models,
        key=lambda model: training.make_evaluate(model, config, run_data)(
            states[model].params)["score"])
    new = flags["input_edges"] is not None or flags["input_nodes"] is not None
    target = _new_tables(config, run_data, flags) if new else run_data
    if flags["output"]:
        output = Path(flags["output"])
    elif new:
        nodes = Path(flags["input_nodes"])
        output = nodes.with_name(f"{nodes.stem}_preds.csv")
    else:
        output = run_dir.file(f"predictions_{name}.csv")
    if not output.parent.is_dir():
        raise experiments.UsageError(f"--output {output}: no folder {output.parent}")
    scores = training.logits(name, config, run_data, states[name].params, target.graph)
    labelled = target.labelled
    report.write_predictions(output, report.key_column(config), labelled.entity_ids, labelled,
                             scores, None if new else report.entity_split(run_data))
    known = labelled.labels >= 0
    accuracy = (float(np.mean(np.argmax(scores, -1)[known] == labelled.labels[known]))
                if known.any() else None)
    print(f"{name}: {len(labelled.entity_ids)} {labelled.task}s predicted, written to {output}"
          + ("" if accuracy is None else f" (accuracy {accuracy:.3f} on {known.sum()} labelled)"))
    return {"model": name, "output": str(output), "predicted": int(len(labelled.entity_ids)),
            "labelled_accuracy": accuracy}
