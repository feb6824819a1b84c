"""Edge-sharded GCN, GIN and GAT, and GCN's aggregate-first order (`project_first=False`).

The sharded models run in one fresh interpreter with 8 forced CPU devices
(tests/_edge_models_worker.py) on a padded graph with skewed in-degrees and nodes without incoming
edges; each is compared there with the same model unsharded. The aggregate-first GCN is checked
here against a NumPy propagation matrix.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.convolutions import gcn
from gnkit.graph import GraphsTuple
from gnkit.nn.layers import GCN

WORKER = Path(__file__).resolve().parent / "_edge_models_worker.py"


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    out = tmp_path_factory.mktemp("edge_models") / "results.json"
    flags = os.environ.get("XLA_FLAGS", "")
    env = dict(os.environ, XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count=8")
    process = subprocess.run(
        [sys.executable, str(WORKER), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert process.returncode == 0, process.stdout + process.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("model", ["gcn", "gin", "gat_blocks", "gat_module", "gatv2_module"])
def test_edge_sharded_model_matches_unsharded(sharded, model):
    assert sharded["device_count"] == 8
    result = sharded[model]
    assert result["output_scale"] > 0.1
    # Every parameter gets a gradient, so comparing gradients compares something.
    assert result["smallest_gradient"] > 1e-3
    assert result["output_difference"] <= 1e-5 * max(result["output_scale"], 1.0)
    assert result["gradient_difference"] <= 1e-5 * max(result["gradient_scale"], 1.0)


@pytest.mark.parametrize("layer", ["gat", "gatv2"])
def test_self_edges_added_per_shard_are_rejected(sharded, layer):
    error = sharded[f"{layer}_self_edge_error"] or ""
    assert "add_self_edges=True with edges sharded" in error


# ------------------------------------------------------------------------------------------------
# aggregate first, then project

SENDERS = np.array([0, 1, 1, 2, 0, 3, 3])
RECEIVERS = np.array([1, 0, 2, 1, 2, 4, 4])  # node 3 and 5 receive nothing; node 5 is isolated
NODES = np.random.default_rng(0).normal(size=(6, 3))
WEIGHT = np.random.default_rng(1).normal(size=(3, 4))


def make_graph():
    return GraphsTuple(
        nodes=jnp.asarray(NODES, jnp.float32),
        edges=None,
        receivers=jnp.asarray(RECEIVERS),
        senders=jnp.asarray(SENDERS),
        globals=None,
        n_node=jnp.asarray([6]),
        n_edge=jnp.asarray([7]),
    )


def propagation_np(add_self_edges, symmetric_normalization):
    """`D_in^-1/2 (A + I) D_out^-1/2` with `A[i, j]` the number of edges j -> i."""
    adjacency = np.zeros((6, 6))
    np.add.at(adjacency, (RECEIVERS, SENDERS), 1.0)
    adjacency += np.eye(6) if add_self_edges else 0.0
    if not symmetric_normalization:
        return adjacency
    in_scale = 1 / np.sqrt(np.maximum(adjacency.sum(1), 1))
    out_scale = 1 / np.sqrt(np.maximum(adjacency.sum(0), 1))
    return in_scale[:, None] * adjacency * out_scale[None, :]


@pytest.mark.parametrize("add_self_edges", [False, True])
@pytest.mark.parametrize("symmetric_normalization", [False, True])
def test_gcn_orders_agree_for_a_linear_update(add_self_edges, symmetric_normalization):
    options = dict(add_self_edges=add_self_edges, symmetric_normalization=symmetric_normalization)
    linear = lambda x: x @ WEIGHT.astype(np.float32)  # noqa: E731
    expected = propagation_np(**options) @ NODES @ WEIGHT
    for project_first in (True, False):
        out = gcn(linear, project_first=project_first, **options)(make_graph())
        np.testing.assert_allclose(out.nodes, expected, rtol=1e-5, atol=1e-5)


def test_gcn_aggregate_first_applies_the_update_after_propagation():
    update = lambda x: jnp.tanh(x @ WEIGHT.astype(np.float32) + 1.0)  # noqa: E731
    out = gcn(update, project_first=False)(make_graph())
    expected = np.tanh(propagation_np(True, True) @ NODES @ WEIGHT + 1.0)
    np.testing.assert_allclose(out.nodes, expected, rtol=1e-5, atol=1e-5)
    # Not linear: the default order gives a different result.
    assert not np.allclose(gcn(update)(make_graph()).nodes, expected, atol=1e-3)


@pytest.mark.parametrize("project_first", [None, True, False])
@pytest.mark.parametrize("features", [2, 4])
def test_gcn_module_is_the_same_in_either_order(project_first, features):
    module = GCN(features, project_first=project_first, convention="jraph")
    params = module.init(jax.random.PRNGKey(0), make_graph())
    params = jax.tree.map(lambda x: x + 0.5, params)  # a nonzero bias
    out = module.apply(params, make_graph()).nodes
    kernel, bias = params["params"]["linear"]["kernel"], params["params"]["bias"]
    expected = propagation_np(True, True) @ NODES @ np.asarray(kernel) + np.asarray(bias)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_gcn_gradient_is_the_same_in_either_order():
    def loss(weight, project_first):
        out = gcn(lambda x: x @ weight, project_first=project_first)(make_graph()).nodes
        return jnp.sum(jnp.sin(out))

    weight = jnp.asarray(WEIGHT, jnp.float32)
    grads = [jax.grad(loss)(weight, order) for order in (True, False)]
    assert float(jnp.max(jnp.abs(grads[0]))) > 1e-2
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# the chunked neighbour sum (gcn and gin without an aggregator)


def many_edges_graph(n_node=300, n_edge=2600, seed=3):
    """More edges than two chunks of 1024 plus a remainder; receivers sorted."""
    rng = np.random.default_rng(seed)
    receivers = np.sort(rng.integers(0, n_node - 20, n_edge))  # the last 20 receive nothing
    return GraphsTuple(
        nodes=jnp.asarray(rng.normal(size=(n_node, 3)), jnp.float32),
        edges=None,
        receivers=jnp.asarray(receivers),
        senders=jnp.asarray(rng.integers(0, n_node, n_edge)),
        globals=None,
        n_node=jnp.asarray([n_node]),
        n_edge=jnp.asarray([n_edge]),
    )


@pytest.mark.parametrize("indices_are_sorted", [False, True])
def test_chunked_neighbour_sum_matches_numpy_and_the_segment_sum(monkeypatch, indices_are_sorted):
    from gnkit import convolutions

    monkeypatch.setattr(convolutions, "_CHUNK_BYTES", 1)  # chunks of 1024 edges
    graph = many_edges_graph()
    adjacency = np.zeros((300, 300))
    np.add.at(adjacency, (np.asarray(graph.receivers), np.asarray(graph.senders)), 1.0)
    nodes = np.asarray(graph.nodes, np.float64)

    def gin_sum(nodes, aggregator):
        layer = convolutions.gin(
            lambda x: x, aggregator=aggregator, indices_are_sorted=indices_are_sorted
        )
        return layer(graph._replace(nodes=nodes)).nodes

    chunked = jax.jit(lambda x: gin_sum(x, None))(graph.nodes)
    np.testing.assert_allclose(chunked, nodes + adjacency @ nodes, rtol=1e-5, atol=1e-5)
    # The gradient with respect to the features: through the chunks as through the segment sum.
    cotangent = jnp.asarray(np.random.default_rng(4).normal(size=(300, 3)), jnp.float32)
    grads = [
        jax.grad(lambda x, a=aggregator: jnp.sum(gin_sum(x, a) * cotangent))(graph.nodes)
        for aggregator in (None, "sum")
    ]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], cotangent + adjacency.T @ cotangent, rtol=1e-5, atol=1e-5)
