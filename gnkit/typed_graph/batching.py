"""Batch and unbatch typed graphs, per set. Host-only (NumPy).

Batching concatenates every set's rows graph after graph and offsets each edge set's senders
and receivers by the rows of their own node sets that come before; unbatching undoes it. All
graphs of a batch must have the same node sets, edge sets and feature structure.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from gnkit.typed_graph.types import Context, EdgeSet, NodeSet, TypedGraph

tree_map = jax.tree_util.tree_map


def _concat(parts):
    """Concatenate matching trees of arrays (or Nones) along the leading axis."""
    return tree_map(lambda *leaves: np.concatenate([np.asarray(x) for x in leaves]), *parts)


def _check_same_sets(graphs: Sequence[TypedGraph]) -> None:
    first = graphs[0]
    for index, graph in enumerate(graphs[1:], start=1):
        if set(graph.nodes) != set(first.nodes) or set(graph.edges) != set(first.edges):
            raise ValueError(
                f"graphs[{index}] has node sets {sorted(graph.nodes)} and edge sets "
                f"{sorted(graph.edges)}; graphs[0] has {sorted(first.nodes)} and "
                f"{sorted(first.edges)}. A batch needs the same sets in every graph."
            )


def batch(graphs: Sequence[TypedGraph]) -> TypedGraph:
    """One `TypedGraph` holding every graph of `graphs`, in order. Host-only (NumPy).

    Each input may itself hold several graphs. Per node set, features, `time`, `global_id` and
    `n_node` are concatenated; per edge set likewise, with senders (receivers) offset by the
    rows of the sender (receiver) node set in the graphs before. Raises `ValueError` when the
    graphs' sets differ.

    Example:
        >>> import numpy as np
        >>> from gnkit import typed_graph as tg
        >>> one = tg.TypedGraph(
        ...     tg.Context(np.array([1])), {"a": tg.NodeSet(np.array([2]), np.zeros((2, 1)))},
        ...     {tg.EdgeSetKey("e", ("a", "a")): tg.EdgeSet(np.array([1]), np.array([0]),
        ...                                                  np.array([1]))})
        >>> both = tg.batch([one, one])
        >>> both.edges[tg.EdgeSetKey("e", ("a", "a"))].senders
        array([0, 2])
    """
    if not graphs:
        raise ValueError("batch needs at least one graph.")
    _check_same_sets(graphs)
    nodes = {}
    for name in graphs[0].nodes:
        sets = [graph.nodes[name] for graph in graphs]
        nodes[name] = NodeSet(
            n_node=_concat([s.n_node for s in sets]),
            features=_concat([s.features for s in sets]),
            time=_concat([s.time for s in sets]),
            global_id=_concat([s.global_id for s in sets]),
        )
    edges = {}
    for key in graphs[0].edges:
        sender_set, receiver_set = key.node_sets
        senders, receivers = [], []
        sender_offset = receiver_offset = 0
        for graph in graphs:
            edge_set = graph.edges[key]
            senders.append(np.asarray(edge_set.senders) + sender_offset)
            receivers.append(np.asarray(edge_set.receivers) + receiver_offset)
            sender_offset += int(np.sum(graph.nodes[sender_set].n_node))
            receiver_offset += int(np.sum(graph.nodes[receiver_set].n_node))
        sets = [graph.edges[key] for graph in graphs]
        edges[key] = EdgeSet(
            n_edge=_concat([s.n_edge for s in sets]),
            senders=np.concatenate(senders),
            receivers=np.concatenate(receivers),
            features=_concat([s.features for s in sets]),
            time=_concat([s.time for s in sets]),
        )
    context = Context(
        n_graph=_concat([graph.context.n_graph for graph in graphs]),
        features=_concat([graph.context.features for graph in graphs]),
    )
    return TypedGraph(context=context, nodes=nodes, edges=edges)


def _slice_rows(tree, start: int, stop: int):
    return tree_map(lambda leaf: np.asarray(leaf)[start:stop], tree)


def _offsets(counts) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(counts))]).astype(np.int64)


def unbatch(graph: TypedGraph) -> list[TypedGraph]:
    """The graphs of a batch, one `TypedGraph` each, indices local again. Host-only (NumPy).

    The inverse of `batch`: `unbatch(batch(graphs))` equals `graphs` when each holds one
    graph. A padded batch unbatches into its real graphs, then the padding graph(s); use
    `unpad` first to drop them.
    """
    node_offsets = {name: _offsets(s.n_node) for name, s in graph.nodes.items()}
    edge_offsets = {key: _offsets(s.n_edge) for key, s in graph.edges.items()}
    graphs = []
    for index in range(graph.num_graphs):
        nodes = {}
        for name, node_set in graph.nodes.items():
            start, stop = node_offsets[name][index : index + 2]
            nodes[name] = NodeSet(
                n_node=np.asarray(node_set.n_node)[index : index + 1],
                features=_slice_rows(node_set.features, start, stop),
                time=_slice_rows(node_set.time, start, stop),
                global_id=_slice_rows(node_set.global_id, start, stop),
            )
        edges = {}
        for key, edge_set in graph.edges.items():
            start, stop = edge_offsets[key][index : index + 2]
            sender_set, receiver_set = key.node_sets
            edges[key] = EdgeSet(
                n_edge=np.asarray(edge_set.n_edge)[index : index + 1],
                senders=np.asarray(edge_set.senders)[start:stop]
                - node_offsets[sender_set][index],
                receivers=np.asarray(edge_set.receivers)[start:stop]
                - node_offsets[receiver_set][index],
                features=_slice_rows(edge_set.features, start, stop),
                time=_slice_rows(edge_set.time, start, stop),
            )
        context = Context(
            n_graph=np.asarray(graph.context.n_graph)[index : index + 1],
            features=_slice_rows(graph.context.features, index, index + 1),
        )
        graphs.append(TypedGraph(context=context, nodes=nodes, edges=edges))
    return graphs
