"""NNX twins of `gnkit.nn.graph_network`: `FactorisedDense`, `GraphNetwork`, `GraphIndependent`.

The layer sizes keep the linen twin's names (`edge_features`, `node_features`,
`global_features`: the MLPs' output sizes); the input widths are `in_edge_features`,
`in_node_features` and `in_global_features` (None: the graph has no such field).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import graph_network
from gnkit.nnx.twin import Twin, sample_graph


class FactorisedDense(Twin, linen=graph_network.FactorisedDense):
    """A Dense layer over a concatenation of gathered inputs, computed piece by piece
    (`gnkit.nn.FactorisedDense`).

    Called with `parts`, a sequence of `(table [R_k, F_k], index [M] or None)`, it returns
    `[M, features]`. Jittable.

    Args:
      in_features: the widths `F_k` of the parts' tables, in order.
      features: the output width.
      rngs: initialises the parameters.
      **options: the linen twin's other attributes (`factorised`, `use_bias`, ...).
    """

    def __init__(
        self, in_features: Sequence[int], features: int, *, rngs: nnx.Rngs, **options
    ):
        parts = [(jnp.zeros((1, width)), None) for width in in_features]
        self._build(graph_network.FactorisedDense, dict(features=features, **options), rngs,
                    (parts,))

    def __call__(
        self, parts, activation: Callable[[jax.Array], jax.Array] | None = None
    ) -> jax.Array:
        """`concat_k(table_k[index_k]) @ kernel + bias`, then `activation`: `[M, features]`."""
        return self._apply(parts, activation)


def _sample(in_node_features, in_edge_features, in_global_features) -> GraphsTuple:
    return sample_graph(nodes=in_node_features, edges=in_edge_features,
                        globals_=in_global_features)


class GraphNetwork(Twin, linen=graph_network.GraphNetwork):
    """A graph network with an MLP per update and a factorised first layer
    (`gnkit.nn.GraphNetwork`, same parameters and numbers).

    Args:
      edge_features, node_features, global_features: the layer sizes of the edge, node and
        global MLPs (None: no such update), as in the linen twin.
      in_node_features, in_edge_features, in_global_features: the input graph's feature widths
        (None: no such field).
      rngs: initialises the parameters.
      **options: the linen twin's other attributes (`aggregator`, `use_globals`, ...). An
        `aggregator` that is a `gnkit.nnx.LCMAggregation` becomes a submodule of that name.

    `__call__(graph)` returns the graph with the updated fields. Jittable.
    """

    def __init__(
        self,
        edge_features: Sequence[int] | None,
        node_features: Sequence[int] | None,
        global_features: Sequence[int] | None = None,
        *,
        in_node_features: int | None = None,
        in_edge_features: int | None = None,
        in_global_features: int | None = None,
        rngs: nnx.Rngs,
        **options,
    ):
        sizes = dict(edge_features=edge_features, node_features=node_features,
                     global_features=global_features)
        self._build(graph_network.GraphNetwork, {**sizes, **options}, rngs,
                    (_sample(in_node_features, in_edge_features, in_global_features),))

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with the updated edges, nodes and globals."""
        return self._apply(graph)


class GraphIndependent(Twin, linen=graph_network.GraphIndependent):
    """An MLP on each field on its own (`gnkit.nn.GraphIndependent`).

    Jittable.

    Args:
      edge_features: the edge MLP's layer sizes (None: edges unchanged).
      node_features: the node MLP's layer sizes (None: nodes unchanged).
      global_features: the global MLP's layer sizes (None: globals unchanged).
      in_node_features: the input graph's node width (None: no nodes).
      in_edge_features: its edge width (None: no edges).
      in_global_features: its global width (None: no globals).
      rngs: initialises the parameters.
      **options: the linen twin's MLP settings (`activation`, `activate_final`, `layer_norm`).
    """

    def __init__(
        self,
        edge_features: Sequence[int] | None = None,
        node_features: Sequence[int] | None = None,
        global_features: Sequence[int] | None = None,
        *,
        in_node_features: int | None = None,
        in_edge_features: int | None = None,
        in_global_features: int | None = None,
        rngs: nnx.Rngs,
        **options,
    ):
        sizes = dict(edge_features=edge_features, node_features=node_features,
                     global_features=global_features)
        self._build(graph_network.GraphIndependent, {**sizes, **options}, rngs,
                    (_sample(in_node_features, in_edge_features, in_global_features),))

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with each field through its MLP (fields without one unchanged)."""
        return self._apply(graph)
