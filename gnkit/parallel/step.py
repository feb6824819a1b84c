"""The data-parallel training step, for one device, `pmap`, or `jit` over a `Mesh`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax
from jax.sharding import Mesh

from gnkit.parallel.strategy import StepFn, data_parallel


def make_train_step(
    loss_fn: Callable[[Any, Any], Any],
    optimizer: optax.GradientTransformation,
    mode: str = "single",
    *,
    mesh: Mesh | None = None,
    weight_fn: Callable[[Any], jax.Array] | None = None,
    has_aux: bool = False,
    donate: bool = True,
    compiler_options: dict[str, Any] | None = None,
) -> StepFn:
    """A compiled `step(params, opt_state, batch) -> (params, opt_state, metrics)`.

    The same as `data_parallel(mode, mesh).train_step(...)`.

    'single' and 'mesh' are `jit` of a `shard_map` over `mesh` (one device for 'single'):
    params replicated (`replicate`), the batch sharded (`shard_batch`, `shard_device_batches`),
    so each device runs `loss_fn` on its own block (graph indices stay local; nothing is
    gathered). 'pmap' is `jax.pmap` over the devices of `mesh`, with a leading device axis on
    params, batch and outputs (`unreplicate` gives one copy).

    Across devices the loss and metrics are weighted means, the weight of a device being
    `weight_fn(batch)` or 1, and the gradient is that of the weighted mean: local gradients
    summed by one all-reduce. With a `loss_fn` that averages over real examples and `weight_fn`
    counting them, one step equals a single-device step on the union of the device batches.

    Args:
      loss_fn: `(params, batch) -> loss`, the scalar loss of one device's batch, or
        `(loss, metrics)` with `has_aux` (`metrics` a dict of arrays).
      optimizer: the optax transformation applied to the all-reduced gradient.
      mode: `'single'` (one device), `'pmap'` or `'mesh'`.
      mesh: the devices to use; None: every device of every process (`'single'`: this process's
        first local device; `'pmap'`: this process's devices).
      weight_fn: `batch -> weight` of a device's batch in the weighted means (e.g. its number of
        real graphs); None weighs every device 1.
      has_aux: `loss_fn` returns `(loss, metrics)`.
      donate: let the outputs reuse the params and opt_state buffers.
      compiler_options: XLA options for the compiled step (`jit` only, not `pmap`).

    Returns:
      The compiled `step(params, opt_state, batch) -> (params, opt_state, {"loss": loss,
      **metrics})`.
    """
    return data_parallel(mode, mesh).train_step(
        loss_fn,
        optimizer,
        weight_fn=weight_fn,
        has_aux=has_aux,
        donate=donate,
        compiler_options=compiler_options,
    )
