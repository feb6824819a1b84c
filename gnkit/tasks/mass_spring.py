"""Mass-spring chains, after graph_nets' physics demo.

A system is a chain of `n` unit masses joined by springs; the first and last masses are fixed.
Each graph follows the demo's layout (float32):

- nodes `[n, 5]`: `[x, y, vx, vy, is_fixed]`.
- edges `[e, 2]`: `[spring constant, rest length]`, one directed edge per spring direction,
  except edges into a fixed mass (they would carry no information): `e = 2 (n - 1) - 2`, sorted
  by receiver then sender.
- globals `[1, 2]`: gravity, `[0, -10]`.

The simulator is the demo's: one semi-implicit Euler step of `STEP_SIZE = 0.1` s per time step,
`v' = v + dt * (spring forces + gravity)` (zero for fixed masses), then `x' = x + dt * v'`. No
sub-steps: with them the true next position would not be `x + dt * v'`, so a model that predicts
`v'` exactly would still drift in a rollout. The step is stable for the stiffest chain mode
(`omega * dt <= 2 sqrt(55) * 0.1 < 2`).

Systems are drawn as in the demo: 5-8 masses, spacing uniform in `[0.2, 1.0]`, springs of
constant 50 at rest; then, as in the demo's `apply_noise`, positions get uniform noise of
+-0.04, spring constants +-5 (one draw per spring, shared by its two edges; graph_nets draws one
per directed edge) and gravity's y component +-1, and rest lengths are reset to the new distances.
The demo's rollout tests use 4 and 9 masses spaced 0.5 apart (`random_systems(rng, 100, 4, 4,
0.5, 0.5)`) and 50 steps. The model's target is the next velocity of every node, `[n, 2]`.

All functions are host-side NumPy and deterministic given the `numpy.random.Generator` (or seed).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gnkit.batching import batch_np, unbatch_np
from gnkit.graph import GraphsTuple

STEP_SIZE = 0.1
SPRING_CONSTANT = 50.0
GRAVITY = (0.0, -10.0)


def chain_graph(n_mass: int, spacing: float) -> GraphsTuple:
    """A chain of `n_mass >= 3` masses at rest on the x axis, `spacing` apart, centred on 0.

    Springs have constant 50 and rest length `spacing`; gravity is `[0, -10]`. Host (NumPy).
    """
    nodes = np.zeros((n_mass, 5), dtype=np.float32)
    nodes[:, 0] = (np.arange(n_mass) - (n_mass - 1) / 2) * spacing
    nodes[[0, -1], 4] = 1.0
    linked = np.abs(np.arange(n_mass)[:, None] - np.arange(n_mass)[None, :]) == 1
    linked[[0, -1], :] = False
    receivers, senders = np.nonzero(linked)
    n_edge = len(receivers)
    edges = np.full((n_edge, 2), [SPRING_CONSTANT, spacing], dtype=np.float32)
    return GraphsTuple(
        nodes=nodes,
        edges=edges,
        receivers=receivers.astype(np.int32),
        senders=senders.astype(np.int32),
        globals=np.array([GRAVITY], dtype=np.float32),
        n_node=np.array([n_mass], dtype=np.int32),
        n_edge=np.array([n_edge], dtype=np.int32),
    )


def perturb(
    rng: np.random.Generator | int,
    graph: GraphsTuple,
    node_noise: float = 0.04,
    edge_noise: float = 5.0,
    global_noise: float = 1.0,
) -> GraphsTuple:
    """Randomise a system as the demo does, then set rest lengths to the current distances.

    Adds uniform noise in `[-level, level]` to positions, spring constants and gravity's y
    component. Works on a batch of systems. Host (NumPy).

    Args:
      rng: a `numpy.random.Generator` or a seed.
      graph: a system or a batch of systems, in the module's layout.
      node_noise: half-width of the uniform noise on the positions.
      edge_noise: half-width of the noise on the spring constants, one draw per spring.
      global_noise: half-width of the noise on gravity's y component.

    Returns:
      The perturbed graph (new arrays; `graph` is not changed).
    """
    rng = np.random.default_rng(rng)
    nodes = np.array(graph.nodes)
    edges = np.array(graph.edges)
    gravity = np.array(graph.globals)
    nodes[:, :2] += rng.uniform(-node_noise, node_noise, size=nodes[:, :2].shape)
    low = np.minimum(graph.senders, graph.receivers).astype(np.int64)
    high = np.maximum(graph.senders, graph.receivers).astype(np.int64)
    _, spring = np.unique(low * len(nodes) + high, return_inverse=True)
    edges[:, 0] += rng.uniform(-edge_noise, edge_noise, size=spring.max(initial=-1) + 1)[spring]
    gravity[:, 1] += rng.uniform(-global_noise, global_noise, size=len(gravity))
    edges[:, 1] = np.linalg.norm(nodes[graph.receivers, :2] - nodes[graph.senders, :2], axis=-1)
    return graph._replace(nodes=nodes, edges=edges, globals=gravity)


def random_systems(
    rng: np.random.Generator | int,
    n_graphs: int,
    min_masses: int = 5,
    max_masses: int = 8,
    min_spacing: float = 0.2,
    max_spacing: float = 1.0,
    node_noise: float = 0.04,
    edge_noise: float = 5.0,
    global_noise: float = 1.0,
) -> list[GraphsTuple]:
    """Perturbed chains (initial states), mass counts and spacings uniform in their ranges. Host.

    Args:
      rng: a `numpy.random.Generator` or a seed.
      n_graphs: systems to draw.
      min_masses: fewest masses in a chain (at least 3).
      max_masses: most masses in a chain (inclusive).
      min_spacing: smallest rest spacing of the chain's masses.
      max_spacing: largest rest spacing (uniform in between).
      node_noise: half-width of the uniform noise on the positions.
      edge_noise: half-width of the noise on the spring constants, one draw per spring.
      global_noise: half-width of the noise on gravity's y component.

    Returns:
      `n_graphs` single-system graphs.
    """
    rng = np.random.default_rng(rng)
    sizes = rng.integers(min_masses, max_masses + 1, size=n_graphs)
    spacings = rng.uniform(min_spacing, max_spacing, size=n_graphs)
    chains = [
        chain_graph(int(size), float(spacing))
        for size, spacing in zip(sizes, spacings, strict=True)
    ]
    return unbatch_np(perturb(rng, batch_np(chains), node_noise, edge_noise, global_noise))


def next_velocities(graph: GraphsTuple, step_size: float = STEP_SIZE) -> np.ndarray:
    """The simulator's velocity after one step: `[N, 2]`, for a single or batched graph. Host.

    Hooke's law on each edge (force on the receiver `-k (|d| - L) d / |d|`, `d` the receiver's
    position minus the sender's), summed per receiver, plus the graph's gravity, on unit masses;
    fixed masses keep their velocity.
    """
    nodes = np.asarray(graph.nodes)
    edges = np.asarray(graph.edges)
    offsets = nodes[graph.receivers, :2] - nodes[graph.senders, :2]
    lengths = np.linalg.norm(offsets, axis=-1, keepdims=True)
    edge_forces = -edges[:, :1] * (lengths - edges[:, 1:2]) / lengths * offsets
    forces = np.zeros_like(nodes[:, :2])
    np.add.at(forces, graph.receivers, edge_forces)
    node_graph = np.repeat(np.arange(len(graph.n_node)), graph.n_node)
    forces += np.asarray(graph.globals)[node_graph]
    return nodes[:, 2:4] + step_size * forces * (1.0 - nodes[:, 4:5])


def rollout(
    step_fn: Callable[[GraphsTuple], np.ndarray],
    initial_graph: GraphsTuple,
    n_steps: int,
    step_size: float = STEP_SIZE,
) -> np.ndarray:
    """Roll a velocity predictor out from `initial_graph`.

    Each step sets the velocities to the prediction and moves the positions; `is_fixed` is
    carried over and predictions for fixed masses are used as given.
    `rollout(next_velocities, graph, n)` is the true trajectory; with another `step_size`, pass
    `functools.partial(next_velocities, step_size=step_size)` too. Host loop.

    Args:
      step_fn: `graph -> next velocities [N, 2]` (NumPy or JAX); a model that returns a graph is
        wrapped as `lambda g: model(g).nodes`. `next_velocities` gives the true trajectory.
      initial_graph: the system (or batch) at time 0.
      n_steps: steps to take.
      step_size: seconds per step; positions move by `step_size * velocity`.

    Returns:
      Node states `[n_steps + 1, N, 5]`, index 0 the initial state.
    """
    graph = initial_graph
    states = [np.asarray(graph.nodes)]
    for _ in range(n_steps):
        nodes = states[-1]
        velocities = np.asarray(step_fn(graph), dtype=nodes.dtype)
        nodes = np.concatenate(
            [nodes[:, :2] + step_size * velocities, velocities, nodes[:, 4:]], axis=-1
        )
        graph = graph._replace(nodes=nodes)
        states.append(nodes)
    return np.stack(states)


def generate_graphs(
    rng: np.random.Generator | int,
    n_graphs: int,
    min_masses: int = 5,
    max_masses: int = 8,
    n_steps: int = 50,
    **system_options,
) -> tuple[list[GraphsTuple], list[GraphsTuple]]:
    """One-step training pairs: a random system at a random time and its next velocities.

    Each system (from `random_systems`) is simulated; the input is its state at a random time
    `t`, the target a graph of the same structure holding the velocities at `t + 1`. The systems
    are simulated as one batch. Host (NumPy).

    Args:
      rng: a `numpy.random.Generator` or a seed.
      n_graphs: training pairs (one system each).
      min_masses: fewest masses in a chain.
      max_masses: most masses in a chain (inclusive).
      n_steps: the simulated horizon; `t` is uniform in `[0, n_steps - 1]`.
      **system_options: passed on to `random_systems` (spacings, noise levels).

    Returns:
      `(inputs, targets)`: lists of graphs, each target with nodes `[n, 2]` (the velocities at
      `t + 1`) and edges and globals None.
    """
    rng = np.random.default_rng(rng)
    systems = random_systems(rng, n_graphs, min_masses, max_masses, **system_options)
    times = rng.integers(0, n_steps, size=n_graphs)
    trajectory = rollout(next_velocities, batch_np(systems), int(times.max(initial=0)) + 1)
    n_node = [len(system.nodes) for system in systems]
    node_times = np.repeat(times, n_node)
    node_rows = np.arange(len(node_times))
    boundaries = np.cumsum(n_node)[:-1]
    states = np.split(trajectory[node_times, node_rows], boundaries)
    next_states = np.split(trajectory[node_times + 1, node_rows], boundaries)
    inputs = [system._replace(nodes=nodes) for system, nodes in zip(systems, states, strict=True)]
    targets = [
        system._replace(nodes=nodes[:, 2:4], edges=None, globals=None)
        for system, nodes in zip(systems, next_states, strict=True)
    ]
    return inputs, targets


def rollout_mse(predicted: np.ndarray, true: np.ndarray) -> float:
    """Mean squared position error of a rollout, `[T, N, >=2]` each. Host (NumPy).

    The squared distance between predicted and true positions, averaged over time steps and
    masses (the demo's rollout metric). Pass `rollout(...)[1:]` to leave out the initial state,
    which both share.
    """
    squared = np.sum((np.asarray(predicted)[..., :2] - np.asarray(true)[..., :2]) ** 2, axis=-1)
    return float(np.mean(squared))


def metrics(
    outputs: np.ndarray, targets: GraphsTuple, graph_mask: np.ndarray | None = None
) -> dict[str, float]:
    """One-step error of predicted velocities `outputs` `[N, 2]` against `targets.nodes`. Host.

    `velocity_mse` is the squared error summed over x and y and averaged over masses.
    `graph_mask` (bool `[G]`, optional) keeps only the real graphs of a padded batch.
    """
    n_graph = len(targets.n_node)
    keep = np.ones(n_graph, bool) if graph_mask is None else np.asarray(graph_mask, bool)
    node_graph = np.repeat(np.arange(n_graph), np.asarray(targets.n_node))
    squared = np.sum((np.asarray(outputs) - np.asarray(targets.nodes)) ** 2, axis=-1)
    return {"velocity_mse": float(np.mean(squared[keep[node_graph]]))}
