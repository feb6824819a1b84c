"""Neighbour sampling: gnkit's fixed-shape sampler against PyG's `NeighborLoader`, and whether
prefetch keeps a GraphSAGE step fed.

    python -m benchmarks.sampling [--fanouts 10,5] [--batch-size 512] [--batches 40]
        [--threads 1,2] [--json PATH] [--quick]

On WordNet (117,659 synsets, 377,592 pointers, 256 gloss features per node; `--quick`: 3,000
random synsets) with the same fanouts, batch size and seeds (the training synsets, shuffled),
both sides make `--batches` batches with node features gathered, after two warm-up batches:
gnkit's `NeighborSampler` as one shared deduplicated subgraph (PyG's default) and as disjoint
trees per seed (PyG's `disjoint=True`), PyG's `NeighborLoader` (`num_workers=0`) at each torch
thread count of `--threads`, its best kept. PyG needs `pyg-lib` or `torch-sparse` for sampling;
without them its rows say why. Printed: subgraphs per second and the ratio.

Then the training step (`gnkit.demos.wordnet`'s GraphSAGE, Adam, on disjoint samples): the
step's own time on a ready batch, an epoch slice sampled in the loop, and the same slice with
`gnkit.sampling.prefetch` at 1 and 2 threads, with the fraction of the loop's time the step
waited for a batch. Host wall-clock times, ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np
import optax

from gnkit.demos.wordnet import data as wordnet_data
from gnkit.demos.wordnet import models
from gnkit.sampling import NeighborSampler, Prefetcher
from gnkit.tasks import wordnet as task


def load_graph(quick: bool, feature_dim: int = 256):
    wordnet = task.load()
    if quick:
        wordnet = wordnet_data.subset(wordnet, 3000, seed=0)
    features = task.gloss_features(wordnet, feature_dim)
    train, _, _ = task.node_split(wordnet.num_nodes, seed=0)
    return wordnet, task.to_graph(wordnet, features), features, train


def time_gnkit(graph, train, fanouts, batch_size, batches, subgraph) -> dict:
    sampler = NeighborSampler(graph, fanouts, batch_size, seeds=train, subgraph=subgraph)
    for index in range(2):
        sampler.batch(0, index)
    start = time.perf_counter()
    real_nodes = 0
    for index in range(batches):
        sample = sampler.batch(0, (index + 2) % len(sampler))
        real_nodes += int(sample.graph.n_node[0])
    seconds = time.perf_counter() - start
    return {"subgraphs_per_s": batches / seconds, "mean_real_nodes": real_nodes / batches,
            "node_rows": sampler.node_budget}


def pyg_unavailable() -> str | None:
    try:
        import torch_geometric.typing as pyg_typing
    except ImportError:
        return "torch_geometric is not installed"
    if not (pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE):
        return "PyG's NeighborLoader needs pyg-lib or torch-sparse; neither is installed"
    return None


def time_pyg(wordnet, features, train, fanouts, batch_size, batches, threads, disjoint) -> dict:
    import torch
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader

    torch.set_num_threads(threads)
    data = Data(x=torch.from_numpy(features),
                edge_index=torch.from_numpy(np.stack([wordnet.senders, wordnet.receivers])))
    loader = NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch_size,
                            input_nodes=torch.from_numpy(train), shuffle=True, disjoint=disjoint)
    iterator = iter(loader)
    for _ in range(2):
        next(iterator)
    start = time.perf_counter()
    real_nodes = 0
    for _ in range(batches):
        try:
            batch = next(iterator)
        except StopIteration:
            iterator = iter(loader)
            batch = next(iterator)
        real_nodes += int(batch.num_nodes)
    seconds = time.perf_counter() - start
    return {"subgraphs_per_s": batches / seconds, "mean_real_nodes": real_nodes / batches,
            "threads": threads}


def time_training(graph, train, fanouts, batch_size, batches) -> dict:
    """The GraphSAGE step alone, and an epoch slice sampled in the loop or prefetched."""
    sampler = NeighborSampler(graph, fanouts, batch_size, seeds=train, seed=0)
    model = models.SAGE(128, task.NUM_CLASSES)
    labels = jax.numpy.zeros(graph.nodes.shape[0], np.int32)  # the step's cost, not its labels
    params = model.init(jax.random.PRNGKey(0), sampler.empty().graph)
    optimizer = optax.adam(0.01)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, sample):
        def loss_fn(params):
            logits = model.apply(params, sample.graph)[:batch_size]
            seed_labels = labels[jax.numpy.maximum(sample.global_id[:batch_size], 0)]
            losses = optax.softmax_cross_entropy_with_integer_labels(logits, seed_labels)
            return jax.numpy.mean(losses * sample.seed_mask)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    ready = jax.device_put(sampler.batch(0, 0))
    params, opt_state, loss = step(params, opt_state, ready)
    loss.block_until_ready()
    start = time.perf_counter()
    for _ in range(batches):
        params, opt_state, loss = step(params, opt_state, ready)
        loss.block_until_ready()
    step_s = (time.perf_counter() - start) / batches
    count = min(batches, len(sampler))

    def loop(batch_source):
        nonlocal params, opt_state
        start = time.perf_counter()
        for sample in batch_source:
            params, opt_state, loss = step(params, opt_state, sample)
            loss.block_until_ready()
        return (time.perf_counter() - start) / count

    in_loop_s = loop(sampler.batch(1, index) for index in range(count))
    rows = {"step_s": step_s, "sampled_in_loop_s_per_step": in_loop_s}
    for workers in (1, 2):
        epoch = 1 + workers
        fetched = Prefetcher(lambda index, epoch=epoch: sampler.batch(epoch, index), count,
                             num_workers=workers)
        rows[f"prefetch_{workers}_s_per_step"] = loop(fetched)
        rows[f"prefetch_{workers}_wait_fraction"] = fetched.wait_fraction
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fanouts", default="10,5")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    fanouts = tuple(int(value) for value in args.fanouts.split(","))
    batches = 4 if args.quick else args.batches
    batch_size = 64 if args.quick else args.batch_size
    wordnet, graph, features, train = load_graph(args.quick)
    results = {"fanouts": fanouts, "batch_size": batch_size, "batches": batches, "sampling": {}}
    sampling = results["sampling"]
    for subgraph in ("shared", "disjoint"):
        sampling[f"gnkit {subgraph}"] = time_gnkit(graph, train, fanouts, batch_size, batches,
                                                   subgraph)
    reason = pyg_unavailable()
    for disjoint in (False, True):
        name = f"PyG NeighborLoader {'disjoint' if disjoint else 'shared'}"
        if reason:
            sampling[name] = {"unavailable": reason}
            continue
        runs = [time_pyg(wordnet, features, train, fanouts, batch_size, batches, int(threads),
                         disjoint) for threads in args.threads.split(",")]
        sampling[name] = max(runs, key=lambda run: run["subgraphs_per_s"])
    print(f"WordNet{' (quick subset)' if args.quick else ''}: fanouts {fanouts}, batch "
          f"{batch_size}, {batches} batches, node features gathered")
    for name, row in sampling.items():
        if "unavailable" in row:
            print(f"  {name:<32} unavailable: {row['unavailable']}")
            continue
        print(f"  {name:<32} {row['subgraphs_per_s']:8.1f} subgraphs/s  "
              f"({row['mean_real_nodes']:.0f} real nodes per subgraph)")
    for kind in ("shared", "disjoint"):
        peer = sampling[f"PyG NeighborLoader {kind}"]
        if "unavailable" not in peer:
            ratio = sampling[f"gnkit {kind}"]["subgraphs_per_s"] / peer["subgraphs_per_s"]
            results[f"ratio_{kind}"] = ratio
            print(f"  gnkit / PyG ({kind}): {ratio:.2f}x (PyG at {peer['threads']} threads)")
    training = time_training(graph, train, fanouts, batch_size, batches)
    results["training"] = training
    print(f"GraphSAGE step {training['step_s'] * 1e3:.1f} ms on a ready batch; per step with "
          f"sampling in the loop {training['sampled_in_loop_s_per_step'] * 1e3:.1f} ms, "
          f"prefetched on 1 thread {training['prefetch_1_s_per_step'] * 1e3:.1f} ms (waits "
          f"{training['prefetch_1_wait_fraction']:.0%}), on 2 threads "
          f"{training['prefetch_2_s_per_step'] * 1e3:.1f} ms (waits "
          f"{training['prefetch_2_wait_fraction']:.0%})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
