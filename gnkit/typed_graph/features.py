"""Feature dicts in typed layers: the array a layer reads, and its result written back.

A set's features may be one array or a dict of arrays (`from_hetero_data` keeps PyG's `x`,
`y`, `edge_attr`, ... by name). A typed layer reads one array per set: with a feature key
(`node_feature_key='x'`) it reads a dict's entry under that key and writes its new features
back under the same key, keeping the other entries (a label `y` rides along); a set holding an
array is read and replaced as an array. A dict without a key given raises a `ValueError` that
names the set and its keys, except for edge features of layers that may not read them
(`HeteroConv` passes those on as they are). Jittable (dict keys are static).
"""

from __future__ import annotations

from collections.abc import Mapping

from gnkit.typed_graph.types import TypedGraph

_ARGUMENTS = {"node": "node_feature_key", "edge": "edge_feature_key"}


def _read(features, key: str | None, kind: str, where: str, layer: str, required: bool):
    if not isinstance(features, Mapping) or (key is None and not required):
        return features
    argument = _ARGUMENTS[kind]
    if key is None:
        raise ValueError(
            f"{layer}: {kind} set {where} holds its features as a dict with keys "
            f"{sorted(features)}; the layer reads one array per set: pass {argument}=<the key "
            f"of that array>, e.g. {argument}={sorted(features)[0]!r}."
        )
    if key not in features:
        raise ValueError(
            f"{layer}: {argument}={key!r}, but the features of {kind} set {where} have the keys "
            f"{sorted(features)}."
        )
    return features[key]


def _write(original, key: str | None, new):
    if key is not None and isinstance(original, Mapping):
        return {**original, key: new}
    return new


def select_features(graph: TypedGraph, layer: str, node_key: str | None = None,
                    edge_key: str | None = None, edges: str = "read") -> TypedGraph:
    """`graph` with every node and edge set's features as the one array a layer reads.

    Args:
      graph: the typed graph, features arrays `[rows, F]`, dicts of them, or None.
      layer: the layer's name, for the errors.
      node_key: the key of the array in node feature dicts, or None where there are none.
      edge_key: the key of the array in edge feature dicts, or None where there are none.
      edges: `'read'` (the layer reads edge features: a dict needs `edge_key`), `'maybe'` (a
        dict without `edge_key` is passed on as it is) or `'ignored'` (edges are left alone).

    Returns:
      The graph with dict features replaced by their array under the key.
    """
    # In sorted order, as `jit` sees the sets: the same set named with or without it.
    nodes = {name: graph.nodes[name]._replace(features=_read(
        graph.nodes[name].features, node_key, "node", repr(name), layer, True))
        for name in sorted(graph.nodes)}
    selected = dict(graph.edges)
    if edges != "ignored":
        selected = {key: graph.edges[key]._replace(features=_read(
            graph.edges[key].features, edge_key, "edge", str(key), layer, edges == "read"))
            for key in sorted(graph.edges)}
    return graph._replace(nodes={name: nodes[name] for name in graph.nodes},
                          edges={key: selected[key] for key in graph.edges})


def restore_features(original: TypedGraph, updated: TypedGraph, node_key: str | None = None,
                     edge_key: str | None = None) -> TypedGraph:
    """`updated` (a layer's output on `select_features(original, ...)`) with each set's new
    array written back into `original`'s feature dict under its key, other entries kept.

    Returns:
      The typed graph as the layer returns it: dict features stay dicts.
    """
    nodes = {name: node_set._replace(features=_write(original.nodes[name].features, node_key,
                                                     node_set.features))
             for name, node_set in updated.nodes.items()}
    edges = {key: edge_set._replace(features=_write(original.edges[key].features, edge_key,
                                                    edge_set.features))
             for key, edge_set in updated.edges.items()}
    return updated._replace(nodes=nodes, edges=edges)
