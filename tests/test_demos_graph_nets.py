"""graph_nets' three demos: masked losses, bucketed batches, tiny CLI runs; full runs are slow."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _forced_devices import run_with_devices

from gnkit.batching import batch_np, pad_with_graphs
from gnkit.demos import _classification as labelling
from gnkit.demos import _graph_nets as common
from gnkit.demos import physics, shortest_path, sort
from gnkit.tasks import mass_spring, sorting


def log_softmax_np(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_classification_loss_is_masked_cross_entropy_averaged_over_steps():
    inputs, targets = sorting.generate_graphs(0, 3, 3, 4)
    padded = pad_with_graphs(batch_np(targets), 40, 60, 5)
    n_node, n_edge = int(batch_np(targets).n_node.sum()), int(batch_np(targets).n_edge.sum())
    rng = np.random.default_rng(1)
    outputs = []
    for _ in range(2):
        nodes = rng.normal(size=(40, 2)).astype(np.float32)
        edges = rng.normal(size=(60, 2)).astype(np.float32)
        nodes[n_node:] = edges[n_edge:] = 1e6  # padding rows must not count
        outputs.append(padded._replace(nodes=nodes, edges=edges))
    per_step = [
        -np.mean(np.sum(padded.nodes[:n_node] * log_softmax_np(o.nodes[:n_node]), -1))
        - np.mean(np.sum(padded.edges[:n_edge] * log_softmax_np(o.edges[:n_edge]), -1))
        for o in outputs
    ]
    loss = labelling.classification_loss(outputs, padded)
    np.testing.assert_allclose(float(loss), np.mean(per_step), rtol=1e-5)


def test_velocity_loss_is_masked_mse():
    _, targets = mass_spring.generate_graphs(0, 2, 3, 4, n_steps=5)
    padded = pad_with_graphs(batch_np(targets), 12, 10, 3)
    n_node = int(batch_np(targets).n_node.sum())
    predicted = np.full((12, 2), 50.0, np.float32)
    predicted[:n_node] = padded.nodes[:n_node] + np.arange(n_node)[:, None]
    loss = physics.velocity_loss([padded._replace(nodes=jnp.asarray(predicted))], padded)
    np.testing.assert_allclose(float(loss), np.mean(np.arange(n_node) ** 2.0), rtol=1e-6)


def test_training_batches_fall_in_a_few_buckets():
    config = sort.CONFIGS["default"]
    low = config.train_sizes[0]
    policy = common.bucket_policy(config.batch_size, low, sort.TASK.typical_edges(low))
    make_batch = common.random_batches(config, sorting.generate_graphs, policy)
    shapes = set()
    for step in range(40):
        inputs, targets = make_batch(step)
        assert inputs.senders.shape == targets.senders.shape
        assert inputs.nodes.shape[0] == targets.nodes.shape[0]
        real_edges = int(inputs.n_edge[: config.batch_size].sum())
        assert real_edges <= len(inputs.senders) < 1.5 * real_edges
        shapes.add((inputs.nodes.shape[0], inputs.senders.shape[0], inputs.n_node.shape[0]))
    assert len(shapes) <= 3
    np.testing.assert_array_equal(make_batch(7)[0].nodes, make_batch(7)[0].nodes)


def test_predictions_come_back_in_order_without_padding():
    """With a last batch smaller than the others; `predict` here returns its input graph."""
    inputs, _ = sorting.generate_graphs(0, 7, 2, 5)
    inputs = [
        g._replace(edges=np.random.default_rng(i).normal(size=g.edges.shape))
        for i, g in enumerate(inputs)
    ]
    nodes, edges = common.predict_graphs(lambda params, graph: graph, None, inputs, 3)
    np.testing.assert_array_equal(nodes, batch_np(inputs).nodes)
    np.testing.assert_array_equal(edges, batch_np(inputs).edges)


def train_rows(out_dir):
    rows = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if row["kind"] == "train"]


def test_sort_cli_tiny_run_learns_and_evaluates_from_its_checkpoint(tmp_path):
    out = tmp_path / "sort"
    assert sort.main(["train", "--config", "tiny", "--out", str(out), "--no-progress"]) == 0
    losses = [row["loss"] for row in train_rows(out)]
    assert losses[-1] < 0.8 * losses[0]
    trained = json.loads((out / "results.json").read_text())
    assert set(trained["test"]["5-5"]) == {"node_accuracy", "edge_accuracy", "solved"}
    assert (out / "training.png").stat().st_size > 0 and (out / "example.png").stat().st_size > 0
    assert sort.main(["eval", "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["test"] == trained["test"]


@pytest.mark.slow
def test_sort_trains_with_pmap_and_mesh_like_one_device(tmp_path):
    """`sort train --parallel pmap|mesh` on 8 forced CPU devices (a fresh interpreter). Every
    tiny-config list has 5 elements, so the devices' equal-weight mean is the batch mean and 4
    steps end at the single-device parameters."""
    script = (
        "import sys\n"
        "from gnkit.demos import sort\n"
        "for mode in ('single', 'pmap', 'mesh'):\n"
        "    code = sort.main(['train', '--config', 'tiny', '--steps', '4', '--out',\n"
        "        f'{sys.argv[1]}/{mode}', '--parallel', mode, '--no-progress'])\n"
        "    assert code == 0, mode\n"
    )
    run_with_devices(script, str(tmp_path))
    config = sort.CONFIGS["tiny"]
    model, example = labelling.classification_model(config), sort.TASK.example()
    params = {
        mode: jax.tree.leaves(common.load_params(model, example, config, tmp_path / mode))
        for mode in ("single", "pmap", "mesh")
    }
    for mode in ("pmap", "mesh"):
        for got, want in zip(params[mode], params["single"], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_physics_tiny_run_learns_and_rolls_out(tmp_path):
    out = tmp_path / "physics"
    results = physics.train(physics.CONFIGS["tiny"], out, progress=False)
    losses = [row["loss"] for row in train_rows(out)]
    assert losses[-1] < 0.8 * losses[0]
    assert np.isfinite(results["test"]["4 masses"]["rollout_position_mse"])
    assert (out / "trajectories.png").stat().st_size > 0


@pytest.mark.slow
def test_sort_default_config(tmp_path):
    results = sort.train(sort.CONFIGS["default"], tmp_path, progress=False)
    assert results["test"]["8-16"]["solved"] >= 0.95
    assert "16-32" in results["test"]


@pytest.mark.slow
def test_shortest_path_default_config(tmp_path):
    results = shortest_path.train(shortest_path.CONFIGS["default"], tmp_path, progress=False)
    assert results["test"]["8-16"]["node_accuracy"] >= 0.95
    assert results["test"]["8-16"]["edge_accuracy"] >= 0.95
    assert "16-32" in results["test"]


@pytest.mark.slow
def test_physics_default_config(tmp_path):
    results = physics.train(physics.CONFIGS["default"], tmp_path, progress=False)
    for chain in ("4 masses", "9 masses"):
        assert np.isfinite(results["test"][chain]["rollout_position_mse"])
    assert (tmp_path / "trajectories.png").stat().st_size > 0
