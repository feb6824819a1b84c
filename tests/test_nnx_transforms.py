"""`gnkit.nnx` modules under NNX's transforms: `nnx.Optimizer` training equal to linen + optax,
`nnx.scan` with `nnx.remat` over the RRN's steps, `nnx.vmap` over a stack of graphs, `fit` on the
split NNX state (checkpoints, stop and exact resume), and data-parallel steps through
`gnkit.parallel` on 8 forced devices equal to one device on the union."""

import json

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _forced_devices import run_with_devices
from flax import nnx

import gnkit.nn as linen
import gnkit.nnx as gx
from gnkit import train as training
from gnkit.batching import batch_np, get_node_padding_mask, pad_with_graphs
from gnkit.graph import GraphsTuple
from gnkit.parallel import data_parallel


def _graph(seed: int, n_node=(4, 3), n_edge=(6, 4), padded=(9, 12, 3)) -> GraphsTuple:
    """Real graphs with a node target, `tanh(x_0 - x_1)`, as the last feature column, padded with a
    padding graph."""
    rng = np.random.default_rng(seed)
    graphs = []
    for n, e in zip(n_node, n_edge, strict=True):
        features = rng.normal(size=(n, 3))
        target = np.tanh(features[:, :1] - features[:, 1:2])
        graphs.append(GraphsTuple(
            nodes=np.concatenate([features, target], axis=1).astype(np.float32),
            edges=rng.normal(size=(e, 2)).astype(np.float32),
            senders=rng.integers(0, n, e).astype(np.int32),
            receivers=rng.integers(0, n, e).astype(np.int32),
            globals=np.zeros((1, 1), np.float32),
            n_node=np.array([n], np.int32), n_edge=np.array([e], np.int32)))
    return pad_with_graphs(batch_np(graphs), *padded)


def node_loss(predict, graph: GraphsTuple) -> jax.Array:
    """Mean squared error on the real nodes of `predict(inputs)` against the target column."""
    inputs = graph._replace(nodes=graph.nodes[:, :3])
    mask = get_node_padding_mask(graph)
    errors = (predict(inputs).nodes[:, 0] - graph.nodes[:, 3]) ** 2
    return jnp.sum(jnp.where(mask, errors, 0.0)) / jnp.sum(mask)


GRAPHS = [_graph(seed) for seed in range(3)]


def test_nnx_optimizer_steps_equal_linen_optax_steps_and_lower_the_loss():
    model = gx.GIN(3, (8, 1), learn_epsilon=True, rngs=nnx.Rngs(0))
    params = gx.to_linen_variables(model)["params"]
    optimizer = nnx.Optimizer(model, optax.adam(3e-2), wrt=nnx.Param)

    @nnx.jit
    def nnx_step(model, optimizer, graph):
        loss, grads = nnx.value_and_grad(lambda m: node_loss(m, graph))(model)
        optimizer.update(model, grads)
        return loss

    tx = optax.adam(3e-2)
    module = model.linen_module

    @jax.jit
    def linen_step(params, opt_state, graph):
        loss, grads = jax.value_and_grad(
            lambda p: node_loss(lambda g: module.apply({"params": p}, g), graph)
        )(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    opt_state = tx.init(params)
    nnx_losses, linen_losses = [], []
    for step in range(12):
        graph = GRAPHS[step % 3]
        nnx_losses.append(float(nnx_step(model, optimizer, graph)))
        params, opt_state, loss = linen_step(params, opt_state, graph)
        linen_losses.append(float(loss))
    np.testing.assert_allclose(nnx_losses, linen_losses, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(gx.to_linen_variables(model)["params"]),
                    jax.tree.leaves(params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.mean(nnx_losses[-3:]) < 0.7 * np.mean(nnx_losses[:3])
    assert int(optimizer.step[...]) == 12


RRN_OPTIONS = dict(encoder_features=(4,), message_features=(4, 4), update_features=(4,),
                   readout_features=(2,))


def _scanned_loss(num_steps: int, calls: list):
    """Loss of the RRN's readouts with the loop written in NNX: `nnx.scan` of `nnx.remat`."""

    def step(model, carry, context):
        calls.append(1)
        return model.step(carry, context)

    scan = nnx.scan(nnx.remat(step), in_axes=(nnx.StateAxes({...: None}), nnx.Carry, None),
                    out_axes=(nnx.Carry, 0), length=num_steps)

    def loss(model, graph):
        carry, context = model.start(graph)
        _, outputs = scan(model, carry, context)
        return jnp.sum(outputs ** 2), outputs

    return loss


def test_rrn_steps_under_nnx_scan_and_remat_equal_the_model_and_trace_once():
    graph = GRAPHS[0]._replace(nodes=GRAPHS[0].nodes[:, :3])
    model = gx.RecurrentRelationalNetwork(3, in_edge_features=2, rngs=nnx.Rngs(1), **RRN_OPTIONS)
    num_steps, calls = 64, []
    (_, outputs), grads = nnx.jit(
        nnx.value_and_grad(_scanned_loss(num_steps, calls), has_aux=True)
    )(model, graph)
    assert outputs.shape == (num_steps, 9, 2)
    assert len(calls) == 1  # one traced step body for the 64 steps

    def whole(model, graph):
        outputs = model(graph, num_steps)
        return jnp.sum(outputs ** 2), outputs

    (_, expected), expected_grads = nnx.jit(nnx.value_and_grad(whole, has_aux=True))(
        model, graph
    )
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(expected_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _blocked_loss(num_blocks: int, block: int):
    """The loop as blocks of steps: an outer `nnx.scan` over `nnx.remat` blocks, each an inner
    `nnx.scan` of `nnx.remat` steps (two-level checkpointing, as linen's `remat="block"`)."""
    broadcast = nnx.StateAxes({...: None})

    def step(model, carry, context):
        return model.step(carry, context)

    inner = nnx.scan(nnx.remat(step), in_axes=(broadcast, nnx.Carry, None),
                     out_axes=(nnx.Carry, 0), length=block)
    outer = nnx.scan(nnx.remat(lambda model, carry, context: inner(model, carry, context)),
                     in_axes=(broadcast, nnx.Carry, None), out_axes=(nnx.Carry, 0),
                     length=num_blocks)

    def loss(model, graph):
        carry, context = model.start(graph)
        _, outputs = outer(model, carry, context)
        outputs = outputs.reshape(num_blocks * block, *outputs.shape[2:])
        return jnp.sum(outputs ** 2), outputs

    return loss


def _temp_bytes(loss, state, graphdef, graph) -> int:
    def scalar_loss(state):
        return loss(nnx.merge(graphdef, state), graph)[0]

    compiled = jax.jit(jax.grad(scalar_loss)).lower(state).compile()
    return compiled.memory_analysis().temp_size_in_bytes


@pytest.mark.slow
def test_rrn_nnx_remat_keeps_the_memory_of_linen_remat_per_step_and_per_block():
    graph = GRAPHS[0]._replace(nodes=GRAPHS[0].nodes[:, :3])
    options = dict(RRN_OPTIONS, encoder_features=(32,), message_features=(32, 32),
                   update_features=(32,))
    graph = pad_with_graphs(graph, 200, 400, 4)
    sizes = {}
    for remat in (False, "step", "block"):
        model = gx.RecurrentRelationalNetwork(3, in_edge_features=2, remat=remat,
                                              rngs=nnx.Rngs(1), **options)
        graphdef, state = nnx.split(model)

        def whole(model, graph):
            return (jnp.sum(model(graph, 64) ** 2),)

        sizes[f"linen_{remat}"] = _temp_bytes(whole, state, graphdef, graph)
    sizes["nnx_scan_remat"] = _temp_bytes(_scanned_loss(64, []), state, graphdef, graph)
    sizes["nnx_blocks"] = _temp_bytes(_blocked_loss(8, 8), state, graphdef, graph)
    assert sizes["nnx_scan_remat"] <= 1.2 * sizes["linen_step"], sizes
    assert sizes["nnx_blocks"] <= 1.2 * sizes["linen_block"], sizes
    assert sizes["linen_False"] > 1.5 * sizes["linen_step"] > 1.5 * sizes["linen_block"], sizes
    model = nnx.merge(graphdef, state)
    blocked = nnx.jit(_blocked_loss(8, 8))(model, graph)[1]
    np.testing.assert_allclose(blocked, nnx.jit(lambda m, g: m(g, 64))(model, graph),
                               rtol=1e-5, atol=1e-6)


def test_nnx_vmap_over_a_stack_of_graphs_equals_one_graph_at_a_time():
    model = gx.GraphNetwork((4,), (4,), (2,), in_node_features=4, in_edge_features=2,
                            in_global_features=1, rngs=nnx.Rngs(2))
    stacked = jax.tree.map(lambda *leaves: np.stack(leaves), *GRAPHS)
    mapped = nnx.vmap(lambda model, graph: model(graph), in_axes=(None, 0))(model, stacked)
    forward = nnx.jit(lambda model, graph: model(graph))
    for index, graph in enumerate(GRAPHS):
        one = forward(model, graph)
        for field in ("nodes", "edges", "globals"):
            np.testing.assert_allclose(getattr(mapped, field)[index], getattr(one, field),
                                       rtol=1e-5, atol=1e-6)


# fit on the NNX state: nnx.split gives a graphdef and a State of nnx.Param; its pure dict (plain
# nested dicts of arrays, which flax.serialization checkpoints) is what fit trains, and
# nnx.merge rebuilds the module from it inside the loss.
def _fit_setup():
    model = gx.GIN(3, (8, 1), rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model, nnx.Param)
    params = nnx.to_pure_dict(state)
    tx = optax.adam(1e-2)
    step = data_parallel("single").train_step(
        lambda params, graph: node_loss(nnx.merge(graphdef, params), graph), tx
    )

    def initial_state():
        return training.TrainingState(params, tx.init(params))

    return graphdef, step, initial_state


def _fit(num_steps, state, step, **options):
    return training.fit(state, step, lambda index: GRAPHS[index % 3], num_steps,
                        progress=False, **options)


def test_fit_trains_the_nnx_state_and_resumes_exactly_after_a_stop(tmp_path):
    graphdef, step, initial_state = _fit_setup()
    start = initial_state()
    straight = _fit(10, initial_state(), step)
    model = nnx.merge(graphdef, straight.params)
    assert isinstance(model, gx.GIN)
    first, last = (float(node_loss(nnx.merge(graphdef, state.params), GRAPHS[0]))
                   for state in (start, straight))
    assert last < first

    stop = training.StopRequest()

    def batches(index):
        if index == 3:
            stop.set()
        return GRAPHS[index % 3]

    with pytest.raises(training.TrainingStopped) as stopped:
        training.fit(initial_state(), step, batches, 10, progress=False,
                     checkpoint_dir=tmp_path, should_stop=stop)
    assert stopped.value.step == 4
    resumed_from = training.resume_or(initial_state(), tmp_path)
    assert int(resumed_from.step) == 4
    assert resumed_from.params.keys() == {"params"}
    resumed = _fit(10, resumed_from, step, checkpoint_dir=tmp_path)
    for a, b in zip(jax.tree.leaves(resumed.params), jax.tree.leaves(straight.params),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    assert training.checkpoint_steps(tmp_path)[-1] == 10


_DATA_PARALLEL = r"""
import json
import jax, jax.numpy as jnp, numpy as np, optax
from flax import nnx
import gnkit.nnx as gx
from gnkit.batching import batch_np, get_graph_padding_mask, pad_with_graphs
from gnkit.graph import GraphsTuple
from gnkit.parallel import data_parallel, device_batches

rng = np.random.default_rng(0)
graphs = []
for _ in range(16):
    n, e = int(rng.integers(2, 6)), int(rng.integers(1, 8))
    graphs.append(GraphsTuple(
        nodes=rng.normal(size=(n, 3)).astype(np.float32),
        edges=None, senders=rng.integers(0, n, e).astype(np.int32),
        receivers=rng.integers(0, n, e).astype(np.int32),
        globals=rng.normal(size=(1, 1)).astype(np.float32),
        n_node=np.array([n], np.int32), n_edge=np.array([e], np.int32)))

model = gx.GIN(3, (8, 1), rngs=nnx.Rngs(0))
graphdef, params = nnx.split(model, nnx.Param)

def loss_fn(params, graph):
    nodes = nnx.merge(graphdef, params)(graph).nodes
    graph_index = jnp.repeat(jnp.arange(graph.n_node.shape[0]), graph.n_node,
                             total_repeat_length=nodes.shape[0])
    pooled = jax.ops.segment_sum(nodes[:, 0], graph_index, graph.n_node.shape[0])
    mask = get_graph_padding_mask(graph)
    errors = jnp.where(mask, (pooled - graph.globals[:, 0]) ** 2, 0.0)
    return jnp.sum(errors) / jnp.sum(mask)

def real_graphs(graph):
    return jnp.sum(get_graph_padding_mask(graph)).astype(jnp.float32)

tx = optax.sgd(0.05)
results = {"devices": jax.device_count()}
single = data_parallel("single")
union = pad_with_graphs(batch_np(graphs), 96, 130, 17)
step = single.train_step(loss_fn, tx, weight_fn=real_graphs)
p, s = single.replicate((params, tx.init(params)))
reference = []
for _ in range(2):
    p, s, metrics = step(p, s, single.shard(union))
    reference.append(float(metrics["loss"]))
reference_params = single.host_copy(p)
results["change"] = max(float(np.abs(a - b).max()) for a, b in
                        zip(jax.tree.leaves(reference_params), jax.tree.leaves(params)))
for mode in ("mesh", "pmap"):
    strategy = data_parallel(mode)
    step = strategy.train_step(loss_fn, tx, weight_fn=real_graphs)
    p, s = strategy.replicate((params, tx.init(params)))
    batch = strategy.shard_device_batches(device_batches(graphs, 8))
    losses = []
    for _ in range(2):
        p, s, metrics = step(p, s, batch)
        losses.append(float(np.mean(metrics["loss"])))
    final = strategy.host_copy(p)
    results[mode + "_loss_difference"] = float(np.max(np.abs(np.subtract(losses, reference))))
    results[mode + "_param_difference"] = max(
        float(np.abs(a - b).max())
        for a, b in zip(jax.tree.leaves(final), jax.tree.leaves(reference_params)))
    results[mode + "_state_type"] = type(final).__name__
print(json.dumps(results))
"""


def test_data_parallel_nnx_steps_equal_one_device_on_the_union():
    results = json.loads(run_with_devices(_DATA_PARALLEL).strip().splitlines()[-1])
    assert results["devices"] == 8
    assert results["change"] > 1e-3
    for mode in ("mesh", "pmap"):
        assert results[mode + "_loss_difference"] < 1e-5, results
        assert results[mode + "_param_difference"] < 1e-6, results
        assert results[mode + "_state_type"] == "State"


def test_linen_and_nnx_checkpoints_load_in_the_other_api():
    model = gx.GIN(3, (8, 1), rngs=nnx.Rngs(4))
    data = flax.serialization.to_bytes(gx.to_linen_variables(model))
    template = linen.GIN((8, 1)).init(jax.random.key(0), GRAPHS[0]._replace(
        nodes=GRAPHS[0].nodes[:, :3]))
    restored = flax.serialization.from_bytes(template, data)
    twin = gx.from_linen(linen.GIN((8, 1)), restored)
    graph = GRAPHS[1]._replace(nodes=GRAPHS[1].nodes[:, :3])
    np.testing.assert_array_equal(twin(graph).nodes, model(graph).nodes)
