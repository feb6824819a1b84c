"""NNX twins of the GPS graph transformer (`gnkit.nn.gps`): `GraphMultiheadAttention`,
`GPSLayer` and `GPS`.

`GPSLayer` and `GPS` have a training mode (dropout, batch statistics with `norm="batch_norm"`),
held on the module as NNX does: they start in evaluation mode, the linen default `train=False`;
`model.train()` turns on dropout (keys from the stream forked from the constructor's `rngs`, or
from `rngs=` at the call) and batch statistics, whose running averages are updated in place, as
linen's `apply(..., mutable=["batch_stats"])` returns them; `model.eval()` goes back. See
`gnkit.nn.gps` for the math and the PyTorch Geometric weight mapping.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import gps
from gnkit.nnx.training_twin import TrainingTwin
from gnkit.nnx.twin import Twin, sample_graph


class GraphMultiheadAttention(Twin, linen=gps.GraphMultiheadAttention):
    """Multi-head self-attention among the nodes of each graph
    (`gnkit.nn.GraphMultiheadAttention`): nodes `[N, in_features] -> [N, in_features]`.

    Args:
      in_features: the node width `F`, divisible by `num_heads`.
      num_heads: the attention heads.
      max_nodes: the static bucket size, at least every real graph's node count.
      rngs: initialises the parameters.
    """

    def __init__(self, in_features: int, num_heads: int, max_nodes: int, *, rngs: nnx.Rngs):
        self._build(gps.GraphMultiheadAttention,
                    dict(num_heads=num_heads, max_nodes=max_nodes), rngs,
                    (sample_graph(nodes=in_features),))

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        """The graph with the attended node features. Jittable under `nnx.jit`."""
        return self._apply(graph)


class GPSLayer(TrainingTwin, linen=gps.GPSLayer):
    """One GPS layer (`gnkit.nn.GPSLayer`): local message passing plus attention within each
    graph, nodes `[N, in_features] -> [N, in_features]`, edges `[E, in_edge_features]` for the
    GINE local layer.

    Args:
      in_features: the node width `F`, divisible by `num_heads`.
      num_heads: the attention heads.
      max_nodes: the attention's static bucket size, at least every real graph's node count.
      rngs: initialises the parameters; with `dropout_rate > 0` a dropout stream is forked
        from it (`rngs.dropout.fork()`).
      in_edge_features: the edge width (default `in_features`; GINE projects other widths).
      **options: `gnkit.nn.GPSLayer`'s other attributes (`local`, `dropout_rate`, `norm`,
        `activation`).
    """

    def __init__(
        self,
        in_features: int,
        num_heads: int,
        max_nodes: int,
        *,
        rngs: nnx.Rngs,
        in_edge_features: int | None = None,
        **options,
    ):
        sample = sample_graph(nodes=in_features, edges=in_edge_features or in_features)
        self._build(gps.GPSLayer, dict(num_heads=num_heads, max_nodes=max_nodes, **options),
                    rngs, (sample,), dropout=options.get("dropout_rate", 0.0) > 0.0)

    def __call__(
        self,
        graph: GraphsTuple,
        *,
        node_mask: jax.Array | None = None,
        rngs: nnx.Rngs | jax.Array | None = None,
    ) -> GraphsTuple:
        """The graph with the layer's node features `[N, F]`, in the module's mode.

        `node_mask` (bool `[N]`, the real nodes) keeps padding out of the batch statistics;
        `rngs` (an `nnx.Rngs`, or a key used as is) gives the dropout key in training mode
        instead of the kept stream. Jittable under `nnx.jit`.
        """
        training = self._training()
        return self._apply(graph, node_mask=node_mask, train=training, training=training,
                           rngs=rngs)


class GPS(TrainingTwin, linen=gps.GPS):
    """A GPS graph transformer (`gnkit.nn.GPS`): encoders, then `num_layers` GPS layers, nodes
    `[N, in_features] -> [N, channels]`.

    Args:
      in_features: the node width.
      channels: the width of the encoded nodes and edges and of every layer.
      num_layers: the number of GPS layers.
      num_heads: each layer's attention heads; `channels` must be divisible by it.
      max_nodes: each layer's static attention bucket, at least every real graph's node count.
      rngs: initialises the parameters; with dropout or a Laplacian encoding (whose signs are
        flipped at random in training) a dropout stream is forked from it.
      in_edge_features: the edge width.
      in_laplacian_features: the width `k` of `laplacian_pe` `[N, k]`, needed when
        `laplacian_features > 0`.
      in_random_walk_features: the width `t` of `random_walk_pe` `[N, t]`, needed when
        `random_walk_features > 0`.
      **options: `gnkit.nn.GPS`'s other attributes (`laplacian_features`,
        `random_walk_features`, `dropout_rate`, `norm`, `local`).
    """

    def __init__(
        self,
        in_features: int,
        channels: int,
        num_layers: int,
        num_heads: int,
        max_nodes: int,
        *,
        rngs: nnx.Rngs,
        in_edge_features: int,
        in_laplacian_features: int | None = None,
        in_random_walk_features: int | None = None,
        **options,
    ):
        encodings = {}
        for name, width in (("laplacian", in_laplacian_features),
                            ("random_walk", in_random_walk_features)):
            if options.get(f"{name}_features", 0) > 0:
                if width is None:
                    raise ValueError(
                        f"GPS: {name}_features={options[f'{name}_features']} needs "
                        f"in_{name}_features, the width of {name}_pe"
                    )
                encodings[f"{name}_pe"] = jnp.zeros((1, width))
        dropout = options.get("dropout_rate", 0.0) > 0.0 or "laplacian_pe" in encodings
        self._build(gps.GPS, dict(channels=channels, num_layers=num_layers,
                                  num_heads=num_heads, max_nodes=max_nodes, **options), rngs,
                    (sample_graph(nodes=in_features, edges=in_edge_features),),
                    dropout=dropout, sample_options=encodings)

    def __call__(
        self,
        graph: GraphsTuple,
        *,
        laplacian_pe: jax.Array | None = None,
        random_walk_pe: jax.Array | None = None,
        node_mask: jax.Array | None = None,
        rngs: nnx.Rngs | jax.Array | None = None,
    ) -> GraphsTuple:
        """The graph with nodes `[N, channels]` and encoded edges, in the module's mode.

        `laplacian_pe` `[N, k]` and `random_walk_pe` `[N, t]` exactly when their features are
        set, `node_mask` (bool `[N]`) on padded batches, `rngs` (an `nnx.Rngs`, or a key used
        as is) for the dropout key in training mode instead of the kept stream. Jittable under
        `nnx.jit`.
        """
        training = self._training()
        return self._apply(graph, laplacian_pe=laplacian_pe, random_walk_pe=random_walk_pe,
                           node_mask=node_mask, train=training, training=training, rngs=rngs)
