"""Conversions between `TypedGraph` and `GraphsTuple`, PyG's `HeteroData` and networkx.

A `GraphsTuple` is a typed graph with one node set and one edge set; the conversions keep the
batch (counts per graph). `HeteroData` and networkx graphs hold one graph, so those conversions
take and give typed graphs of one graph (`unbatch` a batch first). Host-only (NumPy); torch and
torch_geometric (the `pyg` extra) and networkx (the `networkx` extra) are imported on use.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.typed_graph.types import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph

tree_map = jax.tree_util.tree_map


def from_graphs_tuple(
    graph: GraphsTuple, node_set: str = "nodes", edge_set: str = "edges"
) -> TypedGraph:
    """A `GraphsTuple` as a typed graph of one node set and one edge set. Host or traced.

    `nodes` become the features of node set `node_set`, `edges` those of edge set
    `EdgeSetKey(edge_set, (node_set, node_set))`, `globals` the context features; counts and
    indices are kept. A graph without senders gets no edge set.
    """
    n_graph = np.ones(np.shape(graph.n_node)[0], np.int32)
    nodes = {node_set: NodeSet(n_node=graph.n_node, features=graph.nodes)}
    edges = {}
    if graph.senders is not None:
        key = EdgeSetKey(edge_set, (node_set, node_set))
        edges[key] = EdgeSet(graph.n_edge, graph.senders, graph.receivers, graph.edges)
    return TypedGraph(Context(n_graph, graph.globals), nodes, edges)


def to_graphs_tuple(graph: TypedGraph) -> GraphsTuple:
    """A typed graph of one node set (and at most one edge set, within it) as a `GraphsTuple`.

    The inverse of `from_graphs_tuple`. Raises `ValueError` for more sets, or for an edge set
    between different node sets.
    """
    if len(graph.nodes) != 1 or len(graph.edges) > 1:
        raise ValueError(
            f"to_graphs_tuple needs one node set and at most one edge set; found node sets "
            f"{sorted(graph.nodes)} and edge sets {sorted(graph.edges)}."
        )
    (name, node_set), = graph.nodes.items()
    if not graph.edges:
        empty = np.zeros(0, np.int32)
        n_edge = np.zeros_like(np.asarray(node_set.n_node))
        return GraphsTuple(node_set.features, None, empty, empty, graph.context.features,
                           node_set.n_node, n_edge)
    (key, edge_set), = graph.edges.items()
    if key.node_sets != (name, name):
        raise ValueError(f"to_graphs_tuple: edge set {key} does not stay in node set {name!r}.")
    return GraphsTuple(
        nodes=node_set.features,
        edges=edge_set.features,
        receivers=edge_set.receivers,
        senders=edge_set.senders,
        globals=graph.context.features,
        n_node=node_set.n_node,
        n_edge=edge_set.n_edge,
    )


def _single_graph(graph: TypedGraph, caller: str) -> None:
    if graph.num_graphs != 1:
        raise ValueError(
            f"{caller} converts one graph; this TypedGraph holds {graph.num_graphs}. Use "
            "gnkit.typed_graph.unbatch (and unpad) first."
        )


def _import_torch():
    try:
        import torch
        import torch_geometric.data
    except ImportError as error:
        raise ImportError(
            "the HeteroData conversions need torch and torch_geometric: pip install "
            "'gnkit[pyg]'"
        ) from error
    return torch, torch_geometric.data


_NODE_SPECIAL = {"time": "time", "n_id": "global_id"}


def from_hetero_data(data) -> TypedGraph:
    """A PyG `HeteroData` as a typed graph of one graph. Host-only; needs torch_geometric.

    Node type `t` becomes node set `t`: its tensors of one row per node become a features dict
    (`x`, `y`, ...), `time` becomes `time` (int32) and `n_id` `global_id`. Edge type
    `(src, rel, dst)` becomes `EdgeSetKey(rel, (src, dst))`: `edge_index` the senders and
    receivers, `time` the edge times, its other per-edge tensors (`edge_attr`, ...) a features
    dict. A set without such tensors has features None.
    """
    nodes = {}
    for node_type in data.node_types:
        store = data[node_type]
        count = int(store.num_nodes)
        features, extras = {}, {}
        for attribute, value in store.items():
            if not hasattr(value, "numpy") or value.dim() == 0 or value.shape[0] != count:
                continue
            array = value.detach().cpu().numpy()
            if attribute in _NODE_SPECIAL:
                extras[_NODE_SPECIAL[attribute]] = array
            else:
                features[attribute] = array
        nodes[node_type] = NodeSet(
            n_node=np.array([count], np.int32),
            features=features or None,
            time=extras["time"].astype(np.int32) if "time" in extras else None,
            global_id=extras.get("global_id"),
        )
    edges = {}
    for edge_type in data.edge_types:
        source, relation, target = edge_type
        store = data[edge_type]
        edge_index = store.edge_index.detach().cpu().numpy()
        count = edge_index.shape[1]
        features, time = {}, None
        for attribute, value in store.items():
            if attribute == "edge_index" or not hasattr(value, "numpy") or value.dim() == 0:
                continue
            if value.shape[0] != count:
                continue
            array = value.detach().cpu().numpy()
            if attribute == "time":
                time = array.astype(np.int32)
            else:
                features[attribute] = array
        edges[EdgeSetKey(relation, (source, target))] = EdgeSet(
            n_edge=np.array([count], np.int32),
            senders=edge_index[0],
            receivers=edge_index[1],
            features=features or None,
            time=time,
        )
    return TypedGraph(Context(np.ones(1, np.int32)), nodes, edges)


def _feature_items(features, default: str) -> Mapping[str, np.ndarray]:
    if features is None:
        return {}
    if isinstance(features, Mapping):
        return {str(name): np.asarray(value) for name, value in features.items()}
    return {default: np.asarray(features)}


def to_hetero_data(graph: TypedGraph):
    """A typed graph of one graph as a PyG `HeteroData`. Host-only; needs torch_geometric.

    The inverse of `from_hetero_data`: dict features become attributes by their keys, an array
    becomes `x` (nodes) or `edge_attr` (edges); `time` and `global_id` become `time` and
    `n_id`; edge set `EdgeSetKey(rel, (src, dst))` becomes edge type `(src, rel, dst)`.
    """
    _single_graph(graph, "to_hetero_data")
    torch, pyg_data = _import_torch()
    data = pyg_data.HeteroData()
    for name, node_set in graph.nodes.items():
        store = data[name]
        store.num_nodes = int(np.sum(np.asarray(node_set.n_node)))
        for attribute, value in _feature_items(node_set.features, "x").items():
            store[attribute] = torch.from_numpy(np.array(value))
        if node_set.time is not None:
            store.time = torch.from_numpy(np.asarray(node_set.time, np.int64))
        if node_set.global_id is not None:
            store.n_id = torch.from_numpy(np.asarray(node_set.global_id, np.int64))
    for key, edge_set in graph.edges.items():
        store = data[key.node_sets[0], key.name, key.node_sets[1]]
        index = np.stack([np.asarray(edge_set.senders), np.asarray(edge_set.receivers)])
        store.edge_index = torch.from_numpy(index.astype(np.int64))
        for attribute, value in _feature_items(edge_set.features, "edge_attr").items():
            store[attribute] = torch.from_numpy(np.array(value))
        if edge_set.time is not None:
            store.time = torch.from_numpy(np.asarray(edge_set.time, np.int64))
    return data


def _import_networkx():
    try:
        import networkx
    except ImportError as error:
        raise ImportError(
            "gnkit's networkx conversion needs networkx: pip install 'gnkit[networkx]'."
        ) from error
    return networkx


def _row(tree, index: int):
    return tree_map(lambda leaf: np.asarray(leaf)[index], tree)


def to_networkx(graph: TypedGraph):
    """A typed graph of one graph as a `networkx.MultiDiGraph` with type attributes. Host-only.

    Node `(set name, row)` gets attributes `node_set` and, where present, `features` (its row:
    an array or a dict of arrays), `time` and `global_id`; each edge gets `edge_set` (its name),
    `sender_set`, `receiver_set`, `row` (its row in the edge set) and its `features` and
    `time`. Context features go to
    `nx_graph.graph['features']`. Needs networkx (the `networkx` extra).
    """
    _single_graph(graph, "to_networkx")
    networkx = _import_networkx()
    nx_graph = networkx.MultiDiGraph()
    if graph.context.features is not None:
        nx_graph.graph["features"] = _row(graph.context.features, 0)
    for name, node_set in graph.nodes.items():
        for row in range(graph.num_nodes(name)):
            attributes = {"node_set": name}
            for field in ("features", "time", "global_id"):
                if getattr(node_set, field) is not None:
                    attributes[field] = _row(getattr(node_set, field), row)
            nx_graph.add_node((name, row), **attributes)
    for key, edge_set in graph.edges.items():
        sender_set, receiver_set = key.node_sets
        senders, receivers = np.asarray(edge_set.senders), np.asarray(edge_set.receivers)
        for row in range(senders.shape[0]):
            attributes = {"edge_set": key.name, "sender_set": sender_set,
                          "receiver_set": receiver_set, "row": row}
            for field in ("features", "time"):
                if getattr(edge_set, field) is not None:
                    attributes[field] = _row(getattr(edge_set, field), row)
            nx_graph.add_edge((sender_set, int(senders[row])),
                              (receiver_set, int(receivers[row])), **attributes)
    return nx_graph


def _stacked(rows: list, where: str):
    present = [row is not None for row in rows]
    if not any(present):
        return None
    if not all(present):
        raise ValueError(f"{where}: some elements have it and some do not.")
    return tree_map(lambda *leaves: np.stack(leaves), *rows)


def from_networkx(nx_graph, node_set_key: str = "node_set", edge_set_key: str = "edge_set"):
    """A typed graph of one graph from a networkx (multi)graph with type attributes. Host-only.

    Each node's `node_set_key` attribute names its node set; rows follow the order of
    `nx_graph.nodes`. Each edge's `edge_set_key` attribute names its edge set, keyed with the
    sets of its two ends; edges of a set are ordered by their `row` attribute when all have
    one (as `to_networkx` writes), else as `nx_graph.edges` lists them. The `features`,
    `time` and `global_id` attributes, when every element of a set has them, are stacked (time
    as int32). `nx_graph.graph['features']` becomes the context features. The inverse of
    `to_networkx`. Raises `ValueError` naming a node or edge without its type attribute.
    """
    rows: dict[str, list] = {}
    position = {}
    for node, attributes in nx_graph.nodes(data=True):
        if node_set_key not in attributes:
            raise ValueError(f"node {node!r} has no {node_set_key!r} attribute.")
        members = rows.setdefault(attributes[node_set_key], [])
        position[node] = (attributes[node_set_key], len(members))
        members.append(attributes)
    nodes = {}
    for name, members in rows.items():
        where = f"node set {name!r}"
        time = _stacked([m.get("time") for m in members], f"{where} time")
        nodes[name] = NodeSet(
            n_node=np.array([len(members)], np.int32),
            features=_stacked([m.get("features") for m in members], f"{where} features"),
            time=None if time is None else time.astype(np.int32),
            global_id=_stacked([m.get("global_id") for m in members], f"{where} global_id"),
        )
    grouped: dict[EdgeSetKey, list] = {}
    for sender, receiver, attributes in nx_graph.edges(data=True):
        if edge_set_key not in attributes:
            raise ValueError(f"edge {sender!r} -> {receiver!r} has no {edge_set_key!r} attribute.")
        sender_set, sender_row = position[sender]
        receiver_set, receiver_row = position[receiver]
        key = EdgeSetKey(attributes[edge_set_key], (sender_set, receiver_set))
        grouped.setdefault(key, []).append((sender_row, receiver_row, attributes))
    edges = {}
    for key, members in grouped.items():
        if all("row" in m[2] for m in members):
            members = sorted(members, key=lambda m: m[2]["row"])
        where = f"edge set {key}"
        time = _stacked([m[2].get("time") for m in members], f"{where} time")
        edges[key] = EdgeSet(
            n_edge=np.array([len(members)], np.int32),
            senders=np.array([m[0] for m in members], np.int32),
            receivers=np.array([m[1] for m in members], np.int32),
            features=_stacked([m[2].get("features") for m in members], f"{where} features"),
            time=None if time is None else time.astype(np.int32),
        )
    features = nx_graph.graph.get("features")
    features = None if features is None else tree_map(lambda x: np.asarray(x)[None], features)
    context = Context(np.ones(1, np.int32), features)
    return TypedGraph(context, nodes, edges)
