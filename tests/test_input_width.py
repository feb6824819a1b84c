"""Every layer module, linen and NNX, built for one input width and given another: an
`InputWidthError` naming the module, the width it was built for and the one it got (the NNX
twin's message also names its constructor argument), raised from static shapes, so also under
`jit`; valid widths still run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import gnkit as gn
from gnkit import typed_graph as tg
from gnkit.nn.input_width import InputWidthError


def graph(node_width=2, edge_width=None, relation_ids=False):
    edges = None
    if relation_ids:
        edges = jnp.array([0, 1, 1, 0])
    elif edge_width is not None:
        edges = jnp.ones((4, edge_width))
    return gn.from_edge_list([0, 1, 2, 3], [1, 0, 3, 2], n_node=4,
                             nodes=jnp.ones((4, node_width)), edges=edges)


def first_line(error):
    """The error's own message (JAX may add a note on its traceback below it)."""
    return str(error.value).splitlines()[0]


def rejects(module, built_on, given, message, *more):
    """Init `module` on `built_on`, apply it to `given` (then `more` arguments): the
    `InputWidthError` `message`."""
    variables = jax.eval_shape(lambda key: module.init(key, built_on, *more), jax.random.key(0))
    with pytest.raises(InputWidthError) as error:
        jax.eval_shape(lambda v: module.apply(v, given, *more), variables)
    assert first_line(error) == message


# (module, graph built on, graph given, message)
LINEN = {
    "GCN": (gn.nn.GCN(8), graph(2), graph(4),
            "GCN was built for 2 node features; the graph has 4."),
    "GAT": (gn.nn.GAT(8, num_heads=2), graph(2), graph(4),
            "GAT was built for 2 node features; the graph has 4."),
    "GATv2": (gn.nn.GATv2(8), graph(2), graph(4),
              "GATv2 was built for 2 node features; the graph has 4."),
    "GraphSAGE": (gn.nn.GraphSAGE(8), graph(2), graph(4),
                  "GraphSAGE was built for 2 node features; the graph has 4."),
    "GraphSAGE without root": (gn.nn.GraphSAGE(8, root_weight=False), graph(2), graph(4),
                               "GraphSAGE was built for 2 node features; the graph has 4."),
    "GIN": (gn.nn.GIN((8,)), graph(2), graph(4),
            "GIN was built for 2 node features; the graph has 4."),
    "GINE nodes": (gn.nn.GINE((8,)), graph(2, 3), graph(4, 3),
                   "GINE was built for 2 node features; the graph has 4."),
    "GINE edges": (gn.nn.GINE((8,)), graph(2, 3), graph(2, 5),
                   "GINE was built for 3 edge features; the graph has 5."),
    "GINE edges, built without projection": (
        gn.nn.GINE((8,)), graph(2, 2), graph(2, 5),
        "GINE was built for 2 edge features; the graph has 5."),
    "RGCN": (gn.nn.RGCN(8, num_relations=2), graph(2, relation_ids=True),
             graph(4, relation_ids=True), "RGCN was built for 2 node features; the graph has 4."),
    "RGCN bases, no self-loop": (
        gn.nn.RGCN(8, num_relations=2, num_bases=2, self_loop=False), graph(2, relation_ids=True),
        graph(4, relation_ids=True), "RGCN was built for 2 node features; the graph has 4."),
    "DMPNN nodes": (gn.nn.DMPNN(hidden_size=8), graph(2, 3), graph(4, 3),
                    "DMPNN was built for 2 node features; the graph has 4."),
    "DMPNN edges": (gn.nn.DMPNN(hidden_size=8), graph(2, 3), graph(2, 5),
                    "DMPNN was built for 3 edge features; the graph has 5."),
    "GraphMultiheadAttention": (gn.nn.GraphMultiheadAttention(2, 2), graph(2), graph(4),
                                "GraphMultiheadAttention was built for 2 node features; the "
                                "graph has 4."),
    "GPSLayer": (gn.nn.GPSLayer(2, 2, norm=None), graph(2, 2), graph(4, 4),
                 "GPSLayer was built for 2 node features; the graph has 4."),
    "GPS nodes": (gn.nn.GPS(channels=4, num_layers=1, num_heads=2, max_nodes=2, norm=None),
                  graph(2, 3), graph(4, 3), "GPS was built for 2 node features; the graph has 4."),
    "GPS edges": (gn.nn.GPS(channels=4, num_layers=1, num_heads=2, max_nodes=2, norm=None),
                  graph(2, 3), graph(2, 5), "GPS was built for 3 edge features; the graph has 5."),
    "HeteroConv layer": (
        gn.nn.HeteroConv({"edges": gn.nn.GraphSAGE(8)}), tg.from_graphs_tuple(graph(2)),
        tg.from_graphs_tuple(graph(4)),
        "GraphSAGE 'edges' was built for 2 node features; the graph has 4."),
}


@pytest.mark.parametrize("name", sorted(LINEN))
def test_linen_layer_names_the_width_it_was_built_for(name):
    rejects(*LINEN[name])


def test_inputs_of_mlp_factorised_dense_lcm_and_typed_rgcn():
    rejects(gn.nn.MLP((8, 3)), jnp.ones((5, 2)), jnp.ones((5, 4)),
            "MLP was built for 2 input features; the input has 4.")
    parts = [(jnp.ones((3, 2)), None), (jnp.ones((3, 1)), None)]
    wider = [(jnp.ones((3, 2)), None), (jnp.ones((3, 3)), None)]
    rejects(gn.nn.FactorisedDense(4), parts, wider,
            "FactorisedDense was built for 3 input features (all parts); the input has 5.")
    lcm = gn.nn.LCMAggregation(4, max_degree=2)
    variables = jax.eval_shape(
        lambda key: lcm.init(key, jnp.ones((3, 2)), jnp.array([0, 0, 1]), 2), jax.random.key(0))
    with pytest.raises(InputWidthError) as error:
        jax.eval_shape(lambda v: lcm.apply(v, jnp.ones((3, 4)), jnp.array([0, 0, 1]), 2),
                       variables)
    assert first_line(error) == "LCMAggregation was built for 2 input features; the input has 4."
    typed = tg.from_graphs_tuple(graph(2), node_set="paper", edge_set="cites")
    rejects(gn.nn.TypedRGCN(8), typed, tg.from_graphs_tuple(graph(4), node_set="paper",
                                                          edge_set="cites"),
            "TypedRGCN was built for 2 features in node set 'paper'; the graph has 4.")


def test_the_check_runs_under_jit_and_lets_the_right_width_through():
    module = gn.nn.GIN((8,))
    params = module.init(jax.random.key(0), graph(2))
    apply = jax.jit(module.apply)
    with pytest.raises(InputWidthError) as error:
        apply(params, graph(4))
    assert first_line(error) == "GIN was built for 2 node features; the graph has 4."
    out = apply(params, graph(2)).nodes
    # Every node has one neighbour with the same features: mlp(2 * x) for x = ones.
    expected = 2 * np.ones((4, 2)) @ params["params"]["mlp"]["dense_0"]["kernel"]
    np.testing.assert_allclose(out, expected + params["params"]["mlp"]["dense_0"]["bias"],
                               rtol=1e-6)


NNX = {
    "GIN": (lambda rngs: gn.nnx.GIN(2, (8,), rngs=rngs), graph(4),
            "GIN was built for 2 node features (in_features=2); the graph has 4."),
    "GCN": (lambda rngs: gn.nnx.GCN(2, 8, rngs=rngs), graph(4),
            "GCN was built for 2 node features (in_features=2); the graph has 4."),
    "GAT": (lambda rngs: gn.nnx.GAT(2, 8, rngs=rngs), graph(4),
            "GAT was built for 2 node features (in_features=2); the graph has 4."),
    "GATv2": (lambda rngs: gn.nnx.GATv2(2, 8, rngs=rngs), graph(4),
              "GATv2 was built for 2 node features (in_features=2); the graph has 4."),
    "GraphSAGE": (lambda rngs: gn.nnx.GraphSAGE(2, 8, rngs=rngs), graph(4),
                  "GraphSAGE was built for 2 node features (in_features=2); the graph has 4."),
    "GINE": (lambda rngs: gn.nnx.GINE(2, (8,), in_edge_features=3, rngs=rngs), graph(2, 5),
             "GINE was built for 3 edge features (in_edge_features=3); the graph has 5."),
    "DMPNN": (lambda rngs: gn.nnx.DMPNN(2, hidden_size=8, in_edge_features=3, rngs=rngs),
              graph(4, 3), "DMPNN was built for 2 node features (in_features=2); the graph has 4."),
    "RGCN": (lambda rngs: gn.nnx.RGCN(2, 8, 2, rngs=rngs), graph(4, relation_ids=True),
             "RGCN was built for 2 node features (in_features=2); the graph has 4."),
    "GPS": (lambda rngs: gn.nnx.GPS(2, 4, 1, 2, 2, in_edge_features=3, norm=None, rngs=rngs),
            graph(2, 5),
            "GPS was built for 3 edge features (in_edge_features=3); the graph has 5."),
    "TypedRGCN": (
        lambda rngs: gn.nnx.TypedRGCN({"paper": 2}, [tg.EdgeSetKey("cites", ("paper", "paper"))],
                                      8, rngs=rngs),
        tg.from_graphs_tuple(graph(4), node_set="paper", edge_set="cites"),
        "TypedRGCN was built for 2 features in node set 'paper' (in_node_features['paper']=2); "
        "the graph has 4."),
}


@pytest.mark.parametrize("name", sorted(NNX))
def test_nnx_twin_names_its_constructor_argument(name):
    build, given, message = NNX[name]
    model = build(nnx.Rngs(0))
    with pytest.raises(InputWidthError) as error:
        nnx.jit(lambda model, g: model(g))(model, given)
    assert first_line(error) == message


def test_nnx_mlp_names_in_features():
    model = gn.nnx.MLP(2, (8,), rngs=nnx.Rngs(0))
    with pytest.raises(InputWidthError) as error:
        model(jnp.ones((3, 4)))
    assert first_line(error) == (
        "MLP was built for 2 input features (in_features=2); the input has 4.")
