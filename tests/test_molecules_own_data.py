"""The molecules demo on one's own CSV: regression and multi-task classification with missing
labels at the tiny preset, a chemprop splits file, rows RDKit rejects, a missing column, the
masked losses by hand, AUROC / PRC-AUC against NumPy references, and predict's CSV equal to the
library call.

The CSVs are made here from the first rows of the shipped ESOL set: `logS` its measured log
solubility; `soluble` (logS > -3) and `very_soluble` (logS > -2, every fourth label blanked)
are classification targets derived from it."""

import csv
import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("rdkit")

from gnkit import chem, experiments  # noqa: E402
from gnkit.demos.molecules import (  # noqa: E402
    CONFIGS,
    DEMO,
    main,
    metrics,
    models,
    own_csv,
    predict_csv,
)
from gnkit.demos.molecules.data import make_batch  # noqa: E402

N = 40


def _esol_rows():
    esol = chem.load_dataset("esol")
    return list(esol.smiles[:N]), esol.targets[:N]


def _write(path, header, rows):
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _classification_csv(path):
    smiles, logs = _esol_rows()
    rows = []
    for index, (text, value) in enumerate(zip(smiles, logs, strict=True)):
        very = "" if index % 4 == 3 else str(int(value > -2))
        rows.append([f"m{index}", text, str(int(value > -3)), very])
    return _write(path, ["name", "mol", "soluble", "very_soluble"], rows)


def _both_classes_split(labels, shift):
    """Validation and test with both classes of `labels` each; the rest trains."""
    positive, negative = np.flatnonzero(labels), np.flatnonzero(labels == 0)
    held = [*positive[shift : shift + 4], *negative[shift : shift + 6]]
    val, test = held[0::2], held[1::2]
    train = [i for i in range(len(labels)) if i not in held]
    return {"train": train, "val": [int(i) for i in val], "test": [int(i) for i in test]}


def _rows(path):
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def test_multitask_classification_trains_on_a_splits_file_and_predicts_a_csv(tmp_path, capsys):
    data = _classification_csv(tmp_path / "own.csv")
    _, logs = _esol_rows()
    labels = (logs > -3).astype(int)
    splits = [_both_classes_split(labels, 0), _both_classes_split(labels, 1)]
    (tmp_path / "splits.json").write_text(json.dumps(splits))
    run = tmp_path / "run"
    argv = [
        "train", "--config", "tiny", "--data", str(data), "--smiles-column", "mol",
        "--target-columns", "soluble,very_soluble",
        "--set", f"splits_file={tmp_path / 'splits.json'}",
        "--set", "descriptors=false", "--set", "epochs=2", "--run-dir", str(run), "--no-progress",
        "--json", str(tmp_path / "r.json"),
    ]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "classification of soluble, very_soluble on 40 molecules (inferred" in said
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["task"] == "classification" and set(results["tasks"]) == {
        "soluble", "very_soluble"
    }  # fmt: skip
    for seed, split in zip(("0", "1"), splits, strict=True):
        entry = results["seeds"][seed]
        assert entry["sizes"] == [len(split[part]) for part in ("train", "val", "test")]
        assert 0.0 <= entry["test_auroc"] <= 1.0 and 0.0 <= entry["test_prc_auc"] <= 1.0
    for written, expected in zip(chem.read_splits_file(run / "splits.json"), splits, strict=True):
        assert written["test"].tolist() == expected["test"]
    records = [json.loads(line) for line in (run / "metrics_seed0.jsonl").read_text().split("\n")
               if line]  # fmt: skip
    assert all("val_auroc" in r for r in records if r["kind"] == "eval")
    evaluated = experiments.run_verb(DEMO, "eval", None, run, progress=False)
    assert evaluated["seeds"]["0"]["test_auroc"] == results["seeds"]["0"]["test_auroc"]

    new = _write(
        tmp_path / "new.csv", ["id", "mol"], [["a", "CCO"], ["b", "C1CC("], ["c", "c1ccccc1O"]]
    )
    out = tmp_path / "preds.csv"
    predict = ["predict", "--run-dir", str(run), "--input", str(new), "--output", str(out)]
    assert main([*predict, "--no-progress"]) == 0
    assert "line 3: invalid SMILES 'C1CC('" in capsys.readouterr().out
    table = _rows(out)
    assert list(table[0]) == ["id", "mol", "soluble", "soluble_std", "very_soluble",
                              "very_soluble_std"]  # fmt: skip
    assert [row["id"] for row in table] == ["a", "b", "c"] and table[1]["soluble"] == ""
    for row in (table[0], table[2]):
        assert all(0.0 < float(row[task]) < 1.0 for task in ("soluble", "very_soluble"))
        assert float(row["soluble_std"]) >= 0.0
    library = predict_csv(run, new, tmp_path / "library.csv")
    assert library["skipped_rows"] == [1] and _rows(tmp_path / "library.csv") == table
    for output, why in ((tmp_path / "no" / "p.csv", "no folder"), (new, "the --input file")):
        with pytest.raises(experiments.UsageError, match=f"--output {output}: {why}"):
            predict_csv(run, new, output)


def test_regression_on_a_csv_infers_its_task_and_predicts_smiles(tmp_path, capsys):
    smiles, logs = _esol_rows()
    rows = zip(smiles, map(repr, logs.tolist()), strict=True)
    data = _write(tmp_path / "sol.csv", ["smiles", "logS"], rows)
    run = tmp_path / "run"
    common = ["--config", "tiny", "--seeds", "1", "--set", "epochs=2", "--no-progress"]
    argv = ["train", "--data", str(data), "--target-columns", "logS", "--run-dir", str(run)]
    assert main([*argv, *common, "--json", str(tmp_path / "r.json")]) == 0
    assert "regression of logS on 40 molecules (inferred" in capsys.readouterr().out
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["task"] == "regression" and "moleculenet_best_random_split_rmse" not in results
    assert results["seeds"]["0"]["sizes"] == [32, 4, 4]  # chemprop's random 80/10/10 of 40
    assert np.isfinite(results["test_rmse"]["mean"])
    predicted = experiments.run_verb(DEMO, "predict", None, run, progress=False, smiles=["CCO"])
    assert np.isfinite(predicted["predictions"][0]["mean"])


def _config(tmp_path, **changes):
    return dataclasses.replace(CONFIGS["tiny"], descriptors=False, **changes)


def test_rows_rdkit_rejects_are_reported_and_skipped_or_refused(tmp_path, capsys):
    rows = [["CCO", "1"], ["C1CC(", "0"], ["CN(C)(C)(C)C", "1"], ["c1ccccc1O", "0"]]
    path = _write(tmp_path / "bad.csv", ["smiles", "y"], rows)
    config = _config(tmp_path, data=str(path))
    dataset, graphs = own_csv.load(config, None, progress=False)
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith(f"{path} line 3: invalid SMILES 'C1CC(' (RDKit")
    assert said[1].startswith(f"{path} line 4: invalid SMILES 'CN(C)(C)(C)C' (RDKit: Explicit")
    assert said[2].startswith("skipped 2 of 4 rows")
    assert dataset.smiles == ("CCO", "c1ccccc1O") and dataset.targets.tolist() == [[1.0], [0.0]]
    assert len(graphs) == 2
    refuse = dataclasses.replace(config, invalid_smiles="raise")
    with pytest.raises(experiments.UsageError, match=r"line 3: invalid SMILES 'C1CC\(' \(RDKit"):
        own_csv.load(refuse, None, progress=False)


def test_a_missing_column_is_one_line_naming_it_and_the_columns(tmp_path):
    path = _write(tmp_path / "x.csv", ["smiles", "a", "b"], [["CCO", "1", "2"]])
    for changes, missing in (({"target_columns": "a,c"}, "c"), ({"smiles_column": "mol"}, "mol")):
        config = _config(tmp_path, data=str(path), **changes)
        with pytest.raises(experiments.UsageError) as caught:
            own_csv.load(config, None, progress=False)
        assert (
            str(caught.value) == f"--data {path}: no column {missing!r}; its columns: smiles, a, b"
        )
    assert main(["train", "--data", "esoll", "--run-dir", str(tmp_path / "r")]) == 2


def test_the_task_is_inferred_or_checked():
    def task(values, setting="auto"):
        targets = np.array(values, np.float64)[:, None]
        dataset = chem.MoleculeDataset("t", ("C",) * len(values), targets, None, ("y",))
        return own_csv.task_of(dataclasses.replace(CONFIGS["tiny"], task=setting), dataset)

    assert task([0, 1, np.nan, 1]) == "classification"
    assert task([0, 1, 2]) == "regression" and task([0, 1], "regression") == "regression"
    with pytest.raises(experiments.UsageError, match="column 'y' has 0.5"):
        task([0, 0.5], "classification")


def test_missing_labels_are_masked_in_the_batch_and_the_loss():
    graphs = chem.molecule_graphs(["CCO", "CC", "c1ccccc1"])
    targets = np.array([[1.0, np.nan], [0.0, 1.0], [np.nan, 0.0]], np.float32)
    batch = make_batch(graphs, [0, 1, 2], targets, 4)
    assert batch["mask"].tolist() == [[True, False], [True, True], [False, True], [False, False]]
    assert not np.isnan(batch["targets"]).any()
    logits = np.array([[2.0, 5.0], [-1.0, 0.5], [7.0, -3.0], [9.0, 9.0]], np.float32)
    known = [(2.0, 1.0), (-1.0, 0.0), (0.5, 1.0), (-3.0, 0.0)]  # (logit, label) of known labels
    bce = [np.log1p(np.exp(-x)) if y else np.log1p(np.exp(x)) for x, y in known]
    loss = models.masked_loss(logits, batch["targets"], batch["mask"], classification=True)
    np.testing.assert_allclose(float(loss), np.mean(bce), rtol=1e-6)
    squares = [(2.0 - 1.0) ** 2, (-1.0 - 0.0) ** 2, (0.5 - 1.0) ** 2, (-3.0 - 0.0) ** 2]
    loss = models.masked_loss(logits, batch["targets"], batch["mask"])
    np.testing.assert_allclose(float(loss), np.mean(squares), rtol=1e-6)


def _auroc_by_pairs(labels, scores):
    positive, negative = scores[labels == 1], scores[labels == 0]
    wins = (positive[:, None] > negative[None, :]) + 0.5 * (positive[:, None] == negative[None, :])
    return wins.mean()


def _prc_auc_by_thresholds(labels, scores):
    """Precision and recall at each distinct score as the threshold, from (recall 0,
    precision 1), trapezoids over recall (scikit-learn's `auc` of its precision-recall curve)."""
    points = [(0.0, 1.0)]
    for threshold in sorted(set(scores.tolist()), reverse=True):
        chosen = scores >= threshold
        true = np.sum(chosen & (labels == 1))
        points.append((true / np.sum(labels == 1), true / np.sum(chosen)))
    recall, precision = np.array(points).T
    return np.sum(np.diff(recall) * (precision[1:] + precision[:-1]) / 2)


def test_auroc_and_prc_auc_against_references():
    rng = np.random.default_rng(0)
    for _ in range(5):
        labels = rng.integers(0, 2, 30)
        scores = np.round(rng.random(30), 1)  # ties on purpose
        assert metrics.auroc(labels, scores) == pytest.approx(_auroc_by_pairs(labels, scores))
        expected = _prc_auc_by_thresholds(labels, scores)
        assert metrics.prc_auc(labels, scores) == pytest.approx(expected)
    assert metrics.auroc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert np.isnan(metrics.auroc(np.ones(3), np.arange(3.0)))
    per_task = metrics.task_metrics(
        np.array([[0.9, 0.2], [0.1, 0.7], [0.8, 0.4]]),
        np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 0.0]]),
        "classification",
    )
    assert [entry["auroc"] for entry in per_task] == [1.0, 1.0]
    assert metrics.mean_metrics(per_task)["auroc"] == 1.0


def test_read_csv_names_a_bad_target_columns_argument_and_round_trips_through_to_csv(tmp_path):
    path = _write(tmp_path / "x.csv", ["smiles", "a", "b"], [["CCO", "1", ""], ["CC", "0", "2.5"]])
    with pytest.raises(TypeError, match=r"target_columns must be a sequence.*\('ab',\)"):
        chem.read_csv(path, "smiles", "ab")
    with pytest.raises(ValueError, match="target_columns names a column twice"):
        chem.read_csv(path, "smiles", ("a", "a"))
    with pytest.raises(ValueError, match="target_columns holds the smiles_column 'smiles'"):
        chem.read_csv(path, "smiles", ("smiles", "a"))
    dataset = chem.read_csv(path)
    again = chem.read_csv(dataset.to_csv(tmp_path / "again.csv"))
    assert again.smiles == ("CCO", "CC") and again.tasks == ("a", "b")
    np.testing.assert_array_equal(again.targets, [[1.0, np.nan], [0.0, 2.5]])
