"""Data-parallel strategies: the one place where one device, a device `Mesh` and `pmap` differ.

A strategy says where parameters live and how a batch is laid out over the devices, and builds
the training step for that layout. Training code holds one strategy and calls its methods, so it
never branches on the mode:

    strategy = data_parallel("mesh")              # or "single", "pmap"
    params, opt_state = strategy.replicate((params, opt_state))
    step = strategy.train_step(loss_fn, optimizer)
    params, opt_state, metrics = step(params, opt_state, strategy.shard(batch))
    host_params = strategy.host_copy(params)      # one NumPy copy, for evaluation or a checkpoint

Two layouts exist. `MeshStrategy` (modes 'mesh' and 'single') keeps one global array per leaf,
replicated or sharded over the first axis of a `Mesh`, and runs the step as `jit` of a
`shard_map`; a single device is the one-device mesh of the same code. `PmapStrategy` ('pmap')
stacks one copy per local device on a leading axis and runs the step under `jax.pmap`, for users
who ask for `pmap` by name. In both, each device differentiates the loss of its own block of the
batch and one all-reduce sums the gradients, so a step equals one step on the union of the
blocks. Host methods do their host-to-device transfer themselves, so a step runs without one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

MODES = ("single", "pmap", "mesh")
DATA_AXIS = "data"

tree_map = jax.tree_util.tree_map
StepFn = Callable[[Any, Any, Any], tuple[Any, Any, dict[str, jax.Array]]]


def make_mesh(axis_name: str = DATA_AXIS, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis `Mesh` named `axis_name` over `devices` (default: every device, all hosts)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (axis_name,))


def local_devices(mesh: Mesh) -> list[jax.Device]:
    """The devices of `mesh` that belong to this process, in mesh order."""
    return [d for d in mesh.devices.flat if d.process_index == jax.process_index()]


def check_mode(mode: str) -> None:
    """Raise a `ValueError` naming the choices unless `mode` is one of `MODES`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")


class _Strategy:
    """What both layouts share: the mesh, the per-device step body, batch checks."""

    name: str

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self.axis_name = mesh.axis_names[0]

    @property
    def num_local_devices(self) -> int:
        """How many devices of the mesh belong to this process (the batch is split over them)."""
        return len(local_devices(self.mesh))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, devices={self.mesh.devices.size})"

    def host_copy(self, tree: Any) -> Any:
        """One copy of a replicated tree as NumPy arrays on the host (for evaluation, saving)."""
        return jax.device_get(self.unreplicate(tree))

    def shard_device_batches(self, batches: Sequence[Any]) -> Any:
        """Put one batch per local device (e.g. from `device_batches`) on the devices. Host.

        All batches must have the same structure and shapes, and there must be one per local
        device. They are concatenated along the leading axis (for a `GraphsTuple`: nodes, edges,
        indices and counts, each device's indices local to its own block) and `shard`ed.
        """
        if len(batches) != self.num_local_devices:
            raise ValueError(
                f"{self!r} needs {self.num_local_devices} batches here (one per local device), "
                f"got {len(batches)}."
            )
        shapes = [tree_map(np.shape, batch) for batch in batches]
        if any(shape != shapes[0] for shape in shapes):
            raise ValueError(f"device batches differ in structure or shape: {shapes}")
        joined = tree_map(lambda *leaves: np.concatenate([np.asarray(x) for x in leaves]), *batches)
        return self.shard(joined)

    def _check_divisible(self, batch: Any) -> None:
        count = self.num_local_devices
        for leaf in jax.tree_util.tree_leaves(batch):
            if np.ndim(leaf) == 0 or np.shape(leaf)[0] % count:
                raise ValueError(
                    f"a batch for {self!r} needs leaves [B, ...] with B divisible by the {count} "
                    f"local devices; got a leaf of shape {np.shape(leaf)}."
                )

    def train_step(
        self,
        loss_fn: Callable[[Any, Any], Any],
        optimizer: optax.GradientTransformation,
        *,
        weight_fn: Callable[[Any], jax.Array] | None = None,
        has_aux: bool = False,
        donate: bool = True,
        compiler_options: dict[str, Any] | None = None,
    ) -> StepFn:
        """The compiled `step(params, opt_state, batch) -> (params, opt_state, metrics)`.

        See `gnkit.parallel.make_train_step` for how devices are weighted. The mesh strategy
        compiles it as `jit` of a `shard_map`; the pmap strategy as `jax.pmap`, whose outputs keep
        the leading device axis (`unreplicate` gives one copy).

        Args:
          loss_fn: `(params, batch) -> loss`, the scalar loss of one device's batch, or
            `(loss, metrics)` with `has_aux` (`metrics` a dict of arrays).
          optimizer: the optax transformation applied to the all-reduced gradient.
          weight_fn: `batch -> weight` of a device's batch in the weighted means (e.g. its number of
            real graphs); None weighs every device 1.
          has_aux: `loss_fn` returns `(loss, metrics)`.
          donate: let the outputs reuse the params and opt_state buffers.
          compiler_options: XLA options for the compiled step (`jit` only, not `pmap`).

        Returns:
          The compiled `step(params, opt_state, batch) -> (params, opt_state, {"loss": loss,
          **metrics})`.
        """
        device_step = self._device_step(loss_fn, optimizer, weight_fn, has_aux)
        return self._compile(device_step, (0, 1) if donate else (), compiler_options)

    def _device_step(
        self,
        loss_fn: Callable[[Any, Any], Any],
        optimizer: optax.GradientTransformation,
        weight_fn: Callable[[Any], jax.Array] | None,
        has_aux: bool,
    ) -> StepFn:
        """The step one device runs on its own block; collectives over `self.axis_name`."""
        axis_name = self.axis_name

        def device_step(params, opt_state, batch):
            weight = 1.0 if weight_fn is None else weight_fn(batch)
            share = weight / jax.lax.psum(weight, axis_name)

            def weighted(local_params):
                out = loss_fn(local_params, batch)
                loss, metrics = out if has_aux else (out, {})
                return loss * share, metrics

            local_params = jax.lax.pcast(params, axis_name, to="varying")
            (loss, metrics), grads = jax.value_and_grad(weighted, has_aux=True)(local_params)
            grads = jax.lax.psum(grads, axis_name)
            metrics = tree_map(lambda m: jax.lax.psum(m * share, axis_name), metrics)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            return params, opt_state, {"loss": jax.lax.psum(loss, axis_name), **metrics}

        return device_step


class MeshStrategy(_Strategy):
    """Global arrays over a one-axis `Mesh`; the step is `jit` of a `shard_map`.

    `name` is 'mesh', or 'single' for the one-device mesh that `data_parallel('single')` makes.
    """

    def __init__(self, mesh: Mesh, name: str = "mesh"):
        super().__init__(mesh)
        self.name = name

    def replicate(self, tree: Any) -> Any:
        """Parameters (or optimiser state) as global arrays replicated over the mesh. Host.

        On many hosts every process must pass the same values."""
        sharding = NamedSharding(self.mesh, P())
        return tree_map(
            lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree
        )

    def unreplicate(self, tree: Any) -> Any:
        """One copy of a replicated tree: a global replicated array already is one."""
        return tree

    def shard(self, batch: Any) -> Any:
        """Split a batch `[B, ...]` over this process's devices of the mesh. Host.

        `B` must be divisible by `num_local_devices`. The result is one global array
        `[B * process_count, ...]` sharded over the mesh axis, each process contributing its `B`
        rows."""
        self._check_divisible(batch)
        sharding = NamedSharding(self.mesh, P(self.axis_name))
        return tree_map(
            lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
        )

    def _compile(self, device_step, donate_argnums, compiler_options) -> StepFn:
        sharded_step = jax.shard_map(
            device_step,
            mesh=self.mesh,
            in_specs=(P(), P(), P(self.axis_name)),
            out_specs=(P(), P(), P()),
        )
        return jax.jit(
            sharded_step, donate_argnums=donate_argnums, compiler_options=compiler_options
        )


class PmapStrategy(_Strategy):
    """One copy per local device, stacked on a leading axis; the step runs under `jax.pmap`."""

    name = "pmap"

    def _stacked(self) -> NamedSharding:
        local = make_mesh(self.axis_name, local_devices(self.mesh))
        return NamedSharding(local, P(self.axis_name))

    def replicate(self, tree: Any) -> Any:
        """Parameters (or optimiser state) as `[D_local, ...]`, one copy per local device. Host."""
        sharding, count = self._stacked(), self.num_local_devices
        return tree_map(
            lambda x: jax.device_put(np.broadcast_to(x, (count,) + np.shape(x)), sharding), tree
        )

    def unreplicate(self, tree: Any) -> Any:
        """One copy of a replicated tree: drops the leading device axis (stays on the device)."""
        return tree_map(lambda x: x[0], tree)

    def shard(self, batch: Any) -> Any:
        """Split a batch `[B, ...]` into `[D_local, B / D_local, ...]`, row `i` on device `i`."""
        self._check_divisible(batch)
        sharding, count = self._stacked(), self.num_local_devices
        return tree_map(
            lambda x: jax.device_put(np.reshape(x, (count, -1) + np.shape(x)[1:]), sharding),
            batch,
        )

    def _compile(self, device_step, donate_argnums, compiler_options) -> StepFn:
        if compiler_options:
            raise ValueError("compiler_options are not supported with pmap; use mode='mesh'.")
        return jax.pmap(
            device_step,
            axis_name=self.axis_name,
            devices=list(self.mesh.devices.flat),
            donate_argnums=donate_argnums,
        )


Strategy = MeshStrategy | PmapStrategy


def data_parallel(mode: str = "mesh", mesh: Mesh | None = None) -> Strategy:
    """The strategy for `mode`: 'mesh' (recommended), 'pmap', or 'single'.

    `mesh` is the devices to use (default: every device of every process; 'pmap' uses this
    process's devices of it). 'single' is the mesh strategy on one device: the first device of
    `mesh` if given, else this process's first local device.
    """
    check_mode(mode)
    if mode == "single":
        device = local_devices(mesh)[0] if mesh is not None else jax.local_devices()[0]
        return MeshStrategy(make_mesh(DATA_AXIS, [device]), name="single")
    mesh = mesh or make_mesh()
    return PmapStrategy(mesh) if mode == "pmap" else MeshStrategy(mesh)
