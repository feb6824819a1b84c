"""Flax linen layers of the usual GNN zoo: GCN, GAT, GATv2, GraphSAGE, GIN and GINE.

Each module creates its parameters and calls gnkit's functional block (`gnkit.convolutions`,
`gnkit.attention`); GATv2 computes its attention here, as no block has its scoring. Messages flow
from sender to receiver, so a node's neighbours are the senders of its incoming edges. Every
module maps a graph with node features `[N, F]` (and `senders`, `receivers`) to the same graph
with new node features, has no output activation, and is jittable. `indices_are_sorted` declares
`graph.receivers` sorted. For one graph with its edges sharded over devices
(`gnkit.parallel.edge_sharded`), pass `aggregator=gnkit.parallel.sharded_aggregator('sum')` (and
`softmax=gnkit.parallel.sharded_softmax()` to the attention layers); attention layers then need
their self-edges in the edge list, one per node (the graph's own removed first, for the result of
`add_self_edges=True`), and `add_self_edges=False`.

With their default settings GCN, GAT and GATv2 compute what PyTorch Geometric's `GCNConv`,
`GATConv` and `GATv2Conv` compute with the same weights (`tests/test_pyg_parity.py`), on directed
graphs and on graphs that already hold self-edges too; each docstring names the weight mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.attention import _attend, _check_combine, _combine_heads, _edge_index, gat
from gnkit.blocks import Aggregator
from gnkit.convolutions import gcn, gin, gine, graph_sage
from gnkit.graph import GraphsTuple, require
from gnkit.nn.mlp import MLP
from gnkit.segment import safe_segment_softmax

_attention_init = nn.initializers.variance_scaling(1.0, "fan_in", "normal", in_axis=-1, out_axis=-2)


class GCN(nn.Module):
    r"""Graph convolution (Kipf & Welling 2017).

    .. math:: x' = D^{-1/2} (A' + I) D^{-1/2} x W + b

    By default as PyTorch Geometric's `GCNConv`: :math:`A'` is the adjacency (:math:`A'_{ij}`
    counts the edges :math:`j \to i`) with the graph's own self-edges left out, so with
    `add_self_edges` every node counts itself exactly once, and :math:`D` is the in-degree of
    :math:`A' + I` (the receiver-side count), used at both ends also on directed graphs; a node of
    in-degree 0 has scale 0.
    `convention='jraph'` gives jraph's `GraphConvolution` instead
    (:math:`D_\mathrm{in}^{-1/2} (A + I) D_\mathrm{out}^{-1/2}`, :math:`I` added on top of
    existing self-edges); see `gnkit.convolutions.gcn`.

    :math:`W` is a Dense kernel without bias (`"linear"`, PyG's `lin.weight.T`); the bias
    :math:`b` (`"bias"`) is added after the neighbourhood sum. The options are those of
    `gnkit.convolutions.gcn`; as :math:`W` is linear, the order of `project_first` is exact
    either way (fewer columns along the edges is the only difference). Nodes
    `[N, F] -> [N, features]`. Jittable.

    Attributes:
      features: output width.
      add_self_edges: every node also counts itself once (the :math:`I` of :math:`A' + I`).
      symmetric_normalization: scale by the degrees; False gives the plain sum.
      convention: `'pyg'` (default, `GCNConv`) or `'jraph'` (`GraphConvolution`).
      use_bias: add the bias :math:`b` (`"bias"`) after the neighbourhood sum.
      project_first: apply :math:`W` before the sum (True) or after (False); None picks by
        width: :math:`W` first when it narrows (`F > features`), else the sum first.
      aggregator: None for the chunked neighbour sum; a segment sum such as
        `gnkit.parallel.sharded_aggregator('sum')` for edge sharding.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.GCN(features=8)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: int
    add_self_edges: bool = True
    symmetric_normalization: bool = True
    convention: str = "pyg"
    use_bias: bool = True
    project_first: bool | None = None
    aggregator: Aggregator | None = None
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", block="GCN")
        project_first = self.project_first
        if project_first is None:
            project_first = graph.nodes.shape[-1] > self.features
        graph = gcn(
            nn.Dense(self.features, use_bias=False, name="linear"),
            add_self_edges=self.add_self_edges,
            symmetric_normalization=self.symmetric_normalization,
            convention=self.convention,
            project_first=project_first,
            aggregator=self.aggregator,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)
        if not self.use_bias:
            return graph
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return graph._replace(nodes=graph.nodes + bias)


def _bias_width(features: int, num_heads: int, combine_heads: str) -> int:
    return features * num_heads if combine_heads == "concat" else features


class GAT(nn.Module):
    r"""Graph attention (Velickovic et al. 2018) with `num_heads` heads of `features` each.

    :math:`z = x W` (`"linear"`, no bias) is split into heads; edge :math:`j \to i` scores
    :math:`\mathrm{LeakyReLU}(a_s \cdot z_j + a_r \cdot z_i)` per head (`sender_attention`,
    `receiver_attention` `[H, features]`), a softmax over the edges into :math:`i` weights
    :math:`z_j`. Heads are concatenated or averaged, then the bias is added. See
    `gnkit.attention.gat`. Jittable.

    As PyTorch Geometric's `GATConv` (no edge features, no dropout, no residual): `linear` kernel
    is `lin.weight.T`, `sender_attention` is `att_src[0]`, `receiver_attention` is `att_dst[0]`,
    `combine_heads='mean'` is `concat=False`.

    Attributes:
      features: width of each head.
      num_heads: `H`.
      combine_heads: `"concat"` (`[N, H * features]`) or `"mean"` (`[N, features]`).
      negative_slope: of the LeakyReLU on the scores.
      add_self_edges: every node attends to itself exactly once (default, as the paper): the
        graph's own self-edges get no weight and one per node is added.
      use_bias: add the bias `"bias"` after combining the heads.
      softmax: normalises the scores over each receiver's edges (as in `gnkit.attention.gat`).
      aggregator: the segment sum of the messages (name or `Aggregator`), e.g.
        `gnkit.parallel.sharded_aggregator('sum')` for edge sharding.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.GAT(features=8, num_heads=2)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 16)
    """

    features: int
    num_heads: int = 1
    combine_heads: str = "concat"
    negative_slope: float = 0.2
    add_self_edges: bool = True
    use_bias: bool = True
    softmax: Callable[..., jax.Array] = safe_segment_softmax
    aggregator: Aggregator = "sum"
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        shape = (self.num_heads, self.features)
        sender_attention = self.param("sender_attention", _attention_init, shape)
        receiver_attention = self.param("receiver_attention", _attention_init, shape)

        def logit_fn(sender_nodes, receiver_nodes):
            return jnp.einsum("ehd,hd->eh", sender_nodes, sender_attention) + jnp.einsum(
                "ehd,hd->eh", receiver_nodes, receiver_attention
            )

        graph = gat(
            nn.Dense(self.num_heads * self.features, use_bias=False, name="linear"),
            logit_fn,
            num_heads=self.num_heads,
            negative_slope=self.negative_slope,
            add_self_edges=self.add_self_edges,
            combine_heads=self.combine_heads,
            softmax=self.softmax,
            aggregator=self.aggregator,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)
        if not self.use_bias:
            return graph
        width = _bias_width(self.features, self.num_heads, self.combine_heads)
        bias = self.param("bias", nn.initializers.zeros_init(), (width,))
        return graph._replace(nodes=graph.nodes + bias)


class GATv2(nn.Module):
    r"""GATv2 (Brody et al. 2022): attention scored after the nonlinearity.

    With :math:`s = x W_s + b_s` (`"source"`) and :math:`t = x W_t + b_t` (`"target"`, or
    :math:`s` itself when `share_weights`), split into `H` heads, edge :math:`j \to i` scores
    :math:`a \cdot \mathrm{LeakyReLU}(s_j + t_i)` per head (`attention` `[H, features]`); a
    softmax over the edges into :math:`i` gives the weights :math:`w_{ij}`, and
    :math:`x'_i = \sum_j w_{ij} s_j`. Heads are concatenated or averaged, then the bias is added.
    Self-edges are handled as in `GAT`. Jittable.

    As PyTorch Geometric's `GATv2Conv` (no edge features, no dropout, no residual): `source` is
    `lin_l` (kernel `weight.T`), `target` is `lin_r`, `attention` is `att[0]`,
    `combine_heads='mean'` is `concat=False`, `use_bias` is `bias`.

    Attributes:
      features: width of each head.
      num_heads: `H`.
      combine_heads: `"concat"` (`[N, H * features]`) or `"mean"` (`[N, features]`).
      negative_slope: of the LeakyReLU inside the score.
      add_self_edges: every node attends to itself exactly once (default); without it a node with
        no incoming edges gets only the bias.
      share_weights: use `s` as `t` (one Dense instead of two).
      use_bias: False drops all three biases (`b_s`, `b_t` and the output's).
      softmax: normalises the scores over each receiver's edges (as in `gnkit.attention.gat`).
      aggregator: the segment sum of the messages (name or `Aggregator`), e.g.
        `gnkit.parallel.sharded_aggregator('sum')` for edge sharding.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.GATv2(features=8, num_heads=2, combine_heads="mean")
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: int
    num_heads: int = 1
    combine_heads: str = "concat"
    negative_slope: float = 0.2
    add_self_edges: bool = True
    share_weights: bool = False
    use_bias: bool = True
    softmax: Callable[..., jax.Array] = safe_segment_softmax
    aggregator: Aggregator = "sum"
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "senders", "receivers", block="GATv2")
        _check_combine(self.combine_heads)
        n_node = graph.nodes.shape[0]
        width = self.num_heads * self.features
        heads = (n_node, self.num_heads, self.features)
        source = nn.Dense(width, use_bias=self.use_bias, name="source")(graph.nodes)
        source = source.reshape(heads)
        target = source
        if not self.share_weights:
            target = nn.Dense(width, use_bias=self.use_bias, name="target")(graph.nodes)
            target = target.reshape(heads)
        attention = self.param("attention", _attention_init, (self.num_heads, self.features))
        edges = _edge_index(graph, self.add_self_edges, self.indices_are_sorted, "GATv2")
        hidden = source[edges.senders] + target[edges.receivers]
        hidden = jax.nn.leaky_relu(hidden, self.negative_slope)
        logits = jnp.einsum("ehd,hd->eh", hidden, attention)
        per_head = _attend(logits, source, edges, n_node, self.softmax, self.aggregator)
        nodes = _combine_heads(per_head, self.combine_heads)
        if self.use_bias:
            bias_width = _bias_width(self.features, self.num_heads, self.combine_heads)
            nodes = nodes + self.param("bias", nn.initializers.zeros_init(), (bias_width,))
        return graph._replace(nodes=nodes)


class GraphSAGE(nn.Module):
    r"""GraphSAGE (Hamilton et al. 2017).

    .. math:: x'_i = W_n \operatorname{agg}_j p(x_j) + b + W_r x_i

    :math:`\operatorname{agg}` runs over the senders :math:`j` of :math:`i`'s incoming edges.
    :math:`W_n` (`"neighbors"`, with the bias :math:`b`) and :math:`W_r` (`"root"`, no bias) are
    Dense kernels. As PyTorch Geometric's `SAGEConv`. Nodes
    `[N, F] -> [N, features]`. Jittable.

    Attributes:
      features: output width.
      aggregator: :math:`\operatorname{agg}`: `'mean'` by default, any gnkit aggregator; 0 for a
        node without neighbours.
      project: :math:`p = \mathrm{ReLU}(\mathrm{Dense}(F))` (`"project"`) instead of the
        identity (the paper's pooling aggregator with `aggregator='max'`).
      root_weight: add :math:`W_r x_i`; False leaves it out.
      normalize: scale each output row to unit L2 norm.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.GraphSAGE(features=8)
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: int
    aggregator: Aggregator = "mean"
    project: bool = False
    root_weight: bool = True
    normalize: bool = False
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", block="GraphSAGE")
        neighbor_fn = None
        if self.project:
            projection = nn.Dense(graph.nodes.shape[-1], name="project")

            def neighbor_fn(nodes):
                return nn.relu(projection(nodes))

        neighbors_dense = nn.Dense(self.features, name="neighbors")
        root_dense = nn.Dense(self.features, use_bias=False, name="root")

        def update_fn(nodes, neighbors):
            updated = neighbors_dense(neighbors)
            return updated + root_dense(nodes) if self.root_weight else updated

        return graph_sage(
            update_fn,
            aggregator=self.aggregator,
            neighbor_fn=neighbor_fn,
            normalize=self.normalize,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)


class GIN(nn.Module):
    r"""Graph isomorphism layer (Xu et al. 2019).

    .. math:: x'_i = \mathrm{MLP}\Big((1 + \epsilon)\, x_i + \sum_j x_j\Big)

    See `gnkit.convolutions.gin`. Nodes `[N, F] -> [N, features[-1]]`. Jittable.

    Attributes:
      features: the MLP's layer widths (`"mlp"`), e.g. `(64, 64)`.
      activation: between the MLP's layers (none after the last).
      epsilon: :math:`\epsilon`, or the initial value of the parameter `"epsilon"` when
        `learn_epsilon`.
      learn_epsilon: make :math:`\epsilon` a learned scalar (GIN-eps).
      aggregator: None for the chunked neighbour sum; a segment sum such as
        `gnkit.parallel.sharded_aggregator('sum')` for edge sharding.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.GIN(features=(16, 8))
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: Sequence[int]
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    epsilon: float = 0.0
    learn_epsilon: bool = False
    aggregator: Aggregator | None = None
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        epsilon = self.epsilon
        if self.learn_epsilon:
            epsilon = self.param("epsilon", nn.initializers.constant(self.epsilon), ())
        mlp = MLP(tuple(self.features), activation=self.activation, name="mlp")
        return gin(
            mlp,
            epsilon=epsilon,
            aggregator=self.aggregator,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)


class GINE(nn.Module):
    r"""GIN with edge features (Hu et al. 2020).

    .. math:: x'_i = \mathrm{MLP}\Big((1 + \epsilon)\, x_i + \sum_j \mathrm{ReLU}(x_j + e_{ji})\Big)

    :math:`e_{ji}` is the edge's feature row; see `gnkit.convolutions.gine`. Nodes
    `[N, F] -> [N, features[-1]]`, edges `[E, D]`. Jittable.

    As PyTorch Geometric's `GINEConv` with an MLP `nn`: `project_edges=True` is `edge_dim` set
    (`edge_projection` kernel is `lin.weight.T`), `learn_epsilon` is `train_eps`.

    Attributes:
      features: the MLP's layer widths (`"mlp"`), as in `GIN`.
      activation: between the MLP's layers (none after the last).
      epsilon: :math:`\epsilon`, or the initial value of the parameter `"epsilon"` when
        `learn_epsilon`.
      learn_epsilon: make :math:`\epsilon` a learned scalar.
      project_edges: project :math:`e_{ji}` to the node width by a Dense (`"edge_projection"`,
        with bias); None (default) projects only when the edge and node widths differ.
      aggregator: the segment sum of the messages (name or `Aggregator`), e.g.
        `gnkit.parallel.sharded_aggregator('sum')` for edge sharding.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle, node features `[3, 4]` and edge features `[3, 2]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.ones((3, 2)))
        >>> model = gn.nn.GINE(features=(16, 8))
        >>> params = model.init(jax.random.key(0), graph)
        >>> model.apply(params, graph).nodes.shape
        (3, 8)
    """

    features: Sequence[int]
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    epsilon: float = 0.0
    learn_epsilon: bool = False
    project_edges: bool | None = None
    aggregator: Aggregator = "sum"
    indices_are_sorted: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        require(graph, "nodes", "edges", block="GINE")
        epsilon = self.epsilon
        if self.learn_epsilon:
            epsilon = self.param("epsilon", nn.initializers.constant(self.epsilon), ())
        node_width = graph.nodes.shape[-1]
        project = self.project_edges
        if project is None:
            project = graph.edges.shape[-1] != node_width
        edge_fn = nn.Dense(node_width, name="edge_projection") if project else None
        mlp = MLP(tuple(self.features), activation=self.activation, name="mlp")
        return gine(
            mlp,
            edge_fn=edge_fn,
            epsilon=epsilon,
            aggregator=self.aggregator,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)
