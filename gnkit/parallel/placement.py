"""Function forms of the strategies' placement methods, for code that holds a mode string.

Each is `gnkit.parallel.data_parallel(mode, mesh).<method>(...)`: 'single' (one device), 'pmap'
(arrays stacked on a leading device axis) or 'mesh' (one global array per leaf over a `Mesh`).
`mesh` is the devices to use (default: all devices of all processes). Host functions: each does
its host-to-device transfer here, so a step then runs without one. Code that trains in several
modes is simpler holding one strategy object (`gnkit.parallel.strategy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jax.sharding import Mesh

from gnkit.parallel.strategy import (
    DATA_AXIS,
    MODES,
    check_mode,
    data_parallel,
    local_devices,
    make_mesh,
)

__all__ = [
    "DATA_AXIS",
    "MODES",
    "check_mode",
    "local_devices",
    "make_mesh",
    "replicate",
    "shard_batch",
    "shard_device_batches",
    "unreplicate",
]


def replicate(tree: Any, mode: str, mesh: Mesh | None = None) -> Any:
    """Parameters (or optimiser state) on the devices as `make_train_step(mode)` expects. Host.

    'single' and 'mesh': global arrays replicated over the mesh. 'pmap': one copy per local
    device, stacked on a new leading axis `[D_local, ...]`. On many hosts every process must pass
    the same values.
    """
    return data_parallel(mode, mesh).replicate(tree)


def unreplicate(tree: Any, mode: str) -> Any:
    """One copy of a replicated tree: drops the leading device axis for 'pmap', else unchanged.

    Stays on the device (no host transfer); use it before evaluating or saving a 'pmap' state.
    """
    check_mode(mode)
    return tree if mode != "pmap" else data_parallel(mode).unreplicate(tree)


def shard_batch(batch: Any, mode: str, mesh: Mesh | None = None) -> Any:
    """Split a batch along its leading axis over this process's devices and put it there. Host.

    Every leaf is `[B, ...]` with `B` divisible by `D`, the number of this process's devices in
    `mesh` (1 for 'single'). 'pmap': `[D, B / D, ...]`, device `i` holding row `i`. 'single' and
    'mesh': one global array `[B * process_count, ...]` sharded over `mesh`'s axis, each process
    contributing its own `B` rows.
    """
    return data_parallel(mode, mesh).shard(batch)


def shard_device_batches(batches: Sequence[Any], mode: str, mesh: Mesh | None = None) -> Any:
    """Put one batch per local device (e.g. from `device_batches`) on the devices. Host.

    All batches must have the same structure and shapes; 'single' takes exactly one batch.
    'pmap' stacks them, leaves `[D, ...]`; 'mesh' concatenates them into global arrays sharded
    over `mesh`'s axis (for a `GraphsTuple`: nodes, edges, indices and counts concatenated, each
    device's indices local to its own block).
    """
    return data_parallel(mode, mesh).shard_device_batches(batches)
