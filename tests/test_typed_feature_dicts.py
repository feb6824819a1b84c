"""Typed layers on feature dicts, as `from_hetero_data` gives them (`{"x": ..., "y": ...}`): without
a feature key a `ValueError` names the set and its keys; with `node_feature_key` /
`edge_feature_key` each layer (TypedRGCN, HeteroConv / to_hetero, TypedGraphNetwork; linen and
NNX) reads the array under the key, gives what it gives on the arrays alone, and writes its output
back under the key with the other entries (`y`) untouched."""

import jax
import numpy as np
import pytest
from flax import nnx

import gnkit as gn
from gnkit import typed_graph as tg

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")


def hetero_data():
    generator = torch.Generator().manual_seed(0)
    data = pyg_data.HeteroData()
    data["paper"].x = torch.randn(4, 3, generator=generator)
    data["paper"].y = torch.tensor([0, 1, 1, 0])
    data["author"].x = torch.randn(3, 3, generator=generator)
    data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 2, 2], [0, 1, 3, 2]])
    data["author", "writes", "paper"].edge_attr = torch.randn(4, 2, generator=generator)
    data["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1, 3], [2, 3, 0]])
    return data


GRAPH = tg.from_hetero_data(hetero_data())
KEYS = list(GRAPH.edges)
WRITES = tg.EdgeSetKey("writes", ("author", "paper"))


def arrays_only(graph):
    """The graph with every dict replaced by its `x` / `edge_attr` array, by hand."""
    nodes = {n: s._replace(features=s.features["x"]) for n, s in graph.nodes.items()}
    edges = {k: s._replace(features=None if s.features is None else s.features["edge_attr"])
             for k, s in graph.edges.items()}
    return graph._replace(nodes=nodes, edges=edges)


ARRAYS = arrays_only(GRAPH)

LINEN = {
    "TypedRGCN": (lambda **keys: gn.nn.TypedRGCN(5, **keys), dict(node_feature_key="x")),
    "HeteroConv": (lambda **keys: gn.nn.HeteroConv(
        {"writes": gn.nn.GINE((5,)), "cites": gn.nn.GraphSAGE(5)}, **keys),
        dict(node_feature_key="x", edge_feature_key="edge_attr")),
    "to_hetero": (lambda **keys: gn.nn.to_hetero(gn.nn.GraphSAGE(5), KEYS, **keys),
                  dict(node_feature_key="x")),
    "TypedGraphNetwork": (lambda **keys: gn.nn.TypedGraphNetwork((4,), (5,), **keys),
                          dict(node_feature_key="x", edge_feature_key="edge_attr")),
}


def test_hetero_data_keeps_its_features_in_dicts():
    assert sorted(GRAPH.nodes["paper"].features) == ["x", "y"]
    assert sorted(GRAPH.edges[WRITES].features) == ["edge_attr"]


@pytest.mark.parametrize("name", sorted(set(LINEN) - {"HeteroConv"}))
def test_without_a_key_the_error_names_the_set_and_its_keys(name):
    build, _ = LINEN[name]
    layer = type(build()).__name__
    with pytest.raises(ValueError) as error:
        jax.eval_shape(build().init, jax.random.key(0), GRAPH)
    assert str(error.value).splitlines()[0] == (
        f"{layer}: node set 'author' holds its features as a dict with keys ['x']; the layer "
        "reads one array per set: pass node_feature_key=<the key of that array>, e.g. "
        "node_feature_key='x'.")


def test_edge_dicts_are_passed_on_where_no_layer_needs_a_key():
    gine = gn.nn.HeteroConv({"writes": gn.nn.GINE((5,))}, node_feature_key="x")
    with pytest.raises(ValueError) as error:
        gine.init(jax.random.key(0), GRAPH)
    assert str(error.value).splitlines()[0] == (
        "GINE reads edge features as one array [E, D]; the graph's are a dict with keys "
        "['edge_attr'] (in HeteroConv, name the array by edge_feature_key).")
    sage = gn.nn.to_hetero(gn.nn.GraphSAGE(5), KEYS, node_feature_key="x")
    out = sage.apply(sage.init(jax.random.key(0), GRAPH), GRAPH)
    assert out.edges[WRITES].features is GRAPH.edges[WRITES].features


def test_edge_dicts_and_missing_keys_are_named():
    with pytest.raises(ValueError) as error:
        gn.nn.TypedGraphNetwork((4,), (5,), node_feature_key="x").init(jax.random.key(0), GRAPH)
    assert str(error.value).splitlines()[0] == (
        f"TypedGraphNetwork: edge set {WRITES} holds its features as a dict with keys "
        "['edge_attr']; the layer reads one array per set: pass edge_feature_key=<the key of "
        "that array>, e.g. edge_feature_key='edge_attr'.")
    with pytest.raises(ValueError) as error:
        gn.nn.TypedRGCN(5, node_feature_key="h").init(jax.random.key(0), GRAPH)
    assert str(error.value).splitlines()[0] == (
        "TypedRGCN: node_feature_key='h', but the features of node set 'author' have the keys "
        "['x'].")


@pytest.mark.parametrize("name", sorted(LINEN))
def test_a_key_reads_the_array_and_writes_the_output_back(name):
    build, keys = LINEN[name]
    module = build(**keys)
    variables = module.init(jax.random.key(1), GRAPH)
    reference = build()
    assert jax.tree.map(np.shape, variables) == jax.tree.map(
        np.shape, jax.eval_shape(reference.init, jax.random.key(1), ARRAYS))
    out = jax.jit(module.apply)(variables, GRAPH)
    expected = reference.apply(variables, ARRAYS)
    for node_set in GRAPH.nodes:
        features = out.nodes[node_set].features
        assert sorted(features) == sorted(GRAPH.nodes[node_set].features)
        np.testing.assert_allclose(features["x"], expected.nodes[node_set].features, rtol=1e-6)
    np.testing.assert_array_equal(out.nodes["paper"].features["y"], [0, 1, 1, 0])
    assert out.nodes["paper"].features["x"].shape == (4, 5)
    if name == "TypedGraphNetwork":
        np.testing.assert_allclose(out.edges[WRITES].features["edge_attr"],
                                   expected.edges[WRITES].features, rtol=1e-6)
    else:
        assert sorted(out.edges[WRITES].features) == ["edge_attr"]
        np.testing.assert_array_equal(out.edges[WRITES].features["edge_attr"],
                                      GRAPH.edges[WRITES].features["edge_attr"])


def test_nnx_typed_rgcn_on_hetero_data():
    model = gn.nnx.TypedRGCN({"paper": 3, "author": 3}, KEYS, 5, node_feature_key="x",
                             rngs=nnx.Rngs(0))
    out = model(GRAPH)
    linen = gn.nn.TypedRGCN(5)
    expected = linen.apply(gn.nnx.to_linen_variables(model), ARRAYS)
    np.testing.assert_allclose(out.nodes["paper"].features["x"],
                               expected.nodes["paper"].features, rtol=1e-6)
    np.testing.assert_array_equal(out.nodes["paper"].features["y"], [0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"TypedRGCN: node set 'author' holds its features as a "
                                         r"dict with keys \['x'\]"):
        gn.nnx.TypedRGCN({"paper": 3, "author": 3}, KEYS, 5, rngs=nnx.Rngs(0))(GRAPH)


def test_nnx_to_hetero_and_graph_network_take_the_keys():
    hetero = gn.nnx.to_hetero(gn.nn.GraphSAGE(5), {"paper": 3, "author": 3}, KEYS,
                              node_feature_key="x", rngs=nnx.Rngs(0))
    out = hetero(GRAPH)
    expected = gn.nn.to_hetero(gn.nn.GraphSAGE(5), KEYS).apply(
        gn.nnx.to_linen_variables(hetero), ARRAYS)
    np.testing.assert_allclose(out.nodes["paper"].features["x"],
                               expected.nodes["paper"].features, rtol=1e-6)
    network = gn.nnx.TypedGraphNetwork({"paper": 3, "author": 3}, KEYS, (4,), (5,),
                                       in_edge_features={WRITES: 2}, node_feature_key="x",
                                       edge_feature_key="edge_attr", rngs=nnx.Rngs(0))
    out = network(GRAPH)
    expected = gn.nn.TypedGraphNetwork((4,), (5,)).apply(gn.nnx.to_linen_variables(network),
                                                         ARRAYS)
    np.testing.assert_allclose(out.nodes["author"].features["x"],
                               expected.nodes["author"].features, rtol=1e-6)
