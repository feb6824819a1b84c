"""The typed graph pytree: a context, node sets by name, edge sets by `EdgeSetKey`.

GraphCast's layout. Every array has a leading flat batch axis as in a `GraphsTuple`: node set
arrays one row per node of that set over all graphs of the batch, edge set arrays one row per
edge of that set, context arrays one row per graph. Counts (`n_node`, `n_edge`, `n_graph`) are
`[G]`, one entry per graph. Senders index rows of the edge set's sender node set and receivers
rows of its receiver node set. The set names and keys are dict keys, so they are part of the
pytree structure: static under `jit` (a new set of names traces anew), while the arrays are
traced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import jax
import numpy as np

from gnkit.graph import ArrayTree


class Context(NamedTuple):
    """Per-graph data: `n_graph` int `[G]` (ones; its length is the number of graphs, even when
    no set holds a row) and `features`, an ArrayTree of leaves `[G, ...]` or None."""

    n_graph: jax.Array
    features: ArrayTree | None = None


class NodeSet(NamedTuple):
    """One set of nodes of the same type.

    Attributes:
      n_node: int `[G]`, this set's nodes per graph.
      features: ArrayTree of leaves `[N, ...]` (an array or a dict of arrays), or None.
      time: int32 `[N]`, each node's timestamp, or None.
      global_id: int `[N]`, each node's id in the data set it was taken from, or None.
    """

    n_node: jax.Array
    features: ArrayTree | None = None
    time: jax.Array | None = None
    global_id: jax.Array | None = None


class EdgeSet(NamedTuple):
    """One set of edges of the same type, from one node set to one node set.

    Attributes:
      n_edge: int `[G]`, this set's edges per graph.
      senders: int `[E]`, rows of the sender node set.
      receivers: int `[E]`, rows of the receiver node set.
      features: ArrayTree of leaves `[E, ...]`, or None.
      time: int32 `[E]`, each edge's timestamp, or None.
    """

    n_edge: jax.Array
    senders: jax.Array
    receivers: jax.Array
    features: ArrayTree | None = None
    time: jax.Array | None = None


class EdgeSetKey(NamedTuple):
    """The key of an edge set: its `name` and `node_sets`, the (sender set, receiver set) names."""

    name: str
    node_sets: tuple[str, str]


class TypedGraph(NamedTuple):
    """A batch of graphs with typed nodes and edges, in GraphCast's layout.

    - context: `Context`, per-graph counts and features.
    - nodes: `{node set name: NodeSet}`.
    - edges: `{EdgeSetKey(name, (sender set, receiver set)): EdgeSet}`.

    A pytree (NamedTuples and dicts): `jit`, `vmap`, `grad` and `tree_map` see the arrays, the
    names are structure. Edge set names may repeat between different pairs of node sets (as in
    PyTorch Geometric's `HeteroData`); anything that takes an edge set by its bare name then
    needs the name to be unique.

    Example:
        Two papers citing each other, written by one author:

        >>> import numpy as np
        >>> from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph
        >>> graph = TypedGraph(
        ...     context=Context(n_graph=np.array([1])),
        ...     nodes={"paper": NodeSet(np.array([2]), np.ones((2, 3))),
        ...            "author": NodeSet(np.array([1]), np.ones((1, 2)))},
        ...     edges={EdgeSetKey("cites", ("paper", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 1]), np.array([1, 0])),
        ...            EdgeSetKey("writes", ("author", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))})
        >>> graph.edge_key_by_name("writes")
        EdgeSetKey(name='writes', node_sets=('author', 'paper'))
        >>> graph.num_graphs, graph.num_nodes("paper"), graph.num_edges("cites")
        (1, 2, 2)
    """

    context: Context
    nodes: Mapping[str, NodeSet]
    edges: Mapping[EdgeSetKey, EdgeSet]

    def edge_key_by_name(self, name: str) -> EdgeSetKey:
        """The key of the one edge set called `name`; `KeyError` listing the keys otherwise."""
        return resolve_edge_key(self.edges, name)

    def edge_set_by_name(self, name: str) -> EdgeSet:
        """The one edge set called `name` (see `edge_key_by_name`)."""
        return self.edges[self.edge_key_by_name(name)]

    @property
    def num_graphs(self) -> int:
        """The number of graphs `G` (static)."""
        return int(np.shape(self.context.n_graph)[0])

    def num_nodes(self, node_set: str) -> int:
        """The number of rows of a node set (static)."""
        return node_rows(self.nodes[node_set])

    def num_edges(self, edge_set: EdgeSetKey | str) -> int:
        """The number of rows of an edge set, given by key or unique name (static)."""
        return int(np.shape(self.edges[resolve_edge_key(self.edges, edge_set)].senders)[0])


def node_rows(node_set: NodeSet) -> int:
    """Rows of a node set (static): from its features, time or ids, else (concrete counts
    only) `sum(n_node)`."""
    for part in (node_set.features, node_set.time, node_set.global_id):
        leaves = jax.tree_util.tree_leaves(part)
        if leaves:
            return int(np.shape(leaves[0])[0])
    if isinstance(node_set.n_node, jax.core.Tracer):
        raise ValueError(
            "a node set without features, time or global_id has no static row count under a "
            "transformation; give it features (zeros of shape [N, 0] will do)."
        )
    return int(np.sum(np.asarray(node_set.n_node)))


def resolve_edge_key(edges: Mapping[EdgeSetKey, object], key: EdgeSetKey | str) -> EdgeSetKey:
    """`key` itself when it is an `EdgeSetKey` of `edges`, else the one key named `key`.

    Raises `KeyError` naming the available keys when there is no such edge set, or when a bare
    name matches several edge sets.
    """
    if isinstance(key, EdgeSetKey):
        if key not in edges:
            raise KeyError(f"no edge set {key}; edge sets: {sorted(edges)}.")
        return key
    found = [candidate for candidate in edges if candidate.name == key]
    if len(found) != 1:
        problem = "no edge set" if not found else f"{len(found)} edge sets"
        raise KeyError(
            f"{problem} named {key!r}; edge sets: {sorted(edges)}. Give an EdgeSetKey when a "
            "name repeats."
        )
    return found[0]


def edge_keys_by(mapping: Mapping, edges: Mapping[EdgeSetKey, object], what: str) -> dict:
    """`mapping` with its keys (EdgeSetKeys or unique names) resolved to edge set keys.

    `what` names the argument in the error for a key that matches no edge set.
    """
    resolved = {}
    for key, value in mapping.items():
        try:
            resolved[resolve_edge_key(edges, key)] = value
        except KeyError as error:
            raise KeyError(f"{what}: {error.args[0]}") from None
    return resolved


def module_name(key: EdgeSetKey, keys) -> str:
    """A name for the parameters of edge set `key`: its name when unique among `keys`, else
    `'sender__name__receiver'`."""
    if sum(other.name == key.name for other in keys) == 1:
        return key.name
    return "__".join((key.node_sets[0], key.name, key.node_sets[1]))
