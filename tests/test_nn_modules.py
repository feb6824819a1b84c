"""Flax modules against NumPy references that use the weights pulled out of their params."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _jaxpr import equations

from gnkit.batching import pad_with_graphs
from gnkit.graph import GraphsTuple
from gnkit.nn import LCMAggregation
from gnkit.nn.encode_process_decode import EncodeProcessDecode
from gnkit.nn.graph_network import FactorisedDense, GraphIndependent, GraphNetwork
from gnkit.nn.layers import GAT, GCN, GIN, GATv2, GraphSAGE

# Two graphs: nodes 0-3 and 4-5. Node 3 receives no edge; 0 -> 1 appears twice.
SENDERS = np.array([0, 0, 1, 2, 1, 0, 4], np.int32)
RECEIVERS = np.array([1, 1, 2, 1, 0, 2, 5], np.int32)
N_NODE = np.array([4, 2], np.int32)
N_EDGE = np.array([6, 1], np.int32)
RNG = np.random.default_rng(0)
NODES = RNG.normal(size=(6, 3)).astype(np.float32)
EDGES = RNG.normal(size=(7, 2)).astype(np.float32)
GLOBALS = RNG.normal(size=(2, 4)).astype(np.float32)
NODE_GRAPH = np.repeat(np.arange(2), N_NODE)
EDGE_GRAPH = np.repeat(np.arange(2), N_EDGE)


def make_graph(nodes=NODES, edges=EDGES, globals_=GLOBALS):
    return GraphsTuple(
        nodes=nodes,
        edges=edges,
        receivers=RECEIVERS,
        senders=SENDERS,
        globals=globals_,
        n_node=N_NODE,
        n_edge=N_EDGE,
    )


def assert_close(actual, expected, tol=1e-5):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def random_params(module, *args):
    """Parameters of `module`'s shapes drawn in NumPy (`eval_shape` skips compiling the init)."""
    shapes = jax.eval_shape(lambda: module.init(jax.random.PRNGKey(0), *args))["params"]
    rng = np.random.default_rng(7)
    return jax.tree_util.tree_map(
        lambda leaf: (0.5 * rng.normal(size=leaf.shape)).astype(np.float32), shapes
    )


def init_and_apply(module, graph):
    """Random parameters (NumPy, nonzero biases) and the output of `module` on `graph`."""
    params = random_params(module, graph)
    return params, module.apply({"params": params}, graph)


# ------------------------------------------------------------------------ NumPy building blocks


def dense_np(x, p):
    return x @ p["kernel"] + (p["bias"] if "bias" in p else 0.0)


def relu(x):
    return np.maximum(x, 0.0)


def layer_norm_np(x, p):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-6) * p["scale"] + p["bias"]


def mlp_np(x, p, activate_final=False):
    """gnkit's MLP layout: dense_0, dense_1, ..., optional LayerNorm_0."""
    layers = sorted((k for k in p if k.startswith("dense_")), key=lambda k: int(k.split("_")[1]))
    for index, name in enumerate(layers):
        x = dense_np(x, p[name])
        if index < len(layers) - 1 or activate_final:
            x = relu(x)
    return layer_norm_np(x, p["LayerNorm_0"]) if "LayerNorm_0" in p else x


def segment_sum_np(values, segments, n):
    out = np.zeros((n,) + values.shape[1:])
    np.add.at(out, segments, values)
    return out


def softmax_np(x, axis=0):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def incoming(i, add_self_edges=False):
    """Senders of node i's incoming edges (with multiplicity), plus i itself if asked."""
    return list(SENDERS[RECEIVERS == i]) + ([i] if add_self_edges else [])


# ---------------------------------------------------------------------------- FactorisedDense


def test_factorised_dense_equals_dense_over_the_concatenation():
    table = RNG.normal(size=(6, 3)).astype(np.float32)
    parts = [(EDGES, None), (table, SENDERS), (table, RECEIVERS), (GLOBALS, EDGE_GRAPH)]
    layer = FactorisedDense(5)
    params = layer.init(jax.random.PRNGKey(0), parts)
    assert params["params"]["kernel"].shape == (2 + 3 + 3 + 4, 5)
    p = random_params(layer, parts)
    concatenated = np.concatenate(
        [EDGES, table[SENDERS], table[RECEIVERS], GLOBALS[EDGE_GRAPH]], axis=-1
    )
    expected = concatenated @ p["kernel"] + p["bias"]
    factorised = layer.apply({"params": p}, parts)
    concat = FactorisedDense(5, factorised=False).apply({"params": p}, parts)
    assert_close(factorised, expected)
    assert_close(concat, expected)


def test_factorised_dense_activation_and_gradients_match_the_concatenation():
    """Row-aligned parts 2 and 17 wide (multiplied inside the fused sum, and by a matmul),
    gathered parts, ReLU inside the rematerialised sum: values and gradients of both forms."""
    table = RNG.normal(size=(6, 3)).astype(np.float32)
    wide = RNG.normal(size=(7, 17)).astype(np.float32)
    parts = [(EDGES, None), (wide, None), (table, SENDERS), (table, RECEIVERS)]
    layer = FactorisedDense(5)
    p = random_params(layer, parts)
    concatenated = np.concatenate([EDGES, wide, table[SENDERS], table[RECEIVERS]], axis=-1)
    expected = relu(concatenated @ p["kernel"] + p["bias"])

    def loss(params, edges, table, factorised):
        parts = [(edges, None), (wide, None), (table, SENDERS), (table, RECEIVERS)]
        module = FactorisedDense(5, factorised=factorised)
        return jnp.sum(module.apply({"params": params}, parts, jax.nn.relu) ** 2)

    assert_close(layer.apply({"params": p}, parts, jax.nn.relu), expected)
    grads = jax.grad(loss, argnums=(0, 1, 2))(p, EDGES, table, True)
    reference = jax.grad(loss, argnums=(0, 1, 2))(p, EDGES, table, False)
    jax.tree_util.tree_map(lambda a, b: assert_close(a, np.asarray(b), 1e-4), grads, reference)
    outputs = 2 * expected * (expected > 0)
    assert_close(grads[0]["kernel"], concatenated.T @ outputs, 1e-4)


# ------------------------------------------------------------------------------ GraphNetwork


def graph_network_np(p, nodes, edges, globals_, use_sent_edges=False):
    """Battaglia et al. (2018) Algorithm 1 with concatenated MLP inputs, sum aggregation."""
    act = dict(activate_final=True)
    edges = mlp_np(
        np.concatenate([edges, nodes[SENDERS], nodes[RECEIVERS], globals_[EDGE_GRAPH]], axis=-1),
        p["edge_update"],
        **act,
    )
    node_inputs = [nodes, segment_sum_np(edges, RECEIVERS, 6)]
    if use_sent_edges:
        node_inputs.append(segment_sum_np(edges, SENDERS, 6))
    node_inputs.append(globals_[NODE_GRAPH])
    nodes = mlp_np(np.concatenate(node_inputs, -1), p["node_update"], **act)
    global_inputs = [segment_sum_np(edges, EDGE_GRAPH, 2), segment_sum_np(nodes, NODE_GRAPH, 2)]
    globals_ = mlp_np(np.concatenate(global_inputs + [globals_], -1), p["global_update"], **act)
    return nodes, edges, globals_


def test_graph_network_matches_numpy_algorithm_1():
    module = GraphNetwork((5, 4), (6, 3), (4,), activate_final=True, layer_norm=True)
    p, out = init_and_apply(module, make_graph())
    assert p["edge_update"]["dense_0"]["kernel"].shape == (2 + 3 + 3 + 4, 5)
    nodes, edges, globals_ = graph_network_np(p, NODES, EDGES, GLOBALS)
    assert_close(out.edges, edges)
    assert_close(out.nodes, nodes)
    assert_close(out.globals, globals_)


def test_factorised_graph_network_equals_concatenate_then_dense():
    """Same params (nonzero biases, so every term counts), both forms of the first layers."""
    factorised = GraphNetwork(
        (5, 4), (6, 3), (4,), activate_final=True, layer_norm=True, use_sent_edges=True
    )
    graph = make_graph()
    params = random_params(factorised, graph)
    a = factorised.apply({"params": params}, graph)
    b = factorised.copy(factorised=False).apply({"params": params}, graph)
    for field in ("nodes", "edges", "globals"):
        assert_close(getattr(a, field), np.asarray(getattr(b, field)))
    expected = graph_network_np(params, NODES, EDGES, GLOBALS, use_sent_edges=True)
    assert_close(a.nodes, expected[0], tol=1e-4)


def test_graph_network_without_globals_and_padding_invariance():
    module = GraphNetwork((4,), (3,), use_globals=False)
    graph = make_graph(globals_=None)
    p, out = init_and_apply(module, graph)
    edges = dense_np(
        np.concatenate([EDGES, NODES[SENDERS], NODES[RECEIVERS]], -1), p["edge_update"]["dense_0"]
    )
    nodes = dense_np(
        np.concatenate([NODES, segment_sum_np(edges, RECEIVERS, 6)], -1),
        p["node_update"]["dense_0"],
    )
    assert_close(out.nodes, nodes)
    assert out.globals is None
    padded = pad_with_graphs(graph, 9, 11, 4)
    out_padded = module.apply({"params": p}, padded)
    assert_close(out_padded.nodes[:6], nodes)
    assert_close(out_padded.edges[:7], edges)


def test_lcm_aggregation_plugs_into_graph_network():
    """Each node receives at most one edge here, so LCM gives relu(Dense(edge)) or 0."""
    senders = np.array([0, 1, 2, 4], np.int32)
    receivers = np.array([1, 2, 0, 5], np.int32)
    graph = make_graph()._replace(
        senders=senders, receivers=receivers, edges=EDGES[:4], n_edge=np.array([3, 1], np.int32)
    )
    module = GraphNetwork(None, (3,), aggregator=LCMAggregation(features=4, max_degree=2))
    p, out = init_and_apply(module, jax.tree_util.tree_map(jnp.asarray, graph))
    pooled = segment_sum_np(relu(dense_np(EDGES[:4], p["aggregator"]["projection"])), receivers, 6)
    inputs = np.concatenate([NODES, pooled, GLOBALS[NODE_GRAPH]], -1)
    assert_close(out.nodes, dense_np(inputs, p["node_update"]["dense_0"]))


def segment_mean_np(values, segments, n):
    counts = segment_sum_np(np.ones((len(segments), 1)), segments, n)
    return segment_sum_np(values, segments, n) / np.maximum(counts, 1.0)


def messages_only_np(p, aggregate):
    """Edge MLP (3 layers, linear last) on every edge, then `aggregate`d to receivers, senders
    and graphs; node MLP on [nodes, received, sent, globals], global MLP on [edges, nodes,
    globals]. The per-edge outputs are formed, as in the default path."""
    edges = mlp_np(
        np.concatenate([EDGES, NODES[SENDERS], NODES[RECEIVERS], GLOBALS[EDGE_GRAPH]], -1),
        p["edge_update"],
    )
    received = aggregate(edges, RECEIVERS, 6)
    sent = aggregate(edges, SENDERS, 6)
    nodes = mlp_np(
        np.concatenate([NODES, received, sent, GLOBALS[NODE_GRAPH]], -1), p["node_update"]
    )
    global_inputs = [aggregate(edges, EDGE_GRAPH, 2), aggregate(nodes, NODE_GRAPH, 2), GLOBALS]
    return nodes, mlp_np(np.concatenate(global_inputs, -1), p["global_update"])


@pytest.mark.parametrize(
    "aggregator, aggregate_np", [("sum", segment_sum_np), ("mean", segment_mean_np)]
)
def test_graph_network_without_edge_outputs_matches_the_default_path(aggregator, aggregate_np):
    """Last edge layer after the sum / mean: same params, same nodes, globals and gradients.

    Node 3 receives no edge (degree 0: no bias term), node 1 receives three; biases are nonzero.
    """
    options = dict(aggregator=aggregator, global_aggregator=aggregator, use_sent_edges=True)
    default = GraphNetwork((5, 4, 3), (6, 3), (4,), **options)
    messages_only = default.copy(edge_outputs=False)
    graph = make_graph()
    params = random_params(default, graph)
    out = messages_only.apply({"params": params}, graph)
    assert out.edges is None
    nodes, globals_ = messages_only_np(params, aggregate_np)
    assert_close(out.nodes, nodes, tol=1e-4)
    assert_close(out.globals, globals_, tol=1e-4)
    reference = default.apply({"params": params}, graph)
    assert_close(out.nodes, np.asarray(reference.nodes))

    def loss(params, module):
        out = module.apply({"params": params}, graph)
        return jnp.sum(out.nodes**2) + jnp.sum(out.globals**2)

    grads = jax.grad(loss)(params, messages_only)
    expected = jax.grad(loss)(params, default)
    jax.tree_util.tree_map(lambda a, b: assert_close(a, np.asarray(b), tol=1e-4), grads, expected)
    assert np.abs(grads["edge_update"]["dense_2"]["bias"]).sum() > 0


def test_graph_network_without_edge_outputs_one_layer_and_padding():
    """A one-layer edge MLP is aggregated as is; padding leaves the real nodes unchanged."""
    module = GraphNetwork((4,), (3,), use_globals=False, indices_are_sorted=False)
    graph = make_graph(globals_=None)
    params = random_params(module, graph)
    edges = dense_np(
        np.concatenate([EDGES, NODES[SENDERS], NODES[RECEIVERS]], -1),
        params["edge_update"]["dense_0"],
    )
    nodes = dense_np(
        np.concatenate([NODES, segment_sum_np(edges, RECEIVERS, 6)], -1),
        params["node_update"]["dense_0"],
    )
    messages_only = module.copy(edge_outputs=False)
    assert_close(messages_only.apply({"params": params}, graph).nodes, nodes)
    two_layers = GraphNetwork((4, 2), (3,), use_globals=False, edge_outputs=False)
    params = random_params(two_layers, graph)
    expected = two_layers.copy(edge_outputs=True).apply({"params": params}, graph).nodes
    padded = pad_with_graphs(graph, 9, 11, 4)
    out_padded = two_layers.apply({"params": params}, padded)
    assert out_padded.edges is None
    assert_close(out_padded.nodes[:6], np.asarray(expected))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(aggregator="max"), "aggregator='max'"),
        (dict(global_features=(2,), global_aggregator="min"), "global_aggregator='min'"),
        (dict(aggregator=LCMAggregation(features=4, max_degree=2)), "only 'sum' and 'mean'"),
        (dict(layer_norm=True), "not linear"),
        (dict(activate_final=True), "not linear"),
        (dict(node_features=None), "no node or global update"),
        (dict(edge_features=None), "no edge update"),
    ],
)
def test_graph_network_without_edge_outputs_rejects_nonlinear_settings(options, message):
    settings = {"edge_features": (4, 3), "node_features": (3,), "use_globals": False, **options}
    module = GraphNetwork(**settings, edge_outputs=False)
    with pytest.raises(ValueError, match=message):
        module.init(jax.random.PRNGKey(0), make_graph(globals_=None))


def test_graph_independent():
    module = GraphIndependent(edge_features=(3,), node_features=(4, 2), activate_final=True)
    p, out = init_and_apply(module, make_graph())
    assert_close(out.edges, relu(dense_np(EDGES, p["edge_mlp"]["dense_0"])))
    assert_close(out.nodes, mlp_np(NODES, p["node_mlp"], activate_final=True))
    assert_close(out.globals, GLOBALS)


# ------------------------------------------------------------------------ EncodeProcessDecode


def test_encode_process_decode_wiring():
    """Encoder once, shared core on [encoded, latent], decoder + output layer after each step."""
    model = EncodeProcessDecode(edge_output_size=2, node_output_size=3, latent_size=4)
    graph = make_graph()
    p = random_params(model, graph, 1)
    params = {"params": p}
    mlp = dict(activate_final=True, layer_norm=True)
    hidden = (4, 4)
    encoder = GraphIndependent(hidden, hidden, hidden, **mlp)
    core = GraphNetwork(hidden, hidden, hidden, **mlp)
    decoder = GraphIndependent(hidden, hidden, None, **mlp)
    readout = GraphIndependent((2,), (3,), None)

    @jax.jit
    def run(graph):
        by_hand = []
        encoded = latent = encoder.apply({"params": p["encoder"]}, graph)
        for _ in range(2):
            core_input = latent._replace(
                nodes=jnp.concatenate([encoded.nodes, latent.nodes], -1),
                edges=jnp.concatenate([encoded.edges, latent.edges], -1),
                globals=jnp.concatenate([encoded.globals, latent.globals], -1),
            )
            latent = core.apply({"params": p["core"]}, core_input)
            decoded = decoder.apply({"params": p["decoder"]}, latent)
            by_hand.append(readout.apply({"params": p["output_transform"]}, decoded))
        return model.apply(params, graph, 2), model.apply(params, graph, 2, scan=False), by_hand

    scanned, unrolled, by_hand = run(graph)
    assert len(scanned) == len(unrolled) == 2
    for expected, *results in zip(by_hand, scanned, unrolled, strict=True):
        for result in results:
            assert result.globals is None
            assert_close(result.nodes, np.asarray(expected.nodes), tol=1e-4)
            assert_close(result.edges, np.asarray(expected.edges), tol=1e-4)


# ------------------------------------------------------------------------------------- layers


def adjacency_np(add_self_edges):
    """`A[i, j]` = number of edges j -> i (+ I)."""
    adjacency = np.zeros((6, 6))
    np.add.at(adjacency, (RECEIVERS, SENDERS), 1.0)
    return adjacency + (np.eye(6) if add_self_edges else 0.0)


@pytest.mark.parametrize("add_self_edges", [True, False])
def test_gcn_normalises_by_in_degree_at_both_ends(add_self_edges):
    """PyG's GCNConv on this directed graph: node 0 sends three edges but receives one, and
    node 4 only sends (in-degree 0 without self-edges: its messages get scale 0)."""
    p, out = init_and_apply(GCN(5, add_self_edges=add_self_edges), make_graph())
    adjacency = adjacency_np(add_self_edges)
    degree = adjacency.sum(1)
    scale = np.where(degree > 0, 1 / np.sqrt(np.maximum(degree, 1)), 0.0)
    propagate = scale[:, None] * adjacency * scale[None, :]
    assert_close(out.nodes, propagate @ NODES @ p["linear"]["kernel"] + p["bias"])


def test_gcn_jraph_convention():
    p, out = init_and_apply(GCN(5, convention="jraph"), make_graph())
    adjacency = adjacency_np(True)
    in_scale = 1 / np.sqrt(np.maximum(adjacency.sum(1), 1))
    out_scale = 1 / np.sqrt(np.maximum(adjacency.sum(0), 1))
    propagate = in_scale[:, None] * adjacency * out_scale[None, :]
    assert_close(out.nodes, propagate @ NODES @ p["linear"]["kernel"] + p["bias"])


def attention_np(logit, values, add_self_edges):
    """Per node i: softmax over incoming j of `logit(j, i)` `[H]`, weighted sum of `values[j]`."""
    out = np.zeros((6,) + values.shape[1:])
    for i in range(6):
        sources = incoming(i, add_self_edges)
        if sources:
            weights = softmax_np(np.stack([logit(j, i) for j in sources]))
            out[i] = np.einsum("nh,nhd->hd", weights, values[sources])
    return out


def leaky(x, slope=0.2):
    return np.where(x > 0, x, slope * x)


@pytest.mark.parametrize("combine_heads", ["concat", "mean"])
def test_gat(combine_heads):
    module = GAT(4, num_heads=2, combine_heads=combine_heads)
    p, out = init_and_apply(module, make_graph())
    width = 8 if combine_heads == "concat" else 4
    shapes = {"linear": {"kernel": (3, 8)}, "sender_attention": (2, 4), "bias": (width,)}
    shapes["receiver_attention"] = (2, 4)
    assert jax.tree_util.tree_map(np.shape, p) == shapes
    z = (NODES @ p["linear"]["kernel"]).reshape(6, 2, 4)

    def logit(j, i):
        a_s, a_r = p["sender_attention"], p["receiver_attention"]
        return leaky(np.sum(a_s * z[j], -1) + np.sum(a_r * z[i], -1))

    per_head = attention_np(logit, z, add_self_edges=True)
    combined = per_head.reshape(6, 8) if combine_heads == "concat" else per_head.mean(1)
    assert_close(out.nodes, combined + p["bias"])


def _gather_shapes(jaxpr) -> list[tuple[int, ...]]:
    """The output shapes of every gather in `jaxpr`, nested jaxprs included."""
    return [tuple(eqn.outvars[0].aval.shape) for eqn in equations(jaxpr)
            if eqn.primitive.name == "gather"]


def test_gat_scores_each_node_once_and_gathers_one_row_per_edge():
    """`GAT` takes `gat`'s split logits: the per-node scores reach the edges as `[E, H]`
    gathers, and the only `[E, H, D]` gather is of the values."""
    module = GAT(4, num_heads=2, add_self_edges=False)
    graph = make_graph()
    params = random_params(module, graph)
    jaxpr = jax.make_jaxpr(lambda p: module.apply({"params": p}, graph).nodes)(params).jaxpr
    shapes = _gather_shapes(jaxpr)
    n_edge = len(SENDERS)
    assert shapes.count((n_edge, 2, 4)) == 1
    assert shapes.count((n_edge, 2)) == 2 + 2  # the two scores, the softmax's maxima and totals


@pytest.mark.parametrize("share_weights", [False, True])
@pytest.mark.parametrize("add_self_edges", [True, False])
@pytest.mark.parametrize("use_bias", [True, False])
def test_gatv2(share_weights, add_self_edges, use_bias):
    module = GATv2(
        3,
        num_heads=2,
        share_weights=share_weights,
        add_self_edges=add_self_edges,
        use_bias=use_bias,
    )
    p, out = init_and_apply(module, make_graph())
    source = dense_np(NODES, p["source"]).reshape(6, 2, 3)
    target = source if share_weights else dense_np(NODES, p["target"]).reshape(6, 2, 3)
    assert share_weights == ("target" not in p)
    # As PyG's GATv2Conv(bias=False): no bias anywhere, the projections' included.
    assert use_bias == ("bias" in p) == ("bias" in p["source"])
    if not use_bias:
        p = dict(p, bias=0.0)

    def logit(j, i):
        return np.sum(p["attention"] * leaky(source[j] + target[i]), -1)

    expected = attention_np(logit, source, add_self_edges).reshape(6, 6) + p["bias"]
    assert_close(out.nodes, expected)
    if not add_self_edges:
        assert_close(out.nodes[3], p["bias"])


@pytest.mark.parametrize(
    "options",
    [{}, {"aggregator": "max", "project": True}, {"root_weight": False, "normalize": True}],
)
def test_graph_sage(options):
    module = GraphSAGE(4, **options)
    p, out = init_and_apply(module, make_graph())
    messages = relu(dense_np(NODES, p["project"])) if options.get("project") else NODES
    reduce = np.max if options.get("aggregator") == "max" else np.mean
    neighbours = np.stack(
        [reduce(messages[incoming(i)], 0) if incoming(i) else np.zeros(3) for i in range(6)]
    )
    expected = dense_np(neighbours, p["neighbors"])
    if options.get("root_weight", True):
        expected = expected + NODES @ p["root"]["kernel"]
    if options.get("normalize"):
        norm = np.linalg.norm(expected, axis=-1, keepdims=True)
        expected = np.where(norm > 0, expected / np.maximum(norm, 1e-30), 0.0)
    assert_close(out.nodes, expected)


@pytest.mark.parametrize("learn_epsilon", [False, True])
def test_gin(learn_epsilon):
    module = GIN((5, 2), epsilon=0.25, learn_epsilon=learn_epsilon)
    p, out = init_and_apply(module, make_graph())
    epsilon = p["epsilon"] if learn_epsilon else 0.25
    combined = (1 + epsilon) * NODES + adjacency_np(False) @ NODES
    assert_close(out.nodes, mlp_np(combined, p["mlp"]))


def test_gin_initialises_a_learned_epsilon():
    params = GIN((2,), epsilon=0.25, learn_epsilon=True).init(jax.random.PRNGKey(0), make_graph())
    assert_close(params["params"]["epsilon"], 0.25)


def test_gatv2_gradients_are_finite_without_incoming_edges():
    """Node 3 has no incoming edge and no self-edge: the safe softmax keeps gradients finite."""
    module = GATv2(2, num_heads=2, add_self_edges=False)
    params = {"params": random_params(module, make_graph())}
    grads = jax.jit(jax.grad(lambda p: jnp.sum(module.apply(p, make_graph()).nodes ** 2)))(params)
    leaves = jax.tree_util.tree_leaves(grads)
    assert all(np.all(np.isfinite(leaf)) for leaf in leaves)
    assert all(np.any(leaf != 0) for leaf in leaves)
