"""Meshes, and putting parameters and batches on the devices in the layout each mode expects.

Three modes: 'single' (one device), 'pmap' (arrays stacked on a leading device axis, one slice per
local device) and 'mesh' (one global array per leaf, sharded or replicated over a `Mesh` axis).
Every function takes an optional `mesh`, the devices to use (default: all devices of all
processes); 'pmap' uses the ones of that mesh that belong to this process. Host functions: each
does its host-to-device transfer here, so a step then runs without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

MODES = ("single", "pmap", "mesh")
DATA_AXIS = "data"

tree_map = jax.tree_util.tree_map


def make_mesh(axis_name: str = DATA_AXIS, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis `Mesh` named `axis_name` over `devices` (default: every device, all hosts)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (axis_name,))


def check_mode(mode: str) -> None:
    """Raise a `ValueError` naming the choices unless `mode` is one of `MODES`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")


def local_devices(mesh: Mesh) -> list[jax.Device]:
    """The devices of `mesh` that belong to this process, in mesh order."""
    return [d for d in mesh.devices.flat if d.process_index == jax.process_index()]


def _stacked_sharding(mesh: Mesh) -> NamedSharding:
    """The layout `pmap` takes: a leading axis over this process's devices of `mesh`."""
    axis_name = mesh.axis_names[0]
    return NamedSharding(make_mesh(axis_name, local_devices(mesh)), P(axis_name))


def replicate(tree: Any, mode: str, mesh: Mesh | None = None) -> Any:
    """Put parameters (or optimiser state) on the devices as `make_train_step(mode)` expects. Host.

    'single': on the default device. 'pmap': one copy per local device of `mesh`, stacked on a
    new leading axis `[D_local, ...]`. 'mesh': one global array replicated over `mesh`. On many
    hosts every process must pass the same values.
    """
    check_mode(mode)
    if mode == "single":
        return jax.device_put(tree)
    mesh = mesh or make_mesh()
    if mode == "pmap":
        sharding, count = _stacked_sharding(mesh), len(local_devices(mesh))
        return tree_map(
            lambda x: jax.device_put(np.broadcast_to(x, (count,) + np.shape(x)), sharding), tree
        )
    sharding = NamedSharding(mesh, P())
    return tree_map(lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree)


def unreplicate(tree: Any, mode: str) -> Any:
    """One copy of a replicated tree: drops the leading device axis for 'pmap', else unchanged.

    Stays on the device (no host transfer); use it before evaluating or saving a 'pmap' state.
    """
    check_mode(mode)
    return tree_map(lambda x: x[0], tree) if mode == "pmap" else tree


def shard_batch(batch: Any, mode: str, mesh: Mesh | None = None) -> Any:
    """Split a batch along its leading axis over this process's devices and put it there. Host.

    Every leaf is `[B, ...]` with `B` divisible by `D`, the number of this process's devices in
    `mesh`. 'single': the batch as is, on the default device. 'pmap': `[D, B / D, ...]`, device
    `i` holding row `i`. 'mesh': one global array `[B * process_count, ...]` sharded over
    `mesh`'s axis, each process contributing its own `B` rows.
    """
    check_mode(mode)
    if mode == "single":
        return jax.device_put(batch)
    mesh = mesh or make_mesh()
    count = len(local_devices(mesh))
    for leaf in jax.tree_util.tree_leaves(batch):
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] % count:
            raise ValueError(
                f"shard_batch needs leaves [B, ...] with B divisible by the {count} local "
                f"devices; got a leaf of shape {np.shape(leaf)}."
            )
    if mode == "pmap":
        sharding = _stacked_sharding(mesh)
        return tree_map(
            lambda x: jax.device_put(np.reshape(x, (count, -1) + np.shape(x)[1:]), sharding),
            batch,
        )
    sharding = NamedSharding(mesh, P(mesh.axis_names[0]))
    return tree_map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
    )


def shard_device_batches(batches: Sequence[Any], mode: str, mesh: Mesh | None = None) -> Any:
    """Put one batch per local device (e.g. from `device_batches`) on the devices. Host.

    All batches must have the same structure and shapes. 'single' takes exactly one batch.
    'pmap' stacks them, leaves `[D, ...]`; 'mesh' concatenates them into global arrays sharded
    over `mesh`'s axis (for a `GraphsTuple`: nodes, edges, indices and counts concatenated, each
    device's indices local to its own block).
    """
    check_mode(mode)
    expected = 1 if mode == "single" else len(local_devices(mesh or make_mesh()))
    if len(batches) != expected:
        raise ValueError(f"mode {mode!r} needs {expected} batches here, got {len(batches)}.")
    shapes = [tree_map(np.shape, batch) for batch in batches]
    if any(shape != shapes[0] for shape in shapes):
        raise ValueError(f"device batches differ in structure or shape: {shapes}")
    joined = tree_map(lambda *leaves: np.concatenate([np.asarray(x) for x in leaves]), *batches)
    return shard_batch(joined, mode, mesh)
