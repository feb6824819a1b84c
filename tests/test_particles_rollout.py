"""gnkit.particles.rollout: the device graph against the host graph on a shipped TGV frame, a
zero-acceleration rollout against constant-velocity motion by NumPy, the overflow error, and
LagrangeBench's metrics by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.particles import load_particle_dataset
from gnkit.particles.gns import GNS, Normalisation, particle_graph
from gnkit.particles.one_step import random_walk_noise
from gnkit.particles.rollout import (
    device_particle_graph,
    edge_capacity,
    kinetic_energy_mse,
    position_mse,
    rollout,
    rollout_kinetic_energy,
)
from gnkit.particles.sinkhorn import sinkhorn_divergence

STATS = Normalisation(vel_mean=np.zeros(2, np.float32), vel_std=np.full(2, 0.5, np.float32),
                      acc_mean=np.zeros(2, np.float32), acc_std=np.full(2, 0.25, np.float32))


def _zero_acceleration(params, graph):
    return jnp.zeros((graph.nodes.shape[0], 2))


def test_device_graph_equals_the_host_graph_on_a_shipped_frame():
    dataset = load_particle_dataset("tgv2d")
    stats = Normalisation.from_metadata(dataset.metadata)
    radius = float(dataset.metadata["default_connectivity_radius"])
    window = dataset.splits["test"][0].positions[10:16]
    host = particle_graph(window, dataset.box, radius, stats)
    capacity = edge_capacity(window[-1], dataset.box, radius)
    graph, overflow = jax.jit(lambda w: device_particle_graph(
        w, tuple(dataset.box), radius, stats, capacity=capacity))(window)
    n_real = int(graph.n_edge[0])
    assert not bool(overflow) and n_real == int(host.n_edge[0]) > 10_000
    host_edges = dict(zip(zip(host.senders.tolist(), host.receivers.tolist(), strict=True),
                          host.edges, strict=True))
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    device_edges = dict(zip(zip(senders[:n_real].tolist(), receivers[:n_real].tolist(),
                                strict=True), np.asarray(graph.edges[:n_real]), strict=True))
    assert device_edges.keys() == host_edges.keys()
    keys = sorted(host_edges)
    np.testing.assert_allclose(np.stack([device_edges[k] for k in keys]),
                               np.stack([host_edges[k] for k in keys]), atol=1e-5)
    n_particles = window.shape[1]
    np.testing.assert_allclose(np.asarray(graph.nodes[:n_particles]), host.nodes, atol=1e-4)
    assert np.all(senders[n_real:] == n_particles) and np.all(receivers[n_real:] == n_particles)


def _random_window(seed=0, n_particles=40):
    rng = np.random.default_rng(seed)
    current = rng.uniform(0.0, 1.0, (n_particles, 2))
    velocity = rng.uniform(-0.06, 0.06, (n_particles, 2))
    previous = np.mod(current - velocity, 1.0)
    return np.stack([np.mod(previous - velocity, 1.0), previous, current]).astype(np.float32)


@pytest.mark.slow
def test_padding_node_and_graph_leave_the_model_outputs_unchanged():
    window = _random_window()
    host = particle_graph(window, np.ones(2), 0.2, STATS)
    graph, _ = device_particle_graph(window, (1.0, 1.0), 0.2, STATS, capacity=1024)
    model = GNS(latent_size=8, num_layers=1, num_message_passing_steps=2)
    params = model.init(jax.random.key(0), host)
    np.testing.assert_allclose(np.asarray(model.apply(params, graph))[:40],
                               np.asarray(model.apply(params, host)), atol=1e-4)


def test_zero_acceleration_rollout_is_constant_velocity_with_the_wrap():
    window = _random_window()
    predicted = rollout(None, window, 3, apply_fn=_zero_acceleration, box=(1.0, 1.0),
                        radius=0.2, stats=STATS, capacity=1024)
    velocity = window[-1].astype(np.float64) - window[-2]
    velocity -= np.round(velocity)
    expected = np.stack([np.mod(window[-1] + k * velocity, 1.0) for k in (1, 2, 3)])
    assert predicted.shape == (3, 40, 2)
    crossed = np.any((window[-1] + 3 * velocity < 0) | (window[-1] + 3 * velocity >= 1))
    assert crossed  # some particle wraps through a wall
    np.testing.assert_allclose(predicted, expected, atol=1e-5)


def test_rollout_raises_when_the_edge_capacity_is_too_small():
    with pytest.raises(RuntimeError, match="overflowed"):
        rollout(None, _random_window(), 2, apply_fn=_zero_acceleration, box=(1.0, 1.0),
                radius=0.2, stats=STATS, capacity=8)


def test_metrics_by_hand():
    box = np.array([1.0, 1.0])
    target = np.array([[[0.05, 0.5]], [[0.15, 0.5]], [[0.25, 0.5]]])  # [T=3, N=1, dim=2]
    predicted = np.array([[[0.95, 0.5]], [[0.15, 0.7]], [[0.25, 0.5]]])
    # errors: 0.1 across the wall in x; 0.2 in y; 0
    assert position_mse(predicted, target, box) == pytest.approx((0.01 + 0.04) / 6)
    assert position_mse(predicted, target, box, steps=1) == pytest.approx(0.01 / 2)
    # kinetic energy, stride 1, dt 0.5, dx 0.1 (dim 2): dx^2 * |v|^2
    target_energy = 0.01 * np.array([0.2**2, 0.2**2])
    # predicted displacements (0.2, 0.2) (0.95 -> 0.15 wraps to +0.2), then (0.1, -0.2)
    predicted_energy = 0.01 * np.array([0.4**2 + 0.4**2, 0.2**2 + 0.4**2])
    np.testing.assert_allclose(rollout_kinetic_energy(predicted, box, 0.5, 0.1, stride=1),
                               predicted_energy)
    assert kinetic_energy_mse(predicted, target, box, 0.5, 0.1, stride=1) == pytest.approx(
        np.mean((predicted_energy - target_energy) ** 2))
    np.testing.assert_allclose(rollout_kinetic_energy(target, box, 0.5, 0.1, stride=2),
                               target_energy[:1])


def test_mismatched_shapes_are_one_line_naming_both():
    with pytest.raises(ValueError, match=r"\(3, 2, 2\) and target positions \(3, 1, 2\)"):
        position_mse(np.zeros((3, 2, 2)), np.zeros((3, 1, 2)), np.ones(2))


def test_per_step_mse_is_the_mean_over_particles_and_dims_with_the_wrap():
    from gnkit.particles.rollout import position_mse_per_step

    target = np.array([[[0.05, 0.5], [0.5, 0.5]], [[0.15, 0.5], [0.5, 0.5]]])
    predicted = np.array([[[0.95, 0.5], [0.5, 0.5]], [[0.15, 0.8], [0.5, 0.4]]])
    np.testing.assert_allclose(position_mse_per_step(predicted, target, np.ones(2)),
                               [0.01 / 4, (0.09 + 0.01) / 4])


def _converging_window(n_particles=30, meet_after=6):
    """Zero-acceleration motion of particles that all meet at (0.5, 0.5) after `meet_after`
    steps: pairs within the radius grow until the neighbour list overflows."""
    rng = np.random.default_rng(1)
    current = rng.uniform(0.2, 0.8, (n_particles, 2))
    velocity = (0.5 - current) / meet_after
    return np.stack([current - 2 * velocity, current - velocity, current]).astype(np.float32)


def test_rollout_growing_grows_the_capacity_or_stops_at_the_first_overflowing_step():
    from gnkit.particles.rollout import rollout_growing

    window = _converging_window()
    velocity = window[-1].astype(np.float64) - window[-2]
    expected = np.stack([window[-1] + k * velocity for k in range(1, 5)])
    options = dict(apply_fn=_zero_acceleration, box=(1.0, 1.0), radius=0.2, stats=STATS,
                   bin_capacity=64)
    capacity = edge_capacity(window[-1], np.ones(2), 0.2)
    stopped = rollout_growing(None, window, 4, capacity=capacity, max_growth=1.0, **options)
    assert 0 < stopped.steps_reached < 4 and not stopped.complete
    assert f"overflowed at step {stopped.steps_reached + 1}" in stopped.message
    np.testing.assert_allclose(stopped.positions, expected[: stopped.steps_reached], atol=1e-5)
    grown = rollout_growing(None, window, 4, capacity=capacity, max_growth=64.0, **options)
    assert grown.complete and grown.capacity > capacity
    np.testing.assert_allclose(grown.positions, expected, atol=1e-5)


def _sinkhorn_numpy(x, y, box, relative_epsilon=0.05, iterations=3000):
    """The debiased Sinkhorn divergence by scaling iterations in float64."""
    def cost(a, b):
        delta = a[:, None] - b[None]
        delta -= box * np.round(delta / box)
        return np.sum(delta**2, axis=-1)

    epsilon = relative_epsilon * np.mean(cost(x, y))

    def transport(c):
        kernel = np.exp(-c / epsilon)
        a, b = np.full(len(c), 1 / len(c)), np.full(c.shape[1], 1 / c.shape[1])
        v = np.ones(c.shape[1])
        for _ in range(iterations):
            u = a / (kernel @ v)
            v = b / (kernel.T @ u)
        return epsilon * (a @ np.log(u) + b @ np.log(v))

    return transport(cost(x, y)) - 0.5 * (transport(cost(x, x)) + transport(cost(y, y)))


def test_sinkhorn_divergence_equals_a_numpy_reference_and_vanishes_on_equal_frames():
    from gnkit.particles.sinkhorn import sinkhorn_divergence

    rng = np.random.default_rng(0)
    box = np.array([1.0, 2.0])
    x = rng.uniform(0, 1, (40, 2)) * box
    y = np.mod(x + [0.97, 0.05] + rng.normal(0, 0.01, (40, 2)), box)  # crosses the x wall
    found = float(sinkhorn_divergence(x.astype(np.float32), y.astype(np.float32), box))
    assert found == pytest.approx(_sinkhorn_numpy(x, y, box), rel=1e-3)
    assert float(sinkhorn_divergence(x, x, box)) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: edge_capacity(np.zeros((4, 2)), (1.0, 1.0), -0.1), "radius must be > 0"),
        (lambda: edge_capacity(np.zeros((4, 2)), (1.0, 1.0), 0.1, growth=0.5),
         "growth must be >= 1"),
        (lambda: edge_capacity(np.zeros((4, 2)), (1.0,), 0.1), "box must hold 2 lengths"),
        (lambda: rollout(None, _random_window(), 2.5, apply_fn=_zero_acceleration,
                         box=(1.0, 1.0), radius=0.2, stats=STATS, capacity=64),
         "n_steps must be an integer >= 1"),
        (lambda: rollout(None, _random_window(), 2, apply_fn=_zero_acceleration,
                         box=(1.0, 0.0), radius=0.2, stats=STATS, capacity=64),
         "box lengths must be positive"),
        (lambda: rollout(None, _random_window(), 2, apply_fn=_zero_acceleration,
                         box=(1.0, 1.0), radius=0.2, stats=STATS, capacity=-8),
         "capacity must be an integer >= 1"),
        (lambda: position_mse(np.zeros((3, 4, 2)), np.zeros((3, 4, 2)), (1.0, 1.0), steps=0),
         "steps must be an integer >= 1"),
        (lambda: position_mse(np.zeros((3, 4, 2)), np.zeros((3, 4, 2)), (1.0, 1.0, 1.0)),
         "box must hold 2 lengths"),
        (lambda: rollout_kinetic_energy(np.zeros((3, 4, 2)), (1.0, 1.0), 0.1, 0.02, stride=0),
         "stride must be an integer >= 1"),
        (lambda: rollout_kinetic_energy(np.zeros((3, 4, 2)), (1.0, 1.0), -0.1, 0.02),
         "frame_dt must be > 0"),
        (lambda: sinkhorn_divergence(np.zeros((4, 2)), np.zeros((4, 2)), (1.0, 1.0),
                                     relative_epsilon=0.0), "relative_epsilon must be > 0"),
        (lambda: sinkhorn_divergence(np.zeros((4, 2)), np.zeros((4, 3)), (1.0, 1.0)),
         "x and y must be"),
        (lambda: random_walk_noise(jnp.ones((5, 4, 2)), float("nan")),
         "noise_std must be a finite number"),
    ],
)
def test_bad_arguments_are_one_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_gns_accelerations_follow_a_permutation_and_ignore_a_periodic_translation():
    """GNS sees only relative displacements and per-particle velocities: permuting the
    particles permutes its outputs, and shifting every frame by one vector (wrapped into the
    box) leaves them unchanged. (It is not built rotation-equivariant, as in GNS and
    LagrangeBench: its edge features are raw displacement components.)"""
    window = _random_window(seed=3)
    model = GNS(latent_size=8, num_layers=1, num_message_passing_steps=2)

    def accelerations(frames):
        graph = particle_graph(frames, np.ones(2), 0.2, STATS)
        return np.asarray(model.apply(params, graph))

    params = model.init(jax.random.key(1), particle_graph(window, np.ones(2), 0.2, STATS))
    reference = accelerations(window)
    assert np.ptp(reference[:, 0]) > 1e-3  # the outputs differ between particles
    order = np.random.default_rng(0).permutation(window.shape[1])
    np.testing.assert_allclose(accelerations(window[:, order]), reference[order], atol=1e-5)
    shifted = np.mod(window + np.array([0.37, 0.81], np.float32), 1.0)
    np.testing.assert_allclose(accelerations(shifted), reference, atol=1e-4)
