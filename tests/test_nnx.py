"""Every `gnkit.nnx` module against its `gnkit.nn` twin: with the linen module's weights moved over
by `from_linen`, the same outputs and the same gradients on a padded batch (two real graphs and a
padding graph); `to_linen_variables` gives those weights back unchanged; a module built the NNX
way (input sizes and `rngs`) has the linen layout and runs under linen's `apply`."""

from collections.abc import Callable
from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import gnkit.nn as linen
import gnkit.nnx as gx
from gnkit.batching import pad_with_graphs, unpad_with_graphs
from gnkit.graph import GraphsTuple
from gnkit.nn.relational_memory import initial_memory

# Two graphs, nodes 0-3 and 4-5 (node 3 receives nothing, 0 -> 1 twice), padded to 9 nodes,
# 10 edges and 3 graphs.
RNG = np.random.default_rng(0)
SENDERS = np.array([0, 0, 1, 2, 1, 0, 4], np.int32)
RECEIVERS = np.array([1, 1, 2, 1, 0, 2, 5], np.int32)
GRAPH = pad_with_graphs(
    GraphsTuple(
        nodes=RNG.normal(size=(6, 3)).astype(np.float32),
        edges=RNG.normal(size=(7, 2)).astype(np.float32),
        receivers=RECEIVERS,
        senders=SENDERS,
        globals=RNG.normal(size=(2, 4)).astype(np.float32),
        n_node=np.array([4, 2], np.int32),
        n_edge=np.array([6, 1], np.int32),
    ),
    n_node=9,
    n_edge=10,
    n_graph=3,
)
RELATIONS = GRAPH._replace(nodes=np.concatenate([GRAPH.nodes, GRAPH.nodes[:, :1] ** 2], axis=1),
                           edges=np.array([0, 1, 2, 0, 1, 1, 2, 0, 0, 0], np.int32),
                           globals=None)
INDEX = (np.array([0, 3, 5]), np.array([1, 0, 2]), np.array([2, 2, 8]))


@dataclass
class Case:
    """A linen module, the arguments of the method compared, and the same module built NNX's
    way (`build(rngs)`)."""

    module: nn.Module
    args: tuple
    build: Callable[[nnx.Rngs], gx.Twin]
    method: str | None = None


def _lcm(in_features):
    return gx.LCMAggregation(in_features, 4, 3, rngs=nnx.Rngs(5))


SLOW = {"EncodeProcessDecode", "GraphNetwork_lcm", "RecurrentRelationalNetwork_gru",
        "KGEmbedding_encoder"}
CASES = {
    "MLP": Case(linen.MLP((5, 4), layer_norm=True), (GRAPH.nodes,),
                lambda rngs: gx.MLP(3, (5, 4), layer_norm=True, rngs=rngs)),
    "FactorisedDense": Case(
        linen.FactorisedDense(4),
        ([(GRAPH.edges, None), (GRAPH.nodes, GRAPH.senders)],),
        lambda rngs: gx.FactorisedDense((2, 3), 4, rngs=rngs)),
    "GraphNetwork": Case(
        linen.GraphNetwork((5, 4), (4,), (3,), layer_norm=True), (GRAPH,),
        lambda rngs: gx.GraphNetwork((5, 4), (4,), (3,), layer_norm=True, in_node_features=3,
                                     in_edge_features=2, in_global_features=4, rngs=rngs)),
    "GraphNetwork_messages": Case(
        linen.GraphNetwork((5, 4), (4,), aggregator="mean", use_sent_edges=True,
                           edge_outputs=False),
        (GRAPH,),
        lambda rngs: gx.GraphNetwork((5, 4), (4,), aggregator="mean", use_sent_edges=True,
                                     edge_outputs=False, in_node_features=3, in_edge_features=2,
                                     in_global_features=4, rngs=rngs)),
    "GraphNetwork_lcm": Case(
        linen.GraphNetwork((4,), (4,), use_globals=False,
                           aggregator=linen.LCMAggregation(4, 3)),
        (GRAPH,),
        lambda rngs: gx.GraphNetwork((4,), (4,), use_globals=False, aggregator=_lcm(4),
                                     in_node_features=3, in_edge_features=2, rngs=rngs)),
    "GraphIndependent": Case(
        linen.GraphIndependent((3,), (4, 2), None, activate_final=True), (GRAPH,),
        lambda rngs: gx.GraphIndependent((3,), (4, 2), None, activate_final=True,
                                         in_node_features=3, in_edge_features=2, rngs=rngs)),
    "EncodeProcessDecode": Case(
        linen.EncodeProcessDecode(edge_output_size=2, node_output_size=3, global_output_size=1,
                                  latent_size=4),
        (GRAPH, 2),
        lambda rngs: gx.EncodeProcessDecode(edge_output_size=2, node_output_size=3,
                                            global_output_size=1, latent_size=4,
                                            in_node_features=3, in_edge_features=2,
                                            in_global_features=4, rngs=rngs)),
    "GCN": Case(linen.GCN(4), (GRAPH,), lambda rngs: gx.GCN(3, 4, rngs=rngs)),
    "GAT": Case(linen.GAT(2, num_heads=2), (GRAPH,),
                lambda rngs: gx.GAT(3, 2, num_heads=2, rngs=rngs)),
    "GATv2": Case(linen.GATv2(2, num_heads=2, combine_heads="mean"), (GRAPH,),
                  lambda rngs: gx.GATv2(3, 2, num_heads=2, combine_heads="mean", rngs=rngs)),
    "GraphSAGE": Case(linen.GraphSAGE(4, aggregator="max", project=True), (GRAPH,),
                      lambda rngs: gx.GraphSAGE(3, 4, aggregator="max", project=True,
                                                rngs=rngs)),
    "GIN": Case(linen.GIN((5, 4), learn_epsilon=True, epsilon=0.3), (GRAPH,),
                lambda rngs: gx.GIN(3, (5, 4), learn_epsilon=True, epsilon=0.3, rngs=rngs)),
    "RGCN": Case(linen.RGCN(4, 3, num_bases=2), (RELATIONS,),
                 lambda rngs: gx.RGCN(4, 4, 3, num_bases=2, rngs=rngs)),
    "RGCNEncoder": Case(linen.RGCNEncoder((4, 2), 3, num_blocks=2), (RELATIONS,),
                        lambda rngs: gx.RGCNEncoder(4, (4, 2), 3, num_blocks=2, rngs=rngs)),
    "KGEmbedding": Case(linen.KGEmbedding(9, 3, 2, scorer="complex"), INDEX,
                        lambda rngs: gx.KGEmbedding(9, 3, 2, scorer="complex", rngs=rngs)),
    "KGEmbedding_encoder": Case(
        linen.KGEmbedding(9, 3, 2, encoder=linen.RGCNEncoder((3, 2), 3)),
        (*INDEX[:2], RELATIONS._replace(nodes=None)),
        lambda rngs: gx.KGEmbedding(9, 3, 2, rngs=rngs,
                                    encoder=gx.RGCNEncoder(2, (3, 2), 3, rngs=nnx.Rngs(2))),
        method="score_tails"),
    "RelationNetwork": Case(
        linen.RelationNetwork((4, 4), (4, 2), normalize_sum=True), (GRAPH._replace(edges=None),),
        lambda rngs: gx.RelationNetwork(3, in_question_features=4, pair_features=(4, 4),
                                        output_features=(4, 2), normalize_sum=True, rngs=rngs)),
    "RelationNetwork_dense": Case(
        linen.RelationNetwork((4,), (2,), use_edges=True),
        (RNG.normal(size=(2, 3, 3)), RNG.normal(size=(2, 4)), np.array([[1, 1, 0], [1, 1, 1]]),
         RNG.normal(size=(2, 3, 3, 2))),
        lambda rngs: gx.RelationNetwork(3, in_question_features=4, in_pair_features=2,
                                        pair_features=(4,), output_features=(2,),
                                        use_edges=True, rngs=rngs),
        method="dense"),
    "RecurrentRelationalNetwork": Case(
        linen.RecurrentRelationalNetwork((4,), (4, 4), (4,), (2,)), (GRAPH, 3),
        lambda rngs: gx.RecurrentRelationalNetwork(
            3, in_edge_features=2, encoder_features=(4,), message_features=(4, 4),
            update_features=(4,), readout_features=(2,), rngs=rngs)),
    "RecurrentRelationalNetwork_gru": Case(
        linen.RecurrentRelationalNetwork((4,), (4,), (4, 4), (2,), cell="gru", remat="block"),
        (GRAPH._replace(edges=None), 4),
        lambda rngs: gx.RecurrentRelationalNetwork(
            3, encoder_features=(4,), message_features=(4,), update_features=(4, 4),
            readout_features=(2,), cell="gru", remat="block", rngs=rngs)),
    "RelationalMemory": Case(
        linen.RelationalMemory(mem_slots=2, head_size=2, num_heads=2),
        (initial_memory(2, 2, 4) + 0.1, RNG.normal(size=(2, 3))),
        lambda rngs: gx.RelationalMemory(3, mem_slots=2, head_size=2, num_heads=2, rngs=rngs)),
    "LCMAggregation": Case(
        linen.LCMAggregation(4, 3),
        (GRAPH.edges, GRAPH.receivers, 9),
        lambda rngs: gx.LCMAggregation(2, 4, 3, rngs=rngs)),
}


def _random_variables(case: Case) -> dict:
    """The linen module's parameters drawn in NumPy (nonzero biases, so none is inert)."""
    shapes = jax.eval_shape(
        lambda: case.module.init(jax.random.key(0), *case.args, method=case.method)
    )
    rng = np.random.default_rng(7)
    return jax.tree.map(lambda leaf: (0.5 * rng.normal(size=leaf.shape)).astype(leaf.dtype),
                        shapes)


def _outputs(result) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree.leaves(result)]


def _loss(result) -> jax.Array:
    """A weighted sum of every float output, fixed weights per output shape."""
    total = 0.0
    for leaf in jax.tree.leaves(result):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            weights = np.random.default_rng(leaf.size).normal(size=leaf.shape)
            total = total + jnp.sum(leaf * weights)
    return total


def _call(twin: gx.Twin, case: Case):
    method = twin if case.method is None else getattr(twin, case.method)
    return method(*case.args)


def _assert_trees_close(actual, expected, tol=1e-5):
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name for name in CASES]
)
def test_twin_gives_the_linen_outputs_and_gradients_and_weights_back(name):
    case = CASES[name]
    variables = _random_variables(case)
    twin = gx.from_linen(case.module, variables)
    assert type(twin).__name__ == type(case.module).__name__

    def linen_loss(params):
        outputs = case.module.apply({"params": params}, *case.args, method=case.method)
        return _loss(outputs), outputs

    def nnx_loss(model):
        outputs = _call(model, case)
        return _loss(outputs), outputs

    (_, expected), linen_grads = jax.jit(jax.value_and_grad(linen_loss, has_aux=True))(
        variables["params"]
    )
    (_, actual), nnx_grads = nnx.jit(nnx.value_and_grad(nnx_loss, has_aux=True))(twin)
    _assert_trees_close(_outputs(actual), _outputs(expected))
    as_linen = gx.to_linen_variables(nnx.merge(nnx.graphdef(twin), nnx_grads))["params"]
    _assert_trees_close(as_linen, linen_grads)
    assert any(np.abs(leaf).max() > 0 for leaf in jax.tree.leaves(linen_grads))

    back = gx.to_linen_variables(twin)
    assert jax.tree.structure(back) == jax.tree.structure(variables)
    for a, e in zip(jax.tree.leaves(back), jax.tree.leaves(variables), strict=True):
        np.testing.assert_array_equal(np.asarray(a), e)


@pytest.mark.parametrize("name", CASES)
def test_twin_built_from_sizes_has_the_linen_layout(name):
    case = CASES[name]
    built = nnx.eval_shape(lambda: case.build(nnx.Rngs(3)))
    assert jax.tree.map(lambda leaf: leaf.shape, gx.to_linen_variables(built)) == jax.tree.map(
        np.shape, _random_variables(case)
    )


@pytest.mark.parametrize("name", CASES)
def test_twin_traces_to_the_linen_program(name):
    """The split twin, merged inside the traced function, gives the linen apply's jaxpr: the
    same operations on the same parameter leaves, so the same compiled step."""
    case = CASES[name]
    variables = _random_variables(case)
    graphdef, state = nnx.split(gx.from_linen(case.module, variables))
    linen_program = jax.make_jaxpr(
        lambda params: case.module.apply({"params": params}, *case.args, method=case.method)
    )(variables["params"])
    nnx_program = jax.make_jaxpr(lambda state: _call(nnx.merge(graphdef, state), case))(state)
    assert str(nnx_program) == str(linen_program)


def test_padding_rows_do_not_change_real_outputs():
    twin = gx.GraphNetwork((4,), (4,), (2,), in_node_features=3, in_edge_features=2,
                           in_global_features=4, rngs=nnx.Rngs(0))
    forward = nnx.jit(lambda model, graph: model(graph))
    padded, unpadded = forward(twin, GRAPH), forward(twin, unpad_with_graphs(GRAPH))
    np.testing.assert_allclose(padded.nodes[:6], unpadded.nodes, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(padded.globals[:2], unpadded.globals, rtol=1e-5, atol=1e-6)


def test_same_key_gives_the_linen_init():
    twin = gx.GCN(3, 4, rngs=nnx.Rngs(params=jax.random.key(11)))
    key = nnx.Rngs(params=jax.random.key(11)).params()
    expected = linen.GCN(4).init(key, GRAPH)
    _assert_trees_close(gx.to_linen_variables(twin), expected, tol=0)


def test_mlp_dropout_draws_from_the_kept_stream():
    twin = gx.MLP(3, (64, 2), dropout_rate=0.5, rngs=nnx.Rngs(0))
    inputs = jnp.asarray(GRAPH.nodes)
    kept = twin(inputs)
    first, second = twin(inputs, deterministic=False), twin(inputs, deterministic=False)
    assert not np.allclose(first, kept) and not np.allclose(first, second)
    np.testing.assert_array_equal(twin(inputs), kept)
    adopted = gx.from_linen(twin.linen_module, gx.to_linen_variables(twin))
    with pytest.raises(ValueError, match="needs rngs"):
        adopted(inputs, deterministic=False)
    dropped = adopted(inputs, deterministic=False, rngs=nnx.Rngs(dropout=1))
    assert dropped.shape == kept.shape and not np.allclose(dropped, kept)


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match="has no twin in gnkit.nnx"):
        gx.from_linen(nn.Dense(3), {"params": {}})
    with pytest.raises(ValueError, match="'params' collection"):
        gx.from_linen(linen.GCN(4), {"kernel": 1})
    with pytest.raises(TypeError, match="expected a gnkit.nnx module"):
        gx.to_linen_variables(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
    with pytest.raises(TypeError, match="rngs must be an nnx.Rngs"):
        gx.GCN(3, 4, rngs=0)
    with pytest.raises(ValueError, match="given as 'aggregator'"):
        gx.GraphNetwork((4,), (4,), use_globals=False, aggregator=_lcm(5), in_node_features=3,
                        in_edge_features=2, rngs=nnx.Rngs(0))


def test_every_linen_module_has_a_twin_with_its_name():
    modules = {name for name in linen.__all__
               if isinstance(getattr(linen, name), type)
               and issubclass(getattr(linen, name), nn.Module)}
    twins = {name for name in gx.__all__
             if isinstance(getattr(gx, name), type) and name != "Twin"}
    assert modules == twins
    for name in twins:
        assert issubclass(getattr(gx, name), gx.Twin)
        assert gx.twin._TWINS[getattr(linen, name)] is getattr(gx, name)
