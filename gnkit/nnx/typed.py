"""NNX twins of `gnkit.nn.typed`: `TypedGraphNetwork`, `HeteroConv` / `to_hetero`, `TypedRGCN`.

The linen modules read the schema (which node and edge sets exist) from the graph they are
applied to; an NNX module creates its parameters at construction, so these twins take the
schema and the input widths instead: `in_node_features` (`{node set: width}`), `edge_sets`
(the edge set keys), and where used `in_edge_features` (`{EdgeSetKey: width}`) and
`in_context_features`. `sample_typed_graph` builds the one-node-per-set graph that initialises
the linen twin. Weights move both ways with `from_linen` / `to_linen_variables`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import flax.linen as nn
import jax.numpy as jnp
from flax import nnx

from gnkit.nn import typed
from gnkit.nnx.twin import Twin
from gnkit.typed_graph.types import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph


def sample_typed_graph(
    in_node_features: Mapping[str, int],
    edge_sets: Iterable[EdgeSetKey],
    in_edge_features: Mapping[EdgeSetKey, int] | None = None,
    in_context_features: int | None = None,
) -> TypedGraph:
    """A typed graph of one graph with one node per node set (zero features of the given
    widths) and one edge per edge set (node 0 to node 0; zero features where
    `in_edge_features` gives a width). The input that initialises a typed twin's linen module.

    Args:
      in_node_features: `{node set: feature width}`.
      edge_sets: the edge set keys; each must join node sets of `in_node_features`.
      in_edge_features: `{EdgeSetKey: feature width}` for edge sets with features, or None.
      in_context_features: the context's feature width, or None for no context features.

    Returns:
      A `TypedGraph` of one graph.
    """
    in_edge_features = dict(in_edge_features or {})
    one = jnp.ones((1,), jnp.int32)
    nodes = {name: NodeSet(one, jnp.zeros((1, width))) for name, width in in_node_features.items()}
    edges = {}
    for key in edge_sets:
        missing = [name for name in key.node_sets if name not in nodes]
        if missing:
            raise ValueError(f"edge set {key} joins node sets {missing} that in_node_features "
                             f"does not give; it gives {sorted(nodes)}.")
        width = in_edge_features.get(key)
        features = None if width is None else jnp.zeros((1, width))
        edges[key] = EdgeSet(one, jnp.zeros((1,), jnp.int32), jnp.zeros((1,), jnp.int32),
                             features)
    context = None if in_context_features is None else jnp.zeros((1, in_context_features))
    return TypedGraph(Context(one, context), nodes, edges)


class _TypedLayer(Twin):
    def __call__(self, graph: TypedGraph) -> TypedGraph:
        """The typed graph with the layer's new features. Jittable under `nnx.jit`."""
        return self._apply(graph)


class TypedGraphNetwork(_TypedLayer, linen=typed.TypedGraphNetwork):
    """A typed graph-network step (`gnkit.nn.TypedGraphNetwork`) for the given schema.

    `**options` are the linen twin's other attributes (`context_features`, `use_sent_edges`,
    `aggregator`, `activation`, `node_feature_key`, `edge_feature_key`).

    Args:
      in_node_features: `{node set: feature width}`.
      edge_sets: the edge set keys of the schema.
      edge_features: the edge MLPs' layer widths.
      node_features: the node MLPs' layer widths.
      rngs: the `nnx.Rngs` the parameters are drawn from.
      in_edge_features: `{EdgeSetKey: width}` of edge sets with features, or None.
      in_context_features: the context's width, or None.
    """

    def __init__(
        self,
        in_node_features: Mapping[str, int],
        edge_sets: Iterable[EdgeSetKey],
        edge_features: Sequence[int],
        node_features: Sequence[int],
        *,
        rngs: nnx.Rngs,
        in_edge_features: Mapping[EdgeSetKey, int] | None = None,
        in_context_features: int | None = None,
        **options,
    ):
        sample = sample_typed_graph(in_node_features, edge_sets, in_edge_features,
                                    in_context_features)
        self._build(typed.TypedGraphNetwork,
                    dict(edge_features=tuple(edge_features), node_features=tuple(node_features),
                         **options), rngs, (sample,))


class HeteroConv(_TypedLayer, linen=typed.HeteroConv):
    """Linen layers per edge set, combined per receiving node set (`gnkit.nn.HeteroConv`).

    `layers` maps edge set names (as `gnkit.nn.HeteroConv`) to linen layer specs such as
    `gnkit.nn.GraphSAGE(16)`; their parameters are created here, for the given schema.

    Args:
      in_node_features: `{node set: feature width}`.
      edge_sets: the edge set keys of the schema.
      layers: `{edge set name: linen layer}`.
      rngs: the `nnx.Rngs` the parameters are drawn from.
      aggregate: 'sum', 'mean' or 'max' per receiving node set.
      in_edge_features: `{EdgeSetKey: width}` of edge sets with features, or None.
      node_feature_key: the key of the array to read in node feature dicts (None: no dicts).
      edge_feature_key: the key of the array to read in edge feature dicts (None: no dicts).
    """

    def __init__(
        self,
        in_node_features: Mapping[str, int],
        edge_sets: Iterable[EdgeSetKey],
        layers: Mapping[str, nn.Module],
        *,
        rngs: nnx.Rngs,
        aggregate: str = "sum",
        in_edge_features: Mapping[EdgeSetKey, int] | None = None,
        node_feature_key: str | None = None,
        edge_feature_key: str | None = None,
    ):
        sample = sample_typed_graph(in_node_features, edge_sets, in_edge_features)
        options = dict(layers=layers, aggregate=aggregate, node_feature_key=node_feature_key,
                       edge_feature_key=edge_feature_key)
        self._build(typed.HeteroConv, options, rngs, (sample,))


def to_hetero(
    layer: nn.Module | Twin,
    in_node_features: Mapping[str, int],
    edge_sets: Iterable[EdgeSetKey],
    *,
    rngs: nnx.Rngs,
    aggregate: str = "sum",
    in_edge_features: Mapping[EdgeSetKey, int] | None = None,
    node_feature_key: str | None = None,
    edge_feature_key: str | None = None,
) -> HeteroConv:
    """A typed `HeteroConv` with a freshly initialised copy of `layer` per edge set.

    `layer` is a linen layer spec (`gnkit.nn.GraphSAGE(16)`) or a `gnkit.nnx` twin, whose
    architecture (not its weights) is copied, as `gnkit.nn.to_hetero`.

    Args:
      layer: the homogeneous layer spec.
      in_node_features: `{node set: feature width}`.
      edge_sets: the edge set keys of the schema; each gets a copy of `layer`.
      rngs: the `nnx.Rngs` the parameters are drawn from.
      aggregate: 'sum', 'mean' or 'max' per receiving node set.
      in_edge_features: `{EdgeSetKey: width}` of edge sets with features, or None.
      node_feature_key: the key of the array to read in node feature dicts (None: no dicts).
      edge_feature_key: the key of the array to read in edge feature dicts (None: no dicts).

    Returns:
      A `HeteroConv` twin.
    """
    spec = layer.linen_module if isinstance(layer, Twin) else layer
    keys = list(edge_sets)
    linen = typed.to_hetero(spec, keys, aggregate)
    return HeteroConv(in_node_features, keys, dict(linen.layers), rngs=rngs, aggregate=aggregate,
                      in_edge_features=in_edge_features, node_feature_key=node_feature_key,
                      edge_feature_key=edge_feature_key)


class TypedRGCN(_TypedLayer, linen=typed.TypedRGCN):
    """R-GCN over edge sets (`gnkit.nn.TypedRGCN`) for the given schema: node set `t` maps
    `[N_t, in_node_features[t]] -> [N_t, features]`; `**options` are the linen twin's other
    attributes (`self_loop`, `normalization`, `node_feature_key`).

    Args:
      in_node_features: `{node set: feature width}`.
      edge_sets: the edge set keys of the schema.
      features: the output width.
      rngs: the `nnx.Rngs` the parameters are drawn from.
    """

    def __init__(
        self,
        in_node_features: Mapping[str, int],
        edge_sets: Iterable[EdgeSetKey],
        features: int,
        *,
        rngs: nnx.Rngs,
        **options,
    ):
        sample = sample_typed_graph(in_node_features, edge_sets)
        self._build(typed.TypedRGCN, dict(features=features, **options), rngs, (sample,))
