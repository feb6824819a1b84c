"""The `kg` demo: training and evaluation through the CLI at the quick size, its results file,
and one-line errors for bad triple files."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _run_records import recorded

from gnkit import experiments
from gnkit.demos import kg as demo
from gnkit.demos.kg import data as kg_data
from gnkit.demos.kg import models as kg_models
from gnkit.demos.kg import training as kg_training


def test_quick_training_writes_the_test_metrics(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "R.json"
    args = ["--config", "quick", "--run-dir", str(run), "--no-progress", "--data", "nations",
            "--model", "complex", "--json", str(out)]
    assert demo.main(["train", *args]) == 0
    results = json.loads(out.read_text())
    for key in ("mrr", "hits@1", "hits@3", "hits@10"):
        assert 0.0 < results[key] <= 1.0
    assert results["hits@1"] <= results["hits@3"] <= results["hits@10"]
    # 14 entities: random scores give an MRR near mean(1 / rank) over ranks 1..14, about 0.23.
    assert results["mrr"] > 0.45
    assert results["data"] == "nations" and results["model"] == "complex"
    assert results["test_triples"] == 201 and results["epoch"] in (3, 6)
    assert results["curve"]["eval_epochs"] == [3, 6] and len(results["curve"]["loss"]) == 6
    # MRR lies between 1 / mean rank (Jensen) and Hits@1 + (1 - Hits@1) / 2 (ranks >= 2 otherwise).
    upper = results["hits@1"] + (1 - results["hits@1"]) / 2
    assert 1 / results["mean_rank"] <= results["mrr"] <= upper
    assert (run / "curve_nations_complex.png").exists()
    printed = capsys.readouterr().out
    assert "nations, complex: filtered ranks of 201 test triples" in printed and "ConvE" in printed
    assert demo.main(["eval", "--run-dir", str(run), "--no-progress", "--data", "nations",
                      "--model", "complex", "--json", "-"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["mrr"] == pytest.approx(results["mrr"])


@pytest.mark.parametrize("model, penalized", [("complex", True), ("distmult", True),
                                               ("rotate", False), ("transe_l2", False)])
def test_default_penalty_applies_to_multiplicative_models_only(model, penalized):
    graph = kg_data.load_data("nations")
    triples = jnp.asarray(graph.train[:16])
    weights, key = jnp.ones(16), jax.random.key(0)

    def loss_value(config):
        module = kg_models.build_model(config, model, graph)
        params = module.init(key, triples[:1, 0], triples[:1, 1], triples[:1, 2], None)
        return float(kg_training.batch_loss(config, module, graph.num_entities, None)(
            params, triples, weights, key))

    config = dataclasses.replace(demo.CONFIGS["quick"], regularization=0.5)
    unpenalized = loss_value(dataclasses.replace(config, regularization=0.0))
    # N3 of non-zero embeddings is positive: it raises the loss exactly where it applies.
    assert (loss_value(config) > unpenalized + 1e-6) == penalized
    assert loss_value(dataclasses.replace(config, penalized="all")) > unpenalized + 1e-6


@pytest.mark.slow
def test_negatives_recipe_and_rgcn_encoder_train(tmp_path):
    config = dataclasses.replace(
        demo.CONFIGS["negatives"], dim=8, epochs=2, eval_every_epochs=2, num_negatives=4,
        encoder="rgcn")
    results = experiments.run_verb(demo.DEMO, "train", config, tmp_path / "run",
                                        progress=False, data="nations", model="rotate")
    assert np.isfinite(results["mrr"]) and results["epoch"] == 2


def test_bad_triple_files_are_one_line_errors(tmp_path, capsys):
    data = tmp_path / "graph"
    data.mkdir()
    (data / "train.txt").write_text("a\tr\tb\n")
    (data / "valid.txt").write_text("a\tr\tb\n")
    (data / "test.txt").write_text("a\tr\tq\n")
    code = demo.main(["train", "--config", "quick", "--run-dir", str(tmp_path / "run"),
                      "--data", str(data)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnkit kg: error: --data ") and "names the entity 'q'" in err
    assert "\n" not in err
    assert demo.main(["train", "--config", "quick", "--run-dir", str(tmp_path / "run2"),
                      "--data", "no-such-graph"]) == 2
    assert "not a directory of triple files" in capsys.readouterr().err
    assert demo.main(["train", "--config", "quick", "--run-dir", str(tmp_path / "run3"),
                      "--parallel", "mesh"]) == 2
    assert "trains on one device" in capsys.readouterr().err


@pytest.mark.slow
def test_readme_command_reaches_its_numbers(tmp_path):
    out = tmp_path / "R.json"
    assert demo.main(["train", "--data", "umls", "--model", "rotate", "--run-dir",
                      str(tmp_path / "run"), "--no-progress", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    expected = recorded("kg", "umls_rotate")  # docs/results/kg.json, the same command, seed 0
    assert results["mrr"] == pytest.approx(expected["mrr"], abs=0.03)
    assert results["hits@10"] == pytest.approx(expected["hits@10"], abs=0.02)


def test_pykeen_benchmark_runs_its_gnkit_side_without_pykeen(tmp_path, capsys):
    from benchmarks import kg_pykeen

    result = kg_pykeen.main(["--quick", "--no-pykeen", "--data", "nations",
                             "--json", str(tmp_path / "b.json")])
    gnkit = result["summary"]["gnkit"]
    assert set(result["runs"]) == {"gnkit"} and 0.0 < gnkit["mrr_mean"] <= 1.0
    assert gnkit["epoch_seconds"] > 0 and gnkit["eval_seconds"] > 0
    assert json.loads((tmp_path / "b.json").read_text())["summary"]["gnkit"] == pytest.approx(gnkit)
    assert "nations, rotate_l2: dim 8, 4 negatives (per-triple), relations unit" in (
        capsys.readouterr().out)


def test_pykeen_benchmark_noise_rule():
    from benchmarks.kg_pykeen import within_noise

    def side(low, high):
        return {"mrr_min": low, "mrr_max": high, "mrr_mean": (low + high) / 2}

    assert within_noise(side(0.80, 0.82), side(0.81, 0.85)) == "ranges overlap"
    # Means 0.81 and 0.835 differ by 0.025, below the second side's spread of 0.03.
    assert within_noise(side(0.80, 0.82), side(0.82 + 1e-3, 0.85)) == (
        "difference below the larger spread")
    assert within_noise(side(0.80, 0.81), side(0.83, 0.84)) == "no"
