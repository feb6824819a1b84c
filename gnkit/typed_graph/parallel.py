"""Per-device padded batches of typed graphs, for the data-parallel strategies. Host-only.

`gnkit.parallel`'s strategies take one batch per local device, all of one padded shape
(`strategy.shard_device_batches`); `device_batches` makes them from a list of typed graphs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gnkit.typed_graph.batching import batch
from gnkit.typed_graph.budgets import BucketPolicy
from gnkit.typed_graph.padding import pad_to_budget
from gnkit.typed_graph.sizes import Budget, sizes_of
from gnkit.typed_graph.types import TypedGraph


def device_batches(
    graphs: Sequence[TypedGraph],
    num_devices: int,
    policy: BucketPolicy | None = None,
    *,
    budget: Budget | None = None,
) -> list[TypedGraph]:
    """One padded typed batch per device from a list of graphs, all of the same padded shape.

    The graphs are divided into `num_devices` consecutive runs of near-equal count (the first
    `len(graphs) % num_devices` runs one longer), each batched and padded to one shared budget:
    `budget` when given (on many hosts every process must give the same one), else the largest
    device batch per set plus its padding, rounded up by `policy` when given. Needs at least
    `num_devices` graphs. Host-only.

    Args:
      graphs: the typed graphs of one step, one graph each.
      num_devices: how many batches to make (this process's devices).
      policy: rounds the shared budget up to a bucket; or None.
      budget: the exact shared budget; or None.

    Returns:
      `num_devices` padded typed graphs of one shape, for `strategy.shard_device_batches`.
    """
    if len(graphs) < num_devices:
        raise ValueError(f"{len(graphs)} graphs cannot fill {num_devices} devices.")
    if policy is not None and budget is not None:
        raise ValueError("give device_batches a policy or a budget, not both.")
    runs = np.array_split(np.arange(len(graphs)), num_devices)
    batches = [batch([graphs[i] for i in run]) for run in runs]
    if budget is None:
        budgets = [policy.round(b) if policy is not None else _with_padding(b) for b in batches]
        budget = Budget(
            n_graph=max(b.n_graph for b in budgets),
            n_node={name: max(b.n_node[name] for b in budgets) for name in budgets[0].n_node},
            n_edge={key: max(b.n_edge[key] for b in budgets) for key in budgets[0].n_edge},
        )
    return [pad_to_budget(b, budget) for b in batches]


def _with_padding(graph: TypedGraph) -> Budget:
    sizes = sizes_of(graph)
    return Budget(sizes.n_graph + 1, {name: count + 1 for name, count in sizes.n_node.items()},
                  dict(sizes.n_edge))
