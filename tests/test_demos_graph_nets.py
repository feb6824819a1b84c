"""graph_nets' three demos: masked losses, bucketed batches, tiny CLI runs, bad CLI input; full
runs are slow."""

import dataclasses
import json
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _forced_devices import run_with_devices
from _run_records import recorded

from gnkit import train as training
from gnkit.batching import batch_np, pad_with_graphs
from gnkit.demos.graph_nets import harness as common
from gnkit.demos.graph_nets import labelling, physics, prediction, shortest_path, sort
from gnkit.demos.graph_nets import report as common_report
from gnkit.experiments import RunDir
from gnkit.parallel import data_parallel
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
    make_batch = common.random_batches(
        config, sorting.generate_graphs, policy, data_parallel("single")
    )
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
    rng = np.random.default_rng([config.seed, 7])
    first_list = sorting.generate_graphs(rng, config.batch_size, *config.train_sizes)[0][0]
    np.testing.assert_array_equal(
        np.asarray(make_batch(7)[0].nodes)[: len(first_list.nodes)], first_list.nodes
    )


def test_predictions_come_back_in_order_without_padding():
    """With a last batch smaller than the others; `predict` here returns its input graph."""
    inputs, _ = sorting.generate_graphs(0, 7, 2, 5)
    inputs = [
        g._replace(edges=np.random.default_rng(i).normal(size=g.edges.shape))
        for i, g in enumerate(inputs)
    ]
    nodes, edges = prediction.predict_graphs(lambda params, graph: graph, None, inputs, 3)
    np.testing.assert_array_equal(nodes, batch_np(inputs).nodes)
    np.testing.assert_array_equal(edges, batch_np(inputs).edges)


def train_rows(out_dir):
    rows = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if row["kind"] == "train"]


def best_eval_row(out_dir):
    """The last evaluation record with the highest score (the one `best.msgpack` holds)."""
    rows = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [row for row in rows if row["kind"] == "eval"]
    return max(evals, key=lambda row: (row["score"], row["step"]))


def test_sort_cli_tiny_run_learns_and_reports_its_best_checkpoint(tmp_path):
    out = tmp_path / "sort"
    assert sort.main(["train", "--config", "tiny", "--run-dir", str(out), "--no-progress"]) == 0
    losses = [row["loss"] for row in train_rows(out)]
    assert losses[-1] < 0.8 * losses[0]
    trained = json.loads((out / "train.json").read_text())
    assert set(trained["test"]["5-5"]) == {"node_accuracy", "edge_accuracy", "solved"}
    best = best_eval_row(out)
    assert trained["checkpoint"]["file"] == "best.msgpack"
    assert trained["checkpoint"]["step"] == best["step"]
    assert trained["checkpoint"]["score"] == best["score"]
    assert trained["checkpoint"]["validation"]["solved"] == best["solved"]
    assert (out / "training.png").stat().st_size > 0 and (out / "example.png").stat().st_size > 0
    assert sort.main(["eval", "--run-dir", str(out), "--json", str(tmp_path / "eval.json")]) == 0
    evaluated = json.loads((out / "eval.json").read_text())
    assert json.loads((tmp_path / "eval.json").read_text()) == evaluated
    assert evaluated["test"] == trained["test"]
    assert evaluated["checkpoint"] == trained["checkpoint"]


def test_sort_eval_uses_best_msgpack_not_the_latest_checkpoint(tmp_path):
    """A run directory written by hand: `best.msgpack` holds the initial parameters (step 0),
    the latest checkpoint parameters shifted by 0.1; `eval` reports the initial ones."""
    config = sort.CONFIGS["tiny"]
    out = RunDir(tmp_path / "sort", config).create()
    model, example = labelling.classification_model(config), sort.TASK.example()
    optimizer = common.make_optimizer(config)
    initial = common.init_params(model, example, config)
    state = training.TrainingState(initial, optimizer.init(initial), step=0, best_score=0.25)
    training.save_checkpoint(out / "checkpoints", state, "best.msgpack")
    shifted = jax.tree.map(lambda leaf: leaf + 0.1, initial)
    training.save_checkpoint(out / "checkpoints", state.replace(params=shifted, step=40))
    rows = [{"kind": "train", "step": 40, "loss": 0.5}, {"kind": "eval", "step": 40, "solved": 0.0}]
    (out / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert sort.main(["eval", "--run-dir", str(out)]) == 0
    results = json.loads((out / "eval.json").read_text())
    assert results["checkpoint"] == {
        "file": "best.msgpack",
        "step": 0,
        "score": 0.25,
        "validation": None,
    }
    inputs, targets = labelling.held_out_set(sort.TASK, config, (5, 5), 0)
    expected, _, _ = labelling.evaluate_classification(sort.TASK, config, initial, inputs, targets)
    assert results["test"]["5-5"] == expected


@pytest.mark.slow
def test_sort_trains_with_pmap_and_mesh_like_one_device(tmp_path):
    """`sort train --parallel pmap|mesh` on 8 forced CPU devices (a fresh interpreter). Every
    tiny-config list has 5 elements, so the devices' equal-weight mean is the batch mean and 4
    updates end at the single-device parameters. (`pmap` takes no XLA options, so no
    `quick_compile`.)"""
    script = (
        "import sys\n"
        "from gnkit.demos.graph_nets import sort\n"
        "for mode in ('single', 'pmap', 'mesh'):\n"
        "    code = sort.main(['train', '--config', 'tiny', '--set', 'updates=4', '--set',\n"
        "        'quick_compile=False', '--run-dir', f'{sys.argv[1]}/{mode}', '--parallel', mode,\n"
        "        '--no-progress'])\n"
        "    assert code == 0, mode\n"
    )
    run_with_devices(script, str(tmp_path))
    config = dataclasses.replace(sort.CONFIGS["tiny"], updates=4, quick_compile=False)
    model, example = labelling.classification_model(config), sort.TASK.example()
    params = {
        mode: jax.tree.leaves(
            common_report.load_report_checkpoint(model, example, config, tmp_path / mode)[0]
        )
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
    best = best_eval_row(out)
    assert results["checkpoint"]["step"] == best["step"]
    assert results["checkpoint"]["validation"]["velocity_mse"] == -best["score"]


def test_clipping_and_cosine_schedule_of_the_sort_config():
    """One Adam step from zero moments moves each parameter by the learning rate times the
    sign of its gradient, here after clipping and at the schedule's value for step 0; the
    third update is at the cosine's value for step 2 (hand-computed)."""
    config = dataclasses.replace(sort.CONFIGS["default"], updates=8, learning_rate=0.5)
    optimizer = common.make_optimizer(config)
    params = {"w": jnp.zeros(3)}
    grads = {"w": jnp.array([30.0, -40.0, 0.0])}
    opt_state = optimizer.init(params)
    for step in range(3):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        if step == 0:
            clipped_norm = np.linalg.norm(np.array([30.0, -40.0]) / 50.0)
            np.testing.assert_allclose(clipped_norm, 1.0)
            np.testing.assert_allclose(updates["w"], [-0.5, 0.5, 0.0], rtol=1e-5)
    learning_rate_at_2 = 0.5 * 0.5 * (1 + np.cos(np.pi * 2 / 8))
    np.testing.assert_allclose(
        updates["w"], [-learning_rate_at_2, learning_rate_at_2, 0.0], rtol=1e-4
    )


@pytest.mark.slow
def test_sort_cli_stops_on_sigint_with_one_line_and_resumes_exactly(tmp_path):
    """`sort train` in a real process: SIGINT during training gives exit status 130 and one
    line naming the step saved (no traceback); rerunning the command ends at the parameters of
    an uninterrupted run."""
    command = [sys.executable, "-m", "gnkit.demos.sort", "train", "--config", "tiny"]
    command += ["--set", "updates=300", "--run-dir", str(tmp_path / "stopped"), "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / "stopped" / "metrics.jsonl"
    deadline = time.monotonic() + 600
    while not (metrics.exists() and metrics.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    stop_lines = [line for line in stdout.splitlines() if line.startswith("stopped by SIGINT")]
    assert len(stop_lines) == 1 and "rerun the command to resume" in stop_lines[0], stdout
    step = int(stop_lines[0].split()[5].rstrip(";"))
    assert 0 < step < 300
    assert subprocess.run(command, capture_output=True, timeout=600).returncode == 0
    config = dataclasses.replace(sort.CONFIGS["tiny"], updates=300)
    sort.train(config, tmp_path / "straight", progress=False)
    model = labelling.classification_model(config)
    template = common.initial_state(model, sort.TASK.example(), config)
    states = []
    for run in ("stopped", "straight"):
        assert training.checkpoint_steps(tmp_path / run / "checkpoints")[-1] == 300
        path = training.latest_checkpoint(tmp_path / run / "checkpoints")
        states.append(training.load_checkpoint(path, template))
    for got, want in zip(*(jax.tree.leaves((s.params, s.opt_state)) for s in states), strict=True):
        np.testing.assert_array_equal(got, want)


# Bad input at the command line: every demo answers with exit status 2 and one line naming the
# flag or file, no traceback, and writes nothing. `run` is the directory of a tiny run (its
# config.json, and a corrupt best checkpoint); `a_file` is a file.
BAD_INPUTS = [
    (["train", "--set", "updates=0"], "--set updates=0: updates must be >= 1"),
    (["train", "--set", "updates=-5"], "--set updates=-5: updates must be >= 1"),
    (["train", "--set", "steps=0"], "--set steps=0: steps must be >= 1"),
    (["train", "--set", "eval_steps=-1"], "--set eval_steps=-1: eval_steps must be >= 1"),
    (["train", "--set", "num_processing_steps=3"], "--set num_processing_steps=3: unknown key"),
    (["train", "--set", "updates=many"], "--set updates=many: expected int"),
    (["train", "--set", "layer_norm=maybe"], "--set layer_norm=maybe: expected bool"),
    (["train", "--set", "train_sizes=9,4"], "size range (9, 4): expected min <= max"),
    (["train", "--run-dir", "a_file"], "--run-dir a_file: is a file, expected a directory"),
    (["train", "--run-dir", "run", "--set", "updates=39"], "--run-dir run holds a run with"),
    (["train", "--run-dir", "run", "--parallel", "pmap"], "--parallel pmap with quick_compile"),
    (["train", "--out", "run"], "unrecognized arguments: --out run"),
    (["eval", "--run-dir", "run"], "run/checkpoints/best.msgpack: expected a checkpoint"),
    (["eval", "--run-dir", "nowhere"], "--run-dir nowhere: expected the directory of"),
]


def tree(root):
    """Every path under `root` with its bytes (None for directories)."""
    return {
        str(path.relative_to(root)): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("demo", [sort, shortest_path, physics], ids=lambda m: m.__name__)
@pytest.mark.parametrize("argv, message", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_cli_input_is_one_line_exit_2_and_writes_nothing(
    demo, argv, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("not a directory")
    run = RunDir(tmp_path / "run", demo.CONFIGS["tiny"]).create()
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "best.msgpack").write_bytes(b"\x93not a checkpoint")
    before = tree(tmp_path)
    preset = [] if argv[0] == "eval" else ["--config", "tiny"]
    status = demo.main([*argv, *preset, "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"gnkit {demo.DEMO.name}: error: ") and message in err, err
    assert tree(tmp_path) == before


# Each demo's documented command (default config, seed 0) against its run record
# (docs/results/<demo>.json), measured on a 2-core x86_64 CPU. Runs are deterministic there; the
# tolerances allow for other CPUs and XLA versions.
SORT_SOLVED_TOLERANCE = 0.02
SHORTEST_PATH_RIGHT_TOLERANCE = 0.01
PHYSICS_ROLLOUT_RELATIVE_TOLERANCE = {"4 masses": 0.3, "9 masses": 0.5}


def run_readme_command(main, run_dir) -> dict:
    assert main(["train", "--run-dir", str(run_dir), "--no-progress"]) == 0
    return json.loads((run_dir / "train.json").read_text())


@pytest.mark.slow
def test_sort_readme_command_reproduces_its_numbers(tmp_path):
    results = run_readme_command(sort.main, tmp_path)
    expected = recorded("sort")["test"]["8-16"]["solved"]
    assert abs(results["test"]["8-16"]["solved"] - expected) <= SORT_SOLVED_TOLERANCE
    assert "16-32" in results["test"]


@pytest.mark.slow
def test_shortest_path_readme_command_reproduces_its_numbers(tmp_path):
    results = run_readme_command(shortest_path.main, tmp_path)
    expected = recorded("shortest_path")["test"]["8-16"]
    for key in ("node_accuracy", "edge_accuracy"):
        got = results["test"]["8-16"][key]
        assert abs(got - expected[key]) <= SHORTEST_PATH_RIGHT_TOLERANCE, key


@pytest.mark.slow
def test_physics_readme_command_reproduces_its_numbers(tmp_path):
    """Rollout errors compound (most on the longer, unseen chains), so the tolerances are
    relative."""
    results = run_readme_command(physics.main, tmp_path)
    expected = recorded("physics")["test"]
    for chain, relative in PHYSICS_ROLLOUT_RELATIVE_TOLERANCE.items():
        value = expected[chain]["rollout_position_mse"]
        got = results["test"][chain]["rollout_position_mse"]
        assert abs(got - value) <= relative * value, chain
    assert (tmp_path / "trajectories.png").stat().st_size > 0
