"""Helper for tests/test_parallel.py: multi-device and multi-process runs in fresh interpreters.

`python tests/_parallel_worker.py devices OUT.json` runs every check that needs 8 forced CPU devices
(the caller sets `XLA_FLAGS=--xla_force_host_platform_device_count=8`) and writes the measured
differences to OUT.json; the test asserts on them. `python tests/_parallel_worker.py process ...`
is one process of a multi-process training run on localhost. The model, data and loss live here so
the test process can compute the single-device reference with the same code.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.batching import batch_np, get_graph_padding_mask, pad_with_graphs
from gnkit.graph import GraphsTuple

FEATURES = {"nodes": 3, "edges": 2, "globals": 2}
HIDDEN = 4
STEPS = 3
GRAPHS_PER_STEP = 12
# Padded (nodes, edges, graphs) per device in the multi-process run: every process must use the
# same shapes without seeing the others' graphs (at most 6 graphs of <= 8 nodes, <= 19 edges).
BUDGET = (49, 114, 7)


def make_graphs(count: int, seed: int = 0) -> list[GraphsTuple]:
    """Random small graphs, each with a scalar regression target stored as its last global."""
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(count):
        n, e = int(rng.integers(2, 9)), int(rng.integers(1, 20))
        graphs.append(
            GraphsTuple(
                nodes=rng.normal(size=(n, FEATURES["nodes"])).astype(np.float32),
                edges=rng.normal(size=(e, FEATURES["edges"])).astype(np.float32),
                receivers=rng.integers(0, n, e).astype(np.int32),
                senders=rng.integers(0, n, e).astype(np.int32),
                globals=rng.normal(size=(1, FEATURES["globals"] + 1)).astype(np.float32),
                n_node=np.array([n], np.int32),
                n_edge=np.array([e], np.int32),
            )
        )
    return graphs


def _dense(rng, n_in, n_out):
    weights = rng.normal(size=(n_in, n_out)) / math.sqrt(n_in)
    return {"w": weights.astype(np.float32), "b": np.zeros(n_out, np.float32)}


def init_params(seed: int = 0) -> dict:
    """NumPy parameters (no device work, so no compiles before the steps)."""
    rng = np.random.default_rng(seed)
    n, e, g = FEATURES["nodes"], FEATURES["edges"], FEATURES["globals"]
    return {
        "edge": _dense(rng, e + 2 * n + g, HIDDEN),
        "node": _dense(rng, n + 2 * HIDDEN + g, HIDDEN),
        "global": _dense(rng, 2 * HIDDEN + g, 1),
        "attention": _dense(rng, HIDDEN, 1),
    }


def _apply(layer, *inputs):
    return jnp.concatenate(inputs, axis=-1) @ layer["w"] + layer["b"]


def graph_network(params, aggregator="sum", global_aggregator="sum"):
    """A full GraphNetwork from gnkit's blocks, with sent and received edge aggregates."""
    from gnkit.blocks import graph_network as build

    return build(
        lambda edges, sender_nodes, receiver_nodes, globals: jnp.tanh(
            _apply(params["edge"], edges, sender_nodes, receiver_nodes, globals)
        ),
        lambda nodes, received_edges, sent_edges, globals: jnp.tanh(
            _apply(params["node"], nodes, received_edges, sent_edges, globals)
        ),
        lambda edges, nodes, globals: _apply(params["global"], edges, nodes, globals),
        aggregator=aggregator,
        global_aggregator=global_aggregator,
        use_sent_edges=True,
    )


def loss_fn(params, graph: GraphsTuple):
    """Mean squared error over the real graphs of a padded batch."""
    target = graph.globals[:, -1]
    inputs = graph._replace(globals=graph.globals[:, :-1])
    prediction = graph_network(params)(inputs).globals[:, 0]
    mask = get_graph_padding_mask(graph)
    return jnp.sum(jnp.where(mask, (prediction - target) ** 2, 0.0)) / jnp.maximum(mask.sum(), 1)


def weight_fn(graph: GraphsTuple):
    return jnp.sum(get_graph_padding_mask(graph))


def optimizer():
    """Plain SGD: the parameter change is the gradient itself (Adam's first step is its sign)."""
    return optax.sgd(0.01)


def pad_union(graphs: list[GraphsTuple]) -> GraphsTuple:
    """All graphs in one batch with one padding node and graph: the single-device reference."""
    union = batch_np(graphs)
    return pad_with_graphs(
        union, int(union.n_node.sum()) + 1, int(union.n_edge.sum()), len(graphs) + 1
    )


def step_graphs(graphs: list[GraphsTuple], step: int, process_index: int, process_count: int):
    """The graphs process `process_index` trains on at `step`: its own shard of the data set."""
    from gnkit.parallel import process_shard

    local = process_shard(graphs, process_index, process_count)
    per_process = GRAPHS_PER_STEP // process_count
    return local[step * per_process : (step + 1) * per_process]


def reference_run(graphs: list[GraphsTuple], process_count: int) -> dict:
    """`STEPS` single-device steps, each on the union of every process's graphs of that step."""
    from gnkit.parallel import make_train_step

    step_fn = make_train_step(loss_fn, optimizer(), "single")
    params = init_params()
    opt_state = optimizer().init(params)
    for step in range(STEPS):
        union = sum((step_graphs(graphs, step, p, process_count) for p in range(process_count)), [])
        params, opt_state, _ = step_fn(params, opt_state, pad_union(union))
    return jax.device_get(params)


# ------------------------------------------------------------------------------------------------
# 8 forced CPU devices


def _max_difference(a, b) -> float:
    leaves = jax.tree_util.tree_leaves(
        jax.tree_util.tree_map(
            lambda x, y: np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))), a, b
        )
    )
    return float(max(leaves))


def _scale(tree) -> float:
    return float(max(np.max(np.abs(np.asarray(x))) for x in jax.tree_util.tree_leaves(tree)))


def check_data_parallel(results: dict) -> None:
    """One pmap and one mesh step against one single-device step on the union of the batches."""
    from gnkit import parallel

    graphs = make_graphs(19)
    batches = parallel.device_batches(graphs, jax.device_count())
    union = [
        g
        for shard in parallel.split_graphs(
            [g.n_node[0] for g in graphs], [g.n_edge[0] for g in graphs], jax.device_count()
        )
        for g in (graphs[i] for i in shard)
    ]
    results["device_batch_shapes_equal"] = (
        len({str(jax.tree_util.tree_map(np.shape, b)) for b in batches}) == 1
    )
    params = init_params()
    single = parallel.make_train_step(loss_fn, optimizer(), "single", donate=False)
    expected, _, expected_metrics = single(params, optimizer().init(params), pad_union(union))
    results["single_step_change"] = _max_difference(expected, params)
    for mode in ("pmap", "mesh"):
        step = parallel.make_train_step(loss_fn, optimizer(), mode, weight_fn=weight_fn)
        state = parallel.replicate((params, optimizer().init(params)), mode)
        batch = parallel.shard_device_batches(batches, mode)
        new_params, opt_state, metrics = step(*state, batch)
        results[f"{mode}_param_difference"] = _max_difference(
            parallel.unreplicate(new_params, mode), expected
        )
        results[f"{mode}_loss_difference"] = _max_difference(
            parallel.unreplicate(metrics["loss"], mode), expected_metrics["loss"]
        )
        state = (new_params, opt_state)
        error, state = _guarded_steps(step, state, batch, 3)
        results[f"{mode}_guard_error"] = error
        results[f"{mode}_guard_control_error"], _ = _guarded_steps(
            step, state, jax.device_get(batch), 1
        )


def _guarded_steps(step, state, batch, steps: int):
    """Run `steps` steps under `jax.transfer_guard("disallow")`: (the error raised or None,
    the latest params and opt_state; the inputs are donated)."""
    try:
        with jax.transfer_guard("disallow"):
            for _ in range(steps):
                *state, _ = step(*state, batch)
            jax.block_until_ready(state)
    except Exception as error:
        return str(error), state
    return None, state


def _edge_sharded_pair(model, params, graph, mesh, out_specs=None):
    """Outputs and gradients of `model` unsharded and edge-sharded, and their differences."""
    from gnkit import parallel

    def objective(run, graph_in):
        def value(p):
            out = run(p, graph_in)
            return sum(
                jnp.sum(jnp.sin(leaf))
                for leaf in jax.tree_util.tree_leaves(
                    (out.nodes, out.edges, out.globals) if isinstance(out, GraphsTuple) else out
                )
            )

        return value

    sharded = parallel.edge_sharded(lambda p, g: model(p, g, True), mesh, out_specs)
    plain_graph = jax.device_put(graph)
    sharded_graph = parallel.shard_edges(graph, mesh)
    out = jax.jit(lambda p, g: model(p, g, False))(params, plain_graph)
    out_sharded = jax.jit(sharded)(params, sharded_graph)
    if isinstance(out, GraphsTuple):
        out, out_sharded = (
            (out.nodes, out.edges, out.globals),
            (out_sharded.nodes, out_sharded.edges, out_sharded.globals),
        )
    grads = jax.jit(jax.grad(objective(lambda p, g: model(p, g, False), plain_graph)))(params)
    grads_sharded = jax.jit(jax.grad(objective(sharded, sharded_graph)))(params)
    return {
        "output_difference": _max_difference(out, out_sharded),
        "output_scale": _scale(out),
        "gradient_difference": _max_difference(grads, grads_sharded),
        "gradient_scale": _scale(grads),
    }


def big_graph(n_node=(30, 18, 1), n_edge=(100, 60, 0), seed=1) -> GraphsTuple:
    """Two graphs plus a padding graph; edges sorted by receiver within the batch."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(n_node)[:-1]])
    senders, receivers = [], []
    for offset, n, e in zip(offsets, n_node, n_edge, strict=True):
        receivers.append(np.sort(rng.integers(0, n, e)) + offset)
        senders.append(rng.integers(0, n, e) + offset)
    total_n, total_e = int(sum(n_node)), int(sum(n_edge))
    return GraphsTuple(
        nodes=rng.normal(size=(total_n, FEATURES["nodes"])).astype(np.float32),
        edges=rng.normal(size=(total_e, FEATURES["edges"])).astype(np.float32),
        receivers=np.concatenate(receivers).astype(np.int32),
        senders=np.concatenate(senders).astype(np.int32),
        globals=rng.normal(size=(len(n_node), FEATURES["globals"])).astype(np.float32),
        n_node=np.asarray(n_node, np.int32),
        n_edge=np.asarray(n_edge, np.int32),
    )


def check_edge_forward(results: dict) -> None:
    """Forward only, for the fast suite: a blocks GraphNetwork with sum and min aggregators, and
    an unsharded edge reduction (gnkit.convolutions.gcn as it is) rejected at trace time."""
    from gnkit import parallel
    from gnkit.convolutions import gcn

    mesh = parallel.make_mesh(parallel.EDGE_AXIS)
    graph, params = big_graph(), init_params()
    plain = jax.jit(lambda p, g: graph_network(p, "sum", "min")(g))(params, jax.device_put(graph))
    sharded = parallel.edge_sharded(
        lambda p, g: graph_network(
            p, parallel.sharded_aggregator("sum"), parallel.sharded_aggregator("min")
        )(g),
        mesh,
    )
    out = jax.jit(sharded)(params, parallel.shard_edges(graph, mesh))
    results["forward_difference"] = _max_difference(
        (plain.nodes, plain.edges, plain.globals), (out.nodes, out.edges, out.globals)
    )
    results["forward_scale"] = _scale((plain.nodes, plain.globals))
    unsharded = parallel.edge_sharded(
        lambda p, g: gcn(lambda x: x)(g).nodes, mesh, jax.sharding.PartitionSpec()
    )
    try:
        jax.eval_shape(unsharded, params, parallel.shard_edges(graph, mesh))
        results["unsharded_reduction_error"] = None
    except ValueError as error:
        results["unsharded_reduction_error"] = str(error)


def check_edge_sharded(results: dict) -> None:
    """GraphNetwork (blocks and jraph-style), GAT attention and GCN: sharded vs unsharded."""
    from gnkit import models, parallel, segment
    from gnkit.attention import gat

    mesh = parallel.make_mesh(parallel.EDGE_AXIS)
    graph = big_graph()
    params = init_params()

    def blocks_network(p, g, sharded):
        pick = parallel.sharded_aggregator if sharded else (lambda name: name)
        return graph_network(p, pick("mean"), pick("max"))(g)

    results["graph_network"] = _edge_sharded_pair(blocks_network, params, graph, mesh)

    def jraph_network(p, g, sharded):
        pick = parallel.sharded_aggregator if sharded else (lambda fn: fn)
        network = models.GraphNetwork(
            lambda e, s, r, u: jnp.tanh(_apply(p["edge"], e, s, r, u)),
            lambda n, sent, received, u: jnp.tanh(_apply(p["node"], n, sent, received, u)),
            lambda n, e, u: _apply(p["global"], e, n, u),
            aggregate_edges_for_nodes_fn=pick(segment.segment_sum),
            aggregate_nodes_for_globals_fn=pick(segment.segment_min),
            aggregate_edges_for_globals_fn=pick(segment.segment_sum),
            indices_are_sorted=True,
        )
        return network(g)

    results["jraph_graph_network"] = _edge_sharded_pair(jraph_network, params, graph, mesh)

    # GAT on the blocks: per edge, the sender's projection weighted by a softmax over the
    # receiver's incoming edges, summed at the receiver. The reference is gnkit.attention.gat.
    def project(p, nodes):
        return nodes @ p["edge"]["w"][: FEATURES["nodes"]]

    def logit(p, sender, receiver):
        return (receiver @ p["attention"]["w"] + 0.5 * sender @ p["attention"]["w"])[..., 0]

    def gat_on_blocks(p, g, sharded):
        normalize = parallel.sharded_softmax() if sharded else segment.safe_segment_softmax
        total = parallel.sharded_aggregator("sum") if sharded else "sum"
        z = project(p, g.nodes)
        network = models.GraphNetwork(
            lambda e, s, r, u: z[g.senders],
            lambda n, sent, received, u: received,
            attention_logit_fn=lambda e, s, r, u: jax.nn.leaky_relu(
                logit(p, z[g.senders], z[g.receivers]), 0.2
            ),
            attention_normalize_fn=normalize,
            attention_reduce_fn=lambda e, w: e * w[:, None],
            aggregate_edges_for_nodes_fn=total,
        )
        return network(g).nodes

    def gat_reference(p, g, sharded):
        layer = gat(
            lambda x: project(p, x),
            lambda sender_nodes, receiver_nodes: logit(p, sender_nodes, receiver_nodes),
        )
        return layer(g).nodes

    pair = _edge_sharded_pair(gat_on_blocks, params, graph, mesh, jax.sharding.PartitionSpec())
    reference = jax.jit(lambda p, g: gat_reference(p, g, False))(params, jax.device_put(graph))
    pair["reference_difference"] = _max_difference(
        reference, jax.jit(lambda p, g: gat_on_blocks(p, g, False))(params, jax.device_put(graph))
    )
    results["gat"] = pair

    def gcn_plain_sum(p, g, sharded):
        total = parallel.sharded_aggregator(segment.segment_sum) if sharded else segment.segment_sum
        layer = models.GraphConvolution(
            lambda x: x @ p["edge"]["w"][: FEATURES["nodes"]],
            aggregate_nodes_fn=total,
            symmetric_normalization=False,
        )
        return layer(g).nodes

    results["gcn_unnormalized"] = _edge_sharded_pair(
        gcn_plain_sum, params, graph, mesh, jax.sharding.PartitionSpec()
    )


def check_sudoku(results: dict) -> None:
    """A tiny Sudoku RRN trains for two steps with pmap and with mesh (smoke test)."""
    from gnkit import parallel
    from gnkit.demos.sudoku.models import SudokuRRN
    from gnkit.tasks import sudoku

    model = SudokuRRN(
        hidden_size=8, embed_size=4, encoder_layers=1, message_layers=2, update_layers=1
    )
    quizzes = np.zeros((jax.device_count(), sudoku.NUM_CELLS), np.int32)
    solutions = np.tile(np.arange(1, 10, dtype=np.int32), 9)[None].repeat(len(quizzes), 0)
    params = jax.jit(model.init, static_argnums=2)(jax.random.PRNGKey(0), quizzes[:1], 1)

    def sudoku_loss(p, batch):
        logits = model.apply(p, batch[0], 2)
        return jnp.mean(sudoku.cell_loss(logits, batch[1]))

    for mode in ("pmap", "mesh"):
        step = parallel.make_train_step(sudoku_loss, optimizer(), mode)
        state = parallel.replicate((params, optimizer().init(params)), mode)
        batch = parallel.shard_batch((quizzes, solutions), mode)
        losses = []
        for _ in range(2):
            *state, metrics = step(*state, batch)
            losses.append(float(np.ravel(jax.device_get(metrics["loss"]))[0]))
        results[f"sudoku_{mode}_losses"] = losses


def run_devices(out: str, checks: list[str]) -> None:
    results: dict = {"device_count": jax.device_count()}
    for name in checks:
        start = time.perf_counter()
        CHECKS[name](results)
        results[f"{name}_seconds"] = time.perf_counter() - start
    with open(out, "w") as stream:
        json.dump(results, stream, indent=1)


CHECKS = {
    "data_parallel": check_data_parallel,
    "edge_forward": check_edge_forward,
    "edge_sharded": check_edge_sharded,
    "sudoku": check_sudoku,
}


# ------------------------------------------------------------------------------------------------
# one process of a multi-process run


def run_process(process_id: int, num_processes: int, port: int, mode: str, out: str) -> None:
    from gnkit import parallel

    if process_id == 0:
        parallel.initialize(
            f"127.0.0.1:{port}", num_processes, process_id, initialization_timeout=60
        )
    else:
        os.environ.update(
            JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
            JAX_NUM_PROCESSES=str(num_processes),
            JAX_PROCESS_ID=str(process_id),
        )
        parallel.initialize(initialization_timeout=60)
    mesh = parallel.make_mesh()
    graphs = make_graphs(GRAPHS_PER_STEP * STEPS, seed=3)
    step_fn = parallel.make_train_step(loss_fn, optimizer(), mode, mesh=mesh, weight_fn=weight_fn)
    params = init_params()
    state = parallel.replicate((params, optimizer().init(params)), mode, mesh)
    for step in range(STEPS):
        mine = step_graphs(graphs, step, jax.process_index(), jax.process_count())
        batches = parallel.device_batches(mine, jax.local_device_count(), budget=BUDGET)
        *state, _ = step_fn(*state, parallel.shard_device_batches(batches, mode, mesh))
    final = jax.device_get(parallel.unreplicate(state[0], mode))
    np.savez(out, **{"/".join(k): v for k, v in _flatten(final)})


def _flatten(tree, prefix=()):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flatten(value, prefix + (key,))
        else:
            yield prefix + (key,), np.asarray(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    devices = commands.add_parser("devices")
    devices.add_argument("out")
    devices.add_argument("checks", nargs="+", choices=sorted(CHECKS))
    process = commands.add_parser("process")
    process.add_argument("--process-id", type=int, required=True)
    process.add_argument("--num-processes", type=int, required=True)
    process.add_argument("--port", type=int, required=True)
    process.add_argument("--mode", choices=("pmap", "mesh"), required=True)
    process.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "devices":
        run_devices(args.out, args.checks)
    else:
        run_process(args.process_id, args.num_processes, args.port, args.mode, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
