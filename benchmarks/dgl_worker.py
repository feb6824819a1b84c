"""DGL's side of benchmarks/sampling.py, run in DGL's own venv (benchmarks/make_dgl_venv.sh).

    DIR/bin/python benchmarks/dgl_worker.py INPUT.npz OUTPUT.npz

INPUT holds the graph and the run: `senders` / `receivers` int64 `[E]`, `num_nodes`,
`features` float32 `[N, F]`, `seeds` int64 `[n]`, `edges` int64 `[m]` (the link sampler's
positives), `fanouts` int `[h]` (hop 1 first, gnkit's order), `batch_size`, `link_batch_size`,
`num_negatives`, `batches`, `check_batches`, `step_s` (the consumer's step, seconds).
OUTPUT gets, for the first `check_batches` neighbour batches, every sampled edge as original
edge ids, global endpoints and the hop that drew it (`check_edges`, `check_senders`,
`check_receivers`, `check_hops`, `check_batch`) and each batch's
input node count; the timings are printed as one JSON line: `links` with gnkit's exclusion rule
(`pair_excluder`, every edge joining a positive pair, both directions), `links_self` with DGL's
`exclude="self"`. Host-side, CPU.

DGL's `NeighborSampler` takes fanouts per GNN layer, input layer first, and samples from the
seeds outward with the last one, so gnkit's `(f1, f2)` is DGL's `[f2, f1]`.
"""

from __future__ import annotations

import json
import sys
import time

import dgl
import numpy as np
import torch


def _loader(graph, seeds, sampler, batch_size, seed):
    torch.manual_seed(seed)
    dgl.seed(seed)
    return dgl.dataloading.DataLoader(graph, seeds, sampler, batch_size=batch_size, shuffle=True,
                                      drop_last=False, num_workers=0)


def _batches(loader, count):
    """`count` batches, the loader restarted at the end of an epoch."""
    iterator = iter(loader)
    for _ in range(count):
        try:
            yield next(iterator)
        except StopIteration:
            iterator = iter(loader)
            yield next(iterator)


def check_samples(graph, seeds, fanouts, batch_size, count):
    """The sampled edges of `count` neighbour batches, by original edge id and hop."""
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)), replace=False)
    edges, sources, targets, hops, batch_of, input_counts = [], [], [], [], [], []
    for index, (input_nodes, _, blocks) in enumerate(
            _batches(_loader(graph, seeds, sampler, batch_size, 1), count)):
        for hop, block in enumerate(reversed(blocks)):
            eids = block.edata[dgl.EID].numpy()
            local_sources, local_targets = block.edges()
            sources.append(block.srcdata[dgl.NID][local_sources].numpy())
            targets.append(block.dstdata[dgl.NID][local_targets].numpy())
            edges.append(eids)
            hops.append(np.full(eids.size, hop, np.int64))
            batch_of.append(np.full(eids.size, index, np.int64))
        input_counts.append(len(input_nodes))
    return {"check_edges": np.concatenate(edges), "check_senders": np.concatenate(sources),
            "check_receivers": np.concatenate(targets), "check_hops": np.concatenate(hops),
            "check_batch": np.concatenate(batch_of), "check_input_nodes": np.array(input_counts)}


def time_neighbors(graph, seeds, fanouts, batch_size, batches) -> dict:
    """Neighbour batches with node features gathered (`prefetch_node_feats`), seeds per second."""
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)), replace=False,
                                              prefetch_node_feats=["feat"])
    stream = _batches(_loader(graph, seeds, sampler, batch_size, 2), batches + 2)
    for _ in range(2):
        next(stream)
    start = time.perf_counter()
    nodes = 0
    for input_nodes, _, _ in stream:
        nodes += len(input_nodes)
    seconds = time.perf_counter() - start
    return {"seeds_per_s": batches * batch_size / seconds, "subgraphs_per_s": batches / seconds,
            "mean_real_nodes": nodes / batches}


def pair_excluder(senders, receivers, num_nodes):
    """An `exclude` callable with gnkit's rule: every edge joining a seed edge's two endpoints,
    in either direction (DGL's `exclude="self"` drops the seed edge alone).

    Edges are sorted once by unordered pair key `min * N + max`; each batch finds its pairs'
    runs with `torch.searchsorted`.
    """
    keys = torch.minimum(senders, receivers) * num_nodes + torch.maximum(senders, receivers)
    order = torch.argsort(keys)
    sorted_keys = keys[order]

    def exclude(seed_edges):
        wanted = torch.unique(keys[seed_edges])
        starts = torch.searchsorted(sorted_keys, wanted)
        counts = torch.searchsorted(sorted_keys, wanted, right=True) - starts
        owner = torch.repeat_interleave(torch.arange(wanted.numel()), counts)
        firsts = torch.cumsum(counts, 0) - counts
        return order[starts[owner] + torch.arange(owner.numel()) - firsts[owner]]

    return exclude


def time_links(graph, edges, fanouts, batch_size, negatives, batches, exclude) -> dict:
    """`as_edge_prediction_sampler` with uniform negatives and `exclude` (a mode or a callable);
    positive edges per second."""
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(list(reversed(fanouts)), replace=False,
                                        prefetch_node_feats=["feat"]),
        exclude=exclude, negative_sampler=dgl.dataloading.negative_sampler.Uniform(negatives))
    stream = _batches(_loader(graph, edges, sampler, batch_size, 3), batches + 2)
    for _ in range(2):
        next(stream)
    start = time.perf_counter()
    nodes = 0
    for input_nodes, _, _, _ in stream:
        nodes += len(input_nodes)
    seconds = time.perf_counter() - start
    return {"edges_per_s": batches * batch_size / seconds, "mean_real_nodes": nodes / batches}


def consumer_wait(graph, seeds, fanouts, batch_size, batches, step_s) -> dict:
    """A consumer taking `step_s` per batch fed by DGL's loader (`num_workers=0`): the fraction
    of the loop it waits for batches."""
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)), replace=False,
                                              prefetch_node_feats=["feat"])
    stream = _batches(_loader(graph, seeds, sampler, batch_size, 4), batches)
    waited, start = 0.0, time.perf_counter()
    for _ in range(batches):
        asked = time.perf_counter()
        next(stream)
        waited += time.perf_counter() - asked
        time.sleep(step_s)
    return {"wait_fraction": waited / (time.perf_counter() - start)}


def main(argv) -> int:
    source, target = argv
    run = np.load(source)
    torch.set_num_threads(1)
    graph = dgl.graph((torch.from_numpy(run["senders"]), torch.from_numpy(run["receivers"])),
                      num_nodes=int(run["num_nodes"]))
    graph.ndata["feat"] = torch.from_numpy(run["features"])
    seeds, edges = torch.from_numpy(run["seeds"]), torch.from_numpy(run["edges"])
    fanouts = [int(value) for value in run["fanouts"]]
    batch_size, batches = int(run["batch_size"]), int(run["batches"])
    np.savez(target, **check_samples(graph, seeds, fanouts, batch_size,
                                     int(run["check_batches"])))
    link_run = (graph, edges, fanouts, int(run["link_batch_size"]), int(run["num_negatives"]),
                batches)
    senders, receivers = torch.from_numpy(run["senders"]), torch.from_numpy(run["receivers"])
    result = {
        "versions": {"dgl": dgl.__version__, "torch": torch.__version__},
        "neighbors": time_neighbors(graph, seeds, fanouts, batch_size, batches),
        "links": time_links(*link_run, pair_excluder(senders, receivers, int(run["num_nodes"]))),
        "links_self": time_links(*link_run, "self"),
        "consumer": consumer_wait(graph, seeds, fanouts, batch_size, batches,
                                  float(run["step_s"])),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
