"""A user's own graph for node or graph classification: tables in, a checked, numbered graph out.

    from gnkit import graph_files

    labelled = graph_files.read_graph_files("edges.csv", "nodes.csv", label_column="class")
    graph = graph_files.to_graphs_tuple(labelled)          # undirected: both directions

The tables are an edge list (`source`, `target` node ids), a node table (`id`, numeric feature
columns, and the label) and optionally a separate label table; CSV or Parquet, read through
DuckDB (the `rdl` extra) with every cell as text, so string ids and ids with leading zeros are
kept. `graph_column` makes it a graph task (each node names its graph; labels per graph). The
checks (`from_tables`) give one-line `GraphFileError`s naming the file, column and line or id:
a missing column, a duplicate or empty id, an edge to an unknown node or across graphs, a label
for an unknown id, a missing label (`missing_labels='predict'` keeps such rows unlabelled), a
bad split value, a non-numeric feature. A networkx graph (`from_networkx`) and PyG-style arrays
(`from_edge_index`) go through the same checks; `write_tables` writes a `LabelledGraph` as CSV
for the `gnkit graph-files` demo, which trains GCN, GraphSAGE and MLP classifiers on them. Host.
"""

from gnkit.graph_files.labelled import (
    SPLITS,
    LabelledGraph,
    from_tables,
    read_graph_files,
    to_graphs_tuple,
)
from gnkit.graph_files.objects import from_edge_index, from_networkx, write_tables
from gnkit.graph_files.tables import GraphFileError, Table, read_table, table_from_columns

__all__ = [
    "SPLITS",
    "GraphFileError",
    "LabelledGraph",
    "Table",
    "from_edge_index",
    "from_networkx",
    "from_tables",
    "read_graph_files",
    "read_table",
    "table_from_columns",
    "to_graphs_tuple",
    "write_tables",
]

