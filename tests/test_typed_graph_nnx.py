"""gnkit.nnx.typed against gnkit.nn.typed: with the linen weights moved over by `from_linen`, the
same outputs and gradients on a padded typed batch; `to_linen_variables` gives the weights back;
a twin built NNX's way (schema, widths, `rngs`) has the linen parameter layout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _typed_graphs import random_graphs
from flax import nnx

import gnkit
import gnkit.nn as linen
from gnkit import typed_graph as tg
from gnkit.nnx import from_linen, to_linen_variables
from gnkit.nnx import typed as typed_nnx

GRAPH = tg.batch(random_graphs(0, 3))
PADDED = tg.pad_to_budget(GRAPH, tg.BucketPolicy(min_nodes=16, min_edges=16).round(GRAPH))
WIDTHS = {"paper": 3, "author": 3}
EDGE_WIDTHS = {key: 2 for key in GRAPH.edges}

CASES = {
    "TypedRGCN": (linen.TypedRGCN(4),
                  lambda rngs: typed_nnx.TypedRGCN(WIDTHS, GRAPH.edges, 4, rngs=rngs)),
    "HeteroConv": (linen.HeteroConv({"cites": linen.GCN(4), "writes": linen.GraphSAGE(4),
                                     "written_by": linen.GAT(4, add_self_edges=False)},
                                    aggregate="mean"),
                   lambda rngs: typed_nnx.HeteroConv(
                       WIDTHS, GRAPH.edges, {"cites": linen.GCN(4), "writes": linen.GraphSAGE(4),
                                             "written_by": linen.GAT(4, add_self_edges=False)},
                       aggregate="mean", rngs=rngs)),
    "to_hetero": (linen.to_hetero(linen.GIN([4]), GRAPH.edges),
                  lambda rngs: typed_nnx.to_hetero(linen.GIN([4]), WIDTHS, GRAPH.edges,
                                                   rngs=rngs)),
    "TypedGraphNetwork": (
        linen.TypedGraphNetwork([4], [5], context_features=[2]),
        lambda rngs: typed_nnx.TypedGraphNetwork(
            WIDTHS, GRAPH.edges, [4], [5], context_features=[2], in_edge_features=EDGE_WIDTHS,
            in_context_features=2, rngs=rngs)),
}


def node_loss(out):
    return sum(jnp.sum(jnp.where(tg.node_mask(PADDED, n)[:, None], s.features, 0.0) ** 2)
               for n, s in out.nodes.items())


@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_gives_the_linen_outputs_gradients_and_weights_back(name):
    module, _ = CASES[name]
    variables = jax.jit(module.init)(jax.random.key(1), PADDED)
    twin = from_linen(module, variables)

    def linen_loss(params):
        return node_loss(module.apply({"params": params}, PADDED))

    expected_grads = jax.jit(jax.grad(linen_loss))(variables["params"])
    out = nnx.jit(lambda model, graph: model(graph))(twin, PADDED)
    expected = jax.jit(module.apply)(variables, PADDED)
    for set_name in PADDED.nodes:
        np.testing.assert_allclose(out.nodes[set_name].features,
                                   expected.nodes[set_name].features, rtol=1e-6, atol=1e-6)
    grads = nnx.jit(nnx.grad(lambda model: node_loss(model(PADDED))))(twin)
    flat_expected = jax.tree_util.tree_leaves(expected_grads)
    flat = jax.tree_util.tree_leaves(nnx.state(grads, nnx.Param))
    assert len(flat) == len(flat_expected) > 0
    for got, want in zip(flat, flat_expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    back = to_linen_variables(twin)
    jax.tree_util.tree_map(np.testing.assert_array_equal, back["params"], variables["params"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_built_from_the_schema_has_the_linen_layout(name):
    module, build = CASES[name]
    twin = build(nnx.Rngs(0))
    layout = jax.tree_util.tree_map(np.shape, jax.eval_shape(module.init, jax.random.key(0),
                                                             GRAPH)["params"])
    assert jax.tree_util.tree_map(np.shape, to_linen_variables(twin)["params"]) == layout
    out = jax.jit(module.apply)(to_linen_variables(twin), PADDED)
    twin_out = nnx.jit(lambda model, graph: model(graph))(twin, PADDED)
    np.testing.assert_allclose(twin_out.nodes["paper"].features, out.nodes["paper"].features,
                               rtol=1e-6, atol=1e-6)


def test_schema_errors_name_the_missing_node_set():
    with pytest.raises(ValueError, match=r"joins node sets \['author'\]"):
        typed_nnx.TypedRGCN({"paper": 3}, GRAPH.edges, 4, rngs=nnx.Rngs(0))


def test_to_hetero_twin_with_bipartite_widths_and_a_bipartite_layer_twin():
    narrow = GRAPH._replace(nodes={**GRAPH.nodes, "author": GRAPH.nodes["author"]._replace(
        features=GRAPH.nodes["author"].features[:, :2])})
    twin = typed_nnx.to_hetero(linen.GraphSAGE(4), {"paper": 3, "author": 2}, GRAPH.edges,
                               rngs=nnx.Rngs(0))
    params = to_linen_variables(twin)["params"]
    assert params["writes"]["neighbors"]["kernel"].shape == (2, 4)  # authors send, 2 wide
    assert params["writes"]["root"]["kernel"].shape == (3, 4)
    out = twin(narrow)
    expected = linen.to_hetero(linen.GraphSAGE(4), GRAPH.edges).apply({"params": params}, narrow)
    np.testing.assert_allclose(out.nodes["author"].features, expected.nodes["author"].features,
                               rtol=1e-6)
    # One GraphSAGE on the writes edge set alone, by hand: mean of senders, plus the root.
    writes = narrow.edges[tg.EdgeSetKey("writes", ("author", "paper"))]
    layer = gnkit.nnx.GraphSAGE((2, 3), 4, rngs=nnx.Rngs(1))
    back = from_linen(layer.linen_module, to_linen_variables(layer))
    bipartite, _ = tg.edge_set_graph(narrow, "writes")
    got = back(bipartite).nodes
    weights = to_linen_variables(layer)["params"]
    authors, papers = (np.asarray(narrow.nodes[n].features) for n in ("author", "paper"))
    mean = np.zeros((papers.shape[0], 2))
    for paper in range(papers.shape[0]):
        rows = np.asarray(writes.receivers) == paper
        if rows.any():
            mean[paper] = authors[np.asarray(writes.senders)[rows]].mean(0)
    hand = (mean @ weights["neighbors"]["kernel"] + weights["neighbors"]["bias"]
            + papers @ weights["root"]["kernel"])
    np.testing.assert_allclose(got, hand, rtol=1e-5, atol=1e-6)
