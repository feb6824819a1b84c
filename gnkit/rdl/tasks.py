"""Entity tasks as SQL, RelBench's protocol: an entity, a seed time, a label from after it.

A task's query returns one row per (entity, seed time) with the entity's key columns, the seed
time as `seed_time` and the label as `label`, for the seed times it is given (the placeholder
`{seed_times}` in the query becomes their comma-separated list). Seed times are the graph's
(`gnkit.rdl.times`): for dates and timestamps, whole seconds since 1970-01-01 UTC, which the
query turns back with `make_timestamp(t * 1000000)`; a `seed_time` it returns as a date or
timestamp is rounded down to the second. The graph a seed sees holds only rows timed at or
before its seed time: `with_seeds` adds the seeds as a node set of their own, each timed by its
seed time and joined to its entity's row, so a temporal sampler that starts from the seeds
bounds every hop by the seed time. Host NumPy and DuckDB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

from gnkit.rdl import times
from gnkit.rdl.graph import DatabaseGraph
from gnkit.typed_graph import EdgeSet, EdgeSetKey, NodeSet

SEED_SET = "seed"


class TaskError(ValueError):
    """A task whose query fails or returns the wrong columns: the message names the task."""


@dataclasses.dataclass(frozen=True)
class EntityTask:
    """A prediction about an entity after a seed time.

    Attributes:
      name: the task's name (`player-churn`).
      entity_table: the table whose rows the task is about.
      key_columns: the entity's primary-key columns as the query returns them.
      query: SQL returning the key columns, `seed_time` and `label` for the seed times
        `{seed_times}`.
      kind: `binary` (labels 0 / 1; AUROC, average precision) or `regression` (MAE).
    """

    name: str
    entity_table: str
    key_columns: tuple[str, ...]
    query: str
    kind: Literal["binary", "regression"]


@dataclasses.dataclass(frozen=True)
class TaskTable:
    """The rows of a task for some seed times.

    Attributes:
      entity_rows: int64 `[n]`, each row's entity as a row of the entity table.
      seed_time: int32 `[n]`, in the graph's time.
      label: float32 `[n]`.
      unmatched: rows whose entity is not in the entity table (dropped).
    """

    entity_rows: np.ndarray
    seed_time: np.ndarray
    label: np.ndarray
    unmatched: int


def task_table(connection, database: DatabaseGraph, task: EntityTask,
               seed_times: Sequence[int]) -> TaskTable:
    """Run `task`'s query for `seed_times` and match its entities to rows of the graph.

    Args:
      connection: the database's `duckdb` connection.
      database: the `DatabaseGraph` read from it.
      task: the task.
      seed_times: the seed times to make rows for, ints in the graph's time.

    Returns:
      The `TaskTable`, in the query's order.

    Raises:
      TaskError: the query fails, lacks the key columns, `seed_time` or `label`, returns NULL
        labels or seed times, or seed times that do not fit int32.
    """
    import duckdb

    listed = ", ".join(str(int(time)) for time in seed_times)
    try:
        result = connection.execute(task.query.format(seed_times=listed))
    except duckdb.Error as error:
        raise TaskError(f"task {task.name}: the query failed: {error}") from None
    columns = [column[0] for column in result.description]
    needed = [*task.key_columns, "seed_time", "label"]
    missing = [column for column in needed if column not in columns]
    if missing:
        raise TaskError(f"task {task.name}: the query returns {columns}, without {missing}")
    values = result.fetchnumpy()
    keys = database.keys[task.entity_table]
    entity = [values[column] for column in task.key_columns]
    rows = np.array([keys.get(key, -1) for key in zip(*entity, strict=True)], np.int64)
    found = rows >= 0
    label = np.ma.filled(values["label"].astype(np.float64), np.nan)
    if np.isnan(label[found]).any():
        raise TaskError(f"task {task.name}: the query returns NULL labels")
    if np.ma.getmaskarray(values["seed_time"])[found].any():
        raise TaskError(f"task {task.name}: the query returns NULL seed times")
    seed_time = times.seconds(values["seed_time"], round_up=False)[found]
    if seed_time.size and not times.ALWAYS <= seed_time.min() <= seed_time.max() <= times.NEVER:
        raise TaskError(f"task {task.name}: the query returns seed times from "
                        f"{seed_time.min()} to {seed_time.max()}; they must fit int32")
    return TaskTable(rows[found], seed_time.astype(np.int32), label[found].astype(np.float32),
                     int(np.sum(~found)))


def with_seeds(database: DatabaseGraph, entity_table: str, table: TaskTable):
    """The database graph with `table`'s rows as the node set `seed`.

    Each seed node is timed by its seed time and receives one edge, `entity`, from its entity's
    row, timed by the seed time too. Its features are empty (zero columns): what a model knows
    of a seed comes from the graph.

    Args:
      database: the `DatabaseGraph`.
      entity_table: the table the seeds' entities are rows of.
      table: the seeds.

    Returns:
      The `TypedGraph` with the seed node set and edge set added.
    """
    graph = database.graph
    count = table.seed_time.size
    empty = {"numerical": np.zeros((count, 0), np.float32),
             "missing": np.zeros((count, 0), np.float32),
             "categorical": np.zeros((count, 0), np.int32)}
    seeds = NodeSet(np.array([count], np.int32), empty, table.seed_time.astype(np.int32),
                    np.arange(count, dtype=np.int64))
    edge = EdgeSet(np.array([count], np.int32), table.entity_rows.astype(np.int32),
                   np.arange(count, dtype=np.int32), time=table.seed_time.astype(np.int32))
    return graph._replace(
        nodes={**graph.nodes, SEED_SET: seeds},
        edges={**graph.edges, EdgeSetKey("entity", (entity_table, SEED_SET)): edge},
    )
