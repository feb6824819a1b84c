"""Tests for gnkit.tasks.pretty_clevr: answers recomputed by a brute-force path walk, uniqueness,
minimum distance, augmentation; and the pretty-clevr demo's models and CLI at tiny size."""

import math

import numpy as np
import pytest

from gnkit.demos import pretty_clevr as demo
from gnkit.demos.pretty_clevr import data as demo_data
from gnkit.demos.pretty_clevr import models
from gnkit.tasks import pretty_clevr as pc

QUESTION_KEYS = ("scene", "anchor_is_color", "anchor", "jumps", "answer")


@pytest.fixture(scope="module")
def scenes():
    return pc.generate(np.random.default_rng(0), 40)


def _walk(positions, start, jumps):
    """The object reached after `jumps` greedy jumps from `start`, by plain Python loops."""
    points = [tuple(map(float, p)) for p in positions]
    visited, current = {start}, start
    for _ in range(jumps):
        best, best_distance = None, math.inf
        for candidate, point in enumerate(points):
            if candidate in visited:
                continue
            distance = math.dist(points[current], point)
            if distance < best_distance:
                best, best_distance = candidate, distance
        visited.add(best)
        current = best
    return current


def _answers_by_walking(data, positions):
    answers = []
    for q in range(len(data["scene"])):
        s, anchor = data["scene"][q], data["anchor"][q]
        if data["anchor_is_color"][q]:
            start = int(np.flatnonzero(data["colors"][s] == anchor)[0])
        else:
            start = int(np.flatnonzero(data["markers"][s] == anchor)[0])
        target = _walk(positions[s], start, int(data["jumps"][q]))
        if data["anchor_is_color"][q]:
            answers.append(8 + int(data["markers"][s, target]))
        else:
            answers.append(int(data["colors"][s, target]))
    return np.array(answers)


def test_shapes_and_types(scenes):
    assert scenes["positions"].shape == (40, 8, 2) and scenes["positions"].dtype == np.float32
    assert scenes["colors"].shape == scenes["markers"].shape == (40, 8)
    for key in ("scene", "anchor_is_color", "anchor", "jumps", "answer"):
        assert scenes[key].shape == (40 * 128,)
    assert scenes["anchor_is_color"].dtype == bool
    assert set(np.unique(scenes["answer"])) <= set(range(16))


def test_answers_match_a_brute_force_walk(scenes):
    positions = scenes["positions"][:12]
    first = scenes["scene"] < 12
    data = {key: value[first] if key in QUESTION_KEYS else value for key, value in scenes.items()}
    np.testing.assert_array_equal(_answers_by_walking(data, positions), data["answer"])


def test_each_scene_asks_every_anchor_jump_and_kind_once(scenes):
    per_scene = np.stack(
        [scenes["scene"], scenes["anchor_is_color"], scenes["anchor"], scenes["jumps"]], axis=1
    )
    assert len(np.unique(per_scene, axis=0)) == 40 * 128
    assert np.all(np.bincount(scenes["jumps"]) == 40 * 16)


def test_colours_and_markers_are_used_once_per_scene(scenes):
    for key in ("colors", "markers"):
        np.testing.assert_array_equal(np.sort(scenes[key], axis=1), np.tile(np.arange(8), (40, 1)))


def test_objects_keep_the_minimum_distance(scenes):
    positions = scenes["positions"].astype(np.float64)
    gaps = np.linalg.norm(positions[:, :, None] - positions[:, None], axis=-1)
    gaps[:, np.arange(8), np.arange(8)] = np.inf
    assert gaps.min() > 0.1
    assert 0 <= positions.min() and positions.max() <= 1


def test_greedy_path_on_a_line_by_hand():
    x = np.array([0.0, 0.11, 0.23, 0.36, 0.50, 0.65, 0.81, 0.98])
    positions = np.stack([x, np.zeros(8)], axis=-1)[None]
    paths = pc.greedy_paths(positions)
    # From x=.36: .23 (gap .13) beats .50 (.14); then .11, 0; then back right to .50, ...
    assert paths[0, 3].tolist() == [3, 2, 1, 0, 4, 5, 6, 7]
    assert paths[0, 7].tolist() == [7, 6, 5, 4, 3, 2, 1, 0]
    assert paths[0, 0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7]


def test_augmentation_keeps_the_answers(scenes):
    rng = np.random.default_rng(5)
    moved = pc.augment(rng, scenes["positions"])
    assert not np.allclose(moved, scenes["positions"], atol=0.05)
    np.testing.assert_array_equal(pc.greedy_paths(moved), pc.greedy_paths(scenes["positions"]))
    first = scenes["scene"] < 5
    data = {key: value[first] if key in QUESTION_KEYS else value for key, value in scenes.items()}
    np.testing.assert_array_equal(_answers_by_walking(data, moved), data["answer"])


def test_augmentation_is_a_scaled_rotation():
    positions = np.array([[[1.0, 0.0], [0.0, 1.0]] + [[0.0, 0.0]] * 6], np.float32)
    moved = pc.augment(np.random.default_rng(1), positions)[0]
    scale = np.linalg.norm(moved[0])
    assert 0.5 <= scale <= 2.0
    np.testing.assert_allclose(np.linalg.norm(moved[1]), scale, rtol=1e-6)
    np.testing.assert_allclose(moved[0] @ moved[1], 0.0, atol=1e-6)  # right angle kept


def test_accuracy_by_jumps_by_hand():
    correct = np.array([True, False, True, True])
    jumps = np.array([0, 0, 2, 7])
    got = pc.accuracy_by_jumps(correct, jumps)
    np.testing.assert_array_equal(got[[0, 2, 7]], [0.5, 1.0, 1.0])
    assert np.isnan(got[[1, 3, 4, 5, 6]]).all()


def test_questions_in_words():
    assert pc.describe_question(True, 2, 3) == "marker of the object 3 jumps from the red one?"
    assert pc.answer_name(2) == "red" and pc.answer_name(8) == "'o'"


# The demo: models and command line.


def _demo_batch(scenes, num_questions=6):

    questions = np.arange(0, 128 * 3, 128 * 3 // num_questions)[:num_questions] + 5
    return demo_data.question_batch(scenes, questions)


def test_scene_edges_are_all_ordered_pairs_sorted_by_receiver():
    from gnkit.demos.pretty_clevr.models import scene_edges

    senders, receivers = scene_edges(2)
    assert len(senders) == 2 * 56
    assert np.all(np.diff(receivers) >= 0) and np.all(np.bincount(receivers) == 7)
    pairs = set(zip(senders.tolist(), receivers.tolist(), strict=True))
    want = {(s + 8 * g, r + 8 * g) for g in range(2) for s in range(8) for r in range(8) if s != r}
    assert pairs == want


def test_question_features_by_hand():
    from gnkit.demos.pretty_clevr.models import question_features

    features = np.asarray(question_features(np.array([True, False]), np.array([2, 2]),
                                            np.array([0, 7])))
    assert features.shape == (2, 24)
    assert np.flatnonzero(features[0]).tolist() == [2, 16]  # colour 2, 0 jumps
    assert np.flatnonzero(features[1]).tolist() == [10, 23]  # marker 2 is symbol 10, 7 jumps


@pytest.mark.parametrize("name", ["rrn", "rn", "mlp"])
def test_models_do_not_depend_on_the_order_of_the_objects(scenes, name):
    import dataclasses

    import jax


    config = dataclasses.replace(demo.CONFIGS["tiny"], hidden=8, steps=3)
    model, steps = models.build_model(name, config), models.model_steps(name, config)
    batch = _demo_batch(scenes)
    params = model.init(jax.random.key(0), batch, steps)
    order = np.random.default_rng(2).permutation(8)
    permuted = dict(batch, **{k: batch[k][:, order] for k in ("positions", "colors", "markers")})
    logits = model.apply(params, batch, steps)
    assert logits.shape == (steps, 6, 16)
    np.testing.assert_allclose(logits, model.apply(params, permuted, steps), rtol=1e-4, atol=1e-5)


def test_cli_trains_and_evaluates_the_mlp_at_tiny_size(tmp_path, capsys):
    import json


    run = tmp_path / "run"
    args = ["--run-dir", str(run), "--no-progress", "--set", "models=mlp"]
    assert demo.main(["train", "--config", "tiny", *args, "--json", str(tmp_path / "r.json")]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    table = results["models"]["mlp"]["accuracy_by_jumps"]
    assert len(table) == 1 and len(table[0]) == 8 and results["models"]["mlp"]["updates"] == 6
    assert (run / "accuracy.png").exists() and (run / "scene.png").exists()
    assert "test accuracy by number of jumps (4 scenes)" in capsys.readouterr().out
    assert demo.main(["eval", "--run-dir", str(run), "--json", str(tmp_path / "e.json")]) == 0
    again = json.loads((tmp_path / "e.json").read_text())
    assert again["models"]["mlp"]["accuracy_by_jumps"] == table


def test_cli_usage_errors_are_one_line(tmp_path, capsys):

    code = demo.main(["train", "--config", "tiny", "--run-dir", str(tmp_path / "r"),
                      "--set", "models=rrn,rrn"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnkit pretty-clevr: error: --set models=rrn,rrn") and "\n" not in err
    assert not (tmp_path / "r").exists()
    assert demo.main(["eval", "--run-dir", str(tmp_path / "none")]) == 2


@pytest.mark.slow
def test_cli_trains_all_three_models_at_tiny_size(tmp_path):
    import json


    out = tmp_path / "r.json"
    args = ["train", "--config", "tiny", "--run-dir", str(tmp_path / "run"), "--no-progress"]
    assert demo.main([*args, "--json", str(out)]) == 0
    trained = json.loads(out.read_text())["models"]
    assert len(trained["rrn"]["accuracy_by_jumps"]) == 3  # after each of the 3 steps
    assert len(trained["rn"]["accuracy_by_jumps"]) == len(trained["mlp"]["accuracy_by_jumps"]) == 1


def test_question_index_finds_each_question(scenes):
    rng = np.random.default_rng(3)
    scene, start, jumps = rng.integers(0, 40, 50), rng.integers(0, 8, 50), rng.integers(0, 8, 50)
    by_color = rng.integers(0, 2, 50).astype(bool)
    q = pc.question_index(scene, start, jumps, by_color)
    np.testing.assert_array_equal(scenes["scene"][q], scene)
    np.testing.assert_array_equal(scenes["jumps"][q], jumps)
    np.testing.assert_array_equal(scenes["anchor_is_color"][q], by_color)
    own = np.where(by_color, scenes["colors"][scene, start], scenes["markers"][scene, start])
    np.testing.assert_array_equal(scenes["anchor"][q], own)


def test_curriculum_raises_the_jumps_asked():
    import dataclasses


    config = dataclasses.replace(demo.CONFIGS["tiny"], updates=80, curriculum=0.5)
    steps = (0, 4, 5, 10, 39, 40, 79)
    assert [demo_data.max_jumps(config, s) for s in steps] == [0, 0, 1, 2, 7, 7, 7]
    assert demo_data.max_jumps(dataclasses.replace(config, curriculum=0.0), 0) == 7
    train = pc.generate(np.random.default_rng(1), 5)
    assert np.all(demo_data.make_batch(config, {"train": train})(0)["jumps"] == 0)
    assert np.all(demo_data.make_batch(config, {"train": train})(12)["jumps"] <= 2)


def test_anchor_indicator_marks_the_named_object():
    from gnkit.demos.pretty_clevr.models import anchor_indicator

    batch = {
        "positions": np.zeros((2, 8, 2), np.float32),
        "colors": np.array([[3, 1, 2, 0, 4, 5, 6, 7]] * 2),
        "markers": np.array([[0, 1, 2, 3, 4, 5, 6, 7]] * 2),
        "anchor_is_color": np.array([True, False]),
        "anchor": np.array([0, 0]),
    }
    got = np.asarray(anchor_indicator(batch))
    assert np.flatnonzero(got[0]).tolist() == [3] and np.flatnonzero(got[1]).tolist() == [0]


def test_pair_distances_by_hand():
    from gnkit.demos.pretty_clevr.models import pair_distances

    positions = np.zeros((1, 8, 2), np.float32)
    positions[0, 1] = [0.3, 0.4]  # 0.5 from the others, which sit at the origin
    got = np.asarray(pair_distances(positions))
    assert got.shape == (1, 8, 8, 1)
    want = np.zeros((8, 8))
    want[1, :] = want[:, 1] = 0.5
    want[1, 1] = 0.0
    np.testing.assert_allclose(got[0, :, :, 0], want, atol=1e-7)
