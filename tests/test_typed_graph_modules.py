"""gnkit.nn's typed modules: `HeteroConv` / `to_hetero` against PyTorch Geometric's `HeteroConv`
with the same weights (GCNConv, SAGEConv, GATConv per edge type; sum, mean, max), `TypedRGCN` and
`TypedGraphNetwork` against NumPy loops over their own parameters, and padding invariance."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _typed_graphs import CITES, WIDTH, WRITES, WRITTEN_BY, random_graphs

from gnkit import nn as gnn
from gnkit import typed_graph as tg

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
torch.set_num_threads(1)

TOLERANCE = dict(rtol=1e-9, atol=1e-9)
OUT = 4


def float64_graph(seed=0, count=3):
    graph = tg.batch(random_graphs(seed, count))
    return jax.tree_util.tree_map(
        lambda x: x.astype(np.float64) if np.issubdtype(x.dtype, np.floating) else x, graph)


def random_params(module, graph, seed=1):
    shapes = jax.eval_shape(module.init, jax.random.key(0), graph)["params"]
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(lambda leaf: rng.normal(scale=0.6, size=leaf.shape), shapes)


# (gnkit path inside the layer's parameters, PyG parameter name, layout)
GCN_WEIGHTS = [(("linear", "kernel"), "lin.weight", "kernel"), (("bias",), "bias", "vector")]
SAGE_WEIGHTS = [(("neighbors", "kernel"), "lin_l.weight", "kernel"),
                (("neighbors", "bias"), "lin_l.bias", "vector"),
                (("root", "kernel"), "lin_r.weight", "kernel")]
GAT_WEIGHTS = [(("linear", "kernel"), "lin.weight", "kernel"),
               (("sender_attention",), "att_src", "attention"),
               (("receiver_attention",), "att_dst", "attention"), (("bias",), "bias", "vector")]


def _torch_layout(kind, array):
    return {"kernel": array.T, "attention": array[None], "vector": array}[kind]


def copy_weights(conv, weights, params):
    conv = conv.double()
    with torch.no_grad():
        for path, name, kind in weights:
            value = params
            for part in path:
                value = value[part]
            conv.get_parameter(name).copy_(torch.from_numpy(_torch_layout(kind, value)))
    assert {name for _, name, _ in weights} == {name for name, _ in conv.named_parameters()}
    return conv


def edge_type(key):
    return (key.node_sets[0], key.name, key.node_sets[1])


def pyg_outputs_and_gradients(pyg_conv, graph, cotangents):
    x = {name: torch.tensor(np.asarray(s.features), requires_grad=True)
         for name, s in graph.nodes.items()}
    edge_index = {edge_type(key): torch.from_numpy(np.stack([s.senders, s.receivers]).astype(
        np.int64)) for key, s in graph.edges.items()}
    out = pyg_conv(x, edge_index)
    sum(torch.sum(out[name] * torch.from_numpy(cotangents[name])) for name in out).backward()
    return ({name: value.detach().numpy() for name, value in out.items()},
            {name: value.grad.numpy() for name, value in x.items()})


def gnkit_outputs_and_gradients(module, params, graph, cotangents, receivers):
    with jax.enable_x64(True):
        def objective(features):
            nodes = {n: s._replace(features=features[n]) for n, s in graph.nodes.items()}
            out = module.apply({"params": params}, graph._replace(nodes=nodes))
            outputs = {n: out.nodes[n].features for n in receivers}
            return sum(jnp.sum(outputs[n] * cotangents[n]) for n in receivers), outputs

        features = {n: jnp.asarray(s.features) for n, s in graph.nodes.items()}
        grads, outputs = jax.grad(objective, has_aux=True)(features)
    return ({n: np.asarray(v) for n, v in outputs.items()},
            {n: np.asarray(v) for n, v in grads.items()})


@pytest.mark.parametrize("aggregate", ["sum", "mean", "max"])
def test_hetero_conv_matches_pyg_heteroconv_with_copied_weights(aggregate):
    graph = float64_graph(0)
    module = gnn.HeteroConv({
        "cites": gnn.GCN(OUT),
        "writes": gnn.GraphSAGE(OUT),
        "written_by": gnn.GAT(OUT, add_self_edges=False),
    }, aggregate=aggregate)
    with jax.enable_x64(True):
        params = random_params(module, graph)
    assert set(params) == {"cites", "writes", "written_by"}
    pyg_conv = pyg_nn.HeteroConv({
        edge_type(CITES): copy_weights(pyg_nn.GCNConv(WIDTH, OUT), GCN_WEIGHTS, params["cites"]),
        edge_type(WRITES): copy_weights(pyg_nn.SAGEConv((WIDTH, WIDTH), OUT), SAGE_WEIGHTS,
                                        params["writes"]),
        edge_type(WRITTEN_BY): copy_weights(pyg_nn.GATConv(WIDTH, OUT, add_self_loops=False),
                                            GAT_WEIGHTS, params["written_by"]),
    }, aggr=aggregate)
    rng = np.random.default_rng(2)
    cotangents = {n: rng.normal(size=(graph.num_nodes(n), OUT)) for n in graph.nodes}
    pyg_out, pyg_grads = pyg_outputs_and_gradients(pyg_conv, graph, cotangents)
    out, grads = gnkit_outputs_and_gradients(module, params, graph, cotangents, list(pyg_out))
    assert set(pyg_out) == {"paper", "author"}
    for name in pyg_out:
        assert np.abs(pyg_out[name]).max() > 0.1
        np.testing.assert_allclose(out[name], pyg_out[name], **TOLERANCE)
        np.testing.assert_allclose(grads[name], pyg_grads[name], **TOLERANCE)


BIPARTITE_GAT_WEIGHTS = [(("linear", "kernel"), "lin_src.weight", "kernel"),
                         (("receiver_linear", "kernel"), "lin_dst.weight", "kernel"),
                         (("sender_attention",), "att_src", "attention"),
                         (("receiver_attention",), "att_dst", "attention"),
                         (("bias",), "bias", "vector")]
GATV2_WEIGHTS = [(("source", "kernel"), "lin_l.weight", "kernel"),
                 (("source", "bias"), "lin_l.bias", "vector"),
                 (("target", "kernel"), "lin_r.weight", "kernel"),
                 (("target", "bias"), "lin_r.bias", "vector"),
                 (("attention",), "att", "attention"), (("bias",), "bias", "vector")]
AUTHOR_WIDTH = 2


def narrow_authors(graph):
    """`graph` with authors `AUTHOR_WIDTH` wide, papers `WIDTH`: writes and written_by join sets
    of different widths."""
    authors = graph.nodes["author"]._replace(features=graph.nodes["author"].features[:, :2])
    return graph._replace(nodes={**graph.nodes, "author": authors})


@pytest.mark.parametrize("writes_layer", ["GraphSAGE", "GATv2"])
def test_hetero_conv_with_bipartite_widths_matches_pyg_in_channels_pairs(writes_layer):
    graph = narrow_authors(float64_graph(5))
    writes = {"GraphSAGE": (gnn.GraphSAGE(OUT), pyg_nn.SAGEConv((AUTHOR_WIDTH, WIDTH), OUT),
                            SAGE_WEIGHTS),
              "GATv2": (gnn.GATv2(OUT, num_heads=2, combine_heads="mean", add_self_edges=False),
                        pyg_nn.GATv2Conv((AUTHOR_WIDTH, WIDTH), OUT, heads=2, concat=False,
                                         add_self_loops=False), GATV2_WEIGHTS)}[writes_layer]
    module = gnn.HeteroConv({"cites": gnn.GCN(OUT), "writes": writes[0],
                             "written_by": gnn.GAT(OUT, add_self_edges=False)})
    with jax.enable_x64(True):
        params = random_params(module, graph)
    assert params["written_by"]["receiver_linear"]["kernel"].shape == (AUTHOR_WIDTH, OUT)
    pyg_conv = pyg_nn.HeteroConv({
        edge_type(CITES): copy_weights(pyg_nn.GCNConv(WIDTH, OUT), GCN_WEIGHTS, params["cites"]),
        edge_type(WRITES): copy_weights(writes[1], writes[2], params["writes"]),
        edge_type(WRITTEN_BY): copy_weights(
            pyg_nn.GATConv((WIDTH, AUTHOR_WIDTH), OUT, add_self_loops=False),
            BIPARTITE_GAT_WEIGHTS, params["written_by"]),
    })
    rng = np.random.default_rng(3)
    cotangents = {n: rng.normal(size=(graph.num_nodes(n), OUT)) for n in graph.nodes}
    pyg_out, pyg_grads = pyg_outputs_and_gradients(pyg_conv, graph, cotangents)
    out, grads = gnkit_outputs_and_gradients(module, params, graph, cotangents, list(pyg_out))
    for name in pyg_out:
        assert np.abs(pyg_out[name]).max() > 0.1
        np.testing.assert_allclose(out[name], pyg_out[name], **TOLERANCE)
        np.testing.assert_allclose(grads[name], pyg_grads[name], **TOLERANCE)


def test_to_hetero_gives_each_edge_set_its_own_layer_as_pyg():
    graph = float64_graph(1)
    module = gnn.to_hetero(gnn.GraphSAGE(OUT), graph.edges)
    with jax.enable_x64(True):
        params = random_params(module, graph)
        out = jax.jit(module.apply)({"params": params}, graph)
    assert set(params) == {"cites", "writes", "written_by"}
    assert not np.allclose(params["cites"]["root"]["kernel"], params["writes"]["root"]["kernel"])
    pyg_conv = pyg_nn.HeteroConv({
        edge_type(key): copy_weights(pyg_nn.SAGEConv((WIDTH, WIDTH), OUT), SAGE_WEIGHTS,
                                     params[key.name])
        for key in graph.edges
    })
    cotangents = {n: np.ones((graph.num_nodes(n), OUT)) for n in graph.nodes}
    pyg_out, _ = pyg_outputs_and_gradients(pyg_conv, graph, cotangents)
    for name in graph.nodes:
        np.testing.assert_allclose(np.asarray(out.nodes[name].features), pyg_out[name],
                                   **TOLERANCE)
    with pytest.raises(KeyError, match=r"layers \['reviews'\] name no edge set"):
        gnn.HeteroConv({"reviews": gnn.GCN(OUT)}).init(jax.random.key(0), graph)


def test_repeated_edge_set_names_get_sender_name_receiver_parameters():
    graph = tg.batch(random_graphs(2, 2))
    edges = {tg.EdgeSetKey("to", k.node_sets) if k != CITES else k: s
             for k, s in graph.edges.items()}
    graph = graph._replace(edges=edges)
    module = gnn.to_hetero(gnn.GIN([OUT]), graph.edges)
    params = jax.eval_shape(module.init, jax.random.key(0), graph)["params"]
    assert set(params) == {"cites", "author__to__paper", "paper__to__author"}


def test_typed_rgcn_matches_a_loop_over_its_parameters():
    graph = float64_graph(3)
    graph = graph._replace(nodes={**graph.nodes, "author": graph.nodes["author"]._replace(
        features=graph.nodes["author"].features[:, :2])})
    module = gnn.TypedRGCN(OUT)
    with jax.enable_x64(True):
        params = random_params(module, graph)
        out = jax.jit(module.apply)({"params": params}, graph)
    assert params["writes"]["kernel"].shape == (2, OUT)  # authors are 2 wide
    for name in graph.nodes:
        x = graph.nodes[name].features
        expected = x @ params[f"self_{name}"]["kernel"] + params[f"self_{name}"]["bias"]
        for key in (k for k in graph.edges if k.node_sets[1] == name):
            edge_set = graph.edges[key]
            messages = graph.nodes[key.node_sets[0]].features[edge_set.senders] @ \
                params[key.name]["kernel"]
            for node in range(graph.num_nodes(name)):
                rows = edge_set.receivers == node
                if rows.any():
                    expected[node] += messages[rows].mean(0)
        np.testing.assert_allclose(np.asarray(out.nodes[name].features), expected, **TOLERANCE)


def test_typed_graph_network_module_matches_a_loop_and_ignores_padding():
    graph = tg.batch(random_graphs(4, 3))
    padded = tg.pad_to_budget(graph, tg.BucketPolicy(min_nodes=16, min_edges=16).round(graph))
    module = gnn.TypedGraphNetwork(edge_features=[OUT], node_features=[5], context_features=[2])
    params = jax.jit(module.init)(jax.random.key(0), graph)["params"]
    apply = jax.jit(module.apply)
    out, padded_out = apply({"params": params}, graph), apply({"params": params}, padded)
    assert set(params) == {"edge_cites", "edge_writes", "edge_written_by", "node_paper",
                           "node_author", "context"}

    def dense(name, x):
        layer = params[name]["dense_0"]
        return x @ np.asarray(layer["kernel"]) + np.asarray(layer["bias"])

    g = jax.tree_util.tree_map(np.asarray, graph)
    new_edges = {}
    for key, s in g.edges.items():
        edge_graph = np.repeat(np.arange(g.num_graphs), s.n_edge)
        inputs = np.concatenate([s.features, g.nodes[key.node_sets[0]].features[s.senders],
                                 g.nodes[key.node_sets[1]].features[s.receivers],
                                 g.context.features[edge_graph]], -1)
        new_edges[key] = dense(f"edge_{key.name}", inputs)
        np.testing.assert_allclose(out.edges[key].features, new_edges[key], rtol=1e-5, atol=1e-5)
    for name, s in g.nodes.items():
        node_graph = np.repeat(np.arange(g.num_graphs), s.n_node)
        parts = [s.features]
        for key in sorted(k for k in g.edges if k.node_sets[1] == name):
            summed = np.zeros((g.num_nodes(name), OUT), np.float32)
            np.add.at(summed, g.edges[key].receivers, new_edges[key])
            parts.append(summed)
        expected = dense(f"node_{name}", np.concatenate(parts + [g.context.features[node_graph]],
                                                        -1))
        np.testing.assert_allclose(out.nodes[name].features, expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(padded_out.nodes[name].features[: g.num_nodes(name)],
                                   expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(padded_out.context.features[: g.num_graphs], out.context.features,
                               rtol=1e-5, atol=1e-5)
