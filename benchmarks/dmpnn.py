"""D-MPNN's reverse edges: a swap of each pair's rows against a gather by index.

    python -m benchmarks.dmpnn [--data freesolv,lipophilicity] [--rounds 15] [--steps 20]

`gnkit.dmpnn.bond_message_passing` leaves each edge's reverse out of its message. For graphs
that store each bond as the edge pair `2k`, `2k + 1` (`gnkit.chem`'s layout) the default swaps
the rows of each pair (a reshape, whose gradient is the same swap); passing
`reverse_edges=paired_reverse_edges(E)` gathers by index instead (whose gradient is a scatter).
Both give the same values. On the first training batch of each data set (64 molecules with
chemprop's features, padded as `gnkit molecules train` pads them) this times the gradient of
a loss through the block at chemprop's sizes (width 300, depth 3) with each, alternating
`--rounds` rounds of `--steps` jitted calls in one process, and prints the median
milliseconds per call and their ratio (above 1: the swap is faster). Host timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.chemprop_compare import shipped_dataset
from gnkit import chem
from gnkit.demos.molecules.config import CONFIGS
from gnkit.demos.molecules.data import molecule_data, train_batches
from gnkit.dmpnn import bond_message_passing, paired_reverse_edges


def gradients(graph, width: int = 300, depth: int = 3) -> dict:
    """`{"swap": f, "gather": f}`: jitted `f(weights) -> gradients` of the summed squared atom
    encodings of `graph`, and the weights `(W_i, W_h, W_o)` at `width`."""
    node_width, edge_width = graph.nodes.shape[1], graph.edges.shape[1]
    keys = jax.random.split(jax.random.key(0), 3)
    shapes = ((node_width + edge_width, width), (width, width), (node_width + width, width))
    weights = tuple(
        jax.random.normal(key, shape) / np.sqrt(shape[0])
        for key, shape in zip(keys, shapes, strict=True)
    )
    reverse = jnp.asarray(paired_reverse_edges(graph.senders.shape[0]))

    def make(reverse_edges):
        def loss(weights):
            w_i, w_h, w_o = weights
            block = bond_message_passing(
                lambda z: z @ w_i, lambda z: z @ w_h, lambda z: z @ w_o, depth=depth
            )
            return jnp.sum(block(graph, reverse_edges).nodes ** 2)

        return jax.jit(jax.grad(loss))

    return {"swap": make(None), "gather": make(reverse)}, weights


def time_calls(functions: dict, weights, rounds: int, steps: int) -> dict:
    """Median milliseconds per call of each function, rounds alternating between them."""
    for function in functions.values():
        jax.block_until_ready(function(weights))
    times = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            for _ in range(steps):
                out = function(weights)
            jax.block_until_ready(out)
            times[name].append((time.perf_counter() - start) / steps * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def first_batch(name: str, max_molecules: int = 0):
    """The padded first training batch (seed 0, random split) of data set `name`."""
    config = dataclasses.replace(CONFIGS["chemprop"], data=name)
    dataset = shipped_dataset(name, max_molecules)
    graphs = chem.molecule_graphs(dataset.smiles, "chemprop")
    split = chem.random_split(len(dataset), seed=0)
    data = molecule_data(config, dataset, graphs, {0: split})
    return train_batches(config, data, 0)(0)["graph"]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="freesolv,lipophilicity")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max-molecules", type=int, default=0)
    args = parser.parse_args(argv)
    results = {}
    for name in args.data.split(","):
        graph = first_batch(name, args.max_molecules)
        functions, weights = gradients(graph)
        swap, gather = (functions[k](weights) for k in ("swap", "gather"))
        for ours, theirs in zip(jax.tree.leaves(swap), jax.tree.leaves(gather), strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
        milliseconds = time_calls(functions, weights, args.rounds, args.steps)
        results[name] = {
            "nodes": int(graph.nodes.shape[0]),
            "edges": int(graph.edges.shape[0]),
            "milliseconds": milliseconds,
            "gather_over_swap": milliseconds["gather"] / milliseconds["swap"],
        }
        print(
            f"{name:<14} {graph.nodes.shape[0]} nodes, {graph.edges.shape[0]} edges: swap "
            f"{milliseconds['swap']:.2f} ms, gather {milliseconds['gather']:.2f} ms, "
            f"gather / swap {results[name]['gather_over_swap']:.2f}"
        )
    return results


if __name__ == "__main__":
    main()
