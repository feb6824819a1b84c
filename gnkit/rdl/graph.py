"""A database as one temporal `TypedGraph`: a node set per table, an edge set per foreign key and
its reverse, features per column by type. Host NumPy and DuckDB.

Rows keep the table's order (DuckDB keeps insertion order), so row `i` of a node set is row `i`
of its table. Each node gets the `time` of its table's time column (`gnkit.rdl.times`: integers
as they are; dates and timestamps as seconds since 1970-01-01 UTC, rounded up, so they compare
exactly with whole-second seed times), or `ALWAYS` (the smallest int32, known at every time)
where the table has none. A row whose time is NULL may come from the future: it is timed
`NEVER` (the largest int32, after every seed), or `ALWAYS` with `null_time_known`, and counted.
Foreign key `child.columns -> parent` becomes the edge set `columns->parent` from child rows to
parent rows and its reverse `rev:columns->parent` from parent to child, both timed by the child
row (a reference exists from the moment its row does). References to no row of the parent
(dangling keys) are dropped and counted; NULL references are no edge.

Features, a dict per node set:
- `numerical` float32 `[N, F]`: every numeric, date or timestamp (in seconds) column that is not
  a key or the time, standardised with the mean and standard deviation of the rows known at
  `known_until` (all rows without it); NULL is 0 there, and
- `missing` float32 `[N, F]`: 1 where the value is NULL;
- `categorical` int32 `[N, C]`: every text or boolean column as the index of its value among
  the `max_categories` most frequent known values (1 upwards), 0 for NULL or any other value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from gnkit.rdl.schema import (
    FLOAT_TYPES,
    INTEGER_TYPES,
    TIME_TYPES,
    Schema,
    check_schema,
    quoted,
)
from gnkit.rdl.times import ALWAYS, feature_seconds, row_times
from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph

CATEGORICAL_TYPES = ("VARCHAR", "BOOLEAN", "ENUM")


@dataclasses.dataclass(frozen=True)
class DatabaseGraph:
    """A database as a graph, with what is needed to read it back.

    Attributes:
      graph: the `TypedGraph` (one graph).
      keys: `{table: {primary key value (a tuple): row}}` for tables with a primary key.
      numerical_columns: `{table: [column, ...]}`, the columns of `numerical` / `missing`.
      categorical_columns: `{table: [column, ...]}`, the columns of `categorical`.
      categories: `{table: [size, ...]}`, the number of indices of each categorical column
        (the values kept, plus 1 for "none of them").
      dangling: `{table.foreign key: count}`, references to no row, dropped.
      null_times: `{table: count}` for tables with a time column, rows whose time is NULL
        (timed `NEVER`, or `ALWAYS` with `null_time_known`).
    """

    graph: TypedGraph
    keys: Mapping[str, dict]
    numerical_columns: Mapping[str, list[str]]
    categorical_columns: Mapping[str, list[str]]
    categories: Mapping[str, list[int]]
    dangling: Mapping[str, int]
    null_times: Mapping[str, int]


def _is_numeric(kind: str) -> bool:
    numeric = kind in INTEGER_TYPES or kind in FLOAT_TYPES
    return numeric or kind.startswith(("DECIMAL", *TIME_TYPES))


def _filled(values) -> tuple[np.ndarray, np.ndarray]:
    """`(values with NULL as 0, missing mask)` of a fetched numeric, date or timestamp column
    (dates and timestamps in seconds)."""
    mask = np.ma.getmaskarray(values)
    if np.issubdtype(values.dtype, np.datetime64):
        values = feature_seconds(values)
    return np.ma.filled(values.astype(np.float64), 0), mask


def _numerical(columns, names, known) -> tuple[np.ndarray, np.ndarray]:
    if not names:
        rows = known.size
        return np.zeros((rows, 0), np.float32), np.zeros((rows, 0), np.float32)
    values, missing = zip(*(_filled(columns[name]) for name in names), strict=True)
    values, missing = np.stack(values, 1).astype(np.float64), np.stack(missing, 1)
    reference = np.where(missing[known], np.nan, values[known])
    with np.errstate(all="ignore"):
        mean = np.nan_to_num(np.nanmean(reference, axis=0)) if reference.size else 0.0
        std = np.nan_to_num(np.nanstd(reference, axis=0)) if reference.size else 1.0
    scaled = (values - mean) / np.where(std > 0, std, 1.0)
    return np.where(missing, 0.0, scaled).astype(np.float32), missing.astype(np.float32)


def _categorical(columns, names, known, max_categories) -> tuple[np.ndarray, list[int]]:
    indices, sizes = [], []
    for name in names:
        raw = columns[name]
        mask = np.ma.getmaskarray(raw)
        values = objects(raw)
        seen = values[known & ~mask]
        kept, counts = np.unique(seen.astype(str), return_counts=True) if seen.size else ([], [])
        order = np.argsort(-np.asarray(counts), kind="stable")[:max_categories]
        lookup = {kept[i]: position + 1 for position, i in enumerate(order)}
        index = np.array([0 if m else lookup.get(str(v), 0) for v, m in zip(values, mask,
                                                                             strict=True)])
        indices.append(index.astype(np.int32))
        sizes.append(len(lookup) + 1)
    rows = known.size
    matrix = np.stack(indices, 1) if indices else np.zeros((rows, 0), np.int32)
    return matrix, sizes


def objects(values) -> np.ndarray:
    """A fetched column as an object array with None for NULL (`np.ma.filled` would put the
    masked array's fill value there, `'?'` for objects)."""
    out = np.array(np.ma.getdata(values), dtype=object)
    out[np.ma.getmaskarray(values)] = None
    return out


def _key_tuples(columns, names) -> list[tuple]:
    return list(zip(*(objects(columns[name]) for name in names), strict=True))


def database_graph(
    connection,
    schema: Schema,
    known_until: int | None = None,
    max_categories: int = 1000,
    null_time_known: bool = False,
) -> DatabaseGraph:
    """Read every table of `schema` from `connection` into one `TypedGraph`.

    Args:
      connection: an open `duckdb` connection.
      schema: the tables, keys and time columns (checked first, `check_schema`).
      known_until: standardise and index with the rows timed at or before it (the training
        cutoff, so no statistic comes from rows the training seeds cannot see), in the graph's
        time (seconds since 1970-01-01 for dates and timestamps); None: all rows.
      max_categories: values kept per categorical column (the most frequent).
      null_time_known: rows of a timed table whose time is NULL are known at every time
        (`ALWAYS`); False: seen by no seed (`NEVER`), as RelBench's `time <= t` drops them.
        Either way `DatabaseGraph.null_times` counts them.

    Returns:
      The `DatabaseGraph`.

    Raises:
      SchemaError: from `check_schema`.
    """
    types = check_schema(connection, schema)
    fetched, node_sets, keys = {}, {}, {}
    numerical_columns, categorical_columns, categories, null_times = {}, {}, {}, {}
    for table in schema.tables:
        columns = connection.execute(f"SELECT * FROM {quoted(table.name)}").fetchnumpy()
        rows = len(next(iter(columns.values())))
        if table.time_column is None:
            time = np.full(rows, ALWAYS, np.int32)
        else:
            time = row_times(columns[table.time_column], null_time_known)
            null_times[table.name] = int(np.ma.getmaskarray(columns[table.time_column]).sum())
        known = np.ones(rows, bool) if known_until is None else time <= known_until
        features = [c for c in types[table.name] if c not in table.key_columns | set(table.drop)]
        numerical_columns[table.name] = [
            c for c in features if _is_numeric(types[table.name][c])
        ]
        categorical_columns[table.name] = [
            c for c in features if types[table.name][c].startswith(CATEGORICAL_TYPES)
        ]
        numerical, missing = _numerical(columns, numerical_columns[table.name], known)
        categorical, categories[table.name] = _categorical(
            columns, categorical_columns[table.name], known, max_categories
        )
        node_sets[table.name] = NodeSet(
            n_node=np.array([rows], np.int32),
            features={"numerical": numerical, "missing": missing, "categorical": categorical},
            time=time,
            global_id=np.arange(rows, dtype=np.int64),
        )
        fetched[table.name] = columns
        if table.primary_key:
            keys[table.name] = {
                key: row for row, key in enumerate(_key_tuples(columns, table.primary_key))
            }
    edge_sets, dangling = {}, {}
    for table in schema.tables:
        for foreign in table.foreign_keys:
            references = _key_tuples(fetched[table.name], foreign.columns)
            lookup = keys[foreign.table]
            parents = np.array([lookup.get(key, -1) if None not in key else -2
                                for key in references], np.int64)
            dangling[f"{table.name}.{foreign.name}"] = int(np.sum(parents == -1))
            children = np.flatnonzero(parents >= 0)
            parents = parents[children]
            time = node_sets[table.name].time[children]
            count = np.array([children.size], np.int32)
            edge_sets[EdgeSetKey(foreign.name, (table.name, foreign.table))] = EdgeSet(
                count, children.astype(np.int32), parents.astype(np.int32), time=time
            )
            edge_sets[EdgeSetKey(f"rev:{foreign.name}", (foreign.table, table.name))] = EdgeSet(
                count, parents.astype(np.int32), children.astype(np.int32), time=time
            )
    graph = TypedGraph(Context(np.array([1], np.int32)), node_sets, edge_sets)
    return DatabaseGraph(graph, keys, numerical_columns, categorical_columns, categories,
                         dangling, null_times)
