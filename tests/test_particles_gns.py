"""gnkit.particles.gns: the radius graph against brute-force periodic pairs, the one-step target
against hand-computed finite differences, and one-step training on the shipped TGV set."""

import numpy as np
import pytest

from gnkit.particles import load_particle_dataset
from gnkit.particles.gns import (
    GNS,
    Normalisation,
    particle_graph,
    target_acceleration,
    train_one_step,
)

STATS = Normalisation(vel_mean=np.zeros(2), vel_std=np.full(2, 0.5),
                      acc_mean=np.zeros(2), acc_std=np.full(2, 0.25))


def _minimum_image(delta, box):
    return delta - box * np.round(delta / box)


def test_graph_is_every_ordered_pair_within_the_radius_across_periodic_walls():
    rng = np.random.default_rng(0)
    box, radius = np.array([1.0, 2.0]), 0.3
    window = rng.uniform(0, 1, (3, 40, 2)) * box
    graph = particle_graph(window, box, radius, STATS)
    current = window[-1]
    delta = _minimum_image(current[None, :, :] - current[:, None, :], box)  # [sender, receiver]
    distance = np.linalg.norm(delta, axis=-1)
    expected = {(s, r) for s, r in zip(*np.nonzero(distance < radius), strict=True) if s != r}
    found = set(zip(graph.senders.tolist(), graph.receivers.tolist(), strict=True))
    assert found == expected and len(expected) > 40
    vectors = delta[graph.senders, graph.receivers] / radius
    np.testing.assert_allclose(graph.edges[:, :2], vectors, atol=1e-6)
    np.testing.assert_allclose(graph.edges[:, 2], np.linalg.norm(vectors, axis=1), atol=1e-6)
    velocities = _minimum_image(np.diff(window, axis=0), box) / 0.5  # normalised by vel_std
    np.testing.assert_allclose(graph.nodes, velocities.transpose(1, 0, 2).reshape(40, 4),
                               atol=1e-5)


def test_target_is_the_normalised_second_difference_with_the_wrap():
    window = np.array([[[0.98, 0.5]], [[0.99, 0.5]], [[0.01, 0.5]]])  # crosses x = 1
    target = target_acceleration(window, np.array([1.0, 1.0]), STATS)
    np.testing.assert_allclose(target, [[(0.02 - 0.01) / 0.25, 0.0]], atol=1e-5)


@pytest.mark.slow
def test_one_step_training_lowers_the_loss_on_the_shipped_tgv_set():
    dataset = load_particle_dataset("tgv2d")
    result = train_one_step(dataset, steps=40, train_samples=2, valid_samples=2,
                            model=GNS(latent_size=32, num_layers=2, num_message_passing_steps=2))
    losses = result["losses"]
    assert np.all(np.isfinite(losses))
    assert np.mean(losses[-4:]) < 0.8 * np.mean(losses[:4])
    assert np.isfinite(result["valid_mse"]) and np.isfinite(result["valid_mse_zero"])


def test_random_walk_noise_by_hand_and_its_last_velocity_has_the_noise_std():
    import jax

    from gnkit.particles.one_step import normalised_target, random_walk_noise

    step = 3e-4 / np.sqrt(2)
    noise = np.asarray(random_walk_noise(np.ones((2, 1, 2), np.float32), 3e-4))
    # velocity noise: step * [1, 2]; positions: [0, 1, 3] steps; the target repeats the last
    np.testing.assert_allclose(noise[:, 0, 0], [0, step, 3 * step, 3 * step], rtol=1e-5)
    draws = jax.random.normal(jax.random.key(0), (5, 20000, 2))
    velocity = np.diff(np.asarray(random_walk_noise(draws, 3e-4)), axis=0)
    assert np.std(velocity[4]) == pytest.approx(3e-4, rel=0.02)
    assert np.all(velocity[5] == 0)
    # the target acceleration of the noisy window is the clean one minus the last velocity noise
    rng = np.random.default_rng(0)
    window = rng.uniform(0.3, 0.7, (7, 10, 2))
    clean = target_acceleration(window, np.ones(2), STATS)
    noisy = np.asarray(normalised_target(window + np.asarray(noise_of(draws[:, :10])),
                                         (1.0, 1.0), STATS))
    expected = clean - velocity[4, :10] / 0.25
    np.testing.assert_allclose(noisy, expected, atol=1e-4)


def noise_of(draws):
    from gnkit.particles.one_step import random_walk_noise

    return random_walk_noise(draws, 3e-4)


def _numpy_mlp(params, x, layer_norm):
    layers = sorted(name for name in params if name.startswith("dense_"))
    for index, name in enumerate(layers):
        x = x @ np.asarray(params[name]["kernel"]) + np.asarray(params[name]["bias"])
        if index < len(layers) - 1:
            x = np.maximum(x, 0.0)
    if layer_norm:  # flax's LayerNorm: epsilon 1e-6, biased variance
        scale, bias = (np.asarray(params["LayerNorm_0"][k]) for k in ("scale", "bias"))
        x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6)
        x = x * scale + bias
    return x


def test_gns_is_the_papers_encoder_residual_blocks_and_decoder_by_numpy():
    import jax

    rng = np.random.default_rng(3)
    graph = particle_graph(rng.uniform(0, 1, (4, 30, 2)), np.ones(2), 0.3, STATS)
    model = GNS(latent_size=8, num_layers=2, num_message_passing_steps=3)
    params = model.init(jax.random.key(1), graph)["params"]
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    nodes = _numpy_mlp(params["node_encoder"], np.asarray(graph.nodes, np.float64), True)
    edges = _numpy_mlp(params["edge_encoder"], np.asarray(graph.edges, np.float64), True)
    for step in range(3):
        block = params[f"processor_{step}"]
        new_edges = _numpy_mlp(block["edge_update"], np.concatenate(
            [edges, nodes[senders], nodes[receivers]], axis=1), True)
        received = np.zeros_like(nodes)
        np.add.at(received, receivers, new_edges)
        new_nodes = _numpy_mlp(block["node_update"], np.concatenate([nodes, received], axis=1),
                               True)
        nodes, edges = nodes + new_nodes, edges + new_edges
    expected = _numpy_mlp(params["decoder"], nodes, False)
    np.testing.assert_allclose(np.asarray(model.apply({"params": params}, graph)), expected,
                               rtol=1e-4, atol=1e-5)
    assert set(params) == {"node_encoder", "edge_encoder", "processor_0", "processor_1",
                           "processor_2", "decoder"}  # one block per step, nothing shared


def test_nnx_twin_gives_linen_outputs_with_copied_weights():
    import jax
    from flax import nnx

    from gnkit.nnx import from_linen, to_linen_variables
    from gnkit.particles.nnx import GNS as NNXGNS

    rng = np.random.default_rng(0)
    window = rng.uniform(0, 1, (3, 30, 2))
    graph = particle_graph(window, np.ones(2), 0.3, STATS)
    linen = GNS(latent_size=8, num_layers=1, num_message_passing_steps=2)
    variables = linen.init(jax.random.key(0), graph)
    twin = from_linen(linen, variables)
    assert isinstance(twin, NNXGNS)
    np.testing.assert_allclose(np.asarray(twin(graph)), np.asarray(linen.apply(variables, graph)),
                               atol=1e-6)
    back = to_linen_variables(twin)
    assert jax.tree.all(jax.tree.map(np.array_equal, back, variables))
    built = NNXGNS(in_node_features=4, in_edge_features=3, rngs=nnx.Rngs(0), latent_size=8,
                   num_layers=1, num_message_passing_steps=2)
    assert built(graph).shape == (30, 2)


@pytest.mark.parametrize("option, value", [("num_layers", 0), ("num_message_passing_steps", -1),
                                           ("latent_size", 1.5), ("dim", True)])
def test_bad_sizes_are_named(option, value):
    import jax

    graph = particle_graph(np.random.default_rng(0).uniform(0, 1, (3, 10, 2)), np.ones(2), 0.3,
                           STATS)
    with pytest.raises(ValueError, match=f"GNS: {option} must be an integer of at least 1"):
        GNS(**{option: value}).init(jax.random.key(0), graph)


def test_isotropic_statistics_average_the_means_and_the_variances_over_axes():
    stats = Normalisation(vel_mean=np.array([1.0, 3.0]), vel_std=np.array([3.0, 4.0]),
                          acc_mean=np.array([-2.0, 0.0]), acc_std=np.array([1.0, 7.0]))
    iso = stats.isotropic()
    np.testing.assert_allclose(iso.vel_mean, [2.0, 2.0])
    np.testing.assert_allclose(iso.vel_std, [np.sqrt(12.5)] * 2)
    np.testing.assert_allclose(iso.acc_mean, [-1.0, -1.0])
    np.testing.assert_allclose(iso.acc_std, [5.0, 5.0])
