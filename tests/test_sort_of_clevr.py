"""Tests for gnkit.tasks.sort_of_clevr (answers recomputed from the object table by plain Python,
pictures checked pixel by pixel, scene invariants, the data cache) and for the sort-of-clevr demo
(models, batches, a short training run, the command line)."""

import collections
import dataclasses
import json
import math

import numpy as np
import pytest
from _run_records import recorded

from gnkit.demos import sort_of_clevr as demo
from gnkit.demos.sort_of_clevr import data as demo_data
from gnkit.demos.sort_of_clevr import models, training
from gnkit.tasks import sort_of_clevr as soc

SHAPE_WORDS = ("square", "circle")
QUESTION_KEYS = ("color", "relational", "kind", "answer")


@pytest.fixture(scope="module")
def data():
    return soc.generate(np.random.default_rng(0), 30)


def _answer_in_words(centers, shapes, color, relational, kind):
    """The answer to one question, worked out from the object table with Python loops."""
    points = [(float(x), float(y)) for x, y in centers]
    me = points[color]
    if not relational:
        if kind == 0:
            return SHAPE_WORDS[shapes[color]]
        coordinate = me[0] if kind == 1 else me[1]
        return "yes" if coordinate < 75 / 2 else "no"
    if kind == 2:
        return str(sum(1 for shape in shapes if shape == shapes[color]))
    distances = {other: math.dist(me, points[other]) for other in range(6) if other != color}
    pick = min if kind == 0 else max
    target = pick(distances, key=distances.get)
    return SHAPE_WORDS[shapes[target]]


def test_shapes_and_types(data):
    assert data["images"].shape == (30, 75, 75, 3) and data["images"].dtype == np.uint8
    assert data["centers"].shape == (30, 6, 2) and data["shapes"].shape == (30, 6)
    for key in QUESTION_KEYS:
        assert data[key].shape == (30, 20)
    assert data["relational"].dtype == bool
    assert data["relational"][:, :10].sum() == 0 and data["relational"][:, 10:].all()
    assert set(np.unique(data["answer"])) <= set(range(10))


def test_answers_match_the_object_table(data):
    for image in range(30):
        for question in range(20):
            color, relational, kind, answer = (int(data[k][image, question]) for k in QUESTION_KEYS)
            want = _answer_in_words(data["centers"][image], data["shapes"][image].tolist(),
                                    color, bool(relational), kind)
            assert soc.ANSWER_NAMES[answer] == want, (image, question)


def test_against_the_majority_by_hand_and_by_loop(data):
    shapes = np.array([[0, 0, 0, 1, 1, 0]], np.int8)  # X = 3 (circle): others 4 squares, 1 circle
    color = np.array([[3, 3, 3, 3, 4]])
    relational = np.array([[True, True, True, False, True]])
    kind = np.array([[0, 1, 2, 0, 0]])
    answer = np.array([[soc.SQUARE + 1, soc.SQUARE, soc.COUNT_ONE + 1, soc.SQUARE + 1,
                        soc.SQUARE + 1]])
    got = soc.against_the_majority(shapes, color, relational, kind, answer)
    # closest: circle, the minority; farthest: square; count and non-relational never;
    # X = 4 (circle): others 4 squares, 1 circle, answer circle.
    np.testing.assert_array_equal(got, [[True, False, False, False, True]])

    got = soc.against_the_majority(data["shapes"], data["color"], data["relational"],
                                   data["kind"], data["answer"])
    for image in range(len(data["shapes"])):
        for question in range(soc.QUESTIONS_PER_IMAGE):
            x = data["color"][image, question]
            others = [int(s) for k, s in enumerate(data["shapes"][image]) if k != x]
            majority = 0 if others.count(0) > others.count(1) else 1
            asked = data["relational"][image, question] and data["kind"][image, question] < 2
            minority = data["answer"][image, question] - soc.SQUARE != majority
            assert got[image, question] == (asked and minority)
    assert 0 < got.sum() < (data["relational"] & (data["kind"] < 2)).sum()


def test_every_question_type_and_answer_word_occurs():
    many = soc.generate(np.random.default_rng(1), 200)
    types = set(zip(many["relational"].ravel().tolist(), many["kind"].ravel().tolist(),
                    strict=True))
    assert types == {(r, k) for r in (False, True) for k in range(3)}
    relational_words = {soc.ANSWER_NAMES[a] for a in many["answer"][many["relational"]]}
    assert relational_words == {"square", "circle", "1", "2", "3", "4", "5", "6"}
    plain_words = {soc.ANSWER_NAMES[a] for a in many["answer"][~many["relational"]]}
    assert plain_words == {"yes", "no", "square", "circle"}


def test_objects_are_inside_apart_and_without_ties(data):
    centers = data["centers"].astype(np.float64)
    assert centers.min() >= 5 and centers.max() <= 69
    for scene in centers:
        for a in range(6):
            gaps = sorted(math.dist(scene[a], scene[b]) for b in range(6) if b != a)
            assert gaps[0] > 2 * 5 * math.sqrt(2)  # two squares' corners cannot meet
            assert gaps[0] < gaps[1] and gaps[-2] < gaps[-1]  # one nearest, one farthest


def test_pictures_pixel_by_pixel(data):
    for image in range(5):
        picture = data["images"][image]
        painted = 0
        for k in range(6):
            x, y = data["centers"][image, k]
            colour = soc.COLORS_RGB[k]
            assert (picture[y, x] == colour).all()
            assert (picture[y - 5, x] == colour).all() and (picture[y, x + 5] == colour).all()
            square = data["shapes"][image, k] == 0
            # A square's corner pixel is painted; a circle's (at distance 5 * sqrt(2)) is not.
            assert (picture[y + 5, x + 5] == colour).all() == square
            assert (picture[y - 6, x] == 255).all() and (picture[y, x + 6] == 255).all()
            painted += 121 if square else sum(
                1 for dx in range(-5, 6) for dy in range(-5, 6) if dx * dx + dy * dy <= 30
            )
        background = np.all(picture == 255, axis=-1).sum()
        assert background == 75 * 75 - painted


def test_question_vectors_by_hand():
    vectors = soc.question_vectors(np.array([2, 5]), np.array([False, True]), np.array([1, 2]))
    assert vectors.shape == (2, 11)
    assert np.flatnonzero(vectors[0]).tolist() == [2, 6, 9]
    assert np.flatnonzero(vectors[1]).tolist() == [5, 7, 10]


def test_same_seed_same_data_and_the_cache(tmp_path):
    first = soc.generate(np.random.default_rng(7), 4)
    again = soc.generate(np.random.default_rng(7), 4)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    path = tmp_path / "cache" / "data.npz"
    cached = soc.load_or_generate(path, 7, 4)
    assert path.exists()
    for key in first:
        np.testing.assert_array_equal(cached[key], first[key])
    stamp = path.stat().st_mtime_ns
    read = soc.load_or_generate(path, 7, 4)
    assert path.stat().st_mtime_ns == stamp  # read, not written again
    np.testing.assert_array_equal(read["answer"], first["answer"])
    other = soc.load_or_generate(path, 8, 4)  # another seed: generated and saved anew
    fresh = soc.generate(np.random.default_rng(8), 4)
    np.testing.assert_array_equal(other["answer"], fresh["answer"])


def test_questions_in_words_and_accuracy_by_kind():
    assert soc.describe_question(0, True, 1) == "shape of the object farthest from red?"
    assert soc.describe_question(4, False, 2) == "is gray on the top?"
    got = soc.accuracy_by_kind(np.array([[1, 0, 1, 1]]), np.array([[False, False, True, True]]))
    assert got == {"relational": 1.0, "non_relational": 0.5}
    correct = np.array([1, 0, 1, 1, 0])
    relational = np.array([False, False, True, True, True])
    kind = np.array([0, 0, 2, 2, 1])
    by_type = soc.accuracy_by_type(correct, relational, kind)
    assert by_type == {"shape": 0.5, "farthest shape": 0.0, "count": 1.0}


# The demo: models, batches, training and the command line.


def _tiny(**changes):

    return dataclasses.replace(demo.CONFIGS["tiny"], **changes)


def test_cells_as_objects_carry_their_coordinates():
    import jax.numpy as jnp

    from gnkit.demos.sort_of_clevr.models import cells_as_objects

    feature_map = jnp.arange(2 * 3 * 3 * 1, dtype=jnp.float32).reshape(2, 3, 3, 1)
    objects = np.asarray(cells_as_objects(feature_map))
    assert objects.shape == (2, 9, 3)
    np.testing.assert_array_equal(objects[1, :, 0], np.arange(9, 18))
    # Cell 5 is row 1, column 2: x = 1, y = 0.
    np.testing.assert_array_equal(objects[0, 5, 1:], [1.0, 0.0])
    np.testing.assert_array_equal(objects[0, 0, 1:], [-1.0, -1.0])


def test_question_features_match_the_task_encoding(data):
    from gnkit.demos.sort_of_clevr.models import question_features

    got = question_features(data["color"], data["relational"], data["kind"])
    want = soc.question_vectors(data["color"], data["relational"], data["kind"])
    np.testing.assert_array_equal(np.asarray(got), want)


_OPTIONS = {"conv_strides": (2, 2, 2, 3), "pair_reduction": "sum", "pair_geometry": False,
            "pooled_batch_norm": False, "colour_channels": 0}
_GEOMETRY = {"pair_geometry": True, "pair_reduction": "sum", "colour_channels": 4}


@pytest.mark.parametrize("options", [{}, _OPTIONS, _GEOMETRY],
                         ids=["default", "paper-rn", "geometry"])
@pytest.mark.parametrize("name", ["rn", "mlp"])
def test_each_answer_depends_only_on_its_own_image_and_question(data, name, options):
    import jax


    model = models.build_model(name, _tiny(**options))
    batch = demo_data.image_batch(data, np.array([0, 1, 2]))
    params = model.init(jax.random.key(0), batch)
    logits = np.asarray(model.apply(params, batch))
    assert logits.shape == (3, 20, 10)
    part = {key: value[1:2] if key == "images" else value[1:2, 4:9] for key, value in batch.items()}
    np.testing.assert_allclose(model.apply(params, part), logits[1:2, 4:9], rtol=1e-5, atol=1e-5)


def test_cell_relation_network_is_the_library_rn_summed_or_averaged():
    """The demo's RN with the same weights as `nn.RelationNetwork.dense`: equal with the sum,
    and `1 / n^2` of the pair sum with the mean."""
    import jax

    from gnkit.demos.sort_of_clevr.models import CellRelationNetwork
    from gnkit.nn import RelationNetwork

    rng = np.random.default_rng(0)
    objects = rng.normal(size=(2, 5, 4)).astype(np.float32)
    questions = rng.normal(size=(2, 3, 6)).astype(np.float32)
    library = RelationNetwork(pair_features=(8, 8), output_features=(7, 3))
    flat_objects = np.repeat(objects, 3, axis=0)
    flat_questions = questions.reshape(6, 6)
    params = library.init(jax.random.key(1), flat_objects, flat_questions, method="dense")
    weights = params["params"]
    sender, receiver = np.split(np.asarray(weights["pair_0_objects"]["kernel"]), 2, axis=1)
    mine = {
        "pair_0_receiver": {"kernel": receiver},
        "pair_0_sender": {"kernel": sender},
        "pair_0_question": {"kernel": weights["pair_0_question"]["kernel"],
                            "bias": weights["pair_0_bias"]},
        "pair_1": weights["pair_1"],
        "output": weights["output"],
    }
    want = np.asarray(library.apply(params, flat_objects, flat_questions, method="dense"))
    summed = CellRelationNetwork((8, 8), (7, 3), reduction="sum")
    got = np.asarray(summed.apply({"params": mine}, objects, questions)).reshape(6, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # NumPy: f of the pair sum (the library's output) and of the pair mean (over 25 pairs).
    pair_sum = _pair_sum(objects, questions, mine)
    np.testing.assert_allclose(_mlp(pair_sum, weights["output"]).reshape(6, 3), want,
                                rtol=1e-4, atol=1e-5)
    averaged = CellRelationNetwork((8, 8), (7, 3), reduction="mean")
    got_mean = np.asarray(averaged.apply({"params": mine}, objects, questions)).reshape(6, 3)
    want_mean = _mlp(pair_sum / 25.0, weights["output"]).reshape(6, 3)
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-4, atol=1e-5)


def test_colour_path_is_the_cell_maximum_of_a_pixel_projection(data):
    """In test mode at initialisation (batch norm with mean 0, variance 1, scale 1, offset 0) the
    colour path is max over each cell's pixels of relu((ink W + b) / sqrt(1 + 1e-5)), appended
    after the strided stack's channels; for a 4x4 map the windows are 19 pixels wide (the last
    one 18)."""
    import jax

    from gnkit.demos.sort_of_clevr.models import ImageEncoder

    encoder = ImageEncoder((2, 2, 2, 3), 5, colour_channels=3)
    images = data["images"][:2]
    params = encoder.init(jax.random.key(1), images)
    got = np.asarray(encoder.apply(params, images))
    assert got.shape == (2, 4, 4, 5 + 3)
    colour = params["params"]["Conv_4"]
    ink = 1.0 - images.astype(np.float64) / 255.0
    linear = ink @ np.asarray(colour["kernel"])[0, 0] + np.asarray(colour["bias"])
    pixels = np.maximum(linear / np.sqrt(1 + 1e-5), 0)
    want = np.empty((2, 4, 4, 3))
    for row in range(4):
        for column in range(4):
            window = pixels[:, 19 * row : 19 * (row + 1), 19 * column : 19 * (column + 1)]
            want[:, row, column] = window.max(axis=(1, 2))
    np.testing.assert_allclose(got[..., 5:], want, rtol=1e-5, atol=1e-6)


def test_pair_geometry_by_hand():
    from gnkit.demos.sort_of_clevr.models import pair_geometry

    coordinates = np.array([[0.0, 0.0], [3.0, 4.0], [-1.0, 0.0]], np.float32)
    geometry = np.asarray(pair_geometry(coordinates))
    assert geometry.shape == (3, 3, 3)
    np.testing.assert_allclose(geometry[0, 1], [3.0, 4.0, 5.0])  # receiver 0, sender 1
    np.testing.assert_allclose(geometry[1, 2], [-4.0, -4.0, np.sqrt(32.0)], rtol=1e-6)
    np.testing.assert_allclose(geometry[2, 0], [1.0, 0.0, 1.0])
    np.testing.assert_allclose(geometry[1, 1], [0.0, 0.0, 0.0])


def test_pair_geometry_enters_the_first_layer_of_g():
    """With geometry, g's first layer adds `W (dx, dy, distance)` of each cell pair: NumPy."""
    import jax

    from gnkit.demos.sort_of_clevr.models import CellRelationNetwork, pair_geometry

    rng = np.random.default_rng(2)
    objects = rng.normal(size=(2, 4, 5)).astype(np.float32)
    questions = rng.normal(size=(2, 3, 6)).astype(np.float32)
    network = CellRelationNetwork((8, 8), (7, 3), reduction="sum", geometry=True)
    params = network.init(jax.random.key(0), objects, questions)["params"]
    got = np.asarray(network.apply({"params": params}, objects, questions))
    geometry = np.asarray(pair_geometry(objects[0, :, -2:]))
    extra = geometry @ np.asarray(params["pair_0_geometry"]["kernel"])  # [n, n, 8]
    receiver = objects @ np.asarray(params["pair_0_receiver"]["kernel"])
    sender = objects @ np.asarray(params["pair_0_sender"]["kernel"])
    question = questions @ np.asarray(params["pair_0_question"]["kernel"]) + np.asarray(
        params["pair_0_question"]["bias"])
    first = (receiver[:, None, :, None] + sender[:, None, None, :] + extra[None, None]
             + question[:, :, None, None])
    layer = params["pair_1"]
    hidden = np.maximum(np.maximum(first, 0) @ np.asarray(layer["kernel"])
                        + np.asarray(layer["bias"]), 0)
    want = _mlp(hidden.sum(axis=(2, 3)), params["output"])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_batch_norm_is_calibrated_on_training_images(data):
    """Test-mode batch norm uses the mean and variance, over the calibration images and the map's
    cells, of each channel of the convolution before it (NumPy for the first convolution)."""
    import jax


    config = _tiny()
    model = models.build_model("rn", config)
    params = model.init(jax.random.key(0), demo_data.image_batch(data, np.arange(2)))
    tuned = training.calibrated("rn", config, params, data)
    kernel = np.asarray(params["params"]["cnn"]["Conv_0"]["kernel"])  # [3, 3, 3, C]
    bias = np.asarray(params["params"]["cnn"]["Conv_0"]["bias"])
    ink = 1.0 - data["images"][: training.CALIBRATION_IMAGES].astype(np.float64) / 255.0
    padded = np.pad(ink, ((0, 0), (1, 1), (1, 1), (0, 0)))  # SAME, stride 2: 75 -> 38
    conv = bias + sum(
        padded[:, dy : dy + 75 : 2, dx : dx + 75 : 2] @ kernel[dy, dx]
        for dy in range(3) for dx in range(3)
    )
    stats = tuned["batch_stats"]["cnn"]["BatchNorm_0"]
    np.testing.assert_allclose(stats["mean"], conv.mean(axis=(0, 1, 2)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(stats["var"], conv.var(axis=(0, 1, 2)), rtol=1e-3, atol=1e-5)


def test_pooled_batch_norm_standardises_each_feature_over_the_batch():
    """In training, f sees each pooled feature of g minus its mean over the batch's questions,
    over its standard deviation (NumPy; batch norm's scale 1 and offset 0 at initialisation)."""
    import jax

    from gnkit.demos.sort_of_clevr.models import CellRelationNetwork

    rng = np.random.default_rng(3)
    objects = rng.normal(size=(3, 4, 5)).astype(np.float32)
    questions = rng.normal(size=(3, 2, 6)).astype(np.float32)
    network = CellRelationNetwork((8, 8), (7, 3), reduction="mean", pooled_batch_norm=True)
    variables = network.init(jax.random.key(0), objects, questions)
    got, _ = network.apply(variables, objects, questions, True, mutable=["batch_stats"])
    params = variables["params"]
    pooled = _pair_sum(objects, questions, params) / 16.0  # [3, 2, 8]
    mean, var = pooled.mean(axis=(0, 1)), pooled.var(axis=(0, 1))
    want = _mlp((pooled - mean) / np.sqrt(var + 1e-5), params["output"])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-4)


def _pair_sum(objects, questions, params):
    """NumPy: the sum over the ordered pairs of `g`, `[B, Q, H]`."""
    return _pair_hidden(objects, questions, params).sum(axis=(2, 3))


def _pair_hidden(objects, questions, params):
    """NumPy: `g` of every ordered pair for every question, `[B, Q, n, n, H]`."""
    receiver = objects @ np.asarray(params["pair_0_receiver"]["kernel"])
    sender = objects @ np.asarray(params["pair_0_sender"]["kernel"])
    question = questions @ np.asarray(params["pair_0_question"]["kernel"]) + np.asarray(
        params["pair_0_question"]["bias"])
    first = receiver[:, None, :, None] + sender[:, None, None, :] + question[:, :, None, None]
    hidden = np.maximum(first, 0)
    layer = params["pair_1"]
    return np.maximum(hidden @ np.asarray(layer["kernel"]) + np.asarray(layer["bias"]), 0)


def _mlp(inputs, params):
    """NumPy: ReLU between dense layers, none after the last."""
    names = sorted(params, key=lambda name: int(name.split("_")[1]))
    hidden = inputs
    for index, name in enumerate(names):
        hidden = hidden @ np.asarray(params[name]["kernel"]) + np.asarray(params[name]["bias"])
        if index < len(names) - 1:
            hidden = np.maximum(hidden, 0)
    return hidden


def test_batches_go_through_each_image_once_per_epoch(data):

    train = {key: value[:10] for key, value in data.items()}
    batches = demo_data.make_batch(_tiny(images_per_batch=4), {"train": train})
    seen = [batches(step)["color"] for step in range(5)]  # 20 images: two epochs of 10
    rows = np.concatenate(seen)
    index = {tuple(row): image for image, row in enumerate(train["color"])}  # rows name images
    images = [index[tuple(row)] for row in rows]
    assert sorted(images[:10]) == list(range(10)) and sorted(images[10:]) == list(range(10))
    assert images[:10] != images[10:]  # each epoch in its own order
    resumed = demo_data.make_batch(_tiny(images_per_batch=4), {"train": train})(3)  # pure
    np.testing.assert_array_equal(resumed["images"], batches(3)["images"])


def test_questions_per_image_draws_distinct_questions_of_each_image(data):

    train = {key: value[:10] for key, value in data.items()}
    config = _tiny(images_per_batch=4, questions_per_image=3)
    full = demo_data.make_batch(_tiny(images_per_batch=4), {"train": train})(2)
    batch = demo_data.make_batch(config, {"train": train})(2)
    np.testing.assert_array_equal(batch["images"], full["images"])
    assert batch["answer"].shape == (4, 3)
    rows = np.stack([full[key] for key in ("color", "relational", "kind", "answer")], -1)
    picked = np.stack([batch[key] for key in ("color", "relational", "kind", "answer")], -1)
    for image in range(4):  # 3 of the image's 20 questions, none taken twice
        available = collections.Counter(map(tuple, rows[image].tolist()))
        taken = collections.Counter(map(tuple, picked[image].tolist()))
        assert all(available[question] >= count for question, count in taken.items())
    again = demo_data.make_batch(config, {"train": train})(2)
    np.testing.assert_array_equal(again["kind"], batch["kind"])


def test_a_short_training_run_lowers_the_loss():
    import jax
    import optax


    config = _tiny(learning_rate=1e-2, updates=60)
    train = soc.generate(np.random.default_rng(3), 16)
    model = models.build_model("rn", config)
    batches = demo_data.make_batch(config, {"train": train})
    params = model.init(jax.random.key(0), batches(0))
    tx = training.optimizer(config)
    opt_state = tx.init(params)
    loss_of = training.loss_fn(model)

    @jax.jit
    def step(params, opt_state, batch):
        (loss, _), grads = jax.value_and_grad(loss_of, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for index in range(config.updates):
        params, opt_state, loss = step(params, opt_state, batches(index))
        losses.append(float(loss))
    assert np.mean(losses[-8:]) < 0.7 * np.mean(losses[:8])  # 2.35 -> 1.39 nats when written


def test_cli_trains_and_evaluates_at_tiny_size(tmp_path, capsys):

    run = tmp_path / "run"
    out = tmp_path / "r.json"
    assert demo.main(["train", "--config", "tiny", "--run-dir", str(run), "--no-progress",
                      "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    for name in ("rn", "mlp"):
        entry = results["models"][name]
        # The best validated state: evaluations at updates 3 and 6.
        assert entry["updates"] in (3, 6) and 0 <= entry["relational"] <= 1
        assert 0 <= entry["against_the_majority"] <= 1
    assert {p.name for p in run.glob("*.png")} == {"accuracy.png", "examples.png"}
    assert {p.name for p in run.glob("data_*.npz")} == {"data_train.npz", "data_valid.npz",
                                                       "data_test.npz"}
    assert "test accuracy (80 questions)" in capsys.readouterr().out
    assert demo.main(["eval", "--run-dir", str(run), "--json", str(tmp_path / "e.json")]) == 0
    again = json.loads((tmp_path / "e.json").read_text())
    assert again["models"]["rn"]["relational"] == results["models"]["rn"]["relational"]


def test_cli_usage_errors_are_one_line(tmp_path, capsys):

    code = demo.main(["train", "--config", "tiny", "--run-dir", str(tmp_path / "r"),
                      "--set", "models=rn,rn"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnkit sort-of-clevr: error: --set models=rn,rn") and "\n" not in err
    assert not (tmp_path / "r").exists()
    assert demo.main(["eval", "--run-dir", str(tmp_path / "none")]) == 2



@pytest.mark.slow
def test_the_default_command_reproduces_its_numbers(tmp_path):
    from gnkit.cli import main

    out = tmp_path / "results.json"
    assert main(["sort-of-clevr", "train", "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--set", "models=rn", "--json", str(out)]) == 0
    rn = json.loads(out.read_text())["models"]["rn"]
    expected = recorded("sort_of_clevr")["models"]["rn"]  # docs/results: the RN alone, seed 0
    for kind in ("relational", "non_relational"):
        value = expected[kind]
        # Same seed, same data, same order: CPU runs agree up to float summation order.
        assert rn[kind] == pytest.approx(value, abs=0.03), kind
