"""Neighbour sampling: gnkit's fixed-shape sampler against PyG's `NeighborLoader`, and whether
prefetch keeps a GraphSAGE step fed.

    python -m benchmarks.sampling [--fanouts 10,5] [--batch-size 512] [--batches 40]
        [--threads 1,2] [--dgl-python PATH] [--json PATH] [--quick]

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

Last, beside DGL 2.1.0 (`--dgl-python`, default the venv of benchmarks/make_dgl_venv.sh; DGL runs
in its own interpreter through benchmarks/dgl_worker.py on the same graph arrays, seeds, fanouts
and batch size, written to a temporary .npz): gnkit's shared `NeighborSampler` against DGL's
`NeighborSampler` (one deduplicated subgraph per batch, `replace=False`, node features gathered),
and gnkit's shared `LinkNeighborSampler` against `as_edge_prediction_sampler` with
`negative_sampler.Uniform`, one negative per positive. gnkit keeps every edge joining a positive
pair out, in both directions; DGL's `exclude="self"` drops the positive edge alone, so DGL is
timed with an `exclude` callable of gnkit's rule (`dgl_worker.pair_excluder`), and with "self"
beside it. Before timing, both sides'
sampled edges are checked: each is an edge of the graph, each expanded node drew
`min(fanout, in-degree)` distinct edges at its hop, and the mean node counts are printed. DGL
re-expands earlier hops' nodes at later hops (its blocks' destination nodes), gnkit expands each
node once, so DGL's subgraphs hold a few more nodes. The sides alternate for three rounds, the
load average printed with each, each side's median kept: seeds (positive edges) per second,
their ratio, and the fraction of the loop
a consumer of the GraphSAGE step's duration waits for batches made inline (DGL's `DataLoader`
with `num_workers=0`) and, for gnkit, through a one-thread `Prefetcher`. Without the venv the
DGL rows say why.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import optax

from gnkit.demos.wordnet import data as wordnet_data
from gnkit.demos.wordnet import models
from gnkit.sampling import LinkNeighborSampler, NeighborSampler, Prefetcher
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


DGL_PYTHON = Path.home() / ".cache" / "gnkit-dgl-venv" / "bin" / "python"
DGL_WORKER = Path(__file__).with_name("dgl_worker.py")


def check_counts(senders, receivers, edge_ids, hops, batch_ids, fanouts, graph) -> dict:
    """Whether sampled edges are the graph's and each node drew `min(fanout, in-degree)`.

    Args:
      senders, receivers: int `[e]` global endpoints of the sampled edges.
      edge_ids: int `[e]` their edge ids in `graph`.
      hops: int `[e]` the hop (0 from the seeds) that drew each edge.
      batch_ids: int `[e]` the batch of each edge.
      fanouts: edges drawn per node at each hop.
      graph: the source `GraphsTuple`.

    Returns:
      `{"edges_exist", "counts_match", "distinct_edges"}`: bools, and `"expanded"` nodes. Host.
    """
    graph_senders, graph_receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    in_degree = np.bincount(graph_receivers, minlength=int(graph.n_node.sum()))
    exist = bool(np.all(graph_senders[edge_ids] == senders)
                 and np.all(graph_receivers[edge_ids] == receivers))
    groups, group_of = np.unique(np.stack([batch_ids, hops, receivers]), axis=1,
                                 return_inverse=True)
    counts = np.bincount(group_of.reshape(-1), minlength=groups.shape[1])
    expected = np.minimum(np.asarray(fanouts)[groups[1]], in_degree[groups[2]])
    distinct = np.unique(np.stack([batch_ids, hops, edge_ids]), axis=1).shape[1] == len(edge_ids)
    # A node of degree 0 draws nothing and forms no group; min(fanout, 0) = 0 holds for it.
    return {"edges_exist": exist, "counts_match": bool(np.all(counts == expected)),
            "distinct_edges": bool(distinct), "expanded": int(groups.shape[1])}


def gnkit_check_edges(sampler, count):
    """The sampled edges of `count` shared batches as `check_counts` takes them, and each
    batch's real node count."""
    columns, node_counts = [], []
    for index in range(count):
        sample = sampler.batch(1, index)
        real_edges = int(sample.graph.n_edge[0])
        ids = sample.global_id
        senders = sample.graph.senders[:real_edges]
        receivers = sample.graph.receivers[:real_edges]
        row_hop = np.full(ids.shape[0], -1)
        row_hop[: sampler.batch_size] = 0
        for hop in range(1, len(sampler.fanouts) + 1):  # a row's hop: the hop that added it
            adds = (row_hop[receivers] == hop - 1) & (row_hop[senders] < 0)
            row_hop[senders[adds]] = hop
        columns.append((ids[senders], ids[receivers], sample.edge_id[:real_edges],
                        row_hop[receivers], np.full(real_edges, index)))
        node_counts.append(int(sample.graph.n_node[0]))
    return [np.concatenate(column) for column in zip(*columns, strict=True)], node_counts


def gnkit_rates(graph, train, fanouts, batch_size, link_batch_size, negatives, batches,
                step_s) -> dict:
    """gnkit's shared neighbour sampler and link sampler, and a consumer of `step_s` fed by it
    inline and through a one-thread `Prefetcher`."""
    sampler = NeighborSampler(graph, fanouts, batch_size, seeds=train, subgraph="shared")
    row = time_gnkit(graph, train, fanouts, batch_size, batches, "shared")
    row["seeds_per_s"] = row["subgraphs_per_s"] * batch_size
    links = LinkNeighborSampler(graph, fanouts, link_batch_size, num_negatives=negatives,
                                subgraph="shared")
    for index in range(2):
        links.batch(0, index % len(links))
    start = time.perf_counter()
    nodes = sum(int(links.batch(0, (index + 2) % len(links)).subgraph.graph.n_node[0])
                for index in range(batches))
    link_row = {"edges_per_s": batches * link_batch_size / (time.perf_counter() - start),
                "mean_real_nodes": nodes / batches}

    def consume(source):
        waited, start = 0.0, time.perf_counter()
        iterator = iter(source)
        for _ in range(batches):
            asked = time.perf_counter()
            next(iterator)
            waited += time.perf_counter() - asked
            time.sleep(step_s)
        return waited / (time.perf_counter() - start)

    fetched = Prefetcher(lambda index: sampler.batch(4, index % len(sampler)), batches)
    consume(fetched)
    return {"neighbors": row, "links": link_row,
            "consumer": {"wait_fraction": consume(sampler.batch(3, index % len(sampler))
                                                  for index in range(batches)),
                         "prefetch_1_wait_fraction": fetched.wait_fraction}}


def compare_dgl(graph, features, train, fanouts, batch_size, batches, step_s, dgl_python,
                rounds=3, check_batches=4, negatives=1) -> dict:
    """gnkit's shared samplers beside DGL's on the same graph, seeds, fanouts and batch size.

    First both sides' samples are checked (`check_counts`, mean node counts), then each side is
    timed `rounds` times, alternating, DGL in its own interpreter (`dgl_worker.py`), the
    1-minute load average recorded with each round; each side's median round is kept. Host.
    """
    if not Path(dgl_python).exists():
        return {"unavailable": f"no DGL venv at {dgl_python}: bash benchmarks/make_dgl_venv.sh"}
    link_batch_size = batch_size
    sampler = NeighborSampler(graph, fanouts, batch_size, seeds=train, subgraph="shared")
    gnkit_columns, gnkit_nodes = gnkit_check_edges(sampler, check_batches)
    result = {"gnkit": {"check": check_counts(*gnkit_columns, fanouts, graph),
                        "check_mean_nodes": float(np.mean(gnkit_nodes))}, "dgl": {}, "runs": []}
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "run.npz", Path(folder) / "samples.npz"
        np.savez(source, senders=np.asarray(graph.senders, np.int64),
                 receivers=np.asarray(graph.receivers, np.int64),
                 num_nodes=int(graph.n_node.sum()), features=np.asarray(features, np.float32),
                 seeds=np.asarray(train, np.int64),
                 edges=np.arange(len(graph.senders), dtype=np.int64),
                 fanouts=np.asarray(fanouts), batch_size=batch_size,
                 link_batch_size=link_batch_size, num_negatives=negatives, batches=batches,
                 check_batches=check_batches, step_s=step_s)
        for _ in range(rounds):
            mine = gnkit_rates(graph, train, fanouts, batch_size, link_batch_size, negatives,
                               batches, step_s)
            done = subprocess.run([str(dgl_python), str(DGL_WORKER), str(source), str(target)],
                                  capture_output=True, text=True,
                                  env={**os.environ, "DGLBACKEND": "pytorch"})
            if done.returncode:
                return {"unavailable": f"dgl_worker.py failed: {done.stderr[-800:]}"}
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
            result["runs"].append({"gnkit": mine, "dgl": theirs, "load": os.getloadavg()[0]})
        samples = np.load(target)
        result["dgl"] = {
            "check": check_counts(samples["check_senders"], samples["check_receivers"],
                                  samples["check_edges"], samples["check_hops"],
                                  samples["check_batch"], fanouts, graph),
            "check_mean_nodes": float(np.mean(samples["check_input_nodes"])),
            "versions": theirs["versions"]}
    for side in ("gnkit", "dgl"):  # each side's median round
        runs = [run[side] for run in result["runs"]]
        for name, rate in (("neighbors", "seeds_per_s"), ("links", "edges_per_s"),
                           ("links_self", "edges_per_s"), ("consumer", "wait_fraction")):
            if name in runs[0]:
                result[side][name] = _median_row([run[name] for run in runs], rate)
    result["ratio_neighbors"] = (result["gnkit"]["neighbors"]["seeds_per_s"]
                                 / result["dgl"]["neighbors"]["seeds_per_s"])
    result["ratio_links"] = (result["gnkit"]["links"]["edges_per_s"]
                             / result["dgl"]["links"]["edges_per_s"])
    result["ratio_links_self"] = (result["gnkit"]["links"]["edges_per_s"]
                                  / result["dgl"]["links_self"]["edges_per_s"])
    return result


def _median_row(rows: list[dict], key: str) -> dict:
    """The row whose `key` is the median of `rows` (the lower middle for an even count)."""
    return sorted(rows, key=lambda row: row[key])[(len(rows) - 1) // 2]


def print_dgl(comparison) -> None:
    if "unavailable" in comparison:
        print(f"  DGL NeighborSampler / as_edge_prediction_sampler unavailable: "
              f"{comparison['unavailable']}")
        return
    print(f"Beside DGL {comparison['dgl']['versions']['dgl']} (torch "
          f"{comparison['dgl']['versions']['torch']}), shared subgraphs, median of "
          f"{len(comparison['runs'])} alternating rounds:")
    for index, run in enumerate(comparison["runs"]):
        print(f"  round {index}: neighbours {run['gnkit']['neighbors']['seeds_per_s']:.0f} vs "
              f"{run['dgl']['neighbors']['seeds_per_s']:.0f} seeds/s, links "
              f"{run['gnkit']['links']['edges_per_s']:.0f} vs "
              f"{run['dgl']['links']['edges_per_s']:.0f} edges/s (gnkit vs DGL), load "
              f"{run['load']:.1f}")
    for side in ("gnkit", "dgl"):
        row = comparison[side]
        check = row["check"]
        print(f"  {side:<6} check: edges exist {check['edges_exist']}, min(fanout, degree) per "
              f"node {check['counts_match']}, distinct {check['distinct_edges']}; "
              f"{row['check_mean_nodes']:.0f} nodes per batch")
        print(f"  {side:<6} neighbours {row['neighbors']['seeds_per_s']:9.0f} seeds/s, links "
              f"{row['links']['edges_per_s']:9.0f} positive edges/s, consumer waits "
              f"{row['consumer']['wait_fraction']:.0%} inline")
    print(f"  dgl    links with exclude='self' (the positive edge alone) "
          f"{comparison['dgl']['links_self']['edges_per_s']:9.0f} positive edges/s (gnkit / DGL "
          f"{comparison['ratio_links_self']:.2f}x)")
    print(f"  gnkit / DGL per sampled seed: {comparison['ratio_neighbors']:.2f}x neighbours, "
          f"{comparison['ratio_links']:.2f}x links (both dropping every edge of a positive "
          f"pair); gnkit's consumer through a one-thread Prefetcher waits "
          f"{comparison['gnkit']['consumer']['prefetch_1_wait_fraction']:.0%}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fanouts", default="10,5")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dgl-python", default=str(DGL_PYTHON),
                        help="the DGL venv's interpreter (benchmarks/make_dgl_venv.sh)")
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
    results["dgl"] = compare_dgl(graph, features, train, fanouts, batch_size, batches,
                                 training["step_s"], args.dgl_python)
    print_dgl(results["dgl"])
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
