"""gnkit.particles.segnn: the hidden widths by hand, the attributes against NumPy's harmonics,
equivariance under rotations and reflections in 2D and 3D, permutations, padding, the NNX twin,
and one-step training on the shipped TGV set."""

import jax
import numpy as np
import pytest

pytest.importorskip("e3nn_jax")
pytest.importorskip("h5py")

from flax import nnx  # noqa: E402

from gnkit.graph import GraphsTuple  # noqa: E402
from gnkit.nnx import from_linen, to_linen_variables  # noqa: E402
from gnkit.particles import load_particle_dataset  # noqa: E402
from gnkit.particles import nnx as twins  # noqa: E402
from gnkit.particles.gns import Normalisation, particle_graph  # noqa: E402
from gnkit.particles.rollout import device_particle_graph  # noqa: E402
from gnkit.particles.segnn import (  # noqa: E402
    SEGNN,
    balanced_hidden_irreps,
    steerable_attributes,
)

STATS = Normalisation(vel_mean=np.zeros(2), vel_std=np.full(2, 0.05),
                      acc_mean=np.zeros(2), acc_std=np.full(2, 0.25))


@pytest.mark.parametrize("sizes, expected", [
    # paths 0e0e0e, 0e1o1o, 1o0e1o, 1o1o0e: 4 n^2 >= 64^2 -> n = 32
    ((64, 1, 1), "32x0e+32x1o"),
    ((1, 1, 1), "1x0e+1x1o"),
    # scalars only: one path, n^2 >= 64^2
    ((64, 0, 1), "64x0e"),
    # degrees 0-2 on both sides: 11 parity-allowed paths, 11 n^2 >= 4096 -> n = 20
    ((64, 2, 2), "20x0e+20x1o+20x2e"),
])
def test_hidden_irreps_are_the_fewest_copies_with_a_square_layers_weights(sizes, expected):
    assert str(balanced_hidden_irreps(*sizes)) == expected


def test_attributes_are_numpys_harmonics_of_velocity_plus_the_mean_incoming_edge():
    rng = np.random.default_rng(0)
    velocity = rng.normal(size=(4, 3)).astype(np.float32)
    velocity[3] = 0.0
    displacement = rng.normal(size=(5, 3)).astype(np.float32)
    receivers = np.array([0, 0, 1, 3, 3])
    nodes, edges = steerable_attributes(velocity, displacement, receivers, lmax=1)

    def harmonics(vectors):  # e3nn-jax's "integral" degrees 0 and 1, components x, y, z
        norm = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.where(norm > 0, vectors / np.where(norm > 0, norm, 1.0), 0.0)
        return np.concatenate([np.full((len(vectors), 1), 1 / np.sqrt(4 * np.pi)),
                               np.sqrt(3 / (4 * np.pi)) * unit], axis=1)

    expected_edges = harmonics(displacement)
    expected_nodes = harmonics(velocity)
    for node in range(4):
        incoming = expected_edges[receivers == node]
        if len(incoming):
            expected_nodes[node] += incoming.mean(axis=0)
    expected_nodes[:, 0] = 1.0
    np.testing.assert_allclose(np.asarray(edges.array), expected_edges, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nodes.array), expected_nodes, atol=1e-6)
    assert str(nodes.irreps) == str(edges.irreps) == "1x0e+1x1o"


def _random_graph(dim, history=3, force=False, n_node=10, n_edge=30, seed=0):
    rng = np.random.default_rng(seed)
    width = (history + force) * dim
    displacement = rng.normal(size=(n_edge, dim))
    return GraphsTuple(
        nodes=rng.normal(size=(n_node, width)).astype(np.float32),
        edges=np.concatenate([displacement, np.linalg.norm(displacement, axis=1,
                                                           keepdims=True)], 1).astype(np.float32),
        senders=rng.integers(n_node, size=n_edge).astype(np.int32),
        receivers=rng.integers(n_node, size=n_edge).astype(np.int32),
        globals=np.zeros((1, 1), np.float32), n_node=np.array([n_node]),
        n_edge=np.array([n_edge]))


def _transformed(graph, matrix, dim):
    """Every vector of the graph (velocities, the force, displacements) times `matrix`."""
    nodes = graph.nodes.reshape(len(graph.nodes), -1, dim) @ matrix.T
    edges = np.concatenate([graph.edges[:, :dim] @ matrix.T, graph.edges[:, dim:]], 1)
    return graph._replace(nodes=nodes.reshape(len(nodes), -1).astype(np.float32),
                          edges=edges.astype(np.float32))


def _orthogonal(dim, seed, reflect):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    q *= np.sign(np.diag(r))
    if (np.linalg.det(q) < 0) != reflect:
        q[:, 0] *= -1
    return q


@pytest.mark.parametrize("dim, force, lmax", [(2, False, 1), (2, True, 1), (3, False, 2)])
def test_accelerations_rotate_and_reflect_with_the_inputs(dim, force, lmax):
    graph = _random_graph(dim, force=force)
    model = SEGNN(dim=dim, history=3, external_force=force, scalar_units=8, lmax_hidden=lmax,
                  lmax_attributes=lmax, num_message_passing_steps=2)
    params = model.init(jax.random.key(0), graph)
    apply = jax.jit(model.apply)
    reference = np.asarray(apply(params, graph))
    assert np.abs(reference).max() > 1e-2
    for seed, reflect in [(1, False), (2, True), (3, False)]:
        matrix = _orthogonal(dim, seed, reflect)
        moved = np.asarray(apply(params, _transformed(graph, matrix, dim)))
        np.testing.assert_allclose(moved, reference @ matrix.T, atol=2e-5 * np.abs(reference).max())


def test_accelerations_follow_a_permutation_of_the_particles():
    graph = _random_graph(2)
    model = SEGNN(history=3, scalar_units=8, num_message_passing_steps=2)
    params = model.init(jax.random.key(0), graph)
    order = np.random.default_rng(0).permutation(len(graph.nodes))
    inverse = np.argsort(order)
    permuted = graph._replace(nodes=graph.nodes[order], senders=inverse[graph.senders],
                              receivers=inverse[graph.receivers])
    np.testing.assert_allclose(np.asarray(model.apply(params, permuted)),
                               np.asarray(model.apply(params, graph))[order], atol=1e-5)


def test_padding_node_and_edges_leave_the_real_particles_unchanged():
    rng = np.random.default_rng(0)
    current = rng.uniform(0.0, 1.0, (40, 2))
    velocity = rng.uniform(-0.06, 0.06, (40, 2))
    window = np.stack([np.mod(current - 2 * velocity, 1.0), np.mod(current - velocity, 1.0),
                       current]).astype(np.float32)
    host = particle_graph(window, np.ones(2), 0.2, STATS)
    model = SEGNN(history=2, scalar_units=8, num_message_passing_steps=2)
    params = model.init(jax.random.key(0), host)
    reference = np.asarray(model.apply(params, host))
    for capacity in (512, 1024):
        graph, overflow = device_particle_graph(window, (1.0, 1.0), 0.2, STATS,
                                                capacity=capacity)
        assert not overflow
        np.testing.assert_allclose(np.asarray(model.apply(params, graph))[:40], reference,
                                   atol=1e-5)


def test_nnx_twin_gives_linen_outputs_with_copied_weights():
    graph = _random_graph(2, force=True)
    options = dict(history=3, external_force=True, scalar_units=8,
                   num_message_passing_steps=1)
    linen = SEGNN(**options)
    variables = linen.init(jax.random.key(0), graph)
    twin = from_linen(linen, variables)
    assert isinstance(twin, twins.SEGNN)
    np.testing.assert_allclose(np.asarray(twin(graph)),
                               np.asarray(linen.apply(variables, graph)), atol=1e-6)
    assert jax.tree.all(jax.tree.map(np.array_equal, to_linen_variables(twin), variables))
    built = twins.SEGNN(rngs=nnx.Rngs(1), **options)
    assert built(graph).shape == (10, 2)


@pytest.mark.parametrize("options, graph_options, message", [
    (dict(dim=4), dict(dim=2), "dim must be 2 or 3"),
    (dict(blocks=0), dict(dim=2), "blocks must be an integer of at least 1"),
    (dict(scalar_units=0), dict(dim=2), "scalar_units must be an integer of at least 1"),
    (dict(history=5), dict(dim=2), "nodes have 6 features, expected 10"),
    (dict(velocity_aggregate="sum"), dict(dim=2), "velocity_aggregate must be"),
])
def test_bad_sizes_are_named(options, graph_options, message):
    graph = _random_graph(history=3, **graph_options)
    with pytest.raises(ValueError, match=message):
        SEGNN(**{"history": 3, **options}).init(jax.random.key(0), graph)


@pytest.mark.slow
def test_one_step_training_lowers_the_loss_on_the_shipped_tgv_set():
    from gnkit.particles.gns import train_one_step

    dataset = load_particle_dataset("tgv2d")
    result = train_one_step(dataset, steps=40, learning_rate=3e-3, train_samples=2,
                            valid_samples=2, model=SEGNN(scalar_units=8,
                                                         num_message_passing_steps=1))
    losses = result["losses"]
    assert np.mean(losses[-4:]) < 0.6 * np.mean(losses[:4])
    assert result["valid_mse"] < 0.9 * result["valid_mse_zero"]  # below predicting the mean


@pytest.mark.parametrize("velocity, displacement, receivers, lmax, message", [
    ((4, 3), (5, 3), (5,), -1, "lmax must be an integer >= 0, got -1"),
    ((4, 3), (5, 3), (5,), 1.5, "lmax must be an integer >= 0, got 1.5"),
    ((4, 2), (5, 3), (5,), 1, r"velocity must be \[N, 3\], got shape \(4, 2\)"),
    ((4, 3), (5,), (5,), 1, r"displacement must be \[E, 3\], got shape \(5,\)"),
    ((4, 3), (5, 3), (4,), 1, r"receivers must be \[E\] = \[5\]"),
])
def test_bad_attribute_arguments_are_named(velocity, displacement, receivers, lmax, message):
    with pytest.raises(ValueError, match=message):
        steerable_attributes(np.ones(velocity, np.float32), np.ones(displacement, np.float32),
                             np.zeros(receivers, np.int32), lmax)
