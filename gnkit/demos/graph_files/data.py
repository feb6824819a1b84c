"""The graph-files demo's data: the user's tables read and checked (`gnkit.graph_files`), or a
generated example graph; the split; standardised features; each model's one batch. Host NumPy.

Errors in the tables are one line naming the flag, the file, the column and the line or id
(`gnkit.graph_files.GraphFileError`, raised as `UsageError`).
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np

from gnkit import experiments, graph_files
from gnkit.demos.graph_files.config import GraphFilesConfig
from gnkit.extras import MissingExtraError
from gnkit.graph import GraphsTuple

EXAMPLE_CLASSES = ("red", "green", "blue")


@dataclasses.dataclass(frozen=True)
class Data:
    """What a run trains and tests on, for `M` labelled entities (nodes or graphs).

    Attributes:
      labelled: the checked `gnkit.graph_files.LabelledGraph`.
      graph: the `GraphsTuple` (one graph for a node task, one per graph for a graph task),
        nodes float32 `[N, F]` standardised by `mean` and `std`.
      mean: float32 `[F]`, each feature's mean over all nodes.
      std: float32 `[F]`, its standard deviation (1 where constant).
      train: int `[n_train]`, sorted rows of the training entities.
      valid: int `[n_valid]`, those of validation.
      test: int `[n_test]`, those of test.
      tables: `{"edges": path, "nodes": path, "labels": path}` as read (labels may be empty).
    """

    labelled: graph_files.LabelledGraph
    graph: GraphsTuple
    mean: np.ndarray
    std: np.ndarray
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    tables: dict[str, str]

    @property
    def num_classes(self) -> int:
        """The number of classes."""
        return len(self.labelled.classes)


def write_example(folder: Path, nodes: int = 300, seed: int = 0) -> tuple[Path, Path]:
    """A generated graph as `nodes.csv` (`id` as text, `f0`..`f3`, `label` one of
    `EXAMPLE_CLASSES`) and `edges.csv` (`source`, `target`) in `folder`: three classes, noisy
    class-dependent features, and four edges per node, 80% of them within the class (so the
    graph carries the signal the features blur)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(EXAMPLE_CLASSES), nodes)
    centres = rng.normal(size=(len(EXAMPLE_CLASSES), 4))
    features = centres[labels] + 1.5 * rng.normal(size=(nodes, 4))
    sources, targets = np.repeat(np.arange(nodes), 4), []
    for source in sources:
        same = rng.random() < 0.8
        pool = np.flatnonzero((labels == labels[source]) == same)
        targets.append(rng.choice(pool[pool != source]))
    ids = [f"n{node:03d}" for node in range(nodes)]
    folder.mkdir(parents=True, exist_ok=True)
    node_path, edge_path = folder / "nodes.csv", folder / "edges.csv"
    with node_path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["id", "f0", "f1", "f2", "f3", "label"])
        for node in range(nodes):
            writer.writerow([ids[node], *(f"{value:.4f}" for value in features[node]),
                             EXAMPLE_CLASSES[labels[node]]])
    with edge_path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["source", "target"])
        writer.writerows((ids[s], ids[t]) for s, t in zip(sources, targets, strict=True))
    return edge_path, node_path


def read_tables(config: GraphFilesConfig, tables: dict[str, str],
                missing_labels: str | None = None) -> graph_files.LabelledGraph:
    """The `LabelledGraph` of `tables` (`edges`, `nodes`, `labels` paths) read with `config`'s
    column settings; `GraphFileError` as a one-line `UsageError` naming the flag and file."""
    try:
        read = {kind: graph_files.read_table(path, f"--{kind} {path}")
                for kind, path in tables.items() if path}
        return graph_files.from_tables(
            read["nodes"], read["edges"], read.get("labels"),
            id_column=config.id_column, source_column=config.source_column,
            target_column=config.target_column, label_column=config.label_column,
            feature_columns=config.feature_names(), graph_column=config.graph_column or None,
            split_column=config.split_column or None,
            missing_labels=missing_labels or config.missing_labels,
        )
    except (graph_files.GraphFileError, MissingExtraError) as error:
        raise experiments.UsageError(str(error)) from None


def split_rows(config: GraphFilesConfig, labelled: graph_files.LabelledGraph):
    """`(train, valid, test)` sorted entity rows: the split column's, or a random split of the
    labelled entities by `sizes` and `seed` (each part at least one entity)."""
    if config.split_column:
        parts = tuple(np.flatnonzero(labelled.split == part) for part in range(3))
        for name, rows in zip(graph_files.SPLITS, parts, strict=True):
            if not rows.size:
                raise experiments.UsageError(
                    f"--split-column {config.split_column}: no {name} rows")
        return parts
    rows = np.flatnonzero(labelled.labels >= 0)
    if rows.size < 3:
        what = "graphs" if labelled.task == "graph" else "nodes"
        raise experiments.UsageError(f"{rows.size} labelled {what}; a random split needs at "
                                     "least 3")
    rows = np.random.default_rng(config.seed).permutation(rows)
    valid = max(1, round(config.sizes[1] * rows.size))
    test = max(1, round(config.sizes[2] * rows.size))
    train = rows.size - valid - test
    if train < 1:
        raise experiments.UsageError(f"sizes {list(config.sizes)} leave no training rows")
    return (np.sort(rows[:train]), np.sort(rows[train:train + valid]),
            np.sort(rows[train + valid:]))


def standardise(features: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """`(features - mean) / std`, float32 `[N, F]`."""
    return ((features - mean) / std).astype(np.float32)


def load_data(config: GraphFilesConfig, run_dir=None, progress: bool = True) -> Data:
    """The run's tables read, checked and split; without `edges`, the example graph written
    once into `run_dir/example/` and read the same way."""
    del progress
    if config.edges:
        tables = {"edges": config.edges, "nodes": config.nodes, "labels": config.labels}
    else:
        folder = run_dir.file("example")
        edges, nodes = folder / "edges.csv", folder / "nodes.csv"
        if not (edges.is_file() and nodes.is_file()):
            edges, nodes = write_example(folder)
        tables = {"edges": str(edges), "nodes": str(nodes), "labels": ""}
    labelled = read_tables(config, tables)
    features = labelled.features.astype(np.float64)
    mean, std = features.mean(axis=0), features.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    graph = graph_files.to_graphs_tuple(labelled, config.directed)
    order = (slice(None) if labelled.node_graph is None
             else np.argsort(labelled.node_graph, kind="stable"))
    graph = graph._replace(nodes=standardise(features[order], mean, std))
    train, valid, test = split_rows(config, labelled)
    return Data(labelled, graph, mean.astype(np.float32), std.astype(np.float32), train, valid,
                test, tables)


def full_batch(data: Data) -> dict:
    """The one batch of every update: the graph, each entity's label (0 where it has none) and
    the training mask, float32 `[M]`."""
    mask = np.zeros(data.labelled.labels.shape[0], np.float32)
    mask[data.train] = 1.0
    return {"graph": data.graph, "labels": np.maximum(data.labelled.labels, 0), "mask": mask}


def make_batch(name: str, config: GraphFilesConfig, data: Data):
    """`update -> batch`: the full batch at every update."""
    del name, config
    batch = full_batch(data)
    return lambda update: batch
