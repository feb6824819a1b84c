"""The data-parallel training step, for one device, `pmap`, or `jit` over a `Mesh`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import optax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from gnkit.parallel.placement import check_mode, make_mesh

tree_map = jax.tree_util.tree_map


def make_train_step(
    loss_fn: Callable[[Any, Any], Any],
    optimizer: optax.GradientTransformation,
    mode: str = "single",
    *,
    mesh: Mesh | None = None,
    weight_fn: Callable[[Any], jax.Array] | None = None,
    has_aux: bool = False,
    donate: bool = True,
) -> Callable[[Any, Any, Any], tuple[Any, Any, dict[str, jax.Array]]]:
    """A compiled `step(params, opt_state, batch) -> (params, opt_state, metrics)`.

    `loss_fn(params, batch)` returns the scalar loss of one device's batch, or `(loss, metrics)`
    with `has_aux` (`metrics` a dict of arrays); the step returns `{"loss": loss, **metrics}`.

    'single' is `jit` on one device. 'pmap' is `jax.pmap` over the devices of `mesh` (default:
    all): params and opt_state from `replicate(..., 'pmap')`, the batch from `shard_batch` or
    `shard_device_batches`, outputs with a leading device axis (`unreplicate` gives one copy).
    'mesh' is `jit` of a `shard_map` over `mesh`: params replicated, the batch sharded, so each
    device runs `loss_fn` on its own block (graph indices stay local; nothing is gathered).

    Across devices the loss and metrics are weighted means, the weight of a device being
    `weight_fn(batch)` (e.g. its number of real graphs) or 1, and the gradient is that of the
    weighted mean: local gradients summed by one all-reduce. With a `loss_fn` that averages over
    real examples and `weight_fn` counting them, one step equals a single-device step on the
    union of the device batches. `donate` lets the outputs reuse the params and opt_state buffers.
    """
    check_mode(mode)
    donate_argnums = (0, 1) if donate else ()

    def loss_and_metrics(params, batch):
        out = loss_fn(params, batch)
        return out if has_aux else (out, {})

    def update(params, opt_state, grads):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    if mode == "single":

        def single_step(params, opt_state, batch):
            (loss, metrics), grads = jax.value_and_grad(loss_and_metrics, has_aux=True)(
                params, batch
            )
            params, opt_state = update(params, opt_state, grads)
            return params, opt_state, {"loss": loss, **metrics}

        return jax.jit(single_step, donate_argnums=donate_argnums)

    mesh = mesh or make_mesh()
    axis_name = mesh.axis_names[0]

    def device_step(params, opt_state, batch):
        weight = 1.0 if weight_fn is None else weight_fn(batch)
        share = weight / jax.lax.psum(weight, axis_name)

        def weighted(local_params):
            loss, metrics = loss_and_metrics(local_params, batch)
            return loss * share, metrics

        local_params = jax.lax.pcast(params, axis_name, to="varying")
        (loss, metrics), grads = jax.value_and_grad(weighted, has_aux=True)(local_params)
        grads = jax.lax.psum(grads, axis_name)
        metrics = tree_map(lambda m: jax.lax.psum(m * share, axis_name), metrics)
        params, opt_state = update(params, opt_state, grads)
        return params, opt_state, {"loss": jax.lax.psum(loss, axis_name), **metrics}

    if mode == "pmap":
        return jax.pmap(
            device_step,
            axis_name=axis_name,
            devices=list(mesh.devices.flat),
            donate_argnums=donate_argnums,
        )
    sharded_step = jax.shard_map(
        device_step, mesh=mesh, in_specs=(P(), P(), P(axis_name)), out_specs=(P(), P(), P())
    )
    return jax.jit(sharded_step, donate_argnums=donate_argnums)
