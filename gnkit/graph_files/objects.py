"""Graphs already in Python: a networkx graph or PyG-style arrays (`edge_index`, `x`, `y`,
masks) checked into a `LabelledGraph` as the files are, and a `LabelledGraph` written back as
CSV tables (`write_tables`) for the `gnkit graph-files` demo. Host."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from gnkit.graph_files.labelled import SPLITS, LabelledGraph, from_tables
from gnkit.graph_files.tables import GraphFileError, table_from_columns


def from_networkx(
    nx_graph,
    label: str = "label",
    features: Sequence[str] | None = None,
    split: str | None = None,
    missing_labels: Literal["raise", "predict"] = "raise",
) -> LabelledGraph:
    """A node task from a networkx graph: its nodes (ids as text), edges (each once, as
    networkx lists them; `to_graphs_tuple(..., directed=False)` adds the reverse) and scalar
    node attributes. Host. (`gnkit.from_networkx` converts a graph whose attributes are
    already stacked feature arrays, without labels or checks.)

    Args:
      nx_graph: a networkx graph (any kind).
      label: the node attribute holding each node's class.
      features: the numeric node attributes to use; None: every attribute but `label` and
        `split` (none: `log(1 + degree)`).
      split: a node attribute of `train`, `valid` or `test`, or None.
      missing_labels: as in `from_tables`.

    Returns:
      The `LabelledGraph`; errors name the networkx node or edge.
    """
    nodes = list(nx_graph.nodes(data=True))
    ids = [str(node) for node, _ in nodes]
    names = list(dict.fromkeys(key for _, data in nodes for key in data))
    columns = {"networkx node": ids,
               **{key: [data.get(key) for _, data in nodes] for key in names}}
    edges = [(str(source), str(target)) for source, target in nx_graph.edges()]
    return from_tables(
        table_from_columns("networkx nodes", columns,
                           lambda row: f"networkx node {ids[row]!r}"),
        table_from_columns("networkx edges", {"source": [s for s, _ in edges],
                                              "target": [t for _, t in edges]},
                           lambda row: f"networkx edge {edges[row]}"),
        id_column="networkx node", label_column=label, feature_columns=features,
        split_column=split, missing_labels=missing_labels,
    )


def from_edge_index(
    edge_index: np.ndarray,
    x: np.ndarray | None,
    y: np.ndarray,
    batch: np.ndarray | None = None,
    train_mask: np.ndarray | None = None,
    val_mask: np.ndarray | None = None,
    test_mask: np.ndarray | None = None,
    missing_labels: Literal["raise", "predict"] = "raise",
) -> LabelledGraph:
    """A node or graph task from PyG-style arrays (torch tensors work too). Host.

    Args:
      edge_index: int `[2, E]`, row 0 the sources, row 1 the targets (node rows).
      x: float `[N, F]` node features, or None (`log(1 + degree)`).
      y: `[N]` node classes, or `[G]` graph classes with `batch`; a negative or NaN entry has
        no label.
      batch: int `[N]`, each node's graph (a graph task), or None (a node task).
      train_mask, val_mask, test_mask: bool `[N]` (or `[G]`), the split; None: no split.
      missing_labels: as in `from_tables`.

    Returns:
      The `LabelledGraph`; node and graph ids are the row numbers as text.
    """
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise GraphFileError(f"edge_index: expected shape [2, E], found {list(edge_index.shape)}")
    y = np.asarray(y, np.float64).reshape(-1)
    if x is None:
        count, features = int(edge_index.max(initial=-1)) + 1, {}
    else:
        x = np.asarray(x, np.float64)
        x = x.reshape(x.shape[0], -1)
        count, features = x.shape[0], {f"x{column}": x[:, column] for column in range(x.shape[1])}
    nodes = {"id": [str(row) for row in range(count)], **features}
    entity = {}
    entity["label"] = [None if not value >= 0 else str(int(value)) for value in y]
    if train_mask is not None:
        masks = [np.asarray(mask, bool).reshape(-1) for mask in (train_mask, val_mask, test_mask)]
        entity["split"] = [next((SPLITS[k] for k in range(3) if masks[k][row]), None)
                           for row in range(len(y))]
    labels = None
    if batch is None:
        nodes.update(entity)
    else:
        nodes["graph"] = [str(int(graph)) for graph in np.asarray(batch).reshape(-1)]
        labels = table_from_columns("y", {"graph": [str(g) for g in range(len(y))], **entity},
                                    lambda row: f"graph {row}")
    edges = {"source": [str(int(i)) for i in edge_index[0]],
             "target": [str(int(i)) for i in edge_index[1]]}
    return from_tables(
        table_from_columns("x", nodes, lambda row: f"node {row}"),
        table_from_columns("edge_index", edges, lambda row: f"edge_index column {row}"),
        labels, graph_column="graph" if batch is not None else None,
        split_column="split" if train_mask is not None else None,
        feature_columns=list(features), missing_labels=missing_labels,
    )


def _write(path: Path, header: Sequence[str], rows) -> None:
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)


def write_tables(labelled: LabelledGraph, folder: str | Path) -> dict[str, str]:
    """Write `labelled` as CSV tables in `folder` (created): `nodes.csv` (`id`, the features,
    and `label`, `split` for a node task; `graph` for a graph task), `edges.csv` (`source`,
    `target`) and for a graph task `labels.csv` (`graph`, `label`, `split`). Host.

    Returns:
      The `gnkit graph-files` settings that read them back: `nodes`, `edges`, `labels` (empty
      for a node task), `graph_column`, `split_column` (empty when no split is set),
      `feature_columns` (comma-separated) and `missing_labels`.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    clash = {"id", "label", "split", "graph"} & set(labelled.feature_names)
    if clash:
        raise GraphFileError(f"write_tables: feature columns named {sorted(clash)}")
    labels = [labelled.classes[k] if k >= 0 else "" for k in labelled.labels]
    split = [SPLITS[k] if k >= 0 else "" for k in labelled.split]
    has_split = bool((labelled.split >= 0).any())
    entity_columns = ["label", *(["split"] if has_split else [])]
    entity_rows = [[label, *([part] if has_split else [])] for label, part in zip(labels, split,
                                                                                   strict=True)]
    features = [[repr(float(value)) for value in row] for row in labelled.features]
    paths = {"nodes": folder / "nodes.csv", "edges": folder / "edges.csv"}
    if labelled.task == "node":
        _write(paths["nodes"], ["id", *labelled.feature_names, *entity_columns],
               ([node, *row, *rest] for node, row, rest in zip(labelled.node_ids, features,
                                                               entity_rows, strict=True)))
    else:
        graph = labelled.graph_ids[labelled.node_graph]
        _write(paths["nodes"], ["id", "graph", *labelled.feature_names],
               ([node, g, *row] for node, g, row in zip(labelled.node_ids, graph, features,
                                                        strict=True)))
        paths["labels"] = folder / "labels.csv"
        _write(paths["labels"], ["graph", *entity_columns],
               ([g, *rest] for g, rest in zip(labelled.graph_ids, entity_rows, strict=True)))
    ids = labelled.node_ids
    _write(paths["edges"], ["source", "target"],
           zip(ids[labelled.senders], ids[labelled.receivers], strict=True))
    return {
        "nodes": str(paths["nodes"]),
        "edges": str(paths["edges"]),
        "labels": str(paths.get("labels", "")),
        "graph_column": "graph" if labelled.task == "graph" else "",
        "split_column": "split" if has_split else "",
        "feature_columns": ",".join(labelled.feature_names),
        "missing_labels": "predict" if (labelled.labels < 0).any() else "raise",
    }
