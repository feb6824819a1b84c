"""Bucketed padding vs jraph's padding, and host batching throughput vs jraph.

    python -m benchmarks.bucketing [--quick] [--seed 0]

Part 1 pushes one stream of random batches (1-64 graphs each, 5-200 nodes per graph, 2-4 edges
per node) through one jitted graph-network-like function and prints, per padding strategy, the
number of compiles (traces of the jitted function), padded / real nodes and edges (over the
whole stream, and the mean of the per-batch ratios) and the wall time (padding on the host, and
the jitted runs including compiles).

Part 2 times batching + padding of molecule-sized graphs (10-40 nodes, 2 edges per node) with
gnkit and with jraph (median of several repetitions) and prints jraph time / gnkit time: above
1 means gnkit is faster. The allocator settings in the environment (`MALLOC_MMAP_MAX_`,
`MALLOC_TRIM_THRESHOLD_`) are printed with the results; run it under both, as DESIGN.md asks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import jraph
import numpy as np

from gnkit import batching
from gnkit.graph import GraphsTuple, node_graph_index

FEATURES = 4
# The stream has 3 edges per node on average: min_edges = 3 * min_nodes keeps the shared rung
# tight; min_nodes / min_graphs = 24 nodes per graph slot, below the typical graph (~100).
STREAM_POLICY = batching.BucketPolicy(growth=1.7, min_nodes=192, min_edges=576, min_graphs=8)


def random_graph(rng: np.random.Generator, n_node: int, edges_per_node: float) -> GraphsTuple:
    """One graph with `n_node` nodes, `int(n_node * edges_per_node)` random edges, features."""
    n_edge = int(n_node * edges_per_node)
    return GraphsTuple(
        nodes=rng.normal(size=(n_node, FEATURES)).astype(np.float32),
        edges=rng.normal(size=(n_edge, FEATURES)).astype(np.float32),
        receivers=rng.integers(0, n_node, n_edge).astype(np.int32),
        senders=rng.integers(0, n_node, n_edge).astype(np.int32),
        globals=np.zeros((1, FEATURES), np.float32),
        n_node=np.array([n_node], np.int32),
        n_edge=np.array([n_edge], np.int32),
    )


def random_batch_stream(seed: int, n_batches: int) -> list[list[GraphsTuple]]:
    """`n_batches` lists of 1-64 graphs, 5-200 nodes and 2-4 edges per node each."""
    rng = np.random.default_rng(seed)
    stream = []
    for _ in range(n_batches):
        n_graph = int(rng.integers(1, 65))
        sizes = rng.integers(5, 201, n_graph)
        degrees = rng.uniform(2, 4, n_graph)
        stream.append([random_graph(rng, int(n), d) for n, d in zip(sizes, degrees, strict=True)])
    return stream


def molecule_graphs(seed: int, n_graphs: int) -> list[GraphsTuple]:
    """Molecule-sized graphs: 10-40 nodes, 2 edges per node, 16 node / 4 edge features."""
    rng = np.random.default_rng(seed)
    graphs = []
    for n_node in rng.integers(10, 41, n_graphs):
        n_node, n_edge = int(n_node), 2 * int(n_node)
        graphs.append(
            GraphsTuple(
                nodes=rng.normal(size=(n_node, 16)).astype(np.float32),
                edges=rng.normal(size=(n_edge, 4)).astype(np.float32),
                receivers=rng.integers(0, n_node, n_edge).astype(np.int32),
                senders=rng.integers(0, n_node, n_edge).astype(np.int32),
                globals=np.zeros((1, 8), np.float32),
                n_node=np.array([n_node], np.int32),
                n_edge=np.array([n_edge], np.int32),
            )
        )
    return graphs


def make_network() -> tuple[Callable[[GraphsTuple], jax.Array], list[int]]:
    """A jitted message-passing step (gather senders, sum to receivers, sum to graphs) and a
    list whose length counts its traces, i.e. its compiles."""
    traces: list[int] = []

    @jax.jit
    def network(graph: GraphsTuple) -> jax.Array:
        traces.append(1)
        messages = graph.nodes[graph.senders] * graph.edges
        nodes = jax.ops.segment_sum(messages, graph.receivers, graph.nodes.shape[0])
        return jax.ops.segment_sum(nodes, node_graph_index(graph), graph.n_node.shape[0])

    return network, traces


def _sizes(graph) -> tuple[int, int, int]:
    return int(np.sum(graph.n_node)), int(np.shape(graph.senders)[0]), len(graph.n_node)


def _exact_size(graph) -> tuple[int, int, int]:
    n_node, n_edge, n_graph = _sizes(graph)
    return n_node + 1, n_edge, n_graph + 1


def _pad_each(library, pad: Callable) -> Callable[[list[list[GraphsTuple]]], Iterable]:
    return lambda stream: (pad(library.batch_np(graphs)) for graphs in stream)


def _signature(graph) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(graph)
    return treedef, tuple((np.shape(leaf), np.asarray(leaf).dtype) for leaf in leaves)


def run_strategy(
    make_batches: Callable[[], Iterable], real: tuple[int, int], run_jit: bool
) -> dict:
    """Pads with `make_batches` and returns the stats. With `run_jit` each batch goes through the
    jitted network and compiles are its traces; without, compiles are the distinct (structure,
    shape, dtype) signatures of the batches, which is what jit keys its cache on."""
    network, traces = make_network()
    signatures = set()
    host_s = jit_s = 0.0
    padded_nodes = padded_edges = 0
    node_ratios = []
    batches = iter(make_batches())
    while True:
        start = time.perf_counter()
        padded = next(batches, None)
        host_s += time.perf_counter() - start
        if padded is None:
            break
        if run_jit:
            start = time.perf_counter()
            network(padded).block_until_ready()
            jit_s += time.perf_counter() - start
        signatures.add(_signature(padded))
        n_node, n_edge, _ = _sizes(padded)
        pad_nodes = int(batching.get_number_of_padding_with_graphs_nodes(padded))
        padded_nodes += n_node
        padded_edges += n_edge
        node_ratios.append(n_node / max(n_node - pad_nodes, 1))
    return {
        "batches": len(node_ratios),
        "compiles": len(traces) if run_jit else len(signatures),
        "nodes": padded_nodes / real[0],
        "edges": padded_edges / real[1],
        "mean_node_ratio": float(np.mean(node_ratios)),
        "host_s": host_s,
        "jit_s": jit_s,
    }


def bucketing_table(seed: int, n_batches: int, run_jit: bool) -> dict[str, dict]:
    """Compiles and padding overhead of each strategy on one random stream."""
    stream = random_batch_stream(seed, n_batches)
    sizes = [_sizes(batching.batch_np(graphs)) for graphs in stream]
    real = (sum(s[0] for s in sizes), sum(s[1] for s in sizes))
    largest = tuple(max(s[i] for s in sizes) for i in range(3))
    fixed = (largest[0] + 1, largest[1], largest[2] + 1)
    flat = [graph for graphs in stream for graph in graphs]
    independent = batching.BucketPolicy(
        growth=1.7, min_nodes=192, min_edges=576, min_graphs=8, shared_rung=False
    )
    strategies = {
        "gnkit pad_to_bucket (shared rung)": _pad_each(
            batching, lambda g: batching.pad_to_bucket(g, STREAM_POLICY)
        ),
        "gnkit pad_to_bucket (own ladders)": _pad_each(
            batching, lambda g: batching.pad_to_bucket(g, independent)
        ),
        "jraph pad_with_graphs, exact size": _pad_each(
            jraph, lambda g: jraph.pad_with_graphs(g, *_exact_size(g))
        ),
        "jraph pad_with_graphs, largest size": _pad_each(
            jraph, lambda g: jraph.pad_with_graphs(g, *fixed)
        ),
    }
    table = {
        name: run_strategy(lambda p=pad: p(stream), real, run_jit)
        for name, pad in strategies.items()
    }
    table["jraph dynamically_batch, largest (repacks)"] = run_strategy(
        lambda: jraph.dynamically_batch(iter(flat), *fixed), real, run_jit
    )
    table["gnkit batch_stream, largest cap (repacks)"] = run_strategy(
        lambda: batching.batch_stream(
            flat, STREAM_POLICY, max_nodes=fixed[0], max_edges=fixed[1], max_graphs=fixed[2]
        ),
        real,
        run_jit,
    )
    return table


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _batch_and_pad(library, graphs: Sequence, batch_size: int) -> None:
    for start in range(0, len(graphs), batch_size):
        chunk = graphs[start : start + batch_size]
        budget = (40 * len(chunk) + 1, 80 * len(chunk), len(chunk) + 1)
        library.pad_with_graphs(library.batch_np(chunk), *budget)


def throughput_table(seed: int, n_graphs: int, repeats: int) -> dict[str, tuple[float, float]]:
    """(gnkit seconds, jraph seconds) for batching + padding molecule graphs."""
    graphs = molecule_graphs(seed, n_graphs)
    budget = (32 * 40 + 1, 32 * 80, 33)
    policy = batching.BucketPolicy(growth=1.7, min_nodes=64, min_edges=128, min_graphs=4)
    cases = {
        "batch_np + pad_with_graphs, 32 graphs a batch": (
            lambda: _batch_and_pad(batching, graphs, 32),
            lambda: _batch_and_pad(jraph, graphs, 32),
        ),
        f"batch_np + pad_with_graphs, all {n_graphs} in one": (
            lambda: _batch_and_pad(batching, graphs, n_graphs),
            lambda: _batch_and_pad(jraph, graphs, n_graphs),
        ),
        "batch_stream vs dynamically_batch, 32-graph budget": (
            lambda: list(
                batching.batch_stream(
                    graphs, policy, max_nodes=budget[0], max_edges=budget[1], max_graphs=budget[2]
                )
            ),
            lambda: list(jraph.dynamically_batch(iter(graphs), *budget)),
        ),
    }
    return {
        name: (_median_seconds(ours, repeats), _median_seconds(theirs, repeats))
        for name, (ours, theirs) in cases.items()
    }


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and no jit runs, for tests"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_batches, n_graphs, repeats = (30, 1000, 3) if args.quick else (200, 10_000, 5)
    jnp.zeros(1).block_until_ready()
    malloc = {k: os.environ.get(k, "unset") for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")}
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; allocator {malloc}")

    print(
        f"\nStream of {n_batches} random batches (seed {args.seed}): 1-64 graphs, 5-200 nodes "
        "per graph, 2-4 edges per node"
    )
    print(f"bucket policy: {STREAM_POLICY}")
    stream = bucketing_table(args.seed, n_batches, run_jit=not args.quick)
    if args.quick:
        print("--quick: compiles counted as distinct batch shapes, jitted network not run")
    print(
        f"{'strategy':44s} {'batches':>7s} {'compiles':>8s} {'nodes x':>7s} {'edges x':>7s} "
        f"{'mean x':>7s} {'host s':>7s} {'jit s':>7s}"
    )
    for name, row in stream.items():
        print(
            f"{name:44s} {row['batches']:7d} {row['compiles']:8d} {row['nodes']:7.2f} "
            f"{row['edges']:7.2f} {row['mean_node_ratio']:7.2f} {row['host_s']:7.2f} "
            f"{row['jit_s']:7.2f}"
        )
    print("nodes x / edges x: padded / real over the stream; mean x: mean per-batch node ratio")

    print(
        f"\nHost batching + padding of {n_graphs} molecule graphs (10-40 nodes, 2 edges per "
        f"node), median of {repeats}"
    )
    throughput = throughput_table(args.seed, n_graphs, repeats)
    print(f"{'case':52s} {'gnkit s':>8s} {'jraph s':>8s} {'jraph/gnkit':>11s}")
    for name, (ours, theirs) in throughput.items():
        print(f"{name:52s} {ours:8.3f} {theirs:8.3f} {theirs / ours:11.2f}")
    return {"stream": stream, "throughput": throughput}


if __name__ == "__main__":
    main()
