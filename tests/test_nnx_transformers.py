"""The `gnkit.nnx` twins of GINE, D-MPNN and the GPS transformer against their `gnkit.nn`
modules: with the linen variables moved over by `from_linen`, the same outputs and gradients on
a padded batch (two real graphs and a padding graph) in evaluation mode, the variables back
unchanged (batch statistics included), and the linen layout when built NNX's way. In training
mode (`model.train()`) a step equals linen's `apply(..., train=True, mutable=["batch_stats"])`:
outputs, gradients and the running averages written back; with one dropout key both give the same
masks, and evaluation mode (`model.eval()`) reads the updated averages, deterministically."""

from collections.abc import Callable
from dataclasses import dataclass, field

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import gnkit.nn as linen
import gnkit.nnx as gx
from gnkit.batching import get_node_padding_mask, pad_with_graphs
from gnkit.graph import GraphsTuple

# Two graphs, nodes 0-3 and 4-5, padded to 9 nodes (a 3-node padding graph), 10 edges, 3 graphs.
RNG = np.random.default_rng(0)
GRAPH = pad_with_graphs(
    GraphsTuple(
        nodes=RNG.normal(size=(6, 4)).astype(np.float32),
        edges=RNG.normal(size=(8, 2)).astype(np.float32),
        senders=np.array([0, 1, 1, 2, 2, 3, 4, 5], np.int32),
        receivers=np.array([1, 0, 2, 1, 3, 2, 5, 4], np.int32),
        globals=None,
        n_node=np.array([4, 2], np.int32),
        n_edge=np.array([6, 2], np.int32),
    ),
    n_node=9,
    n_edge=10,
    n_graph=3,
)
MASK = np.asarray(get_node_padding_mask(GRAPH))
LAPLACIAN = RNG.normal(size=(9, 3)).astype(np.float32)
RANDOM_WALK = RNG.normal(size=(9, 2)).astype(np.float32)


@dataclass
class Case:
    """A linen module, the arguments of its call (keyword ones too), and the same module built
    NNX's way (`build(rngs)`)."""

    module: nn.Module
    args: tuple
    build: Callable[[nnx.Rngs], gx.Twin]
    kwargs: dict = field(default_factory=dict)


GPS_OPTIONS = dict(laplacian_features=2, random_walk_features=2)
CASES = {
    "GINE": Case(linen.GINE((5, 3), learn_epsilon=True, epsilon=0.2), (GRAPH,),
                 lambda rngs: gx.GINE(4, (5, 3), learn_epsilon=True, epsilon=0.2,
                                      in_edge_features=2, rngs=rngs)),
    "GINE_same_width": Case(
        linen.GINE((4,)), (GRAPH._replace(edges=np.tile(GRAPH.edges, 2)),),
        lambda rngs: gx.GINE(4, (4,), in_edge_features=4, rngs=rngs)),
    "DMPNN": Case(linen.DMPNN(hidden_size=5, depth=3, bias=True), (GRAPH,),
                  lambda rngs: gx.DMPNN(4, in_edge_features=2, hidden_size=5, depth=3, bias=True,
                                        rngs=rngs)),
    "GraphMultiheadAttention": Case(
        linen.GraphMultiheadAttention(2, 4), (GRAPH,),
        lambda rngs: gx.GraphMultiheadAttention(4, 2, 4, rngs=rngs)),
    "GPSLayer": Case(linen.GPSLayer(2, 4), (GRAPH,),
                     lambda rngs: gx.GPSLayer(4, 2, 4, in_edge_features=2, rngs=rngs),
                     dict(node_mask=MASK)),
    "GPSLayer_layer_norm": Case(
        linen.GPSLayer(4, 4, local=None, norm="layer_norm"), (GRAPH,),
        lambda rngs: gx.GPSLayer(4, 4, 4, local=None, norm="layer_norm", rngs=rngs)),
    "GPS": Case(linen.GPS(8, 2, 2, 4, **GPS_OPTIONS), (GRAPH,),
                lambda rngs: gx.GPS(4, 8, 2, 2, 4, in_edge_features=2, in_laplacian_features=3,
                                    in_random_walk_features=2, rngs=rngs, **GPS_OPTIONS),
                dict(laplacian_pe=LAPLACIAN, random_walk_pe=RANDOM_WALK, node_mask=MASK)),
}


def _random_variables(case: Case) -> dict:
    """The linen module's variables drawn in NumPy: parameters (nonzero biases, so none is
    inert), running means and positive running variances."""
    shapes = jax.eval_shape(lambda: case.module.init(jax.random.key(0), *case.args,
                                                     **case.kwargs))
    rng = np.random.default_rng(7)

    def draw(path, leaf):
        if jax.tree_util.keystr(path[-1:]) == "['var']":
            return rng.uniform(0.5, 1.5, size=leaf.shape).astype(leaf.dtype)
        return (0.5 * rng.normal(size=leaf.shape)).astype(leaf.dtype)

    return jax.tree_util.tree_map_with_path(draw, shapes)


def _loss(graph: GraphsTuple) -> jax.Array:
    """A fixed weighted sum of the real nodes' outputs."""
    weights = np.random.default_rng(3).normal(size=graph.nodes.shape)
    return jnp.sum(graph.nodes * weights * MASK[:, None])


def _assert_trees_close(actual, expected, tol=1e-5):
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name == "GPS"
                                  else name for name in CASES])
def test_twin_gives_the_linen_outputs_gradients_and_variables_back(name):
    case = CASES[name]
    variables = _random_variables(case)
    twin = gx.from_linen(case.module, variables)
    assert type(twin).__name__ == type(case.module).__name__

    def linen_loss(params):
        outputs = case.module.apply({**variables, "params": params}, *case.args, **case.kwargs)
        return _loss(outputs), outputs

    def nnx_loss(model):
        outputs = model(*case.args, **case.kwargs)
        return _loss(outputs), outputs

    (_, expected), linen_grads = jax.jit(jax.value_and_grad(linen_loss, has_aux=True))(
        variables["params"]
    )
    (_, actual), nnx_grads = nnx.jit(nnx.value_and_grad(nnx_loss, has_aux=True))(twin)
    _assert_trees_close(actual, expected)
    as_linen = gx.to_linen_variables(nnx.merge(nnx.graphdef(twin), nnx_grads,
                                               nnx.state(twin, nnx.Not(nnx.Param))))
    _assert_trees_close(as_linen["params"], linen_grads)
    assert all(np.abs(leaf).max() > 0 for leaf in jax.tree.leaves(linen_grads))

    back = gx.to_linen_variables(twin)
    assert jax.tree.structure(back) == jax.tree.structure(variables)
    for a, e in zip(jax.tree.leaves(back), jax.tree.leaves(variables), strict=True):
        np.testing.assert_array_equal(np.asarray(a), e)


@pytest.mark.parametrize("name", CASES)
def test_twin_built_from_sizes_has_the_linen_layout(name):
    case = CASES[name]
    built = nnx.eval_shape(lambda: case.build(nnx.Rngs(3)))
    assert jax.tree.map(np.shape, gx.to_linen_variables(built)) == jax.tree.map(
        np.shape, _random_variables(case)
    )


def _training_step(case: Case, variables: dict, key: jax.Array | None = None):
    """Linen's training step: loss, gradients, outputs and the updated batch statistics."""

    def loss(params):
        outputs, updates = case.module.apply(
            {**variables, "params": params}, *case.args, **case.kwargs, train=True,
            mutable=["batch_stats"], rngs=None if key is None else {"dropout": key})
        return _loss(outputs), (outputs, updates["batch_stats"])

    (_, (outputs, stats)), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(
        variables["params"])
    return outputs, grads, stats


@pytest.mark.parametrize("name", ["GPSLayer", pytest.param("GPS", marks=pytest.mark.slow)])
def test_training_step_updates_the_batch_statistics_as_linen_and_eval_reads_them(name):
    case = CASES[name]
    variables = _random_variables(case)
    key = jax.random.key(4)
    expected, linen_grads, linen_stats = _training_step(case, variables, key)
    twin = gx.from_linen(case.module, variables)
    twin.train()
    assert (twin.deterministic, twin.use_running_average) == (False, False)

    def nnx_loss(model):
        outputs = model(*case.args, **case.kwargs, rngs=key)
        return _loss(outputs), outputs

    (_, actual), grads = nnx.jit(nnx.value_and_grad(nnx_loss, has_aux=True))(twin)
    _assert_trees_close(actual, expected)
    _assert_trees_close(nnx.to_pure_dict(grads)["params"], linen_grads)
    stats = gx.to_linen_variables(twin)["batch_stats"]
    _assert_trees_close(stats, linen_stats)
    for before, after in zip(jax.tree.leaves(variables["batch_stats"]), jax.tree.leaves(stats),
                             strict=True):
        assert not np.allclose(before, after)

    twin.eval()
    forward = nnx.jit(lambda model: model(*case.args, **case.kwargs))
    evaluated = forward(twin)
    updated = {"params": variables["params"], "batch_stats": linen_stats}
    _assert_trees_close(evaluated, case.module.apply(updated, *case.args, **case.kwargs))
    _assert_trees_close(gx.to_linen_variables(twin)["batch_stats"], stats, tol=0)
    np.testing.assert_array_equal(forward(twin).nodes, evaluated.nodes)


def test_batch_statistics_count_only_the_real_nodes():
    """With `norm="batch_norm"` and no local layer, a step moves the first normalisation's
    running mean `m` to `0.9 m + 0.1 mean(h)`, the mean over the real nodes of
    `h = attention(x) + x`."""
    module = linen.GPSLayer(2, 4, local=None)
    variables = _random_variables(Case(module, (GRAPH,), None, dict(node_mask=MASK)))
    twin = gx.from_linen(module, variables)
    attention = gx.from_linen(linen.GraphMultiheadAttention(2, 4),
                              {"params": variables["params"]["attention"]})
    twin.train()
    twin(GRAPH, node_mask=MASK)
    h = np.asarray(attention(GRAPH).nodes) + GRAPH.nodes
    before = variables["batch_stats"]["norm_attention"]["mean"]
    np.testing.assert_allclose(twin.batch_stats["norm_attention"]["mean"][...],
                               0.9 * before + 0.1 * h[MASK].mean(axis=0), rtol=1e-5, atol=1e-6)


def test_dropout_with_one_key_gives_linen_masks_and_eval_is_deterministic():
    module = linen.GPSLayer(2, 4, dropout_rate=0.5)
    case = Case(module, (GRAPH,), None, dict(node_mask=MASK))
    variables = _random_variables(case)
    twin = gx.from_linen(module, variables)
    twin.train()
    step = nnx.jit(lambda model, key: model(GRAPH, node_mask=MASK, rngs=key))
    first = step(twin, jax.random.key(1))
    expected, _, stats = _training_step(case, variables, jax.random.key(1))
    _assert_trees_close(first, expected)
    _assert_trees_close(gx.to_linen_variables(twin)["batch_stats"], stats)
    other = step(twin, jax.random.key(2))
    assert not np.allclose(first.nodes, other.nodes)

    with pytest.raises(ValueError, match="needs rngs"):
        twin(GRAPH, node_mask=MASK)
    twin.eval()
    forward = nnx.jit(lambda model: model(GRAPH, node_mask=MASK))
    once, twice = forward(twin), forward(twin)
    np.testing.assert_array_equal(once.nodes, twice.nodes)
    _assert_trees_close(once, module.apply(gx.to_linen_variables(twin), GRAPH, node_mask=MASK))


@pytest.mark.slow
def test_built_twin_forks_its_dropout_stream_as_nnx_dropout():
    twin = gx.GPSLayer(4, 2, 4, in_edge_features=2, dropout_rate=0.5,
                       rngs=nnx.Rngs(params=0, dropout=5))
    peer = nnx.Dropout(0.5, rngs=nnx.Rngs(params=0, dropout=5))
    np.testing.assert_array_equal(jax.random.key_data(twin.rngs.key[...]),
                                  jax.random.key_data(peer.rngs.key[...]))
    train = nnx.view(twin, deterministic=False, use_running_average=False)
    step = nnx.jit(lambda model: model(GRAPH, node_mask=MASK))
    first, second = step(train), step(train)
    assert int(twin.rngs.count[...]) == 2
    assert not np.allclose(first.nodes, second.nodes)


def test_modes_must_agree_and_options_name_the_missing_width():
    case = CASES["GPSLayer"]
    twin = gx.from_linen(case.module, _random_variables(case))
    with pytest.raises(ValueError, match="use_running_average=True"):
        nnx.view(twin, deterministic=False)(GRAPH, node_mask=MASK)
    with pytest.raises(ValueError, match="needs in_laplacian_features"):
        gx.GPS(4, 8, 1, 2, 4, in_edge_features=2, laplacian_features=2, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="collections \\['cache'\\]"):
        gx.from_linen(linen.GINE((4,)), {"params": {}, "cache": {}})
