"""NNX twins of the layers in `gnkit.nn.layers`: GCN, GAT, GATv2, GraphSAGE, GIN and GINE.

Each takes the input node width `in_features` and the linen twin's attributes; `__call__(graph)`
returns the graph with new node features, as the linen twin does. GraphSAGE, GAT and GATv2 also
take `in_features=(F_s, F_r)`, the sender and receiver widths of a bipartite graph
(`gnkit.convolutions.BipartiteNodes`), as PyTorch Geometric's `in_channels=(F_s, F_r)`. See
`gnkit.nn.layers` for the math and the PyTorch Geometric weight mapping.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
from flax import nnx

from gnkit.convolutions import BipartiteNodes
from gnkit.graph import GraphsTuple
from gnkit.nn import layers
from gnkit.nnx.twin import Twin, sample_graph


def _sample(in_features: int | tuple[int, int]) -> GraphsTuple:
    """The one-node graph of width `in_features`, or the bipartite one of widths `(F_s, F_r)`."""
    if isinstance(in_features, int):
        return sample_graph(nodes=in_features)
    sender_width, receiver_width = in_features
    return sample_graph()._replace(nodes=BipartiteNodes(jnp.zeros((1, sender_width)),
                                                        jnp.zeros((1, receiver_width))))


class _NodeLayer(Twin):
    """A layer mapping node features `[N, in_features]` to new node features."""

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with the layer's node features. Jittable under `nnx.jit`."""
        return self._apply(graph)


class GCN(_NodeLayer, linen=layers.GCN):
    """Graph convolution (`gnkit.nn.GCN`): nodes `[N, in_features] -> [N, features]`.

    Args:
      in_features: the input node width `F`.
      features: the output width.
      rngs: initialises the parameters.
      **options: `gnkit.nn.GCN`'s other attributes (`add_self_edges`, `convention`, ...).
    """

    def __init__(self, in_features: int, features: int, *, rngs: nnx.Rngs, **options):
        self._build(layers.GCN, dict(features=features, **options), rngs,
                    (sample_graph(nodes=in_features),))


class GAT(_NodeLayer, linen=layers.GAT):
    """Graph attention (`gnkit.nn.GAT`): nodes `[N, in_features] -> [N, num_heads * features]`
    (or `[N, features]` with `combine_heads='mean'`).

    Args:
      in_features: the input node width `F`, or the sender and receiver widths `(F_s, F_r)`
        of a bipartite graph.
      features: the width of each head.
      rngs: initialises the parameters.
      **options: `gnkit.nn.GAT`'s other attributes (`num_heads`, `combine_heads`, ...).
    """

    def __init__(
        self, in_features: int | tuple[int, int], features: int, *, rngs: nnx.Rngs, **options
    ):
        self._build(layers.GAT, dict(features=features, **options), rngs,
                    (_sample(in_features),))


class GATv2(_NodeLayer, linen=layers.GATv2):
    """GATv2 (`gnkit.nn.GATv2`): nodes `[N, in_features] -> [N, num_heads * features]` (or
    `[N, features]` with `combine_heads='mean'`).

    Args:
      in_features: the input node width `F`, or the sender and receiver widths `(F_s, F_r)`
        of a bipartite graph.
      features: the width of each head.
      rngs: initialises the parameters.
      **options: `gnkit.nn.GATv2`'s other attributes (`num_heads`, `share_weights`, ...).
    """

    def __init__(
        self, in_features: int | tuple[int, int], features: int, *, rngs: nnx.Rngs, **options
    ):
        self._build(layers.GATv2, dict(features=features, **options), rngs,
                    (_sample(in_features),))


class GraphSAGE(_NodeLayer, linen=layers.GraphSAGE):
    """GraphSAGE (`gnkit.nn.GraphSAGE`): nodes `[N, in_features] -> [N, features]`.

    Args:
      in_features: the input node width `F`, or the sender and receiver widths `(F_s, F_r)`
        of a bipartite graph.
      features: the output width.
      rngs: initialises the parameters.
      **options: `gnkit.nn.GraphSAGE`'s other attributes (`aggregator`, `project`, ...).
    """

    def __init__(
        self, in_features: int | tuple[int, int], features: int, *, rngs: nnx.Rngs, **options
    ):
        self._build(layers.GraphSAGE, dict(features=features, **options), rngs,
                    (_sample(in_features),))


class GIN(_NodeLayer, linen=layers.GIN):
    """Graph isomorphism layer (`gnkit.nn.GIN`): nodes `[N, in_features] -> [N, features[-1]]`.

    Args:
      in_features: the input node width `F`.
      features: the MLP's layer widths.
      rngs: initialises the parameters.
      **options: `gnkit.nn.GIN`'s other attributes (`epsilon`, `learn_epsilon`, ...).
    """

    def __init__(
        self, in_features: int, features: Sequence[int], *, rngs: nnx.Rngs, **options
    ):
        self._build(layers.GIN, dict(features=features, **options), rngs,
                    (sample_graph(nodes=in_features),))


class GINE(_NodeLayer, linen=layers.GINE):
    """GIN with edge features (`gnkit.nn.GINE`): nodes `[N, in_features] -> [N, features[-1]]`,
    edges `[E, in_edge_features]`.

    Args:
      in_features: the input node width `F`.
      features: the MLP's layer widths.
      rngs: initialises the parameters.
      in_edge_features: the edge width `D`; with `project_edges=None` (default) the edges are
        projected to `F` (`"edge_projection"`) exactly when `D != F`.
      **options: `gnkit.nn.GINE`'s other attributes (`epsilon`, `learn_epsilon`,
        `project_edges`, ...).
    """

    def __init__(
        self,
        in_features: int,
        features: Sequence[int],
        *,
        rngs: nnx.Rngs,
        in_edge_features: int,
        **options,
    ):
        self._build(layers.GINE, dict(features=features, **options), rngs,
                    (sample_graph(nodes=in_features, edges=in_edge_features),))
