"""Flax linen modules for typed graphs: a typed graph network, `HeteroConv` / `to_hetero`, and
R-GCN over edge sets.

Thin over `gnkit.typed_graph`'s blocks: the modules create one set of parameters per node set
and per edge set (named by the set; an edge set by its name, or `'sender__name__receiver'`
where the name repeats) and call `typed_graph_network`, `hetero_conv` and `rgcn`. They read
the schema (which sets exist) from the graph they are applied to, so one module serves every
batch of that schema. Jittable; padding rows never reach real ones.

Features may be arrays or dicts of arrays (as `gnkit.typed_graph.from_hetero_data` gives,
`{"x": ..., "y": ...}`): `node_feature_key` (and `edge_feature_key` where edge features are
read) names the array a layer reads from a dict, and the layer writes its output back under
that key, keeping the other entries (`gnkit.typed_graph.features`). Every input Dense checks
the width it was built for (`gnkit.nn.input_width`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.nn.input_width import check_input_width
from gnkit.nn.mlp import MLP
from gnkit.typed_graph.features import restore_features, select_features
from gnkit.typed_graph.message_passing import hetero_conv, rgcn, typed_graph_network
from gnkit.typed_graph.types import EdgeSetKey, TypedGraph, module_name


def _concatenate(*parts):
    return jnp.concatenate([part for part in parts if part is not None], axis=-1)


class TypedGraphNetwork(nn.Module):
    r"""One typed graph-network step with an MLP per edge set, per node set and for the context.

    Each edge set :math:`k`, then each node set :math:`s`, then the context:

    .. math::

        e'_k &= \mathrm{MLP}_k([e_k, x_\mathrm{sender}, x_\mathrm{receiver}, u])

        x'_s &= \mathrm{MLP}_s([x_s, (\mathrm{agg}\, e'_k)_{k \to s}, u])

        u' &= \mathrm{MLP}([(\mathrm{agg}\, x'_s)_s, (\mathrm{agg}\, e'_k)_k, u])

    with one aggregate per incoming edge set in key order (and per outgoing one when
    `use_sent_edges`), and the context update only when `context_features` is given. Missing
    parts (no edge features, no context) are left out of the concatenations. MLPs are
    `gnkit.nn.MLP` with `activation` between layers and none after the last; they are named by
    the set (`edge_<name>`, `node_<name>`, `context`). Features are arrays `[rows, F]`, or dicts
    of them read at `node_feature_key` / `edge_feature_key` (the new features are written back
    there); context features are arrays. Jittable.

    Attributes:
      edge_features: the edge MLPs' layer widths.
      node_features: the node MLPs' layer widths.
      context_features: the context MLP's layer widths, or None for no context update.
      use_sent_edges: whether node updates also read the aggregates of their outgoing edges.
      aggregator: the gnkit aggregator of the edge-to-node and per-graph reductions.
      activation: between the MLPs' layers.
      node_feature_key: the key of the array to read in node feature dicts (None: no dicts).
      edge_feature_key: the key of the array to read in edge feature dicts (None: no dicts).

    Example:
        Two papers citing each other, written by one author (features `[2, 3]`, `[1, 3]`):

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> import numpy as np
        >>> from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph
        >>> graph = TypedGraph(
        ...     context=Context(n_graph=np.array([1])),
        ...     nodes={"paper": NodeSet(np.array([2]), np.ones((2, 3), np.float32)),
        ...            "author": NodeSet(np.array([1]), np.ones((1, 3), np.float32))},
        ...     edges={EdgeSetKey("cites", ("paper", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 1]), np.array([1, 0])),
        ...            EdgeSetKey("writes", ("author", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))})
        >>> model = gn.nn.TypedGraphNetwork(edge_features=(4,), node_features=(8,))
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.nodes["paper"].features.shape, out.nodes["author"].features.shape
        ((2, 8), (1, 8))
    """

    edge_features: Sequence[int]
    node_features: Sequence[int]
    context_features: Sequence[int] | None = None
    use_sent_edges: bool = False
    aggregator: str = "sum"
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    node_feature_key: str | None = None
    edge_feature_key: str | None = None

    @nn.compact
    def __call__(self, graph: TypedGraph) -> TypedGraph:
        if isinstance(graph.context.features, Mapping):
            raise ValueError(
                f"TypedGraphNetwork: the context holds its features as a dict with keys "
                f"{sorted(graph.context.features)}; it reads context features as one array "
                "[G, F]."
            )
        original = graph
        graph = select_features(graph, "TypedGraphNetwork", self.node_feature_key,
                                self.edge_feature_key)
        keys = list(graph.edges)

        def edge_update(key):
            mlp = MLP(tuple(self.edge_features), activation=self.activation,
                      name=f"edge_{module_name(key, keys)}")

            def update(edges, sender_nodes, receiver_nodes, context):
                return mlp(_concatenate(edges, sender_nodes, receiver_nodes, context))

            return update

        def node_update(name):
            mlp = MLP(tuple(self.node_features), activation=self.activation, name=f"node_{name}")

            def update(nodes, received_edges, sent_edges, context):
                parts = [received_edges[k] for k in sorted(received_edges)]
                if self.use_sent_edges:
                    parts += [sent_edges[k] for k in sorted(sent_edges)]
                return mlp(_concatenate(nodes, *parts, context))

            return update

        context_update = None
        if self.context_features is not None:
            context_mlp = MLP(tuple(self.context_features), activation=self.activation,
                              name="context")

            def context_update(nodes, edges, context):
                parts = [nodes[name] for name in sorted(nodes)]
                parts += [edges[key] for key in sorted(edges)]
                return context_mlp(_concatenate(*parts, context))

        updated = typed_graph_network(
            {key: edge_update(key) for key in keys},
            {name: node_update(name) for name in sorted(graph.nodes)},
            context_update,
            aggregator=self.aggregator,
        )(graph)
        return restore_features(original, updated, self.node_feature_key, self.edge_feature_key)


class HeteroConv(nn.Module):
    """Homogeneous layers applied per edge set, combined per receiving node set.

    `layers` maps an edge set, by its name (or `'sender__name__receiver'` where the name
    repeats), to any `GraphsTuple -> GraphsTuple` linen layer (`gnkit.nn.GCN`, `GAT`,
    `GraphSAGE`, `GIN`, `GINE`, ...), which holds that edge set's parameters under the same
    name. Each runs on `gnkit.typed_graph.edge_set_graph` of its edge set; the receivers' new
    features are combined per node set by `aggregate` ('sum', 'mean', 'max'), as PyTorch
    Geometric's `HeteroConv`. Edge sets without a layer are not used; node sets that receive
    nothing keep their features. An edge set between node sets of different widths reaches its
    layer as a bipartite graph (`gnkit.convolutions.BipartiteNodes`, as PyG's `(x_src, x_dst)`),
    which GraphSAGE, GAT and GATv2 take. With `GCNConv`, `SAGEConv`, `GATConv` or `GATv2Conv`
    per edge type (the last three also with `(F_s, F_r)` in_channels) and the same weights it
    computes what `HeteroConv` does (`tests/test_typed_graph_modules.py`). Node feature dicts are
    read at `node_feature_key`; edge feature dicts are read at `edge_feature_key` (for layers
    such as GINE), or passed on as they are without one. Jittable.

    Example:
        Two papers citing each other, written by one author (features `[2, 3]`, `[1, 3]`):

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> import numpy as np
        >>> from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph
        >>> graph = TypedGraph(
        ...     context=Context(n_graph=np.array([1])),
        ...     nodes={"paper": NodeSet(np.array([2]), np.ones((2, 3), np.float32)),
        ...            "author": NodeSet(np.array([1]), np.ones((1, 3), np.float32))},
        ...     edges={EdgeSetKey("cites", ("paper", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 1]), np.array([1, 0])),
        ...            EdgeSetKey("writes", ("author", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))})
        >>> model = gn.nn.HeteroConv({"cites": gn.nn.GCN(8), "writes": gn.nn.GraphSAGE(8)})
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.nodes["paper"].features.shape
        (2, 8)
    """

    layers: Mapping[str, nn.Module]
    aggregate: str = "sum"
    node_feature_key: str | None = None
    edge_feature_key: str | None = None

    @nn.compact
    def __call__(self, graph: TypedGraph) -> TypedGraph:
        original = graph
        graph = select_features(graph, "HeteroConv", self.node_feature_key, self.edge_feature_key,
                                edges="maybe")
        names = {module_name(key, graph.edges): key for key in graph.edges}
        unknown = sorted(set(self.layers) - set(names))
        if unknown:
            raise KeyError(f"HeteroConv: layers {unknown} name no edge set; edge sets by name: "
                           f"{sorted(names)}.")
        convs = {
            names[name]: layer.clone(parent=self, name=name)
            for name, layer in self.layers.items()
        }
        updated = hetero_conv(convs, aggregate=self.aggregate)(graph)
        return restore_features(original, updated, self.node_feature_key, self.edge_feature_key)


def to_hetero(
    layer: nn.Module,
    edge_sets: Iterable[EdgeSetKey],
    aggregate: str = "sum",
    *,
    node_feature_key: str | None = None,
    edge_feature_key: str | None = None,
) -> HeteroConv:
    """A typed version of a homogeneous layer spec: one copy of `layer` per edge set.

    As PyTorch Geometric's `to_hetero` for one layer: `to_hetero(gnkit.nn.GraphSAGE(16),
    graph.edges)` is a `HeteroConv` with a GraphSAGE of its own parameters for every edge set
    (named by the set), summed (`aggregate`) per receiving node set; the feature keys are
    `HeteroConv`'s.
    """
    keys = list(edge_sets)
    return HeteroConv({module_name(key, keys): layer for key in keys}, aggregate=aggregate,
                      node_feature_key=node_feature_key, edge_feature_key=edge_feature_key)


class TypedRGCN(nn.Module):
    r"""R-GCN over edge sets.

    .. math:: x'_i = W_t x_i + b_t + \sum_k \operatorname*{mean}_{j \xrightarrow{k} i} W_k x_j

    One Dense without bias per edge set (:math:`W_k`, named by the edge set) on its sender set's
    features, so node sets may differ in width; the mean is over the edges of :math:`k` into
    :math:`i` (`normalization='in_degree'`) or a sum (`'none'`). The self-loop Dense per node set
    :math:`t` (`self_<set>`, :math:`W_t` and :math:`b_t`) is there when `self_loop` (default).
    Node sets that receive no edge set and have no self-loop keep their features. Output
    `[N_t, features]`, no activation; see `gnkit.typed_graph.rgcn`. Node feature dicts are read
    at `node_feature_key` and the output written back there. Jittable.

    Example:
        Two papers citing each other, written by one author (features `[2, 3]`, `[1, 3]`):

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> import numpy as np
        >>> from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph
        >>> graph = TypedGraph(
        ...     context=Context(n_graph=np.array([1])),
        ...     nodes={"paper": NodeSet(np.array([2]), np.ones((2, 3), np.float32)),
        ...            "author": NodeSet(np.array([1]), np.ones((1, 3), np.float32))},
        ...     edges={EdgeSetKey("cites", ("paper", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 1]), np.array([1, 0])),
        ...            EdgeSetKey("writes", ("author", "paper")):
        ...                EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))})
        >>> model = gn.nn.TypedRGCN(features=8)
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.nodes["paper"].features.shape, out.nodes["author"].features.shape
        ((2, 8), (1, 8))
    """

    features: int
    self_loop: bool = True
    normalization: str = "in_degree"
    node_feature_key: str | None = None

    @nn.compact
    def __call__(self, graph: TypedGraph) -> TypedGraph:
        original = graph
        graph = select_features(graph, "TypedRGCN", self.node_feature_key, edges="ignored")
        keys = list(graph.edges)
        inputs = [(module_name(key, keys), key.node_sets[0]) for key in keys]
        if self.self_loop:
            inputs += [(f"self_{name}", name) for name in graph.nodes]
        for kernel, name in inputs:
            features = graph.nodes[name].features
            if features is not None:
                check_input_width(self, (kernel, "kernel"), jnp.shape(features)[-1],
                                  what=f"features in node set {name!r}",
                                  argument=f"in_node_features[{name!r}]")
        relation_fns = {
            key: nn.Dense(self.features, use_bias=False, name=module_name(key, keys))
            for key in keys
        }
        self_fns = None
        if self.self_loop:
            self_fns = {name: nn.Dense(self.features, name=f"self_{name}") for name in graph.nodes}
        updated = rgcn(relation_fns, self_fns, normalization=self.normalization)(graph)
        return restore_features(original, updated, self.node_feature_key)
