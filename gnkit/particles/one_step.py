"""GNS one-step training on device: random-walk input noise and the acceleration loss.

Sanchez-Gonzalez et al. (2020) and LagrangeBench (`train/strats.py`, `add_gns_noise`) corrupt
the input positions with a random walk so the model learns to correct the errors a rollout
accumulates: with `history` input velocities, each gets an independent normal increment of
standard deviation `noise_std / sqrt(history)`; their cumulative sum is the velocity noise (the
last velocity's noise has standard deviation `noise_std`), its cumulative sum from zero the
position noise of the `history + 1` input frames, and the target frame gets the last input
frame's noise, so the target acceleration becomes `a - n_v[-1]` (the true acceleration minus
the last velocity's noise): the model is asked to return to the clean next position.

`one_step_loss` builds the input graph on device (`device_particle_graph`, fixed capacity:
one compilation for every sample) and returns LagrangeBench's loss: the squared error of the
normalised acceleration summed over dims and averaged over particles. Jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.particles._checks import check_number
from gnkit.particles.gns import Normalisation
from gnkit.particles.rollout import (
    ForceField,
    Predictor,
    device_particle_graph,
    wrapped_displacements,
)


def random_walk_noise(standard_normal: jax.Array, noise_std: float) -> jax.Array:
    """Position noise `[history + 2, N, dim]` of a training window from standard normals
    `[history, N, dim]` (one per input velocity). Jittable.

    Rows `0..history` are the input frames' noise (row 0 is zero), row `history + 1` (the
    target frame) repeats row `history`.
    """
    check_number("noise_std", noise_std, at_least=0.0)
    history = standard_normal.shape[0]
    velocity_noise = jnp.cumsum(standard_normal * (noise_std / np.sqrt(history)), axis=0)
    position_noise = jnp.concatenate(
        [jnp.zeros_like(velocity_noise[:1]), jnp.cumsum(velocity_noise, axis=0)])
    return jnp.concatenate([position_noise, position_noise[-1:]])


def noisy_window(window: jax.Array, standard_normal: jax.Array, noise_std: float,
                 box) -> jax.Array:
    """`window` `[history + 2, N, dim]` plus `random_walk_noise`, wrapped into the box `[dim]`.
    Jittable."""
    box = jnp.asarray(np.asarray(box, np.float32))
    return jnp.mod(window + random_walk_noise(standard_normal, noise_std), box)


def normalised_target(window: jax.Array, box, stats: Normalisation) -> jax.Array:
    """The normalised acceleration `[N, dim]` at frame -2 of `window` `[>= 3, N, dim]`
    (`gns.target_acceleration` on device). Jittable."""
    velocities = wrapped_displacements(window[-3:], jnp.asarray(np.asarray(box, np.float32)))
    return (velocities[1] - velocities[0] - stats.acc_mean) / stats.acc_std


def one_step_loss(apply_fn: Predictor, params, window: jax.Array, standard_normal: jax.Array,
                  stats: Normalisation, *, box: tuple[float, ...], radius: float,
                  capacity: int, noise_std: float, bin_capacity: int = 8,
                  external_force: ForceField | None = None
                  ) -> tuple[jax.Array, jax.Array]:
    """The loss of one training window, and whether its neighbour list overflowed. Jittable
    (everything after `standard_normal` static).

    Args:
      apply_fn: `(params, graph) -> [N + 1, dim]` normalised accelerations.
      params: the model's parameters.
      window: clean positions `[history + 2, N, dim]`: the input frames, then the target frame.
      standard_normal: `[history, N, dim]` draws for the noise (zeros: no noise).
      stats: the dataset's normalisation.
      box, radius, capacity, bin_capacity, external_force: as `device_particle_graph`.
      noise_std: the noise at the last input velocity (LagrangeBench: 3e-4).

    Returns:
      `(loss, overflow)`: `sum over dims, mean over particles` of the squared error of the
      normalised acceleration, and bool `[]`.
    """
    noisy = noisy_window(window, standard_normal, noise_std, box)
    graph, overflow = device_particle_graph(
        noisy[:-1], box, radius, stats, capacity=capacity, bin_capacity=bin_capacity,
        external_force=external_force)
    n_particles = window.shape[1]
    predicted = apply_fn(params, graph)[:n_particles]
    target = normalised_target(noisy, box, stats)
    return jnp.mean(jnp.sum((predicted - target) ** 2, axis=-1)), overflow
