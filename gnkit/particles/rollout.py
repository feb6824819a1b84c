"""GNS rollouts on device: a jittable input graph at fixed capacity, a `lax.scan` rollout and
LagrangeBench's rollout metrics.

- `device_particle_graph`: the input graph of `gnkit.particles.gns.particle_graph` (same edge set
  and features) built on device by gnkit's cell list (`gnkit.atoms.cell_list_neighbor_list`) at
  a static edge capacity, plus one padding node and a padding graph (jraph's convention), so the
  model's outputs on the real particles do not depend on the capacity;
- `rollout_scan` (jittable) and `rollout` (host driver that raises on overflow): predict the
  acceleration, integrate with semi-implicit Euler (v += a, x += v, wrap into the box: GNS and
  LagrangeBench), rebuild the neighbour list every step;
- `position_mse`, `kinetic_energy_mse`: LagrangeBench's `mse` (mean over steps, particles and
  dims of the periodic position error) and `e_kin` (squared error of the kinetic energy
  `dx**dim * sum |v|^2`, frames subsampled by a stride).

The box is periodic along every axis and starts at 0. A 2D box becomes the x-y plane of a 3D
cell whose z side is a few radii thick, so no pair crosses the z wall.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.atoms.cell_list import cell_list_bins, cell_list_neighbor_list
from gnkit.graph import GraphsTuple
from gnkit.particles.gns import Normalisation

# z side of the 3D cell of a 2D box, in radii: at least 3 bins thick, so no pair crosses z.
_FLAT_AXIS_RADII = 3.5


def particle_cell(box, radius: float) -> np.ndarray:
    """The 3D cell `[3, 3]` (diagonal) of a periodic 2D or 3D box `[dim]`. Host-side."""
    lengths = np.full(3, _FLAT_AXIS_RADII * radius)
    lengths[: len(box)] = np.asarray(box, np.float64)
    return np.diag(lengths)


def particle_bins(box, radius: float) -> tuple[int, int, int]:
    """Cell-list bins per axis for `box` `[dim]` and `radius`. Host-side.

    Raises:
      ValueError: an axis of the box is shorter than 3 radii (the cell list does not apply).
    """
    bins = cell_list_bins(particle_cell(box, radius), radius)
    if bins is None:
        raise ValueError(f"box {list(box)} is thinner than 3 radii ({radius}) along an axis")
    return bins


def wrapped_displacements(positions: jax.Array, box: jax.Array) -> jax.Array:
    """`positions[t + 1] - positions[t]` `[T - 1, N, dim]` with the minimum-image wrap.
    Jittable."""
    delta = positions[1:] - positions[:-1]
    return delta - box * jnp.round(delta / box)


def device_particle_graph(
    window,
    box,
    radius: float,
    stats: Normalisation,
    *,
    capacity: int,
    bin_capacity: int = 8,
) -> tuple[GraphsTuple, jax.Array]:
    """The input graph of one window on device, at a fixed edge capacity. Jittable (`box`,
    `radius`, `capacity`, `bin_capacity` static).

    Args:
      window: positions `[history + 1, N, dim]` inside the box; the last frame is the current one.
      box: periodic box lengths `[dim]` (the box starts at 0).
      radius: connectivity radius (LagrangeBench's `default_connectivity_radius`).
      stats: velocity normalisation.
      capacity: edge slots (static); `n_pairs` above it sets the overflow flag.
      bin_capacity: the most particles one cell-list bin holds (static).

    Returns:
      `(graph, overflow)`. `graph`: nodes float32 `[N + 1, history * dim]` (the normalised
      velocities of `particle_graph`, then one zero padding node), edges float32
      `[capacity, dim + 1]` (`(x_receiver - x_sender) / radius` wrapped, and its norm; zeros on
      padding slots), senders / receivers int32 `[capacity]` (padding slots point at node N),
      globals zeros `[2, 1]`, n_node `[N, 1]`, n_edge `[n_pairs, capacity - n_pairs]` (the
      second graph is padding). `overflow`: bool `[]`, True when pairs are missing (edge
      capacity, a bin's capacity or the cell-list images exceeded).
    """
    window = jnp.asarray(window, jnp.float32)
    n_particles, dim = window.shape[1], window.shape[2]
    box_array = jnp.asarray(np.asarray(box, np.float32))
    velocities = wrapped_displacements(window, box_array)
    nodes = ((velocities - stats.vel_mean) / stats.vel_std).transpose(1, 0, 2)
    nodes = nodes.reshape(n_particles, -1)
    current = jnp.zeros((n_particles, 3), jnp.float32).at[:, :dim].set(window[-1])
    cell = particle_cell(box, radius)
    neighbors, bin_overflow = cell_list_neighbor_list(
        current, cell, radius, capacity=capacity, bins=particle_bins(box, radius),
        bin_capacity=bin_capacity,
    )
    real = neighbors.pair_mask
    vectors = (current[neighbors.receivers] - current[neighbors.senders]
               + neighbors.shifts @ jnp.asarray(cell, jnp.float32))[:, :dim] / radius
    vectors = jnp.where(real[:, None], vectors, 0.0)
    edges = jnp.concatenate([vectors, jnp.linalg.norm(vectors, axis=1, keepdims=True)], axis=1)
    n_real = jnp.minimum(neighbors.n_pairs, capacity).astype(jnp.int32)
    graph = GraphsTuple(
        nodes=jnp.concatenate([nodes, jnp.zeros((1, nodes.shape[1]), nodes.dtype)]),
        edges=edges,
        senders=jnp.where(real, neighbors.senders, n_particles).astype(jnp.int32),
        receivers=jnp.where(real, neighbors.receivers, n_particles).astype(jnp.int32),
        globals=jnp.zeros((2, 1), jnp.float32),
        n_node=jnp.array([n_particles, 1], jnp.int32),
        n_edge=jnp.stack([n_real, capacity - n_real]),
    )
    overflow = neighbors.overflow | neighbors.image_overflow | bin_overflow
    return graph, overflow


def edge_capacity(positions, box, radius: float, growth: float = 1.5) -> int:
    """Edge slots for frames like `positions` `[N, dim]`: `growth` times its pair count, a
    multiple of 64. Host-side (NumPy, brute force over minimum images; for setup only)."""
    positions = np.asarray(positions, np.float64)
    box = np.asarray(box, np.float64)
    count = 0
    for start in range(0, len(positions), 512):
        delta = positions[None, :, :] - positions[start: start + 512, None, :]
        delta -= box * np.round(delta / box)
        count += int(np.sum(np.sum(delta**2, axis=-1) < radius**2)) - len(delta)
    return int(64 * np.ceil(growth * max(count, 1) / 64))


Predictor = Callable[[object, GraphsTuple], jax.Array]


def rollout_scan(
    params,
    window,
    stats: Normalisation,
    *,
    apply_fn: Predictor,
    n_steps: int,
    box: tuple[float, ...],
    radius: float,
    capacity: int,
    bin_capacity: int = 8,
) -> tuple[jax.Array, jax.Array]:
    """`n_steps` autoregressive steps under `lax.scan`. Jittable over `params` and `window`
    with the rest bound (`functools.partial`, as `rollout` does).

    Each step builds `device_particle_graph` from the last `history + 1` frames, takes the
    normalised acceleration `apply_fn(params, graph)[:N]`, and integrates with semi-implicit
    Euler in frame units: `a = pred * acc_std + acc_mean`, `v = wrap(x_t - x_{t-1}) + a`,
    `x_{t+1} = (x_t + v) mod box`.

    Args:
      params: the model's parameters.
      window: positions `[history + 1, N, dim]`, the frames before the first predicted one.
      stats: velocity and acceleration normalisation (arrays `[dim]`).
      apply_fn: `(params, graph) -> [N + 1, dim]` normalised accelerations (e.g. `GNS.apply`).
      n_steps: frames to predict.
      box: periodic box lengths `[dim]` (host values).
      radius: connectivity radius.
      capacity: edge slots per step.
      bin_capacity: particles per cell-list bin.

    Returns:
      `(positions, overflow)`: the predicted frames float32 `[n_steps, N, dim]` and bool `[]`,
      True when any step's neighbour list missed pairs (the rollout is then not valid).
    """
    box_array = jnp.asarray(np.asarray(box, np.float32))
    acc_mean = jnp.asarray(stats.acc_mean, jnp.float32)
    acc_std = jnp.asarray(stats.acc_std, jnp.float32)

    def step(carry, _):
        frames, overflow = carry
        graph, step_overflow = device_particle_graph(
            frames, box, radius, stats, capacity=capacity, bin_capacity=bin_capacity)
        acceleration = apply_fn(params, graph)[: frames.shape[1]] * acc_std + acc_mean
        velocity = wrapped_displacements(frames[-2:], box_array)[0] + acceleration
        new = jnp.mod(frames[-1] + velocity, box_array)
        frames = jnp.concatenate([frames[1:], new[None]])
        return (frames, overflow | step_overflow), new

    start = (jnp.asarray(window, jnp.float32), jnp.array(False))
    (_, overflow), positions = jax.lax.scan(step, start, None, length=n_steps)
    return positions, overflow


def rollout(params, window, n_steps: int, *, apply_fn: Predictor, box, radius: float,
            stats: Normalisation, capacity: int, bin_capacity: int = 8) -> np.ndarray:
    """`rollout_scan`, its overflow flag checked on the host. Host driver.

    Args: as `rollout_scan` (`box` any sequence `[dim]`).

    Returns:
      The predicted positions `[n_steps, N, dim]` (NumPy).

    Raises:
      RuntimeError: a step's neighbour list missed pairs (raise `capacity` or `bin_capacity`).
    """
    scan = jax.jit(functools.partial(
        rollout_scan, stats=stats, apply_fn=apply_fn, n_steps=n_steps,
        box=tuple(float(b) for b in box), radius=float(radius), capacity=capacity,
        bin_capacity=bin_capacity,
    ))
    positions, overflow = scan(params, window)
    if bool(overflow):
        raise RuntimeError(
            f"the neighbour list overflowed during the rollout (capacity={capacity}, "
            f"bin_capacity={bin_capacity}): pairs were missing; raise the capacities")
    return np.asarray(positions)


def position_mse(predicted, target, box, steps: int = 20) -> float:
    """LagrangeBench's position MSE over the first `steps` frames. Host-side (NumPy).

    Args:
      predicted, target: positions `[T, N, dim]`.
      box: periodic box lengths `[dim]`; the error is the minimum-image displacement.
      steps: frames averaged (LagrangeBench's `mse20` for 20).

    Returns:
      The mean over frames, particles and dims of the squared periodic error.
    """
    delta = np.asarray(predicted, np.float64)[:steps] - np.asarray(target, np.float64)[:steps]
    box = np.asarray(box, np.float64)
    delta -= box * np.round(delta / box)
    return float(np.mean(delta**2))


def rollout_kinetic_energy(positions, box, frame_dt: float, dx: float, stride: int = 10
                           ) -> np.ndarray:
    """LagrangeBench's kinetic energy `dx**dim * sum_i |v_i|^2` of frames `0, stride, ...`.

    Args:
      positions: `[T, N, dim]`.
      box: periodic box lengths `[dim]`.
      frame_dt: time between frames (`dt * write_every`).
      dx: particle spacing.
      stride: frame subsampling.

    Returns:
      `[ceil((T - 1) / stride)]`, from the displacement of frame `k * stride` to the next one
      over `frame_dt`. Host-side (NumPy).
    """
    positions = np.asarray(positions, np.float64)
    box = np.asarray(box, np.float64)
    delta = positions[1::stride] - positions[0:-1:stride]
    delta -= box * np.round(delta / box)
    velocities = delta / frame_dt
    return dx ** positions.shape[-1] * np.sum(velocities**2, axis=(1, 2))


def kinetic_energy_mse(predicted, target, box, frame_dt: float, dx: float,
                       stride: int = 10) -> float:
    """LagrangeBench's `e_kin` metric: the mean squared difference of
    `rollout_kinetic_energy` between two rollouts `[T, N, dim]`. Host-side (NumPy)."""
    return float(np.mean((rollout_kinetic_energy(predicted, box, frame_dt, dx, stride)
                          - rollout_kinetic_energy(target, box, frame_dt, dx, stride)) ** 2))
