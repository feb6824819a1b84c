"""How GNS trains on the comparison runner: initial parameters, the noisy one-step loss,
LagrangeBench's optimiser, rollouts and the validation metrics. Host drivers around jitted
steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.particles.config import ParticlesConfig
from gnkit.demos.particles.data import ParticlesData
from gnkit.demos.particles.models import build_model


def init(name: str, config: ParticlesConfig, data: ParticlesData):
    """Model `name`'s initial parameters from `config.seed`."""
    return build_model(name, config, data).init(jax.random.key(config.seed))


def model_stats(name: str, config: ParticlesConfig, data: ParticlesData):
    """The normalisation model `name` reads: the dataset's, or its isotropic form (SEGNN)."""
    return data.isotropic_stats if build_model(name, config, data).isotropic else data.stats


def _window_loss(name: str, config: ParticlesConfig, data: ParticlesData, noise_std: float):
    from gnkit.particles.one_step import one_step_loss

    return functools.partial(
        one_step_loss, build_model(name, config, data).apply,
        stats=model_stats(name, config, data), box=data.box, radius=data.radius,
        capacity=data.capacity, noise_std=noise_std, bin_capacity=config.bin_capacity,
        external_force=data.external_force)


def loss(name: str, config: ParticlesConfig, data: ParticlesData):
    """`(params, batch) -> (loss, {"overflow"})`: `one_step.one_step_loss` with the config's
    noise, averaged over the batch's windows; `overflow` is the fraction of windows whose
    neighbour list missed pairs (0 unless the training capacity is too small). Jittable."""
    window_loss = _window_loss(name, config, data, config.noise_std)

    def loss_fn(params, batch):
        losses, overflow = jax.vmap(lambda w, n: window_loss(params, w, n))(
            batch["window"], batch["normal"])
        return jnp.mean(losses), {"overflow": jnp.mean(overflow.astype(jnp.float32))}

    return loss_fn


def optimizer(config: ParticlesConfig) -> optax.GradientTransformation:
    """LagrangeBench's: AdamW (weight decay 1e-8) on `optax.exponential_decay` from
    `learning_rate` by `lr_decay_rate` every `lr_decay_steps`, floored at `lr_final`."""
    schedule = optax.exponential_decay(
        init_value=config.learning_rate, transition_steps=config.lr_decay_steps,
        decay_rate=config.lr_decay_rate, end_value=config.lr_final)
    return optax.adamw(learning_rate=schedule, weight_decay=1e-8)


def rollout_of(name: str, config: ParticlesConfig, data: ParticlesData, params,
               positions: np.ndarray, n_steps: int, apply_fn=None):
    """Roll a trajectory `[T, N, dim]` out from its first `history + 1` frames for `n_steps`
    (`gnkit.particles.rollout.rollout_growing`; capacity: the training graphs', or
    `capacity_growth` times the pairs of its first frame where that is more, so rollouts of
    similar frames share one compilation). `apply_fn` replaces the model's (a baseline). Host
    driver.

    Returns:
      A `RolloutResult`.
    """
    from gnkit.particles.rollout import edge_capacity, rollout_growing

    apply_fn = apply_fn or build_model(name, config, data).apply
    window = positions[: config.history + 1]
    capacity = max(data.capacity,
                   edge_capacity(window[-1], data.box, data.radius, config.capacity_growth))
    return rollout_growing(
        params, window, n_steps, apply_fn=apply_fn, box=data.box, radius=data.radius,
        stats=model_stats(name, config, data), capacity=capacity,
        bin_capacity=config.bin_capacity, max_growth=config.rollout_max_growth,
        external_force=data.external_force)


def rollout_score(result, target: np.ndarray, box) -> tuple[float, float]:
    """`(mse, score)` of a rollout against its target frames `[n_steps, N, dim]`: the position
    MSE over the steps reached, and minus it, less 1 per step not reached (so an incomplete
    rollout scores below every complete one: the MSE of positions in a unit box is below 1)."""
    from gnkit.particles.rollout import position_mse

    reached = result.steps_reached
    if reached == 0:
        return float("nan"), -float(result.steps_requested)
    mse = position_mse(result.positions, target[:reached], box, steps=reached)
    return mse, -mse - (result.steps_requested - reached)


def validate(name: str, config: ParticlesConfig, data: ParticlesData):
    """`params -> metrics`: `val_one_step` (the loss on up to `valid_windows` evenly spaced
    validation windows, no noise), `val_rollout_mse` (the mean position MSE of a
    `valid_rollout_steps` rollout of every validation trajectory, over the steps reached),
    `val_steps_reached` and `score` (`rollout_score`, summed over trajectories)."""
    windows = data.windows("valid", config.history)
    rows = np.unique(np.linspace(0, len(windows) - 1, config.valid_windows).round().astype(int))
    stacked = np.stack([data.window("valid", *windows[row], config.history) for row in rows])
    zeros = np.zeros((len(rows), config.history, *stacked.shape[2:]), np.float32)
    window_loss = _window_loss(name, config, data, 0.0)
    one_step = jax.jit(lambda params: jnp.mean(jax.vmap(
        lambda w, n: window_loss(params, w, n)[0])(stacked, zeros)))

    def evaluate(params):
        mses, score, reached = [], 0.0, 0
        for positions in data.splits["valid"]:
            steps = min(config.valid_rollout_steps, positions.shape[0] - config.history - 1)
            result = rollout_of(name, config, data, params, positions, steps)
            mse, trajectory_score = rollout_score(
                result, positions[config.history + 1:][:steps], data.box)
            mses.append(mse)
            score += trajectory_score
            reached += result.steps_reached
        return {"val_one_step": float(one_step(params)),
                "val_rollout_mse": float(np.mean(mses)), "val_steps_reached": reached,
                "score": score}

    return evaluate
