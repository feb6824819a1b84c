"""GPS graph transformers (Rampasek et al. 2022) as Flax linen modules.

A GPS layer adds a local message-passing layer and multi-head attention over all nodes of each
graph, both on the layer's input, each with a residual connection and a normalisation, then a
two-layer MLP with a residual and a third normalisation, in the order of PyTorch Geometric's
`GPSConv` (`tests/test_gps.py` checks outputs and gradients against it with copied weights).
Attention runs per graph on a dense `[n_graph, max_nodes, F]` block
(`gnkit.graph_transformer`), so `max_nodes` is a static bucket size. `GPS` stacks GPS layers
behind encoders of the node features and of the positional encodings (`gnkit.laplacian_pe`,
`gnkit.random_walk_pe`).

Padding: attention never crosses graphs, so padding graphs change no real node; batch norm
needs `node_mask` (`gnkit.get_node_padding_mask(graph)` on a padded batch) so that its
statistics count only real nodes. `train=True` turns on dropout (rng stream `'dropout'`) and
batch statistics (mutable collection `'batch_stats'`).
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.graph import GraphsTuple, node_graph_index, require
from gnkit.graph_transformer import within_graph_attention
from gnkit.nn.input_width import check_input_width
from gnkit.nn.layers import GINE

NORMS = ("batch_norm", "layer_norm", None)


class GraphMultiheadAttention(nn.Module):
    """Multi-head self-attention among the nodes of each graph: `[N, F] -> [N, F]`.

    `q, k, v` are Dense projections (`"query"`, `"key"`, `"value"`, with bias) of the nodes to
    `F` features, split into `num_heads` heads of `F / num_heads`; each node attends to the
    nodes of its own graph (`gnkit.graph_transformer.within_graph_attention`, at most
    `max_nodes` per graph, static), and the heads, concatenated, go through `"output"` (Dense
    with bias). As `torch.nn.MultiheadAttention` over PyG's `to_dense_batch` with the padding
    masked: `query`/`key`/`value` kernels are the three row blocks of `in_proj_weight`,
    transposed, `output` is `out_proj`. Replaces `graph.nodes`. Jittable.

    Example:
        On a three-node cycle, node features `[3, 8]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 8)))
        >>> model = gn.nn.GraphMultiheadAttention(num_heads=2, max_nodes=3)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    num_heads: int
    max_nodes: int

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "n_node", block="GraphMultiheadAttention")
        width = graph.nodes.shape[-1]
        check_input_width(self, ("query", "kernel"), width)
        if width % self.num_heads:
            raise ValueError(
                f"GraphMultiheadAttention: node width {width} is not divisible by "
                f"num_heads={self.num_heads}."
            )
        heads = (graph.nodes.shape[0], self.num_heads, width // self.num_heads)
        query, key, value = (
            nn.Dense(width, name=name)(graph.nodes).reshape(heads)
            for name in ("query", "key", "value")
        )
        attended = within_graph_attention(query, key, value, graph.n_node, self.max_nodes)
        nodes = nn.Dense(width, name="output")(attended.reshape(graph.nodes.shape))
        return graph._replace(nodes=nodes)


def _normalize(kind, name, nodes, node_mask, train):
    if kind is None:
        return nodes
    if kind == "layer_norm":
        return nn.LayerNorm(epsilon=1e-5, name=name)(nodes)
    mask = None if node_mask is None else node_mask[:, None]
    return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, name=name)(
        nodes, mask=mask
    )


class GPSLayer(nn.Module):
    r"""One GPS layer: local message passing plus attention within each graph, `[N, F] -> [N, F]`.

    With :math:`x` the input nodes, as PyTorch Geometric's `GPSConv`:

    .. math::

        h_\mathrm{local} &= \mathrm{norm}_\mathrm{local}(\mathrm{dropout}(\mathrm{local}(x)) + x)

        h_\mathrm{attention} &= \mathrm{norm}_\mathrm{attention}(
            \mathrm{dropout}(\mathrm{attention}(x)) + x)

        h &= h_\mathrm{local} + h_\mathrm{attention}

        \mathrm{out} &= \mathrm{norm}_\mathrm{output}(
            h + \mathrm{dropout}(W_2\, \mathrm{dropout}(\mathrm{act}(W_1 h))))

    with :math:`W_1` `F -> 2F` (`"mlp_hidden"`) and :math:`W_2` `2F -> F` (`"mlp_output"`);
    `attention` is a `GraphMultiheadAttention`.

    Call with `node_mask` (bool `[N]`, the real nodes) on padded batches when `norm` is batch
    norm, and `train=True` for dropout and batch statistics. Flax's batch norm updates its
    running variance with the biased batch variance, torch with the unbiased one: the same
    outputs, slightly different running averages. Edges `[E, F]` for GINE. Jittable.

    Attributes:
      num_heads: the attention's heads; `F` must be divisible by it.
      max_nodes: static bucket size of the attention's dense block, at least every real graph's
        node count.
      local: `"gine"` (`GINE((F, F))`, its MLP Dense, ReLU, Dense, as PyG's `GINEConv` with
        that `nn`), any linen module mapping the graph to node features `[N, F]` (called with
        the graph), or None (attention only).
      dropout_rate: the rate of every dropout above (active only with `train=True`).
      norm: `"batch_norm"` (PyG's default; running statistics with PyG's momentum 0.1, which
        Flax calls 0.9), `"layer_norm"` (per node, PyG's `norm_kwargs={"mode": "node"}`) or
        None (no normalisation).
      activation: `act`, between the MLP's two layers.

    Example:
        On a three-node cycle, node and edge features `[3, 8]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 8)),
        ...                           edges=jnp.ones((3, 8)))
        >>> model = gn.nn.GPSLayer(num_heads=2, max_nodes=3)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    num_heads: int
    max_nodes: int
    local: str | nn.Module | None = "gine"
    dropout_rate: float = 0.0
    norm: str | None = "batch_norm"
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    @nn.compact
    def __call__(
        self, graph: GraphsTuple, *, node_mask: jax.Array | None = None, train: bool = False
    ) -> GraphsTuple:
        require(graph, "nodes", block="GPSLayer")
        if self.norm not in NORMS:
            raise ValueError(f"GPSLayer: norm must be one of {NORMS}, got {self.norm!r}.")
        x = graph.nodes
        width = x.shape[-1]
        check_input_width(self, ("mlp_hidden", "kernel"), width)

        def dropout(h):
            return nn.Dropout(self.dropout_rate)(h, deterministic=not train)

        combined = 0.0
        local = self.local
        if isinstance(local, str):
            if local != "gine":
                raise ValueError(
                    f"GPSLayer: local must be 'gine', a linen module or None, got {local!r}."
                )
            local = GINE((width, width), name="local")
        if local is not None:
            h = dropout(local(graph).nodes) + x
            combined = _normalize(self.norm, "norm_local", h, node_mask, train)
        attention = GraphMultiheadAttention(self.num_heads, self.max_nodes, name="attention")
        h = dropout(attention(graph).nodes) + x
        combined = combined + _normalize(self.norm, "norm_attention", h, node_mask, train)
        hidden = dropout(self.activation(nn.Dense(2 * width, name="mlp_hidden")(combined)))
        out = combined + dropout(nn.Dense(width, name="mlp_output")(hidden))
        return graph._replace(nodes=_normalize(self.norm, "norm_output", out, node_mask, train))


def _flip_signs(encodings, graph, rng):
    """Multiply each graph's columns of `encodings` `[N, k]` by random signs."""
    signs = jax.random.rademacher(rng, (graph.n_node.shape[0], encodings.shape[-1]))
    return encodings * signs.astype(encodings.dtype)[node_graph_index(graph)]


class GPS(nn.Module):
    """A GPS graph transformer: encoders, then `num_layers` `GPSLayer`s, `[N, F] -> [N, channels]`.

    The nodes are encoded to `channels` features as the concatenation of
    `Dense(channels - laplacian_features - random_walk_features)(nodes)` (`"node_encoder"`),
    `Dense(laplacian_features)(laplacian_pe)` (`"laplacian_encoder"`, when
    `laplacian_features > 0`; in training each graph's eigenvector signs are flipped at random
    first, drawn from the `'dropout'` rng stream) and `Dense(random_walk_features)(random_walk_pe)`
    (`"random_walk_encoder"`, when `random_walk_features > 0`). Edges are encoded to `channels`
    (`"edge_encoder"`) for the GINE local layers, then the layers (`"layer_0"`, ...) run. No
    readout: pool or gather the returned nodes for a task. Jittable.

    Call with `laplacian_pe` `[N, k]` (`gnkit.laplacian_pe`) and `random_walk_pe` `[N, t]`
    (`gnkit.random_walk_pe`) when their widths are set, `node_mask` on padded batches, and
    `train`.

    Attributes:
      channels: the width of the encoded nodes and edges and of every layer's output; must
        exceed `laplacian_features + random_walk_features`.
      num_layers: the number of `GPSLayer` layers.
      num_heads: each layer's attention heads; `channels` must be divisible by it.
      max_nodes: each layer's static attention bucket, at least every real graph's node count.
      laplacian_features: the Laplacian encoding's share of `channels`; 0 means none (then
        `laplacian_pe` must not be passed).
      random_walk_features: the random-walk encoding's share of `channels`; 0 means none (then
        `random_walk_pe` must not be passed).
      dropout_rate: each layer's dropout rate.
      norm: each layer's normalisation: `"batch_norm"`, `"layer_norm"` or None.
      local: each layer's local layer: `"gine"` or None (attention only).

    Example:
        On a three-node cycle, node features `[3, 4]` and edge features `[3, 2]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.ones((3, 2)))
        >>> model = gn.nn.GPS(channels=8, num_layers=2, num_heads=2, max_nodes=3)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    channels: int
    num_layers: int
    num_heads: int
    max_nodes: int
    laplacian_features: int = 0
    random_walk_features: int = 0
    dropout_rate: float = 0.0
    norm: str | None = "batch_norm"
    local: str | None = "gine"

    @nn.compact
    def __call__(
        self,
        graph: GraphsTuple,
        *,
        laplacian_pe: jax.Array | None = None,
        random_walk_pe: jax.Array | None = None,
        node_mask: jax.Array | None = None,
        train: bool = False,
    ) -> GraphsTuple:
        require(graph, "nodes", "edges", block="GPS")
        node_features = self.channels - self.laplacian_features - self.random_walk_features
        if node_features < 1:
            raise ValueError(
                f"GPS: channels={self.channels} must exceed laplacian_features + "
                f"random_walk_features = {self.channels - node_features}."
            )
        check_input_width(self, ("node_encoder", "kernel"), graph.nodes.shape[-1])
        check_input_width(self, ("edge_encoder", "kernel"), graph.edges.shape[-1],
                          what="edge features", argument="in_edge_features")
        parts = [nn.Dense(node_features, name="node_encoder")(graph.nodes)]
        for width, encodings, name in (
            (self.laplacian_features, laplacian_pe, "laplacian"),
            (self.random_walk_features, random_walk_pe, "random_walk"),
        ):
            if (width > 0) != (encodings is not None):
                raise ValueError(
                    f"GPS: pass {name}_pe exactly when {name}_features > 0 "
                    f"({name}_features={width}, {name}_pe given: {encodings is not None})."
                )
            if encodings is None:
                continue
            check_input_width(self, (f"{name}_encoder", "kernel"), encodings.shape[-1],
                              what="encoding features", argument=f"in_{name}_features",
                              found_in=f"{name}_pe")
            if name == "laplacian" and train:
                encodings = _flip_signs(encodings, graph, self.make_rng("dropout"))
            parts.append(nn.Dense(width, name=f"{name}_encoder")(encodings))
        nodes = jnp.concatenate(parts, axis=-1)
        edges = nn.Dense(self.channels, name="edge_encoder")(graph.edges)
        graph = graph._replace(nodes=nodes, edges=edges)
        for index in range(self.num_layers):
            graph = GPSLayer(
                self.num_heads,
                self.max_nodes,
                local=self.local,
                dropout_rate=self.dropout_rate,
                norm=self.norm,
                name=f"layer_{index}",
            )(graph, node_mask=node_mask, train=train)
        return graph
