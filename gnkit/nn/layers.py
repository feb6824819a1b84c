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

GraphSAGE, GAT and GATv2 also take a bipartite graph, as PyG's `SAGEConv`, `GATConv` and
`GATv2Conv` take `(x_src, x_dst)` with in_channels `(F_s, F_r)`: `graph.nodes` a
`BipartiteNodes(sender_nodes [N_s, F_s], receiver_nodes [N_r, F_r])` (`gnkit.convolutions`), giving
the receivers' new features `[N_r, features]`; `gnkit.typed_graph.edge_set_graph` builds one for
an edge set between node sets of different widths. The other layers need one node width.

Every layer checks, before applying its parameters, that the graph has the widths they were
built for (`gnkit.nn.input_width`), and raises an `InputWidthError` naming both otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.attention import _attend, _check_combine, _combine_heads, _edge_index, gat
from gnkit.blocks import Aggregator
from gnkit.convolutions import (
    gcn,
    gin,
    gine,
    graph_sage,
    is_bipartite,
    node_tables,
    require_one_node_set,
)
from gnkit.graph import GraphsTuple, require
from gnkit.nn.input_width import built_width, check_input_width
from gnkit.nn.mlp import MLP
from gnkit.segment import safe_segment_softmax

_attention_init = nn.initializers.variance_scaling(1.0, "fan_in", "normal", in_axis=-1, out_axis=-2)

_ONE_SIDE = ("node features", "in_features")
_SENDER_SIDE = ("sender node features", "in_features[0]")
_RECEIVER_SIDE = ("receiver node features", "in_features[1]")


def _one_width(graph: GraphsTuple, block: str) -> int:
    """The node width `F` of nodes `[N, F]`; a `ValueError` for a bipartite graph."""
    require_one_node_set(graph, block)
    return graph.nodes.shape[-1]


def _sides(graph: GraphsTuple) -> tuple[tuple[str, str], tuple[str, str]]:
    """What the sender and receiver widths are called in an `InputWidthError`."""
    if is_bipartite(graph.nodes):
        return _SENDER_SIDE, _RECEIVER_SIDE
    return _ONE_SIDE, _ONE_SIDE


def _check_side(module: nn.Module, kernel: str, width: int, side: tuple[str, str]) -> None:
    what, argument = side
    check_input_width(module, (kernel, "kernel"), width, what=what, argument=argument)


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
        width = _one_width(graph, "GCN")
        check_input_width(self, ("linear", "kernel"), width)
        project_first = self.project_first
        if project_first is None:
            project_first = width > self.features
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
    `combine_heads='mean'` is `concat=False`. On a bipartite graph whose two sides differ in width
    (`GATConv((F_s, F_r), ...)`), `linear` projects the senders (`lin_src`) and a second kernel
    `"receiver_linear"` the receivers (`lin_dst`), with `add_self_edges=False`.

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
        require(graph, "nodes", block="GAT")
        sender_nodes, receiver_nodes = node_tables(graph)
        sender_side, receiver_side = _sides(graph)
        if self.is_initializing():
            separate = sender_nodes.shape[-1] != receiver_nodes.shape[-1]
        else:
            separate = built_width(self, ("receiver_linear", "kernel")) is not None
        _check_side(self, "linear", sender_nodes.shape[-1], sender_side)
        _check_side(self, "receiver_linear" if separate else "linear", receiver_nodes.shape[-1],
                    receiver_side)
        width = self.num_heads * self.features
        receiver_project_fn = None
        if separate:
            receiver_project_fn = nn.Dense(width, use_bias=False, name="receiver_linear")
        shape = (self.num_heads, self.features)
        sender_attention = self.param("sender_attention", _attention_init, shape)
        receiver_attention = self.param("receiver_attention", _attention_init, shape)

        graph = gat(
            nn.Dense(width, use_bias=False, name="linear"),
            sender_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, sender_attention),
            receiver_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, receiver_attention),
            receiver_project_fn=receiver_project_fn,
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
    `combine_heads='mean'` is `concat=False`, `use_bias` is `bias`. On a bipartite graph `source`
    projects the senders and `target` the receivers (`GATv2Conv((F_s, F_r), ...)`), with
    `add_self_edges=False`; `share_weights` then needs both sides of one width.

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
        sender_nodes, receiver_nodes = node_tables(graph)
        sender_side, receiver_side = _sides(graph)
        if self.share_weights and sender_nodes.shape[-1] != receiver_nodes.shape[-1]:
            raise ValueError(
                f"GATv2: share_weights=True needs sender and receiver nodes of one width; the "
                f"graph's are {sender_nodes.shape[-1]} and {receiver_nodes.shape[-1]}."
            )
        _check_side(self, "source", sender_nodes.shape[-1], sender_side)
        _check_side(self, "source" if self.share_weights else "target",
                    receiver_nodes.shape[-1], receiver_side)
        n_node = receiver_nodes.shape[0]
        width = self.num_heads * self.features
        source_dense = nn.Dense(width, use_bias=self.use_bias, name="source")
        source = source_dense(sender_nodes).reshape((-1, self.num_heads, self.features))
        if self.share_weights:
            target = source if receiver_nodes is sender_nodes else source_dense(receiver_nodes)
        else:
            target = nn.Dense(width, use_bias=self.use_bias, name="target")(receiver_nodes)
        target = target.reshape((n_node, self.num_heads, self.features))
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
    Dense kernels. As PyTorch Geometric's `SAGEConv` (`neighbors` is `lin_l`, `root` `lin_r`,
    `project` `lin`). Nodes `[N, F] -> [N, features]`; on a bipartite graph (`SAGEConv((F_s,
    F_r), ...)`) :math:`x_j` are sender rows `[N_s, F_s]` and :math:`x_i` receiver rows
    `[N_r, F_r]`, output `[N_r, features]`. Jittable.

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
        sender_nodes, receiver_nodes = node_tables(graph)
        sender_side, receiver_side = _sides(graph)
        sender_width = sender_nodes.shape[-1]
        if self.project:
            _check_side(self, "project", sender_width, sender_side)
        if self.root_weight:
            _check_side(self, "root", receiver_nodes.shape[-1], receiver_side)
        neighbor_fn = None
        if self.project:
            projection = nn.Dense(sender_width, name="project")

            def neighbor_fn(nodes):
                return nn.relu(projection(nodes))

        neighbors_dense = nn.Dense(self.features, name="neighbors")
        root_dense = nn.Dense(self.features, use_bias=False, name="root")

        def update_fn(nodes, neighbors):
            # An aggregator may widen the rows (several reductions side by side).
            check_input_width(self, ("neighbors", "kernel"), sender_width, what=sender_side[0],
                              argument=sender_side[1],
                              rows_per_feature=max(1, neighbors.shape[-1] // sender_width))
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
        require(graph, "nodes", block="GIN")
        check_input_width(self, ("mlp", "dense_0", "kernel"), _one_width(graph, "GIN"))
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
        if isinstance(graph.edges, Mapping):
            raise ValueError(
                f"GINE reads edge features as one array [E, D]; the graph's are a dict with keys "
                f"{sorted(graph.edges)} (in HeteroConv, name the array by edge_feature_key)."
            )
        node_width = _one_width(graph, "GINE")
        edge_width = graph.edges.shape[-1]
        check_input_width(self, ("mlp", "dense_0", "kernel"), node_width)
        project = self.project_edges
        if project is None and self.is_initializing():
            project = edge_width != node_width
        elif project is None:
            project = built_width(self, ("edge_projection", "kernel")) is not None
        if project:
            check_input_width(self, ("edge_projection", "kernel"), edge_width,
                              what="edge features", argument="in_edge_features")
        else:
            check_input_width(self, ("mlp", "dense_0", "kernel"), edge_width,
                              what="edge features", argument="in_edge_features")
        epsilon = self.epsilon
        if self.learn_epsilon:
            epsilon = self.param("epsilon", nn.initializers.constant(self.epsilon), ())
        edge_fn = nn.Dense(node_width, name="edge_projection") if project else None
        mlp = MLP(tuple(self.features), activation=self.activation, name="mlp")
        return gine(
            mlp,
            edge_fn=edge_fn,
            epsilon=epsilon,
            aggregator=self.aggregator,
            indices_are_sorted=self.indices_are_sorted,
        )(graph)
