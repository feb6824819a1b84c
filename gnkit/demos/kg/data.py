"""The knowledge-graph demo's data: the graph `--data` names, its pair name in a run directory,
and the training triples as an R-GCN input graph. Host."""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np

from gnkit import experiments
from gnkit import kg as kgraph
from gnkit.graph import GraphsTuple


def load_data(data: str) -> kgraph.KnowledgeGraph:
    """The graph `--data` names; a bad file or directory is a one-line `UsageError`."""
    try:
        return kgraph.load_graph(data)
    except kgraph.TripleFileError as error:
        raise experiments.UsageError(f"--data {error}") from None


def pair_name(data: str, model: str) -> str:
    """The folder and file stem of one (graph, model) in a run directory: `umls_rotate`."""
    return f"{Path(str(data)).name}_{model}"


def encoder_graph(graph: kgraph.KnowledgeGraph) -> GraphsTuple:
    """The training triples as a graph for the R-GCN: edges head -> tail with the relation id,
    and tail -> head with `relation + num_relations` (inverse relations)."""
    heads, relations, tails = np.asarray(graph.train).T
    senders = np.concatenate([heads, tails])
    receivers = np.concatenate([tails, heads])
    edge_relations = np.concatenate([relations, relations + graph.num_relations])
    return GraphsTuple(
        nodes=None,
        edges=jnp.asarray(edge_relations, jnp.int32),
        senders=jnp.asarray(senders, jnp.int32),
        receivers=jnp.asarray(receivers, jnp.int32),
        globals=None,
        n_node=jnp.asarray([graph.num_entities]),
        n_edge=jnp.asarray([len(senders)]),
    )
