"""Per-device graph batches: whole graphs per device, balanced, one padded shape for all. Host."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from gnkit.batching import BucketPolicy, batch_np, pad_with_graphs
from gnkit.graph import GraphsTuple, num_edges, num_graphs


def split_graphs(n_node: Sequence[int], n_edge: Sequence[int], num_shards: int) -> list[np.ndarray]:
    """Assign whole graphs to `num_shards` shards, balancing nodes and edges. Host.

    `n_node`, `n_edge`: the size of each graph, `[G]`. Loads are measured relative to the mean
    per shard; largest graphs first, each goes to the shard whose larger (node or edge) load it
    raises least, ties to the shard with fewer graphs, then the lower index. Deterministic.
    Returns each shard's graph indices, ascending (each shard keeps the input order).
    """
    sizes = np.stack([np.asarray(n_node, np.float64), np.asarray(n_edge, np.float64)], axis=1)
    sizes = sizes / np.maximum(sizes.sum(axis=0) / num_shards, 1.0)
    loads = np.zeros((num_shards, 2))
    counts = np.zeros(num_shards, np.int64)
    members: list[list[int]] = [[] for _ in range(num_shards)]
    for index in np.argsort(-sizes.sum(axis=1), kind="stable"):
        peak = (loads + sizes[index]).max(axis=1)
        shard = int(np.lexsort((np.arange(num_shards), counts, peak))[0])
        loads[shard] += sizes[index]
        counts[shard] += 1
        members[shard].append(int(index))
    return [np.sort(np.asarray(group, np.int64)) for group in members]


def device_batches(
    graphs: Sequence[GraphsTuple],
    num_devices: int,
    policy: BucketPolicy | None = None,
    *,
    budget: tuple[int, int, int] | None = None,
) -> list[GraphsTuple]:
    """One padded batch per device from a list of graphs, all of the same padded shape. Host.

    The graphs are divided by `split_graphs`, batched with `batch_np` and padded with
    `pad_with_graphs` to the largest device batch plus one padding node and graph, rounded up by
    `policy.round` when a policy is given (so a stream of steps compiles a handful of times), or
    to exactly `budget`.

    Args:
      graphs: NumPy graphs (or small batches), at least `num_devices` of them.
      num_devices: batches to make, one per device.
      policy: round the padded size up on this bucket ladder; None pads to the largest device
        batch plus one padding node and graph.
      budget: `(n_node, n_edge, n_graph)` to pad every batch to exactly (not with `policy`); give
        it on many hosts, where every process must produce the same shapes.

    Returns:
      `num_devices` padded graphs of one shape, for `shard_device_batches`.
    """
    if len(graphs) < num_devices:
        raise ValueError(f"{len(graphs)} graphs cannot fill {num_devices} devices.")
    if policy is not None and budget is not None:
        raise ValueError("give device_batches a policy or a budget, not both.")
    n_node = [int(np.sum(graph.n_node)) for graph in graphs]
    n_edge = [num_edges(graph) for graph in graphs]
    shards = split_graphs(n_node, n_edge, num_devices)
    batches = [batch_np([graphs[i] for i in shard]) for shard in shards]
    largest = (
        max(sum(n_node[i] for i in shard) for shard in shards),
        max(num_edges(batch) for batch in batches),
        max(num_graphs(batch) for batch in batches),
    )
    if policy is not None:
        budget = policy.round(*largest)
    elif budget is None:
        budget = (largest[0] + 1, largest[1], largest[2] + 1)
    return [pad_with_graphs(batch, *budget) for batch in batches]


def iterate_device_batches(
    graphs: Iterable[GraphsTuple],
    graphs_per_step: int,
    num_devices: int,
    policy: BucketPolicy | None = None,
    *,
    budget: tuple[int, int, int] | None = None,
) -> Iterator[list[GraphsTuple]]:
    """`device_batches` of each consecutive `graphs_per_step` graphs of a stream. Host generator.

    A last chunk with fewer graphs than devices is dropped.

    Args:
      graphs: a stream of NumPy graphs.
      graphs_per_step: graphs consumed per step, divided over the devices.
      num_devices: batches per step, one per device.
      policy: as in `device_batches`.
      budget: as in `device_batches`.

    Returns:
      A generator of lists of `num_devices` padded batches.
    """
    iterator = iter(graphs)
    while len(chunk := list(itertools.islice(iterator, graphs_per_step))) >= num_devices:
        yield device_batches(chunk, num_devices, policy, budget=budget)
