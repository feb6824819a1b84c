"""Training-step time of the same model written with `gnkit.nn` (linen) and `gnkit.nnx` (NNX).

    python -m benchmarks.nnx_vs_linen [--quick] [--reps 7] [--json OUT]

Two models, each with the same weights in both APIs (`gnkit.nnx.from_linen`): GIN on W2's batch
(256 molecule-sized graphs, 32 features; three `GIN` layers of two 64-wide Dense each, a sum
readout per graph, squared error on a scalar per graph) and the Sudoku RRN step (the paper's
sizes: hidden 96, 3-layer MLPs, LSTM, 32 steps, loss on every step; 16 puzzles, fixed-degree
sum). Each is trained by Adam in three ways: linen (`jax.jit` of `value_and_grad`, optax update),
NNX (`nnx.jit` of `nnx.value_and_grad` and `nnx.Optimizer.update`, the model updated in place),
the same `nnx.jit` step through `nnx.cached_partial` (NNX's cache of the module graph, which
skips re-reading it on every call), and NNX split (`nnx.split` once, `jax.jit` of a step on the
state, `nnx.merge` inside). All first agree on one step, then are timed in turn, alternating,
after two warm-up steps; the table gives each one's median and minimum step and their ratios to
linen's (above 1: slower than linen). Host only.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import gnkit.nn as linen
import gnkit.nnx as gx
from benchmarks.workloads import molecule_graph, sudoku_graph
from gnkit.graph import GraphsTuple, node_graph_index


class LinenGINModel(nn.Module):
    """Three GIN layers, a sum readout per graph and a linear output: `[G, 1]`."""

    hidden: int = 64
    layers: int = 3

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        for index in range(self.layers):
            graph = linen.GIN((self.hidden, self.hidden), name=f"gin_{index}")(graph)
            graph = graph._replace(nodes=nn.relu(graph.nodes))
        pooled = jax.ops.segment_sum(graph.nodes, node_graph_index(graph),
                                     graph.n_node.shape[0], indices_are_sorted=True)
        return nn.Dense(1, name="output")(pooled)


class NNXGINModel(nnx.Module):
    """`LinenGINModel` in NNX, from `gnkit.nnx.GIN` layers and an `nnx.Linear`."""

    def __init__(self, in_features: int, hidden: int = 64, layers: int = 3, *, rngs: nnx.Rngs):
        widths = [in_features] + [hidden] * layers
        self.gins = nnx.List(
            [gx.GIN(width, (hidden, hidden), rngs=rngs) for width in widths[:-1]]
        )
        self.output = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        for gin in self.gins:
            graph = gin(graph)
            graph = graph._replace(nodes=nnx.relu(graph.nodes))
        pooled = jax.ops.segment_sum(graph.nodes, node_graph_index(graph),
                                     graph.n_node.shape[0], indices_are_sorted=True)
        return self.output(pooled)

    def load(self, params: dict) -> None:
        """Take `LinenGINModel`'s parameters."""
        for index, gin in enumerate(self.gins):
            nnx.update(gin, nnx.state(gx.from_linen(gin.linen_module,
                                                    {"params": params[f"gin_{index}"]})))
        self.output.kernel[...] = params["output"]["kernel"]
        self.output.bias[...] = params["output"]["bias"]


def gin_models(quick: bool):
    """The GIN model in both APIs with the same weights, its batch and its loss."""
    n_graph, features = (8, 8) if quick else (256, 32)
    graph = molecule_graph(n_graph, features)
    targets = jnp.asarray(np.random.default_rng(1).normal(size=(n_graph, 1)), jnp.float32)
    module = LinenGINModel()
    params = module.init(jax.random.key(0), graph)["params"]
    model = NNXGINModel(features, rngs=nnx.Rngs(0))
    model.load(params)

    def loss(outputs):
        return jnp.mean((outputs - targets) ** 2)

    description = (f"GIN on W2's batch: {n_graph} molecule graphs ({graph.nodes.shape[0]} nodes, "
                   f"{graph.senders.shape[0]} edges), 3 GIN layers 2 x 64, sum readout")
    return description, module, params, model, graph, loss


def rrn_models(quick: bool):
    """The Sudoku RRN in both APIs with the same weights, its batch and its loss."""
    puzzles, steps, hidden = (2, 4, 16) if quick else (16, 32, 96)
    graph = sudoku_graph(puzzles, 16, 1)._replace(edges=None)
    labels = jnp.asarray(np.random.default_rng(2).integers(0, 9, graph.nodes.shape[0]))
    options = dict(encoder_features=(hidden,) * 3, message_features=(hidden,) * 3,
                   update_features=(hidden,) * 3, readout_features=(9,),
                   receivers_sorted=True, fixed_degree=20)
    module = linen.RecurrentRelationalNetwork(**options)
    variables = module.init(jax.random.key(0), graph, 1)
    model = gx.from_linen(module, variables)

    def loss(outputs):  # [steps, N, 9] readouts, every step scored
        every_step = jnp.broadcast_to(labels, outputs.shape[:-1])
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(outputs, every_step))

    class Steps(nn.Module):  # the linen module called with its static step count
        @nn.compact
        def __call__(self, graph):
            return linen.RecurrentRelationalNetwork(**options, name="rrn")(graph, steps)

    class NNXSteps(nnx.Module):
        def __init__(self, rrn):
            self.rrn = rrn

        def __call__(self, graph):
            return self.rrn(graph, steps)

    description = (f"Sudoku RRN step: {puzzles} puzzles, {steps} steps, hidden {hidden}, "
                   "3-layer MLPs, LSTM, loss on every step")
    return (description, Steps(), {"rrn": variables["params"]}, NNXSteps(model), graph, loss)


def steps(module, params, model, graph, loss) -> dict[str, Callable[[], jax.Array]]:
    """One Adam step per API, each a callable that runs it and returns the loss."""
    tx = optax.adam(1e-3)

    @jax.jit
    def linen_step(params, opt_state, graph):
        value, grads = jax.value_and_grad(
            lambda p: loss(module.apply({"params": p}, graph))
        )(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)

    @nnx.jit
    def nnx_step(model, optimizer, graph):
        value, grads = nnx.value_and_grad(lambda m: loss(m(graph)))(model)
        optimizer.update(model, grads)
        return value

    cached_model = nnx.clone(model)
    cached_step = nnx.cached_partial(
        nnx_step, cached_model, nnx.Optimizer(cached_model, tx, wrt=nnx.Param)
    )
    split_model = nnx.clone(model)
    split_optimizer = nnx.Optimizer(split_model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((split_model, split_optimizer))

    @jax.jit
    def split_step(state, graph):
        model, optimizer = nnx.merge(graphdef, state)
        value, grads = nnx.value_and_grad(lambda m: loss(m(graph)))(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), value

    carried = {"linen": (params, tx.init(params)), "split": state}

    def run_linen():
        params, opt_state = carried["linen"]
        params, opt_state, value = linen_step(params, opt_state, graph)
        carried["linen"] = (params, opt_state)
        return value

    def run_split():
        carried["split"], value = split_step(carried["split"], graph)
        return value

    return {"linen": run_linen, "nnx": lambda: nnx_step(model, optimizer, graph),
            "nnx cached": lambda: cached_step(graph), "nnx split": run_split}


def measure(contenders: dict[str, Callable[[], jax.Array]], reps: int) -> dict[str, dict]:
    """Check the contenders' first losses agree, then time them in turn; seconds per step."""
    first = {name: float(step()) for name, step in contenders.items()}
    reference = first["linen"]
    for name, value in first.items():
        if abs(value - reference) > 1e-4 * max(1.0, abs(reference)):
            raise AssertionError(f"{name}'s first loss {value} differs from linen's {reference}")
    for step in contenders.values():
        jax.block_until_ready(step())
    times = {name: [] for name in contenders}
    for _ in range(reps):
        for name, step in contenders.items():
            start = time.perf_counter()
            jax.block_until_ready(step())
            times[name].append(time.perf_counter() - start)
    linen_median, linen_min = statistics.median(times["linen"]), min(times["linen"])
    return {
        name: {"median_s": statistics.median(values), "min_s": min(values),
               "max_s": max(values),
               "median_ratio": statistics.median(values) / linen_median,
               "min_ratio": min(values) / linen_min}
        for name, values in times.items()
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the tests' run)")
    parser.add_argument("--reps", type=int, default=15, help="timed rounds per contender")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    results = {"machine": platform.processor() or platform.machine(),
               "jax": jax.__version__, "reps": args.reps, "workloads": {}}
    for build in (gin_models, rrn_models):
        description, module, params, model, graph, loss = build(args.quick)
        timed = measure(steps(module, params, model, graph, loss), args.reps)
        results["workloads"][description] = timed
        print(f"\n{description}")
        print(f"{'API':<11} {'median ms':>10} {'min ms':>8} {'max ms':>8} "
              f"{'median / linen':>15} {'min / linen':>12}")
        for name, row in timed.items():
            print(f"{name:<11} {1e3 * row['median_s']:>10.2f} {1e3 * row['min_s']:>8.2f} "
                  f"{1e3 * row['max_s']:>8.2f} {row['median_ratio']:>15.3f} "
                  f"{row['min_ratio']:>12.3f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return results


if __name__ == "__main__":
    main()
