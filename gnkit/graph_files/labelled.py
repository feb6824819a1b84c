"""A labelled graph from its tables: `from_tables` checks ids, edges, labels, splits and
features and gives a `LabelledGraph`; `to_graphs_tuple` makes it a `GraphsTuple`. Host NumPy.

Node tasks label nodes; graph tasks (a `graph_column` naming each node's graph) label graphs.
Ids are text (`'007'` and `'7'` differ), numbered in table order (graphs in order of their first
node). Every error is one line naming the table, the column and the row or id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

from gnkit.batching import from_edge_list
from gnkit.graph import GraphsTuple
from gnkit.graph_files.tables import GraphFileError, Table, read_table

SPLITS = ("train", "valid", "test")
_SPLIT_NAMES = {"train": 0, "valid": 1, "val": 1, "validation": 1, "test": 2}
MISSING_HINT = "missing_labels=predict leaves such rows out of training and predicts them"


@dataclasses.dataclass(frozen=True)
class LabelledGraph:
    """A graph's nodes, edges, labels and split, checked; `M` labelled entities: the `N`
    nodes of a node task or the `G` graphs of a graph task.

    Attributes:
      node_ids: object `[N]`, each node's id (text), in the node table's order.
      features: float32 `[N, F]`, the feature columns (or `log(1 + degree)` without any).
      feature_names: the `F` column names.
      senders: int32 `[E]`, each edge's source node (row of `node_ids`), in table order.
      receivers: int32 `[E]`, each edge's target node.
      labels: int32 `[M]`, each entity's class (index into `classes`), -1 where it has none.
      classes: the label values as text, sorted (numerically when every one is a number).
      split: int8 `[M]`: 0 train, 1 valid, 2 test, from a split column; -1 where none is given
        (every entity without a split column, and unlabelled ones).
      graph_ids: object `[G]`, each graph's id, for a graph task; None for a node task.
      node_graph: int32 `[N]`, each node's graph (row of `graph_ids`); None for a node task.
    """

    node_ids: np.ndarray
    features: np.ndarray
    feature_names: tuple[str, ...]
    senders: np.ndarray
    receivers: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]
    split: np.ndarray
    graph_ids: np.ndarray | None = None
    node_graph: np.ndarray | None = None

    @property
    def task(self) -> Literal["node", "graph"]:
        """`'graph'` with a `graph_column`, else `'node'`."""
        return "node" if self.graph_ids is None else "graph"

    @property
    def entity_ids(self) -> np.ndarray:
        """The ids of what is labelled: `graph_ids` for a graph task, else `node_ids`."""
        return self.node_ids if self.graph_ids is None else self.graph_ids


def _index(ids: np.ndarray, table: Table, column: str) -> dict[str, int]:
    """`{id: row}`; the first repeated id is named with both of its rows."""
    index: dict[str, int] = {}
    for row, key in enumerate(ids):
        first = index.setdefault(key, row)
        if first != row:
            raise GraphFileError(
                f"{table.locate(row)}: column {column!r}: duplicate id {key!r} "
                f"(also {table.locate(first)})"
            )
    return index


def _rows_of(keys: np.ndarray, index: dict[str, int], table: Table, column: str, what: str,
             home: str) -> np.ndarray:
    """int64 `[rows]`: each key's row in `index`; the first unknown key is named."""
    rows = np.fromiter((index.get(key, -1) for key in keys), np.int64, len(keys))
    unknown = np.flatnonzero(rows < 0)
    if unknown.size:
        row = int(unknown[0])
        raise GraphFileError(
            f"{table.locate(row)}: column {column!r}: {what} {keys[row]!r} is not in {home}"
        )
    return rows


def _per_entity(values: np.ndarray, entity: np.ndarray, count: int, table: Table,
                column: str, what: str) -> np.ndarray:
    """object `[count]`: each entity's value of `column` (None where none); two rows of one
    entity with different values are named (a graph's nodes must agree on its label)."""
    out = np.full(count, None, object)
    seen = np.full(count, -1, np.int64)
    for row, (target, value) in enumerate(zip(entity, values, strict=True)):
        if value is None:
            continue
        if out[target] is not None and out[target] != value:
            raise GraphFileError(
                f"{table.locate(row)}: column {column!r}: {value!r} for {what}, which "
                f"{table.locate(int(seen[target]))} gives {out[target]!r}"
            )
        out[target], seen[target] = value, row
    return out


def _sorted_classes(values: Sequence[str]) -> tuple[str, ...]:
    unique = sorted(set(values))
    try:
        return tuple(sorted(unique, key=float))
    except ValueError:
        return tuple(unique)


def _features(nodes: Table, names: Sequence[str] | None, used: set[str], senders, receivers):
    if names is None:
        chosen = [name for name in nodes.columns if name not in used]
        hint = " (feature_columns picks the feature columns)"
    else:
        chosen, hint = list(names), ""
    columns = []
    for name in chosen:
        try:
            columns.append(nodes.numbers(name, "feature_columns"))
        except GraphFileError as error:
            raise GraphFileError(f"{error}{hint}") from None
    if not columns:
        degree = np.bincount(np.concatenate([senders, receivers]), minlength=nodes.num_rows)
        return np.log1p(degree)[:, None].astype(np.float32), ("log_degree",)
    return np.stack(columns, axis=1).astype(np.float32), tuple(chosen)


def from_tables(
    nodes: Table,
    edges: Table,
    labels: Table | None = None,
    *,
    id_column: str = "id",
    source_column: str = "source",
    target_column: str = "target",
    label_column: str = "label",
    feature_columns: Sequence[str] | None = None,
    graph_column: str | None = None,
    split_column: str | None = None,
    missing_labels: Literal["raise", "predict"] = "raise",
    classes: Sequence[str] | None = None,
) -> LabelledGraph:
    """Check a graph's tables and number them: a `LabelledGraph`. Host.

    Args:
      nodes: one row per node: `id_column`, the feature columns, and (without a `labels`
        table) `label_column` and `split_column`; with `graph_column`, each node's graph.
      edges: one row per edge, `source_column` -> `target_column` (node ids); other columns
        are not read.
      labels: one row per labelled node (node task, keyed by `id_column`) or graph (graph task,
        keyed by `graph_column`) with `label_column` (and `split_column`); None: those columns
        are in `nodes` (a graph's nodes then agree on its label and split).
      id_column, source_column, target_column, label_column: column names.
      feature_columns: the nodes' numeric feature columns; None: every column of `nodes` but
        the id, graph, label and split columns; none at all: one feature, `log(1 + degree)`.
      graph_column: the `nodes` column naming each node's graph (a graph task), or None.
      split_column: a column of `train`, `valid` (or `val`) or `test` per labelled entity, or
        None (the caller splits).
      missing_labels: `'raise'`: an entity without a label is an error; `'predict'`: it is
        left unlabelled (-1).
      classes: the classes of a trained model (new tables to predict): labels must be among
        them, and need not be two or more; None: the labels' own values.

    Returns:
      The `LabelledGraph`.

    Raises:
      GraphFileError: one line naming the table, column and row or id: a missing column, an
        empty id, a duplicate id, an edge to an unknown node (or across graphs), a label for an
        unknown id, a missing label, a bad split value, a non-numeric feature, fewer than two
        classes.
    """
    ids = nodes.require_cells(id_column, "id_column")
    node_index = _index(ids, nodes, id_column)
    senders, receivers = (
        _rows_of(edges.require_cells(column, setting), node_index, edges, column, "node id",
                 nodes.name).astype(np.int32)
        for column, setting in ((source_column, "source_column"), (target_column, "target_column"))
    )
    graph_ids = node_graph = None
    if graph_column:
        graph_of_node = nodes.require_cells(graph_column, "graph_column")
        graph_index: dict[str, int] = {}
        for key in graph_of_node:
            graph_index.setdefault(key, len(graph_index))
        graph_ids = np.array(list(graph_index), object)
        node_graph = np.fromiter((graph_index[key] for key in graph_of_node), np.int32, len(ids))
        crossing = np.flatnonzero(node_graph[senders] != node_graph[receivers])
        if crossing.size:
            row = int(crossing[0])
            raise GraphFileError(
                f"{edges.locate(row)}: the edge joins node {ids[senders[row]]!r} of graph "
                f"{graph_ids[node_graph[senders[row]]]!r} to node {ids[receivers[row]]!r} of "
                f"graph {graph_ids[node_graph[receivers[row]]]!r}"
            )
    entity_ids = ids if graph_ids is None else graph_ids
    what = "node id" if graph_ids is None else "graph id"
    if labels is None:
        source, entity = nodes, (np.arange(len(ids)) if node_graph is None else node_graph)
    else:
        source, key_column = labels, (graph_column or id_column)
        keys = labels.require_cells(key_column, "graph_column" if graph_column else "id_column")
        _index(keys, labels, key_column)
        entity = _rows_of(keys, {key: row for row, key in enumerate(entity_ids)}, labels,
                          key_column, what, nodes.name)
    count = len(entity_ids)
    label_text = _per_entity(source.column(label_column, "label_column"), entity, count, source,
                             label_column, f"the same {what}")
    unlabelled = np.flatnonzero(np.equal(label_text, None))
    if unlabelled.size and missing_labels == "raise":
        first = int(unlabelled[0])
        if labels is None and graph_ids is None:
            where = f"{nodes.locate(first)}: column {label_column!r} is empty"
        else:
            where = f"{source.name}: no label for {what} {entity_ids[first]!r}"
        raise GraphFileError(f"{where} ({unlabelled.size} such; {MISSING_HINT})")
    if classes is None:
        classes = _sorted_classes([text for text in label_text if text is not None])
        if len(classes) < 2:
            raise GraphFileError(f"{source.name}: column {label_column!r} has {len(classes)} "
                                 "class; a classifier needs at least two")
    classes = tuple(classes)
    class_index = {name: index for index, name in enumerate(classes)}
    unknown = [text for text in label_text if text is not None and text not in class_index]
    if unknown:
        raise GraphFileError(f"{source.name}: column {label_column!r}: label {unknown[0]!r} is "
                             f"not a class of the model ({', '.join(classes)})")
    label_ids = np.array([-1 if text is None else class_index[text] for text in label_text],
                         np.int32)
    split = np.full(count, -1, np.int8)
    if split_column:
        values = source.column(split_column, "split_column")
        for row, value in enumerate(values):
            if value is not None and value.strip().lower() not in _SPLIT_NAMES:
                raise GraphFileError(f"{source.locate(row)}: column {split_column!r} holds "
                                     f"{value!r}; expected train, valid or test")
        split_text = _per_entity(values, entity, count, source, split_column, f"the same {what}")
        for target in np.flatnonzero(label_ids >= 0):
            if split_text[target] is None:
                row = int(np.flatnonzero(entity == target)[0])
                raise GraphFileError(f"{source.locate(row)}: column {split_column!r} is empty")
            split[target] = _SPLIT_NAMES[split_text[target].strip().lower()]
    used = {id_column, graph_column, label_column, split_column}
    features, names = _features(nodes, feature_columns, used - {None, ""}, senders, receivers)
    return LabelledGraph(ids, features, names, senders, receivers, label_ids, classes, split,
                         graph_ids, node_graph)


def read_graph_files(edges, nodes, labels=None, **columns) -> LabelledGraph:
    """`from_tables` on files: `read_table` of each path (CSV or Parquet), then the checks.

    Args:
      edges: the edge table's path.
      nodes: the node table's path.
      labels: the label table's path, or None (labels in the node table).
      **columns: `from_tables`' keyword arguments (`id_column`, `label_column`,
        `graph_column`, ...).

    Returns:
      The `LabelledGraph`.

    Raises:
      GraphFileError: as `read_table` and `from_tables`.
    """
    return from_tables(read_table(nodes), read_table(edges),
                       None if labels is None else read_table(labels), **columns)


def to_graphs_tuple(labelled: LabelledGraph, directed: bool = False) -> GraphsTuple:
    """The graph as a `GraphsTuple`: one graph for a node task (nodes in `node_ids` order),
    one graph per `graph_ids` entry for a graph task (nodes grouped by graph, in table order
    within each). Host.

    Args:
      labelled: the `LabelledGraph`.
      directed: keep each edge one-way (`source -> target`); False adds the reverse of every
        edge but self-loops, as for an undirected graph.

    Returns:
      nodes float32 `[N, F]` (`labelled.features`), edges None, int32 senders / receivers.
    """
    senders, receivers = labelled.senders, labelled.receivers
    if not directed:
        both = senders != receivers
        senders, receivers = (np.concatenate([senders, receivers[both]]),
                              np.concatenate([receivers, senders[both]]))
    if labelled.node_graph is None:
        return from_edge_list(senders, receivers, len(labelled.node_ids),
                              nodes=labelled.features)
    order = np.argsort(labelled.node_graph, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    by_graph = np.argsort(labelled.node_graph[senders], kind="stable")
    n_node = np.bincount(labelled.node_graph, minlength=len(labelled.graph_ids))
    return from_edge_list(position[senders[by_graph]], position[receivers[by_graph]], n_node,
                          nodes=labelled.features[order])
