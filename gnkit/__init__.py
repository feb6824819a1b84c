"""gnkit: graph networks in JAX."""

from gnkit.graph import (
    ArrayTree,
    GraphsTuple,
    edge_graph_index,
    node_graph_index,
    num_edges,
    num_graphs,
    num_nodes,
)

__version__ = "0.1.0"

__all__ = [
    "ArrayTree",
    "GraphsTuple",
    "edge_graph_index",
    "node_graph_index",
    "num_edges",
    "num_graphs",
    "num_nodes",
]
