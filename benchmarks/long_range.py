"""GINE against GPS with the same number of layers on long-range pairs (`gnkit.tasks.long_range`).

    python -m benchmarks.long_range [--quick] [--layers 3] [--threshold 8] [--kind path]
                                    [--steps 1500] [--json PATH] [--plot PATH]

Each example is a path (or thin tree) of 20-60 nodes with two marked nodes; the label is whether
they are more than `--threshold` hops apart. Both models read the sum of the two marked nodes'
final features into an MLP and are trained with Adam (1e-3, batches of 32 graphs, the same
examples and steps); the table gives test accuracy by the pair's hop distance.

- `GINE`: a node encoder, then `--layers` GINE layers (`gnkit.nn.GINE`, ReLU between), 64 wide.
  A marked node sees only its `L`-hop neighbourhood, so beyond `L` hops it cannot tell a pair at
  `L + 1` from one past the threshold.
- `GPS`: `gnkit.nn.GPS` with `--layers` GPS layers (GINE local layer, 4 heads, batch norm), 64
  wide, with 8 Laplacian eigenvectors (random signs in training) and 8 random-walk return
  probabilities as encodings.

Host only; the whole run takes a few CPU-minutes. `--json` writes the run record (command,
commit, CPU-minutes, results) that `docs/results/long_range.md` reads; `--plot` saves accuracy
against distance.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

import gnkit as gn
from benchmarks.provenance import git_commit
from gnkit.nn import GINE, GPS, MLP
from gnkit.tasks import long_range

WIDTH = 64
BATCH = 32
LAPLACIAN_K = 8
WALK_LENGTH = 8
MAX_NODES = 64  # the attention block's slots per graph: graphs have at most 60 nodes


def marked_pair_logit(graph, features):
    """Sum of the two marked nodes' features per graph (`graph.nodes[:, 0]` marks them), then an
    MLP to one logit: `[n_graph]`."""
    n_graph = graph.n_node.shape[0]
    pooled = jax.ops.segment_sum(features * graph.nodes[:, :1], gn.node_graph_index(graph), n_graph)
    return MLP((WIDTH, 1), name="readout")(pooled)[:, 0]


class GINEClassifier(nn.Module):
    layers: int

    @nn.compact
    def __call__(self, graph, laplacian_pe, random_walk_pe, node_mask, train=False):
        inputs = graph
        graph = graph._replace(
            nodes=nn.Dense(WIDTH, name="node_encoder")(graph.nodes),
            edges=nn.Dense(WIDTH, name="edge_encoder")(graph.edges),
        )
        for index in range(self.layers):
            nodes = GINE((WIDTH, WIDTH), name=f"gine_{index}")(graph).nodes
            graph = graph._replace(nodes=nn.relu(nodes))
        return marked_pair_logit(inputs, graph.nodes)


class GPSClassifier(nn.Module):
    layers: int

    @nn.compact
    def __call__(self, graph, laplacian_pe, random_walk_pe, node_mask, train=False):
        features = GPS(
            WIDTH,
            self.layers,
            num_heads=4,
            max_nodes=MAX_NODES,
            laplacian_features=16,
            random_walk_features=16,
            name="gps",
        )(
            graph,
            laplacian_pe=laplacian_pe,
            random_walk_pe=random_walk_pe,
            node_mask=node_mask,
            train=train,
        ).nodes
        return marked_pair_logit(graph, features)


def make_batches(examples, batch_size):
    """Padded batches (fixed budget: one compile) with their encodings, labels and masks."""
    budget_nodes = batch_size * 60 + 1
    budget_edges = batch_size * 118 + 1
    batches = []
    for start in range(0, len(examples.graphs), batch_size):
        graphs = examples.graphs[start : start + batch_size]
        if len(graphs) < batch_size:
            break
        graph = gn.batch_np(graphs)
        laplacian = gn.laplacian_pe(graph, LAPLACIAN_K)
        walk = gn.random_walk_pe(graph, WALK_LENGTH)
        padded = gn.pad_with_graphs(graph, budget_nodes, budget_edges, batch_size + 1)
        n_pad = budget_nodes - graph.nodes.shape[0]
        batches.append(
            {
                "graph": padded,
                "laplacian_pe": np.pad(laplacian, ((0, n_pad), (0, 0))).astype(np.float32),
                "random_walk_pe": np.pad(walk, ((0, n_pad), (0, 0))).astype(np.float32),
                "node_mask": np.arange(budget_nodes) < graph.nodes.shape[0],
                "labels": np.append(examples.labels[start : start + batch_size], 0),
                "distances": examples.distances[start : start + batch_size],
            }
        )
    return batches


def train_and_test(model, train_batches, test_batches, steps, seed=0):
    """Train `model` for `steps` Adam steps; return the test predictions (per example)."""
    first = train_batches[0]
    inputs = ("graph", "laplacian_pe", "random_walk_pe", "node_mask")
    variables = model.init(jax.random.key(seed), *(first[name] for name in inputs))
    params, state = variables["params"], {k: v for k, v in variables.items() if k != "params"}
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    def loss_fn(params, state, batch, key):
        logits, updates = model.apply(
            {"params": params, **state},
            *(batch[name] for name in inputs),
            train=True,
            rngs={"dropout": key},
            mutable=list(state),
        )
        losses = optax.sigmoid_binary_cross_entropy(logits, batch["labels"].astype(jnp.float32))
        real = gn.get_graph_padding_mask(batch["graph"])
        return jnp.sum(losses * real) / jnp.sum(real), updates

    @jax.jit
    def step(params, state, opt_state, batch, key):
        (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, state, batch, key
        )
        changes, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, changes), dict(updates), opt_state, loss

    @jax.jit
    def predict(params, state, batch):
        return model.apply({"params": params, **state}, *(batch[name] for name in inputs)) > 0

    key = jax.random.key(seed + 1)
    for index in range(steps):
        key, step_key = jax.random.split(key)
        batch = train_batches[index % len(train_batches)]
        params, state, opt_state, _ = step(params, state, opt_state, batch, step_key)
    return np.concatenate(
        [np.asarray(predict(params, state, batch))[:-1] for batch in test_batches]
    )


def accuracy_by_distance(predictions, labels, distances):
    return {
        int(d): float(np.mean(predictions[distances == d] == labels[distances == d]))
        for d in np.unique(distances)
    }


def grouped_accuracy(predictions, labels, distances, layers, threshold):
    """Accuracy over distance ranges: within reach (<= L), beyond reach but not past the
    threshold, and past the threshold."""
    groups = {
        f"1-{layers}": distances <= layers,
        f"{layers + 1}-{threshold}": (distances > layers) & (distances <= threshold),
        f">{threshold}": distances > threshold,
        "all": np.ones_like(distances, bool),
    }
    return {
        name: float(np.mean(predictions[rows] == labels[rows])) for name, rows in groups.items()
    }


def save_plot(path, results, threshold, layers):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.5))
    for name, result in results["models"].items():
        by_distance = result["by_distance"]
        distances = sorted(int(d) for d in by_distance)
        axis.plot(distances, [by_distance[str(d)] for d in distances], marker=".", label=name)
    axis.axvline(layers + 0.5, color="grey", linestyle=":", label=f"{layers} hops (layers)")
    axis.axvline(threshold + 0.5, color="black", linestyle="--", label=f"threshold {threshold}")
    axis.set_xlabel("hop distance of the marked pair")
    axis.set_ylabel("test accuracy")
    axis.set_ylim(-0.02, 1.02)
    axis.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run(args) -> dict:
    train = long_range.generate(0, args.train_examples, threshold=args.threshold, kind=args.kind)
    test = long_range.generate(1, args.test_examples, threshold=args.threshold, kind=args.kind)
    train_batches = make_batches(train, BATCH)
    test_batches = make_batches(test, BATCH)
    n_test = BATCH * len(test_batches)
    labels, distances = test.labels[:n_test], test.distances[:n_test]
    results = {
        "layers": args.layers,
        "threshold": args.threshold,
        "kind": args.kind,
        "steps": args.steps,
        "train_examples": args.train_examples,
        "test_examples": n_test,
        "models": {},
    }
    for name, model in (("GINE", GINEClassifier(args.layers)), ("GPS", GPSClassifier(args.layers))):
        started = time.process_time()
        predictions = train_and_test(model, train_batches, test_batches, args.steps)
        results["models"][name] = {
            "accuracy": grouped_accuracy(
                predictions, labels, distances, args.layers, args.threshold
            ),
            "by_distance": {
                str(d): a for d, a in accuracy_by_distance(predictions, labels, distances).items()
            },
            "cpu_minutes": round((time.process_time() - started) / 60, 2),
        }
        print(name, results["models"][name]["accuracy"], flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the tests use it)")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--threshold", type=int, default=8)
    parser.add_argument("--kind", choices=long_range.KINDS, default="path")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--train-examples", type=int, default=4096)
    parser.add_argument("--test-examples", type=int, default=1024)
    parser.add_argument("--json", help="write the run record here")
    parser.add_argument("--plot", help="save accuracy against distance here (PNG)")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.long_range " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if args.quick:
        args.steps, args.train_examples, args.test_examples = 2, 2 * BATCH, BATCH
    started = time.process_time()
    results = run(args)
    record = {
        "demo": "long_range",
        "paper": {},
        "runs": {
            "default": {
                "command": command.strip(),
                "commit": git_commit(),
                "cpu_minutes": round((time.process_time() - started) / 60, 1),
                "transcribed_from": None,
                "results": results,
            }
        },
    }
    for name, result in results["models"].items():
        print(f"{name:>5}: " + "  ".join(f"{k} {v:.3f}" for k, v in result["accuracy"].items()))
    if args.json:
        with open(args.json, "w") as file:
            json.dump(record, file, indent=1)
    if args.plot:
        save_plot(args.plot, results, args.threshold, args.layers)
    return record


if __name__ == "__main__":
    main()
