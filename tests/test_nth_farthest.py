"""Tests of the N-th farthest task generator, its labels recomputed independently, and the demo."""

import itertools
from dataclasses import replace as dataclasses_replace

import numpy as np
import pytest

from gnkit.demos import nth_farthest as demo
from gnkit.demos.nth_farthest import config as demo_config
from gnkit.demos.nth_farthest import data as demo_data
from gnkit.demos.nth_farthest import models, training
from gnkit.nn import MLP
from gnkit.tasks import nth_farthest


def _decode(inputs):
    """Split step inputs [B, 8, 40] back into vectors, labels, n and m."""
    vectors = inputs[..., :16].astype(np.float64)
    labels = inputs[..., 16:24].argmax(-1)
    n, m = inputs[:, 0, 24:32].argmax(-1), inputs[:, 0, 32:40].argmax(-1)
    return vectors, labels, n, m


def test_sample_shapes_encoding_and_ranges():
    inputs, targets = nth_farthest.sample(np.random.default_rng(0), 64)
    assert inputs.shape == (64, 8, 40) and inputs.dtype == np.float32
    assert targets.shape == (64,) and np.issubdtype(targets.dtype, np.integer)
    assert np.all(np.abs(inputs[..., :16]) <= 1.0)
    one_hots = inputs[..., 16:].reshape(64, 8, 3, 8)
    assert np.all(np.sort(one_hots, axis=-1)[..., -1] == 1)
    assert np.all(one_hots.sum(-1) == 1)
    _, labels, _, _ = _decode(inputs)
    assert all(sorted(row) == list(range(8)) for row in labels.tolist())
    np.testing.assert_array_equal(inputs[:, :, 24:], inputs[:, :1, 24:].repeat(8, axis=1))
    assert set(targets.tolist()) <= set(range(8))


def test_targets_recomputed_by_brute_force():
    inputs, targets = nth_farthest.sample(np.random.default_rng(1), 200)
    vectors, labels, n, m = _decode(inputs)
    for b in range(200):
        by_label = {int(label): vectors[b, i] for i, label in enumerate(labels[b])}
        reference = by_label[int(m[b])]
        distance = {label: np.sqrt(np.sum((v - reference) ** 2)) for label, v in by_label.items()}
        ranked = sorted(distance, key=lambda label: -distance[label])
        assert targets[b] == ranked[n[b]]


def test_hand_made_example():
    # four objects on a line at 0, 1, 3, 7 with labels 2, 0, 3, 1; reference: label 0 (at 1)
    vectors = np.array([[[0.0], [1.0], [3.0], [7.0]]])
    labels = np.array([[2, 0, 3, 1]])
    expected = {0: 1, 1: 3, 2: 2, 3: 0}   # distances 6 (label 1), 2 (3), 1 (2), 0 (0)
    for n, label in expected.items():
        assert nth_farthest.answer(vectors, labels, np.array([n]), np.array([0]))[0] == label


def test_question_covers_every_n_and_m_and_targets_are_balanced():
    inputs, targets = nth_farthest.sample(np.random.default_rng(2), 4000)
    _, _, n, m = _decode(inputs)
    questions = set(zip(n.tolist(), m.tolist(), strict=True))
    assert questions == set(itertools.product(range(8), range(8)))
    counts = np.bincount(targets, minlength=8)
    assert counts.min() > 400   # ~500 each: labels are a random permutation


def test_same_seed_same_held_out_set():
    a_inputs, a_targets = nth_farthest.held_out_set(3, 16)
    b_inputs, b_targets = nth_farthest.held_out_set(3, 16)
    np.testing.assert_array_equal(a_inputs, b_inputs)
    np.testing.assert_array_equal(a_targets, b_targets)


def test_restricted_questions_and_smaller_sizes_recomputed_by_brute_force():
    inputs, targets = nth_farthest.sample(np.random.default_rng(5), 300, 4, 3, n_choices=[0, 2])
    assert inputs.shape == (300, 4, 15) and targets.shape == (300,)
    vectors, labels = inputs[..., :3].astype(np.float64), inputs[..., 3:7].argmax(-1)
    n, m = inputs[:, 0, 7:11].argmax(-1), inputs[:, 0, 11:15].argmax(-1)
    assert set(n.tolist()) == {0, 2} and set(m.tolist()) == {0, 1, 2, 3}
    for b in range(300):
        reference = vectors[b, list(labels[b]).index(m[b])]
        distances = np.linalg.norm(vectors[b] - reference, axis=-1)
        assert targets[b] == labels[b, np.argsort(-distances)[n[b]]]
    with pytest.raises(ValueError, match="n_choices"):
        nth_farthest.sample(np.random.default_rng(0), 2, 4, 3, n_choices=[4])


def test_curriculum_asks_one_more_rank_per_stage():

    config = demo_config.NthFarthestConfig(num_objects=4, curriculum_updates=10)
    stages = {update: demo_data.curriculum_choices(config, update) for update in (0, 9, 10, 29, 30)}
    assert stages == {0: [0], 9: [0], 10: [0, 1], 29: [0, 1, 2], 30: None}
    assert demo_data.curriculum_choices(demo_config.NthFarthestConfig(), 0) is None
    assert demo_config.trivial_accuracy(8) == 1 / 8 + 7 / 8 * 1 / 7


def test_learning_rate_is_constant_until_every_n_is_asked_then_cosine_decays():
    import math


    config = demo_config.NthFarthestConfig(
        num_objects=4, curriculum_updates=10, updates=50, learning_rate=1e-3,
        final_learning_rate_fraction=0.1,
    )
    schedule = training.learning_rate_schedule(config)
    halfway = 1e-3 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 2)))
    expected = {0: 1e-3, 29: 1e-3, 30: 1e-3, 40: halfway, 50: 1e-4, 60: 1e-4}
    assert {u: float(schedule(u)) for u in expected} == pytest.approx(expected, rel=1e-6)
    no_curriculum = dataclasses_replace(config, curriculum_updates=0)
    assert float(training.learning_rate_schedule(no_curriculum)(25)) == pytest.approx(halfway)


def test_optimizer_steps_follow_the_schedule_and_constant_keeps_plain_adam():
    import jax
    import jax.numpy as jnp
    import optax


    config = demo_config.NthFarthestConfig(
        num_objects=3, curriculum_updates=1, updates=4, learning_rate=1e-2,
        final_learning_rate_fraction=0.1,
    )
    opt = training.optimizer(config)
    params = jnp.zeros(())
    state = opt.init(params)
    steps = []
    for _ in range(4):  # a constant gradient: each Adam step moves by the learning rate
        update, state = opt.update(jnp.ones(()), state, params)
        steps.append(-float(update))
    assert steps == pytest.approx([1e-2, 1e-2, 1e-2, 1e-2 * (0.1 + 0.9 * 0.5)], rel=1e-4)
    constant = dataclasses_replace(config, final_learning_rate_fraction=1.0)
    plain = optax.chain(optax.clip_by_global_norm(5.0), optax.adam(1e-2))
    assert jax.tree.structure(training.optimizer(constant).init(params)) == jax.tree.structure(
        plain.init(params)
    )


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        nth_farthest.sample(np.random.default_rng(0), 0)


@pytest.mark.parametrize(
    ("preset", "objects", "inputs", "slots", "heads", "head_size", "lstm_units", "rmc_total",
     "lstm_total"),
    [
        ("paper", 8, 16 + 24, 8, 8, 32, 512, 1_329_160, 1_463_304),
        ("default", 6, 2 + 18, 6, 4, 16, 148, 336_902, 337_110),
    ],
)
def test_model_sizes_counted_by_hand(
    preset, objects, inputs, slots, heads, head_size, lstm_units, rmc_total, lstm_total
):

    config = demo.CONFIGS[preset]
    memory = heads * head_size
    rmc_core = (
        (inputs + 1) * memory                     # input projection
        + (memory + 1) * 3 * memory + 2 * 3 * memory   # q, k, v projection and its LayerNorm
        + 2 * memory                              # LayerNorm after attention
        + 2 * (memory + 1) * memory + 2 * memory  # attention MLP and its LayerNorm
        + 2 * (memory + 1) * 2 * memory           # gates from the input and from the memory
    )
    lstm_core = 4 * (inputs * lstm_units + lstm_units * lstm_units + lstm_units)
    head = lambda width: (width + 1) * 256 + 3 * 257 * 256 + 257 * objects  # noqa: E731
    assert models.parameter_count("rmc", config) == rmc_core + head(slots * memory) == rmc_total
    assert models.parameter_count("lstm", config) == lstm_core + head(lstm_units) == lstm_total


def test_model_answers_from_the_final_step_of_the_cell_unrolled_by_hand():
    import jax


    config = demo.CONFIGS["tiny"]
    model = models.build_model("rmc", config)
    inputs, targets = nth_farthest.sample(np.random.default_rng(4), 5)
    params = model.init(jax.random.key(0), inputs)
    cell, head = model.core, MLP(tuple(config.mlp_features) + (8,))
    memory = cell.initialize_carry(jax.random.key(1), inputs[:, 0].shape)
    for t in range(8):
        memory, output = cell.apply({"params": params["params"]["core"]}, memory,
                                    inputs[:, t])
    logits = head.apply({"params": params["params"]["mlp"]}, output)
    np.testing.assert_allclose(model.apply(params, inputs), logits, rtol=1e-5, atol=1e-6)

    loss, metrics = training.loss_fn(model)(params, (inputs, targets))
    shifted = np.asarray(logits, np.float64) - np.max(logits, axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    np.testing.assert_allclose(loss, -log_softmax[np.arange(5), targets].mean(), rtol=1e-5)
    assert metrics["accuracy"] == np.mean(np.argmax(logits, -1) == targets)


def test_cli_trains_and_evaluates_the_lstm_at_tiny_size(tmp_path, capsys):
    import json


    run = tmp_path / "run"
    args = ["--run-dir", str(run), "--no-progress", "--set", "models=lstm"]
    assert demo.main(["train", "--config", "tiny", *args, "--json", str(tmp_path / "r.json")]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    lstm = results["models"]["lstm"]
    assert lstm["updates"] == 4 and lstm["sequences"] == 32
    assert lstm["curve"]["updates"] == [2, 4] and len(lstm["curve"]["accuracy"]) == 2
    assert lstm["best_test_accuracy"] == max(lstm["curve"]["accuracy"])
    assert (run / "curves.png").exists() and (run / "metrics_lstm.jsonl").exists()
    assert "test accuracy on 16 held-out sequences" in capsys.readouterr().out
    assert demo.main(["eval", "--run-dir", str(run), "--no-progress", "--json", "-"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["models"]["lstm"]["test_accuracy"] == lstm["test_accuracy"]


def test_cli_usage_errors_are_one_line(tmp_path, capsys):

    code = demo.main(["train", "--config", "tiny", "--run-dir", str(tmp_path / "r"),
                      "--set", "models=rmc,rmc"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnkit nth-farthest: error: --set models=rmc,rmc") and "\n" not in err
    assert not (tmp_path / "r").exists()
    assert demo.main(["eval", "--run-dir", str(tmp_path / "none")]) == 2


@pytest.mark.slow
def test_cli_trains_both_models_at_tiny_size(tmp_path):
    import json


    out = tmp_path / "r.json"
    args = ["train", "--config", "tiny", "--run-dir", str(tmp_path / "run"), "--no-progress"]
    assert demo.main([*args, "--json", str(out)]) == 0
    models = json.loads(out.read_text())["models"]
    assert set(models) == {"rmc", "lstm"}
    assert all(entry["curve"]["updates"] == [2, 4] for entry in models.values())
