"""A GPS layer's training step: gnkit's `nn.GPSLayer` against PyTorch Geometric's `GPSConv`.

    python -m benchmarks.gps [--quick] [--graphs 256] [--width 64] [--heads 4] [--reps 7]
                             [--torch-threads 1,2] [--json PATH]

The workload: `--graphs` molecule-sized graphs (10-40 nodes, a random tree plus ~55% extra
bonds, both directions; `benchmarks.workloads.molecule_graph`) with `--width` node and edge
features, one GPS layer (GINE local layer with the MLP Dense, ReLU, Dense; `--heads` attention
heads; batch norm in training mode; no dropout), the mean square of its output as the loss, and
an SGD step: forward, backward and update. gnkit runs one jitted step on the batch padded with
one padding graph, attention in blocks of 40 slots (the largest graph); PyG runs eagerly on the
unpadded batch, once per torch intra-op thread count in `--torch-threads`, and its best count
is the one compared. Both start from the same weights, and their outputs are checked to agree
(relative difference <= 1e-4) before timing. Steps are interleaved (one of each contender in
turn) after a warm-up, `--reps` times; the table gives each contender's median step time and
the ratio PyG's best median / gnkit's median (above 1: gnkit is faster). Host only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

import gnkit as gn
from benchmarks import workloads
from gnkit.nn import GPSLayer

MAX_NODES = 40  # molecule_graph draws 10-40 nodes per graph


def make_batch(num_graphs: int, width: int, seed: int = 0):
    """The unpadded batch (NumPy, with edge features) and the same batch padded with one
    padding graph, and the padded batch's node mask."""
    graph = workloads.molecule_graph(num_graphs, width, seed)
    graph = jax.tree.map(np.asarray, graph)
    rng = np.random.default_rng(seed + 1)
    graph = graph._replace(
        edges=rng.normal(size=(graph.senders.shape[0], width)).astype(np.float32)
    )
    padded = gn.pad_with_graphs(
        graph, graph.nodes.shape[0] + 1, graph.senders.shape[0] + 1, num_graphs + 1
    )
    return graph, padded, np.asarray(gn.get_node_padding_mask(padded))


def load_into_gps_conv(conv, params) -> None:
    """Copy gnkit `GPSLayer` parameters (GINE local layer, batch norm) into PyG's `GPSConv`."""
    import torch

    def copy(name, value):
        conv.get_parameter(name).copy_(torch.from_numpy(np.asarray(value)))

    def dense(name, tree):
        copy(f"{name}.weight", np.asarray(tree["kernel"]).T)
        copy(f"{name}.bias", tree["bias"])

    attention = params["attention"]
    with torch.no_grad():
        copy(
            "attn.in_proj_weight",
            np.concatenate(
                [np.asarray(attention[n]["kernel"]).T for n in ("query", "key", "value")]
            ),
        )
        copy(
            "attn.in_proj_bias",
            np.concatenate([attention[n]["bias"] for n in ("query", "key", "value")]),
        )
        dense("attn.out_proj", attention["output"])
        dense("conv.nn.0", params["local"]["mlp"]["dense_0"])
        dense("conv.nn.2", params["local"]["mlp"]["dense_1"])
        dense("mlp.0", params["mlp_hidden"])
        dense("mlp.3", params["mlp_output"])
        for ours, theirs in (
            ("norm_local", "norm1"),
            ("norm_attention", "norm2"),
            ("norm_output", "norm3"),
        ):
            copy(f"{theirs}.module.weight", params[ours]["scale"])
            copy(f"{theirs}.module.bias", params[ours]["bias"])


def gnkit_contender(layer, variables, padded, node_mask, n_real):
    stats = variables["batch_stats"]

    def forward(params, batch):
        graph, mask = batch
        out, _ = layer.apply(
            {"params": params, "batch_stats": stats},
            graph,
            node_mask=mask,
            train=True,
            mutable=["batch_stats"],
        )
        return out.nodes[:n_real]

    def objective(output, batch):
        del batch
        return jnp.mean(output**2)

    batch = (jax.tree.map(jnp.asarray, padded), jnp.asarray(node_mask))
    return workloads.jax_contender(forward, objective, variables["params"], batch)


def pyg_contenders(params, graph, width, heads, thread_counts):
    import torch
    from torch_geometric.nn import GINEConv, GPSConv

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            mlp = torch.nn.Sequential(
                torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)
            )
            self.conv = GPSConv(width, GINEConv(mlp), heads=heads)
            load_into_gps_conv(self.conv, params)

        def forward(self, x, edge_index, batch, edge_attr):
            return self.conv(x, edge_index, batch, edge_attr=edge_attr)

    inputs = (
        torch.tensor(graph.nodes),
        torch.tensor(np.stack([graph.senders, graph.receivers]).astype(np.int64)),
        torch.tensor(np.repeat(np.arange(len(graph.n_node)), graph.n_node)),
        torch.tensor(graph.edges),
    )

    def build():
        return Layer(), lambda output: (output**2).mean(), inputs

    return workloads.torch_variants("pyg eager", build, thread_counts)


def run(args) -> dict:
    graph, padded, node_mask = make_batch(args.graphs, args.width)
    n_real = graph.nodes.shape[0]
    layer = GPSLayer(args.heads, MAX_NODES)
    variables = jax.jit(layer.init)(jax.random.key(0), padded)
    contenders = {"gnkit": gnkit_contender(layer, variables, padded, node_mask, n_real)}
    if workloads.have_pyg():
        contenders.update(
            pyg_contenders(variables["params"], graph, args.width, args.heads, args.torch_threads)
        )
    reference = contenders["gnkit"].forward()
    for name, contender in contenders.items():
        output = contender.forward()
        error = np.max(np.abs(output - reference)) / np.max(np.abs(reference))
        if error > 1e-4:
            raise AssertionError(f"{name} disagrees with gnkit: relative difference {error:.2e}")
    times = {name: [] for name in contenders}
    for contender in contenders.values():  # warm-up
        jax.block_until_ready(contender.step())
    for _ in range(args.reps):
        for name, contender in contenders.items():
            start = time.perf_counter()
            jax.block_until_ready(contender.step())
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "graphs": args.graphs,
        "nodes": int(n_real),
        "edges": int(graph.senders.shape[0]),
        "width": args.width,
        "heads": args.heads,
        "median_s": medians,
    }
    peers = {name: median for name, median in medians.items() if name != "gnkit"}
    if peers:
        best = min(peers, key=peers.get)
        result["pyg_best"] = best
        result["ratio"] = peers[best] / medians["gnkit"]
    return result


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the tests use it)")
    parser.add_argument("--graphs", type=int, default=256)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument(
        "--torch-threads", type=lambda text: [int(n) for n in text.split(",")], default=[1, 2]
    )
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    if args.quick:
        args.graphs, args.width, args.heads, args.reps = 4, 8, 2, 1
    result = run(args)
    print(
        f"GPS layer step, {result['graphs']} graphs ({result['nodes']} nodes, "
        f"{result['edges']} edges), width {result['width']}, {result['heads']} heads"
    )
    for name, median in result["median_s"].items():
        print(f"  {name:<24} {1e3 * median:8.2f} ms")
    if "ratio" in result:
        print(f"  PyG's best ({result['pyg_best']}) / gnkit: {result['ratio']:.2f}x")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=1)
    return result


if __name__ == "__main__":
    main()
