"""The molecules demo: a tiny run end to end (train, resume, eval, predict), its splits file,
the descriptor normalisation and the short flags."""

import json

import numpy as np
import pytest

pytest.importorskip("rdkit")

from gnkit import chem  # noqa: E402
from gnkit.demos.molecules import main  # noqa: E402
from gnkit.demos.molecules.data import empirical_cdf, steps_per_epoch  # noqa: E402
from gnkit.demos.molecules.verbs import DEMO  # noqa: E402
from gnkit.experiments.cli import _overrides, build_parser  # noqa: E402


def test_tiny_run_trains_resumes_reports_and_predicts(tmp_path, capsys):
    run = tmp_path / "run"
    common = ["--config", "tiny", "--run-dir", str(run), "--no-progress", "--seeds", "1"]
    assert main(["train", "--data", "freesolv", *common, "--json", str(tmp_path / "a.json")]) == 0
    first = json.loads((tmp_path / "a.json").read_text())
    assert first["data"] == "freesolv" and list(first["seeds"]) == ["0"]
    entry = first["seeds"]["0"]
    assert entry["sizes"] == [64, 8, 8]
    assert first["test_rmse"]["mean"] == entry["test_rmse"] and first["test_rmse"]["std"] == 0
    assert entry["test_mae"] <= entry["test_rmse"]
    assert (run / "parity.png").exists() and (run / "curves.png").exists()
    (written,) = chem.read_splits_file(run / "splits.json")
    expected = chem.random_split(80, seed=0)
    for name in ("train", "val", "test"):
        np.testing.assert_array_equal(written[name], expected[name])
    records = [json.loads(line) for line in (run / "metrics_seed0.jsonl").read_text().splitlines()]
    per_epoch = steps_per_epoch(64, 16)
    assert [r["step"] for r in records if r["kind"] == "eval"] == [per_epoch * e for e in (1, 2, 3)]
    # A second train of the same run resumes at the end: nothing more is trained.
    assert main(["train", "--data", "freesolv", *common, "--json", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text())["seeds"] == first["seeds"]
    predict = ["predict", "--run-dir", str(run), "--smiles", "CCO", "--smiles", "c1ccccc1"]
    assert main([*predict, "--json", str(tmp_path / "p.json")]) == 0
    predictions = json.loads((tmp_path / "p.json").read_text())["predictions"]
    assert len(predictions) == 2 and all(np.isfinite(p["mean"]) for p in predictions)
    capsys.readouterr()
    assert main(["predict", "--run-dir", str(run), "--smiles", "C1CC("]) == 2
    assert "invalid SMILES 'C1CC('" in capsys.readouterr().err


def test_a_chemprop_splits_file_sets_the_split(tmp_path):
    splits = [{"train": list(range(10, 70)), "val": list(range(70, 80)), "test": list(range(10))}]
    (tmp_path / "splits.json").write_text(json.dumps(splits))
    run = tmp_path / "run"
    settings = ["--set", f"splits_file={tmp_path / 'splits.json'}", "--set", "epochs=2"]
    argv = ["train", "--config", "tiny", "--seeds", "1", "--run-dir", str(run), *settings]
    assert main([*argv, "--no-progress", "--json", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["seeds"]["0"]["sizes"] == [60, 10, 10]
    (written,) = chem.read_splits_file(run / "splits.json")
    assert written["test"].tolist() == list(range(10))


def test_empirical_cdf_by_hand():
    reference = np.sort(np.array([[4.0, 0.0], [1.0, 0.0], [3.0, 1.0], [2.0, 1.0]]), axis=0)
    values = np.array([[0.0, -1.0], [2.0, 0.0], [2.5, 0.5], [9.0, np.nan]])
    expected = [[0.0, 0.0], [0.5, 0.5], [0.5, 0.5], [1.0, 0.5]]
    np.testing.assert_allclose(empirical_cdf(reference, values), expected)


def test_short_flags_become_settings():
    argv = ["train", "--data", "esol", "--split=scaffold", "--model", "gine", "--seeds", "5"]
    changes, _ = _overrides(DEMO, build_parser(DEMO).parse_args(argv))
    set_argv = ["train", "--set", "data=esol", "--set", "split=scaffold", "--set", "model=gine",
                "--set", "seeds=5"]
    assert changes == _overrides(DEMO, build_parser(DEMO).parse_args(set_argv))[0] == {
        "data": "esol", "split": "scaffold", "model": "gine", "seeds": 5}
    assert _overrides(DEMO, build_parser(DEMO).parse_args(["eval", "--run-dir", "runs/x"]))[0] == {}


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, features", [("gine", "ogb"), ("gcn", "chemprop"), ("gat", "chemprop")]
)
def test_every_model_predicts_the_same_for_any_padding(model, features):
    import dataclasses

    import jax

    from gnkit.demos.molecules import models
    from gnkit.demos.molecules.config import CONFIGS
    from gnkit.demos.molecules.data import make_batch, molecule_data

    config = dataclasses.replace(
        CONFIGS["tiny"], model=model, features=features, hidden_size=8, ffn_hidden_size=8
    )
    smiles = ["CCO", "c1ccccc1O", "[NH4+]", "CC(=O)N"]
    graphs = chem.molecule_graphs(smiles, features, descriptors=True)
    dataset = chem.MoleculeDataset("four", tuple(smiles), np.zeros(4), None)
    data = molecule_data(config, dataset, graphs, {0: chem.random_split(4, (0.5, 0.25, 0.25))})
    reference = data.descriptor_reference[0]
    small = make_batch(graphs, [0, 1, 2, 3], np.zeros(4, np.float32), 5, reference)
    large = make_batch(graphs, [0, 1, 2, 3], np.zeros(4, np.float32), 9, reference)
    params = models.init_params(config, small, seed=0)
    predict = jax.jit(models.MoleculeModel(config).apply)
    first, second = predict(params, small["graph"]), predict(params, large["graph"])
    assert first.shape == (5,) and second.shape == (9,)
    np.testing.assert_allclose(first[:4], second[:4], rtol=1e-5, atol=1e-6)
    assert np.ptp(np.asarray(first[:4])) > 0  # the molecules get different predictions
