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

    The same as `data_parallel(mode, mesh).train_step(...)`. `loss_fn(params, batch)` returns
    the scalar loss of one device's batch, or `(loss, metrics)` with `has_aux` (`metrics` a dict
    of arrays); the step returns `{"loss": loss, **metrics}`.

    'single' and 'mesh' are `jit` of a `shard_map` over `mesh` (one device for 'single'):
    params replicated (`replicate`), the batch sharded (`shard_batch`, `shard_device_batches`),
    so each device runs `loss_fn` on its own block (graph indices stay local; nothing is
    gathered). 'pmap' is `jax.pmap` over the devices of `mesh`, with a leading device axis on
    params, batch and outputs (`unreplicate` gives one copy).

    Across devices the loss and metrics are weighted means, the weight of a device being
    `weight_fn(batch)` (e.g. its number of real graphs) or 1, and the gradient is that of the
    weighted mean: local gradients summed by one all-reduce. With a `loss_fn` that averages over
    real examples and `weight_fn` counting them, one step equals a single-device step on the
    union of the device batches. `donate` lets the outputs reuse the params and opt_state buffers;
    `compiler_options` are XLA options for the compiled step ('single' and 'mesh').
    """
    return data_parallel(mode, mesh).train_step(
        loss_fn,
        optimizer,
        weight_fn=weight_fn,
        has_aux=has_aux,
        donate=donate,
        compiler_options=compiler_options,
    )
