"""The clevr demo: files in CLEVR's formats, the models learn, train / eval / generate verbs, bad
input as exit status 2, and (slow) the README's default run and its numbers."""

import dataclasses
import json

import jax
import numpy as np
import optax
import pytest
from _run_records import recorded

from gnkit.demos import clevr as demo
from gnkit.demos.clevr import config as config_module
from gnkit.demos.clevr import data, models, training
from gnkit.nn import RelationNetwork
from gnkit.nn.relation_network import pair_graph
from gnkit.tasks import clevr


@pytest.fixture(scope="module")
def small_data():
    scenes, questions = clevr.generate(8, seed=11, split="train")
    return clevr.encode(scenes, questions)


def test_generate_writes_clevr_files(tmp_path, capsys):
    out = tmp_path / "data"
    assert demo.main(["generate", "--scenes", "3", "--out", str(out), "--seed", "2",
                      "--json", str(tmp_path / "r.json")]) == 0
    scenes = json.loads((out / "scenes.json").read_text())["scenes"]
    questions = json.loads((out / "questions.json").read_text())["questions"]
    assert len(scenes) == 3 and len(questions) == json.loads((tmp_path / "r.json").read_text())[
        "questions"]
    assert set(scenes[0]) >= {"objects", "relationships", "directions", "image_index"}
    assert set(scenes[0]["objects"][0]) >= {"color", "shape", "material", "size", "3d_coords"}
    assert set(questions[0]) >= {"image_index", "question", "answer", "program",
                                 "question_family_index"}
    assert set(questions[0]["program"][0]) == {"function", "inputs", "value_inputs"}
    assert demo.main(["generate", "--scenes", "0", "--out", str(out)]) == 2


@pytest.mark.parametrize("name", ["rn", "mlp"])
def test_short_training_lowers_the_loss(name, small_data):
    config = dataclasses.replace(demo.CONFIGS["tiny"], pair_width=32, output_width=32,
                                 mlp_width=32)
    model = models.build_model(name, config)
    batch = data.question_batch(small_data, np.arange(16))
    params = model.init(jax.random.key(0), batch)
    optimizer = optax.adam(3e-3)
    opt_state = optimizer.init(params)
    loss_of = training.loss_fn(model)

    @jax.jit
    def step(params, opt_state):
        (loss, _), grads = jax.value_and_grad(loss_of, has_aux=True)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    first = float(loss_of(params, batch)[0])
    for _ in range(40):
        params, opt_state, _ = step(params, opt_state)
    last = float(loss_of(params, batch)[0])
    assert first > np.log2(28) * 0.8  # near chance over 28 answers at the start
    assert last < 0.5 * first


def test_rn_ignores_padding_objects(small_data):
    config = demo.CONFIGS["tiny"]
    model = models.build_model("rn", config)
    batch = data.question_batch(small_data, np.arange(4))
    params = model.init(jax.random.key(1), batch)
    noisy = dict(batch, objects=np.where(batch["object_mask"][..., None], batch["objects"], 7.0))
    assert np.allclose(model.apply(params, batch), model.apply(params, noisy), atol=1e-5)


def test_accuracy_by_family_by_hand():
    correct = np.array([1, 0, 1, 1, 0, 0], bool)
    family = np.array([0, 0, 1, 2, 2, 3])
    table = training.accuracy_by_family(correct, family)
    assert table["overall"] == pytest.approx(0.5)
    assert (table["exist"], table["count"], table["compare_integer"]) == (0.5, 1.0, 0.5)
    assert table["compare_attribute"] == 0.0 and np.isnan(table["query_attribute"])


def test_train_resume_and_eval(tmp_path):
    run = tmp_path / "run"
    result = tmp_path / "train.json"
    assert demo.main(["train", "--config", "tiny", "--run-dir", str(run), "--no-progress",
                      "--json", str(result)]) == 0
    results = json.loads(result.read_text())
    assert set(results["models"]) == {"rn", "mlp"}
    for entry in results["models"].values():
        assert entry["updates"] == 6
        assert set(entry["accuracy"]) == {"overall", *clevr.FAMILIES}
    assert (run / "data" / "train" / "questions.json").exists()
    assert (run / "accuracy.png").exists()
    again = tmp_path / "again.json"
    assert demo.main(["train", "--config", "tiny", "--run-dir", str(run), "--no-progress",
                      "--json", str(again)]) == 0
    assert json.loads(again.read_text())["models"] == results["models"]
    evaluated = tmp_path / "eval.json"
    assert demo.main(["eval", "--run-dir", str(run), "--no-progress", "--json",
                      str(evaluated)]) == 0
    assert json.loads(evaluated.read_text())["models"]["rn"]["accuracy"] == results["models"][
        "rn"]["accuracy"]


def test_data_folder_in_generated_layout(tmp_path):
    for split in config_module.SPLITS:
        scenes, questions = clevr.generate(3, seed=1, split=split)
        clevr.write_split(tmp_path / "data" / split, scenes, questions, split)
    config = dataclasses.replace(demo.CONFIGS["tiny"], data=str(tmp_path / "data"))
    splits = data.load_splits(config, None)
    assert [len(splits[split][0]) for split in config_module.SPLITS] == [3, 3, 3]
    assert demo.main(["train", "--config", "tiny", "--set", f"data={tmp_path / 'nowhere'}",
                      "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 2


def test_data_folder_in_clevr_release_layout(tmp_path):
    for split, count in (("train", 5), ("val", 2)):
        scenes, questions = clevr.generate(count, seed=2, split=split)
        for name, key, items in (("scenes", "scenes", scenes), ("questions", "questions",
                                                                   questions)):
            folder = tmp_path / name
            folder.mkdir(exist_ok=True)
            (folder / f"CLEVR_{split}_{name}.json").write_text(json.dumps({"info": {},
                                                                           key: items}))
    config = dataclasses.replace(demo.CONFIGS["tiny"], data=str(tmp_path), valid_scenes=2)
    splits = data.load_splits(config, None)
    assert [len(splits[split][0]) for split in config_module.SPLITS] == [3, 2, 2]
    held_out = {scene["image_index"] for scene in splits["val"][0]}
    assert held_out == {3, 4}
    assert {q["image_index"] for q in splits["val"][1]} == held_out
    assert not held_out & {q["image_index"] for q in splits["train"][1]}
    assert splits["test"][0][0]["split"] == "val"


@pytest.mark.slow
def test_default_run_gives_the_recorded_accuracies(tmp_path):
    """`gnkit clevr train` gives the test accuracies of its run record (docs/results/clevr.json)
    within 0.03 overall, both models above the per-template answer prior of the data."""
    result = tmp_path / "train.json"
    assert demo.main(["train", "--run-dir", str(tmp_path / "run"), "--no-progress",
                      "--json", str(result)]) == 0
    models = json.loads(result.read_text())["models"]
    rn, mlp = models["rn"]["accuracy"], models["mlp"]["accuracy"]
    expected = recorded("clevr")["models"]
    prior = recorded("clevr", "answer_prior")["accuracy"]["overall"]
    assert rn["overall"] == pytest.approx(expected["rn"]["accuracy"]["overall"], abs=0.03)
    assert mlp["overall"] == pytest.approx(expected["mlp"]["accuracy"]["overall"], abs=0.03)
    for family in ("count", "query_attribute"):
        assert rn[family] == pytest.approx(expected["rn"]["accuracy"][family], abs=0.04), family
    assert min(rn["overall"], mlp["overall"]) > prior


def test_the_demo_rn_equals_the_edge_list_relation_network(small_data):
    """The demo's RN (dense layout, padding objects masked) equals `RelationNetwork`'s edge-list
    layout with the same parameters."""
    config = demo.CONFIGS["tiny"]
    model = models.build_model("rn", config)
    batch = data.question_batch(small_data, np.arange(5))
    params = model.init(jax.random.key(2), batch)
    question = models.QuestionEncoder(config.embedding, config.lstm).apply(
        {"params": params["params"]["question"]}, batch["words"], batch["length"])
    network = RelationNetwork(pair_features=(config.pair_width,) * 4,
                              output_features=(config.output_width,) * 2 + (28,))
    graph = pair_graph(batch["objects"], np.asarray(question), batch["object_mask"])
    edge_list = network.apply({"params": params["params"]["rn"]}, graph)
    np.testing.assert_allclose(model.apply(params, batch), edge_list, atol=1e-4)
