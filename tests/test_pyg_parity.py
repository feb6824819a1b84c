"""gnkit against PyTorch Geometric with the same weights: `nn.GCN` / `GCNConv`, `nn.GAT` /
`GATConv`, `nn.GATv2` / `GATv2Conv` (outputs, and gradients with respect to the node features
and every weight), `nn.GraphSAGE`, `GAT` and `GATv2` on a bipartite graph with sender and
receiver widths `(3, 2)` against `SAGEConv`, `GATConv` and `GATv2Conv` with `in_channels=(3, 2)`,
and the power-mean and degree-scaler aggregators.

One small directed graph, in float64: node 0 receives a duplicated edge, node 2 holds one
self-edge and node 4 two, node 5 only sends (in-degree 0), node 6 is isolated.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
pyg_aggr = pytest.importorskip("torch_geometric.nn.aggr")

from gnkit import aggregators  # noqa: E402
from gnkit.convolutions import BipartiteNodes  # noqa: E402
from gnkit.graph import GraphsTuple  # noqa: E402
from gnkit.nn import GAT, GCN, GATv2, GraphSAGE  # noqa: E402

torch.set_num_threads(1)

SENDERS = np.array([0, 0, 1, 3, 0, 2, 4, 4, 5, 5, 2, 1])
RECEIVERS = np.array([1, 1, 2, 1, 3, 2, 4, 4, 0, 4, 0, 0])
N_NODE = 7
TOLERANCE = 1e-10


def node_features(width, seed=0):
    return np.random.default_rng(seed).normal(size=(N_NODE, width))


def make_graph(nodes):
    return GraphsTuple(
        nodes=jnp.asarray(nodes),
        edges=None,
        receivers=jnp.asarray(RECEIVERS),
        senders=jnp.asarray(SENDERS),
        globals=None,
        n_node=jnp.asarray([N_NODE]),
        n_edge=jnp.asarray([len(SENDERS)]),
    )


def assert_close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=TOLERANCE, atol=TOLERANCE)


# Where each gnkit parameter lives in the PyG layer, and how its layout differs:
# a Dense kernel `[in, out]` is PyG's `Linear.weight` transposed, an attention vector `[H, C]`
# is PyG's `[1, H, C]`, a bias is the same vector.
def _to_torch_layout(kind, array):
    if kind == "kernel":
        return array.T
    if kind == "attention":
        return array[None]
    return array


def _from_torch_layout(kind, array):
    if kind == "kernel":
        return array.T
    if kind == "attention":
        return array[0]
    return array


GCN_WEIGHTS = [
    (("linear", "kernel"), "lin.weight", "kernel"),
    (("bias",), "bias", "vector"),
]
GAT_WEIGHTS = [
    (("linear", "kernel"), "lin.weight", "kernel"),
    (("sender_attention",), "att_src", "attention"),
    (("receiver_attention",), "att_dst", "attention"),
    (("bias",), "bias", "vector"),
]
GATV2_WEIGHTS = [
    (("source", "kernel"), "lin_l.weight", "kernel"),
    (("source", "bias"), "lin_l.bias", "vector"),
    (("target", "kernel"), "lin_r.weight", "kernel"),
    (("target", "bias"), "lin_r.bias", "vector"),
    (("attention",), "att", "attention"),
    (("bias",), "bias", "vector"),
]


def _lookup(tree, path):
    for key in path:
        if key not in tree:
            return None
        tree = tree[key]
    return tree


def random_params(module, graph, seed=1):
    """NumPy float64 parameters of `module`'s shapes, every one nonzero."""
    shapes = jax.eval_shape(module.init, jax.random.key(0), graph)["params"]
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(lambda leaf: rng.normal(scale=0.6, size=leaf.shape), shapes)


def gnkit_outputs_and_gradients(module, params, nodes, cotangent):
    """Output `[N, F']` and the gradients of `sum(output * cotangent)` w.r.t. params, nodes."""
    with jax.enable_x64(True):

        def objective(params, nodes):
            out = module.apply({"params": params}, make_graph(nodes)).nodes
            return jnp.sum(out * cotangent), out

        (param_grads, node_grads), out = jax.grad(objective, argnums=(0, 1), has_aux=True)(
            params, jnp.asarray(nodes)
        )
    return np.asarray(out), np.asarray(node_grads), param_grads


def pyg_outputs_and_gradients(conv, weights, params, nodes, cotangent):
    """`conv` in float64 with gnkit's `params` copied in; the same output and gradients, the
    parameter gradients keyed by PyG name. Every PyG parameter must be mapped."""
    conv = conv.double()
    mapped = {}
    with torch.no_grad():
        for path, torch_name, kind in weights:
            value = _lookup(params, path)
            if value is not None:
                converted = torch.from_numpy(_to_torch_layout(kind, value))
                conv.get_parameter(torch_name).copy_(converted)
                mapped[torch_name] = kind
    assert set(mapped) == {name for name, _ in conv.named_parameters()}
    x = torch.tensor(nodes, requires_grad=True)
    edge_index = torch.from_numpy(np.stack([SENDERS, RECEIVERS]))
    out = conv(x, edge_index)
    (out * torch.from_numpy(cotangent)).sum().backward()
    grads = {
        name: _from_torch_layout(kind, conv.get_parameter(name).grad.numpy())
        for name, kind in mapped.items()
    }
    return out.detach().numpy(), x.grad.numpy(), grads


def assert_same_as_pyg(module, conv, weights, in_width):
    nodes = node_features(in_width)
    with jax.enable_x64(True):
        params = random_params(module, make_graph(nodes))
        width = jax.eval_shape(module.apply, {"params": params}, make_graph(nodes)).nodes.shape[-1]
    cotangent = np.random.default_rng(2).normal(size=(N_NODE, width))
    out, node_grads, param_grads = gnkit_outputs_and_gradients(module, params, nodes, cotangent)
    pyg_out, pyg_node_grads, pyg_param_grads = pyg_outputs_and_gradients(
        conv, weights, params, nodes, cotangent
    )
    assert np.abs(pyg_out).max() > 0.1
    assert_close(out, pyg_out)
    assert_close(node_grads, pyg_node_grads)
    for path, torch_name, _ in weights:
        if torch_name in pyg_param_grads:
            assert np.abs(pyg_param_grads[torch_name]).max() > 1e-3, torch_name
            assert_close(_lookup(param_grads, path), pyg_param_grads[torch_name])


# ------------------------------------------------------------------------------------------ GCN


@pytest.mark.parametrize("add_self_edges, normalize", [(True, True), (False, True), (False, False)])
@pytest.mark.parametrize("bias", [True, False])
# Widening sums first, narrowing projects first; the chunked sum, and the aggregator hook that
# edge sharding uses (it also counts the self-edges).
@pytest.mark.parametrize("in_width, out_width, aggregator", [(3, 4, None), (5, 2, "sum")])
def test_gcn_matches_gcnconv(add_self_edges, normalize, bias, in_width, out_width, aggregator):
    module = GCN(
        out_width,
        add_self_edges=add_self_edges,
        symmetric_normalization=normalize,
        use_bias=bias,
        aggregator=aggregator,
    )
    conv = pyg_nn.GCNConv(
        in_width, out_width, add_self_loops=add_self_edges, normalize=normalize, bias=bias
    )
    assert_same_as_pyg(module, conv, GCN_WEIGHTS, in_width)


# ------------------------------------------------------------------------------------------ GAT


@pytest.mark.parametrize("heads, concat", [(1, True), (3, True), (3, False)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("add_self_edges", [True, False])
def test_gat_matches_gatconv(heads, concat, bias, add_self_edges):
    module = GAT(
        4,
        num_heads=heads,
        combine_heads="concat" if concat else "mean",
        add_self_edges=add_self_edges,
        use_bias=bias,
    )
    conv = pyg_nn.GATConv(
        3, 4, heads=heads, concat=concat, add_self_loops=add_self_edges, bias=bias
    )
    assert_same_as_pyg(module, conv, GAT_WEIGHTS, 3)


@pytest.mark.parametrize("heads, concat", [(1, True), (3, True), (3, False)])
@pytest.mark.parametrize("bias, share_weights", [(True, False), (False, True)])
@pytest.mark.parametrize("add_self_edges", [True, False])
def test_gatv2_matches_gatv2conv(heads, concat, bias, share_weights, add_self_edges):
    module = GATv2(
        4,
        num_heads=heads,
        combine_heads="concat" if concat else "mean",
        add_self_edges=add_self_edges,
        share_weights=share_weights,
        use_bias=bias,
    )
    conv = pyg_nn.GATv2Conv(
        3,
        4,
        heads=heads,
        concat=concat,
        add_self_loops=add_self_edges,
        share_weights=share_weights,
        bias=bias,
    )
    assert_same_as_pyg(module, conv, GATV2_WEIGHTS, 3)


# ------------------------------------------------------------------------ bipartite graphs
# Seven sender nodes of width 3, five receiver nodes of width 2 (`in_channels=(3, 2)`): receiver
# 1 gets a duplicated edge, receiver 4 none, sender 6 sends twice.

BIPARTITE_SENDERS = np.array([0, 1, 2, 3, 4, 5, 6, 6, 2, 2])
BIPARTITE_RECEIVERS = np.array([0, 0, 1, 1, 2, 3, 3, 0, 1, 2])
SENDER_WIDTH, RECEIVER_WIDTH, N_SENDER, N_RECEIVER = 3, 2, 7, 5

SAGE_WEIGHTS = [
    (("neighbors", "kernel"), "lin_l.weight", "kernel"),
    (("neighbors", "bias"), "lin_l.bias", "vector"),
    (("root", "kernel"), "lin_r.weight", "kernel"),
    (("project", "kernel"), "lin.weight", "kernel"),
    (("project", "bias"), "lin.bias", "vector"),
]
BIPARTITE_GAT_WEIGHTS = [
    (("linear", "kernel"), "lin_src.weight", "kernel"),
    (("receiver_linear", "kernel"), "lin_dst.weight", "kernel"),
    (("sender_attention",), "att_src", "attention"),
    (("receiver_attention",), "att_dst", "attention"),
    (("bias",), "bias", "vector"),
]


def bipartite_graph(sender_nodes, receiver_nodes):
    return GraphsTuple(
        nodes=BipartiteNodes(jnp.asarray(sender_nodes), jnp.asarray(receiver_nodes)),
        edges=None,
        receivers=jnp.asarray(BIPARTITE_RECEIVERS),
        senders=jnp.asarray(BIPARTITE_SENDERS),
        globals=None,
        n_node=jnp.asarray([N_RECEIVER]),
        n_edge=jnp.asarray([len(BIPARTITE_SENDERS)]),
    )


def assert_bipartite_same_as_pyg(module, conv, weights):
    """`module` on the bipartite graph and `conv((x_src, x_dst), edge_index)` with the same
    weights: outputs `[N_r, F']` and the gradients w.r.t. both node tables and every weight."""
    sender_nodes = np.random.default_rng(5).normal(size=(N_SENDER, SENDER_WIDTH))
    receiver_nodes = np.random.default_rng(6).normal(size=(N_RECEIVER, RECEIVER_WIDTH))
    with jax.enable_x64(True):
        params = random_params(module, bipartite_graph(sender_nodes, receiver_nodes))
        out_shape = jax.eval_shape(module.apply, {"params": params},
                                   bipartite_graph(sender_nodes, receiver_nodes)).nodes.shape
        assert out_shape[0] == N_RECEIVER
        cotangent = np.random.default_rng(7).normal(size=out_shape)

        def objective(params, sender_nodes, receiver_nodes):
            graph = bipartite_graph(sender_nodes, receiver_nodes)
            out = module.apply({"params": params}, graph).nodes
            return jnp.sum(out * cotangent), out

        (param_grads, sender_grads, receiver_grads), out = jax.grad(
            objective, argnums=(0, 1, 2), has_aux=True)(
                params, jnp.asarray(sender_nodes), jnp.asarray(receiver_nodes))
    conv = conv.double()
    mapped = {}
    with torch.no_grad():
        for path, torch_name, kind in weights:
            value = _lookup(params, path)
            if value is not None:
                conv.get_parameter(torch_name).copy_(
                    torch.from_numpy(_to_torch_layout(kind, value)))
                mapped[torch_name] = kind
    assert set(mapped) == {name for name, _ in conv.named_parameters()}
    x_src = torch.tensor(sender_nodes, requires_grad=True)
    x_dst = torch.tensor(receiver_nodes, requires_grad=True)
    edge_index = torch.from_numpy(np.stack([BIPARTITE_SENDERS, BIPARTITE_RECEIVERS]))
    pyg_out = conv((x_src, x_dst), edge_index)
    (pyg_out * torch.from_numpy(cotangent)).sum().backward()
    assert np.abs(pyg_out.detach().numpy()).max() > 0.1
    assert_close(out, pyg_out.detach().numpy())
    assert_close(sender_grads, x_src.grad.numpy())
    # Without a root weight PyG never reads x_dst (no gradient); here it is 0.
    assert_close(receiver_grads, np.zeros_like(receiver_nodes) if x_dst.grad is None
                 else x_dst.grad.numpy())
    for path, torch_name, kind in weights:
        if torch_name in mapped:
            expected = _from_torch_layout(kind, conv.get_parameter(torch_name).grad.numpy())
            assert np.abs(expected).max() > 1e-3, torch_name
            assert_close(_lookup(param_grads, path), expected)


@pytest.mark.parametrize("aggregator, project, root_weight", [
    ("mean", False, True), ("max", True, True), ("sum", False, False)])
def test_graph_sage_on_a_bipartite_graph_matches_sageconv(aggregator, project, root_weight):
    module = GraphSAGE(4, aggregator=aggregator, project=project, root_weight=root_weight)
    conv = pyg_nn.SAGEConv((SENDER_WIDTH, RECEIVER_WIDTH), 4, aggr=aggregator, project=project,
                           root_weight=root_weight)
    assert_bipartite_same_as_pyg(module, conv, SAGE_WEIGHTS)


@pytest.mark.parametrize("heads, concat", [(1, True), (3, True), (3, False)])
def test_gat_on_a_bipartite_graph_matches_gatconv(heads, concat):
    module = GAT(4, num_heads=heads, combine_heads="concat" if concat else "mean",
                 add_self_edges=False)
    conv = pyg_nn.GATConv((SENDER_WIDTH, RECEIVER_WIDTH), 4, heads=heads, concat=concat,
                          add_self_loops=False)
    assert_bipartite_same_as_pyg(module, conv, BIPARTITE_GAT_WEIGHTS)


@pytest.mark.parametrize("heads, concat", [(1, True), (3, False)])
def test_gatv2_on_a_bipartite_graph_matches_gatv2conv(heads, concat):
    module = GATv2(4, num_heads=heads, combine_heads="concat" if concat else "mean",
                   add_self_edges=False)
    conv = pyg_nn.GATv2Conv((SENDER_WIDTH, RECEIVER_WIDTH), 4, heads=heads, concat=concat,
                            add_self_loops=False)
    assert_bipartite_same_as_pyg(module, conv, GATV2_WEIGHTS)


def test_bipartite_graphs_reject_self_edges_shared_weights_and_one_width_layers():
    graph = bipartite_graph(np.ones((N_SENDER, SENDER_WIDTH)),
                            np.ones((N_RECEIVER, RECEIVER_WIDTH)))
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"gat: add_self_edges=True needs one node set, but the "
                                         r"graph is bipartite \(sender and receiver nodes of "
                                         r"widths 3 and 2\)"):
        GAT(4).init(key, graph)
    with pytest.raises(ValueError, match=r"GATv2: share_weights=True needs sender and receiver "
                                         r"nodes of one width; the graph's are 3 and 2\."):
        GATv2(4, share_weights=True, add_self_edges=False).init(key, graph)
    with pytest.raises(ValueError, match=r"GCN takes the nodes of one node set, but the graph is "
                                         r"bipartite"):
        GCN(4).init(key, graph)


# ---------------------------------------------------------------------------------- aggregators

IDS = np.array([0, 2, 0, 3, 2, 0, 3, 3])  # segment 1 and 4 empty
NUM_SEGMENTS = 5


def pyg_aggregate(aggregation, data):
    with torch.no_grad():
        out = aggregation(torch.from_numpy(data), torch.from_numpy(IDS), dim_size=NUM_SEGMENTS)
    return out.numpy()


def gnkit_aggregate(aggregate, data):
    with jax.enable_x64(True):
        return np.asarray(aggregate(jnp.asarray(data), jnp.asarray(IDS), NUM_SEGMENTS))


@pytest.mark.parametrize("p", [0.5, 2.0, 3.0])
def test_power_mean_agrees_with_pyg_on_non_empty_segments(p):
    """With PyG's input floor, 1e-4: equal wherever the mean of powers lies in [1e-4, 100]
    (inputs below the floor included); empty segments give 0 here, `1e-4 ** (1/p)` in PyG."""
    data = np.random.default_rng(3).uniform(0.0, 4.0, size=(8, 2))
    data[0, 0], data[1, 1] = -1.0, 1e-6
    gnkit_out = gnkit_aggregate(aggregators.power_mean(p, min_value=1e-4), data)
    pyg_out = pyg_aggregate(pyg_aggr.PowerMeanAggregation(p), data)
    nonempty = [0, 2, 3]
    assert_close(gnkit_out[nonempty], pyg_out[nonempty])
    assert_close(gnkit_out[[1, 4]], np.zeros((2, 2)))
    assert_close(pyg_out[[1, 4]], np.full((2, 2), 1e-4 ** (1 / p)))


def test_power_mean_differs_from_pyg_where_the_docstring_says():
    """PyG clamps the mean of powers at 100 (the result at `100 ** (1/p)`) and clamps nothing
    when p == 1; here only the inputs are clipped, for every p."""
    large = np.full((8, 1), 50.0)
    assert_close(gnkit_aggregate(aggregators.power_mean(2.0), large)[0], [50.0])
    assert_close(pyg_aggregate(pyg_aggr.PowerMeanAggregation(2.0), large)[0], [10.0])
    negative = np.full((8, 1), -1.0)
    assert_close(gnkit_aggregate(aggregators.power_mean(1.0), negative)[0], [1e-6])
    assert_close(pyg_aggregate(pyg_aggr.PowerMeanAggregation(1.0), negative)[0], [-1.0])


def test_degree_scalers_match_pyg_including_empty_segments():
    degrees = np.bincount(IDS, minlength=NUM_SEGMENTS)
    scalers = ["identity", "amplification", "attenuation"]
    # An Aggregation object: with a name, PyG 2.8 wraps the scaler list in another list.
    pyg = pyg_aggr.DegreeScalerAggregation(
        pyg_aggr.SumAggregation(), scalers, deg=torch.from_numpy(np.bincount(degrees))
    )
    delta = aggregators.mean_log_degree(degrees)
    assert delta == pytest.approx(float(pyg.avg_deg_log), rel=1e-6)
    data = np.random.default_rng(4).normal(size=(8, 2))
    gnkit_out = gnkit_aggregate(aggregators.degree_scaler("sum", scalers, delta), data)
    pyg_out = pyg_aggregate(pyg, data)
    assert np.all(np.isfinite(pyg_out))
    np.testing.assert_allclose(gnkit_out, pyg_out, rtol=1e-6, atol=1e-6)
