"""GNS rollouts on device: a jittable input graph at fixed capacity, a `lax.scan` rollout and
LagrangeBench's rollout metrics.

- `device_particle_graph`: the input graph of `gnkit.particles.gns.particle_graph` (same edge set
  and features) built on device by gnkit's cell list (`gnkit.atoms.cell_list_neighbor_list`) at
  a static edge capacity, plus one padding node and a padding graph (jraph's convention), so the
  model's outputs on the real particles do not depend on the capacity;
- `rollout_scan` (jittable) and `rollout` (host driver that raises on overflow): predict the
  acceleration, integrate with semi-implicit Euler (v += a, x += v, wrap into the box: GNS and
  LagrangeBench), rebuild the neighbour list every step;
- `rollout_growing` (host driver): the rollout that handles overflow the documented way: on a
  step whose neighbour list missed pairs it doubles the edge and bin capacities and runs again,
  up to `max_growth` times the first capacity; past that it stops at the first bad step and
  says so (`RolloutResult.message`, `steps_reached`), never returning a truncated graph's steps;
- `position_mse`, `position_mse_per_step`, `kinetic_energy_mse`: LagrangeBench's `mse` (mean
  over particles and dims of the periodic position error, per step; `mse20` is the mean of the
  first 20 steps) and `e_kin` (squared error of the kinetic energy `dx**dim * sum |v|^2`, frames
  subsampled by a stride); `sinkhorn_divergence` (in `gnkit.particles.sinkhorn`) the
  distribution distance;
- `reverse_poiseuille_force`: RPF's body force, the external-force node feature of LagrangeBench.

Why rollouts overflow: the capacity is sized from the first frame's pairs times a growth
factor, and a rollout that goes unstable pushes particles together (clusters hold many more
pairs per particle than the SPH lattice; a constant-velocity rollout of TGV crosses paths too).

The box is periodic along every axis and starts at 0. A 2D box becomes the x-y plane of a 3D
cell whose z side is a few radii thick, so no pair crosses the z wall.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.atoms.cell_list import cell_list_bins, cell_list_neighbor_list
from gnkit.graph import GraphsTuple
from gnkit.particles._checks import check_box, check_count, check_number
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


def reverse_poiseuille_force(positions: jax.Array) -> jax.Array:
    """RPF's body force `[N, 2]` at positions `[N, 2]`: -1 in x above y = 1, +1 below (the
    dataset's `force.py`). Jittable."""
    sign = jnp.where(positions[:, 1] > 1.0, -1.0, 1.0)
    return jnp.stack([sign, jnp.zeros_like(sign)], axis=1)


#: LagrangeBench's external force fields by `metadata["case"]` (node features when present).
EXTERNAL_FORCES = {"RPF": reverse_poiseuille_force}

ForceField = Callable[[jax.Array], jax.Array]


def device_particle_graph(
    window,
    box,
    radius: float,
    stats: Normalisation,
    *,
    capacity: int,
    bin_capacity: int = 8,
    external_force: ForceField | None = None,
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
      external_force: `positions [N, dim] -> [N, dim]`, appended to the node features at the
        current frame (LagrangeBench's `force` feature; `EXTERNAL_FORCES`), or None.

    Returns:
      `(graph, overflow)`. `graph`: nodes float32 `[N + 1, history * dim (+ dim)]` (the
      normalised velocities of `particle_graph`, the force if given, then one zero padding
      node), edges float32
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
    if external_force is not None:
        nodes = jnp.concatenate([nodes, external_force(window[-1]).astype(nodes.dtype)], axis=1)
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
    check_number("radius", radius, above=0.0)
    check_number("growth", growth, at_least=1.0)
    if positions.ndim != 2:
        raise ValueError(f"positions must be [N, dim], got shape {positions.shape}")
    box = check_box(box, positions.shape[1])
    count = 0
    for start in range(0, len(positions), 512):
        delta = positions[None, :, :] - positions[start: start + 512, None, :]
        delta -= box * np.round(delta / box)
        count += int(np.sum(np.sum(delta**2, axis=-1) < radius**2)) - len(delta)
    return int(64 * np.ceil(growth * max(count, 1) / 64))


Predictor = Callable[[object, GraphsTuple], jax.Array]


def rollout_scan_per_step(
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
    external_force: ForceField | None = None,
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
      external_force: the force node feature (`device_particle_graph`), or None.

    Returns:
      `(positions, overflow)`: the predicted frames float32 `[n_steps, N, dim]` and bool
      `[n_steps]`, True at a step whose neighbour list missed pairs (the rollout is not valid
      from there on).
    """
    box_array = jnp.asarray(np.asarray(box, np.float32))
    acc_mean = jnp.asarray(stats.acc_mean, jnp.float32)
    acc_std = jnp.asarray(stats.acc_std, jnp.float32)

    def step(frames, _):
        graph, step_overflow = device_particle_graph(
            frames, box, radius, stats, capacity=capacity, bin_capacity=bin_capacity,
            external_force=external_force)
        acceleration = apply_fn(params, graph)[: frames.shape[1]] * acc_std + acc_mean
        velocity = wrapped_displacements(frames[-2:], box_array)[0] + acceleration
        new = jnp.mod(frames[-1] + velocity, box_array)
        frames = jnp.concatenate([frames[1:], new[None]])
        return frames, (new, step_overflow)

    _, (positions, overflow) = jax.lax.scan(
        step, jnp.asarray(window, jnp.float32), None, length=n_steps)
    return positions, overflow


def rollout_scan(params, window, stats: Normalisation, **settings
                 ) -> tuple[jax.Array, jax.Array]:
    """`rollout_scan_per_step` with one overflow flag: `(positions [n_steps, N, dim],
    overflow bool [])`, True when any step's neighbour list missed pairs. Jittable as it.

    Args: as `rollout_scan_per_step` (`settings` its keyword arguments).
    """
    positions, overflow = rollout_scan_per_step(params, window, stats, **settings)
    return positions, jnp.any(overflow)


# Jitted rollouts by their static settings (kept with their `stats`, whose id is in the key),
# so repeated rollouts of one model and size compile once.
_ROLLOUTS: dict[tuple, tuple[Normalisation, Callable]] = {}


def _jitted_rollout(stats, apply_fn, n_steps, box, radius, capacity, bin_capacity,
                    external_force):
    check_count("n_steps", n_steps)
    check_count("capacity", capacity)
    check_count("bin_capacity", bin_capacity)
    check_number("radius", radius, above=0.0)
    box = tuple(float(b) for b in check_box(box))
    key = (id(stats), apply_fn, n_steps, box, float(radius), capacity, bin_capacity,
           external_force)
    if key not in _ROLLOUTS:
        if len(_ROLLOUTS) >= 32:
            _ROLLOUTS.clear()
        _ROLLOUTS[key] = (stats, jax.jit(functools.partial(
            rollout_scan_per_step, stats=stats, apply_fn=apply_fn, n_steps=n_steps, box=box,
            radius=float(radius), capacity=capacity, bin_capacity=bin_capacity,
            external_force=external_force,
        )))
    return _ROLLOUTS[key][1]


def rollout(params, window, n_steps: int, *, apply_fn: Predictor, box, radius: float,
            stats: Normalisation, capacity: int, bin_capacity: int = 8,
            external_force: ForceField | None = None) -> np.ndarray:
    """`rollout_scan`, its overflow flag checked on the host. Host driver.

    Args: as `rollout_scan_per_step` (`box` any sequence `[dim]`).

    Returns:
      The predicted positions `[n_steps, N, dim]` (NumPy).

    Raises:
      RuntimeError: a step's neighbour list missed pairs (raise `capacity` or `bin_capacity`,
        or use `rollout_growing`).
    """
    scan = _jitted_rollout(stats, apply_fn, n_steps, box, radius, capacity, bin_capacity,
                           external_force)
    positions, overflow = scan(params, window)
    if bool(np.any(overflow)):
        first = int(np.argmax(np.asarray(overflow)))
        raise RuntimeError(
            f"the neighbour list overflowed at rollout step {first + 1} of {n_steps} "
            f"(capacity={capacity}, bin_capacity={bin_capacity}): pairs were missing; raise "
            "the capacities or use rollout_growing")
    return np.asarray(positions)


@dataclasses.dataclass(frozen=True)
class RolloutResult:
    """What `rollout_growing` returns.

    Attributes:
      positions: the valid predicted frames `[steps_reached, N, dim]` (NumPy float32).
      steps_requested: the frames asked for.
      capacity, bin_capacity: the capacities of the run that produced `positions`.
      message: None for a complete rollout; else one line saying at which step it stopped
        and why (neighbour-list overflow at the largest capacity allowed, or non-finite
        positions).
    """

    positions: np.ndarray
    steps_requested: int
    capacity: int
    bin_capacity: int
    message: str | None = None

    @property
    def steps_reached(self) -> int:
        """Valid predicted frames."""
        return int(self.positions.shape[0])

    @property
    def complete(self) -> bool:
        return self.message is None


def rollout_growing(params, window, n_steps: int, *, apply_fn: Predictor, box,
                    radius: float, stats: Normalisation, capacity: int, bin_capacity: int = 8,
                    max_growth: float = 8.0, external_force: ForceField | None = None
                    ) -> RolloutResult:
    """A rollout that grows its capacities on overflow, and stops cleanly past a limit.

    Runs `rollout_scan_per_step`; when a step's neighbour list missed pairs, doubles
    `capacity` and `bin_capacity` and runs again (each size compiles once), while the capacity
    stays within `max_growth` times the first one. If it still overflows there, the result
    holds the frames before the first overflowing step and a message naming it. Frames from
    the first non-finite position on are dropped the same way. Host driver.

    Args: as `rollout`, plus `max_growth`: the largest capacity, as a multiple of `capacity`.

    Returns:
      A `RolloutResult`.
    """
    check_number("max_growth", max_growth, at_least=1.0)
    first_capacity = capacity
    while True:
        scan = _jitted_rollout(stats, apply_fn, n_steps, box, radius, capacity, bin_capacity,
                               external_force)
        positions, overflow = jax.device_get(scan(params, window))
        if not np.any(overflow) or 2 * capacity > max_growth * first_capacity:
            break
        capacity, bin_capacity = 2 * capacity, 2 * bin_capacity
    positions = np.asarray(positions)
    finite = np.all(np.isfinite(positions), axis=(1, 2))
    bad_overflow = int(np.argmax(overflow)) if np.any(overflow) else n_steps
    bad_finite = int(np.argmin(finite)) if not np.all(finite) else n_steps
    reached = min(bad_overflow, bad_finite)
    message = None
    if bad_overflow < n_steps and bad_overflow == reached:
        message = (f"rollout stopped after {reached} of {n_steps} steps: the neighbour list "
                   f"overflowed at step {reached + 1} even at capacity {capacity} and bin "
                   f"capacity {bin_capacity} ({max_growth:g}x the first capacity "
                   f"{first_capacity}); particles crowded together (an unstable model)")
    elif reached < n_steps:
        message = (f"rollout stopped after {reached} of {n_steps} steps: non-finite positions "
                   f"at step {reached + 1} (the model diverged)")
    return RolloutResult(positions[:reached], n_steps, capacity, bin_capacity, message)


def _check_same_shape(predicted: np.ndarray, target: np.ndarray) -> None:
    if predicted.shape != target.shape:
        raise ValueError(f"predicted positions {predicted.shape} and target positions "
                         f"{target.shape} must have the same shape [T, N, dim]")


def position_mse_per_step(predicted, target, box) -> np.ndarray:
    """LagrangeBench's per-step `mse`: the squared periodic position error averaged over
    particles and dims, one value a frame `[T]`. Host-side (NumPy).

    Args:
      predicted, target: positions `[T, N, dim]` of one shape.
      box: periodic box lengths `[dim]`; the error is the minimum-image displacement.

    Raises:
      ValueError: the shapes differ.
    """
    predicted = np.asarray(predicted, np.float64)
    target = np.asarray(target, np.float64)
    _check_same_shape(predicted, target)
    box = check_box(box, predicted.shape[-1])
    delta = predicted - target
    delta -= box * np.round(delta / box)
    return np.mean(delta**2, axis=(1, 2))


def position_mse(predicted, target, box, steps: int = 20) -> float:
    """LagrangeBench's position MSE over the first `steps` frames. Host-side (NumPy).

    Args:
      predicted, target: positions `[T, N, dim]` of one shape.
      box: periodic box lengths `[dim]`; the error is the minimum-image displacement.
      steps: frames averaged (LagrangeBench's `mse20` for 20).

    Returns:
      The mean over frames, particles and dims of the squared periodic error.

    Raises:
      ValueError: the shapes differ.
    """
    check_count("steps", steps)
    predicted, target = np.asarray(predicted), np.asarray(target)
    _check_same_shape(predicted, target)
    return float(np.mean(position_mse_per_step(predicted[:steps], target[:steps], box)))


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
    check_count("stride", stride)
    check_number("frame_dt", frame_dt, above=0.0)
    check_number("dx", dx, above=0.0)
    positions = np.asarray(positions, np.float64)
    if positions.ndim != 3 or len(positions) < 2:
        raise ValueError(f"positions must be [T >= 2, N, dim], got shape {positions.shape}")
    box = check_box(box, positions.shape[-1])
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
