"""benchmarks.chemprop_compare and benchmarks.dmpnn stay runnable: tiny runs of gnkit's side
(always) and of both tools with the thread probe per data set (where chemprop is installed: the
bench extra, or benchmarks/make_chemprop_venv.sh), regression and classification; the shipped
classification set, the validation cross-entropy by hand; the merge of records on other
seeds."""

import json
import math

import numpy as np
import pytest

from benchmarks import chemprop_compare

TINY = ["--splits", "random", "--seeds", "0", "--epochs", "2", "--max-molecules", "60"]


def test_gnkit_side_trains_each_seed_and_writes_its_row(tmp_path):
    record = tmp_path / "record.json"
    results = chemprop_compare.main(
        ["--data", "esol", *TINY, "--no-chemprop", "--no-default", "--json", str(record)]
    )
    assert json.loads(record.read_text()) == results
    (row,) = results["rows"].values()
    assert set(row) == {"gnkit"}
    (run,) = row["gnkit"]["per_seed"]
    assert len(run["epoch_seconds"]) == 2
    assert math.isfinite(run["rmse"]) and 0 <= run["mae"] <= run["rmse"]


@pytest.mark.slow
def test_chemprop_side_probes_threads_for_each_data_set(tmp_path):
    pytest.importorskip("chemprop")
    results = chemprop_compare.main(
        ["--data", "esol,freesolv", *TINY, "--no-default", "--threads", "1,2",
         "--probe-epochs", "2"]
    )
    probes = results["chemprop_thread_probe_seconds_per_epoch"]
    assert set(probes) == {"esol", "freesolv"}
    for name, row in (("esol", results["rows"]["esol_random"]),
                      ("freesolv", results["rows"]["freesolv_random"])):
        (run,) = row["chemprop"]["per_seed"]
        assert run["threads"] == min(probes[name], key=probes[name].get)
        assert len(run["epoch_seconds"]) == 2
        assert row["speedup"] == pytest.approx(
            row["chemprop"]["seconds_per_epoch"] / row["gnkit"]["seconds_per_epoch"]
        )


def test_shipped_classification_set_has_its_two_tasks_and_their_positives():
    dataset = chemprop_compare.shipped_dataset("solubility_classes")
    assert len(dataset) == 1273 and dataset.tasks == ("soluble", "highly_soluble")
    assert dataset.targets.sum(axis=0).tolist() == [759, 245]  # medium or high; high
    assert (dataset.targets[:, 1] <= dataset.targets[:, 0]).all()  # high is also soluble
    assert len(chemprop_compare.shipped_dataset("solubility_classes", 50)) == 50


def test_cross_entropy_is_the_mean_over_known_labels_with_torch_clamp():
    probabilities = np.array([[0.8, 0.5], [0.1, 1.0], [0.3, 0.0]])
    labels = np.array([[1, np.nan], [0, 1], [1, 1]])
    # -log 0.8, -log 0.9, -log 1 = 0, -log 0.3, and log 0 clamped at -100.
    expected = (-math.log(0.8) - math.log(0.9) + 0.0 - math.log(0.3) + 100.0) / 5
    assert chemprop_compare.cross_entropy(probabilities, labels) == pytest.approx(expected)


def test_classification_runs_are_scored_per_task_and_summarised():
    predictions = np.array([[0.9, 0.2], [0.2, 0.6], [0.6, 0.7], [0.4, 0.1]])
    targets = np.array([[1, 0], [0, 1], [1, 0], [0, np.nan]])
    scores = chemprop_compare.score_predictions(predictions, targets, True)
    # Task 0 ranks both positives first (AUROC 1); task 1: its positive (0.6) above one of the
    # two negatives (0.2) and below the other (0.7), AUROC 1/2.
    assert [task["auroc"] for task in scores["tasks"]] == [1.0, 0.5]
    assert scores["auroc"] == pytest.approx(0.75)
    runs = [{**scores, "epoch_seconds": [2.0, 1.0, 1.5], "cpu_minutes": 0.5},
            {**scores, "auroc": 0.25, "epoch_seconds": [1.0, 1.0], "cpu_minutes": 0.5}]
    summary = chemprop_compare._summary(runs)
    assert summary["auroc"] == {"mean": 0.5, "std": 0.25} and "rmse" not in summary
    assert summary["seconds_per_epoch"] == 1.125  # median of the medians 1.25 and 1.0
    line = chemprop_compare.format_row("solubility_classes", "random", {"gnkit": summary})
    assert "gnkit AUROC 0.500 +- 0.250 (1.12 s/epoch)" in line


@pytest.mark.slow
def test_both_tools_train_and_score_the_classification_set(tmp_path):
    pytest.importorskip("chemprop")
    results = chemprop_compare.main(
        ["--data", "solubility_classes", "--splits", "scaffold", "--seeds", "0", "--epochs", "2",
         "--max-molecules", "120", "--no-default", "--threads", "1"]
    )
    row = results["rows"]["solubility_classes_scaffold"]
    for side in ("gnkit", "chemprop"):
        (run,) = row[side]["per_seed"]
        assert len(run["tasks"]) == 2 and len(run["epoch_seconds"]) == 2
        finite = [task["auroc"] for task in run["tasks"] if math.isfinite(task["auroc"])]
        assert run["auroc"] == pytest.approx(np.mean(finite))


def _record(seeds, rmse):
    def run(value):
        return {"rmse": value, "mae": value / 2, "epoch_seconds": [1.0, 1.0], "cpu_minutes": 1.0}

    row = {"gnkit": [run(v) for v in rmse], "chemprop": [run(v + 0.1) for v in rmse]}
    return {"epochs": 50, "default_epochs": None, "seeds": seeds,
            "rows": {"esol_random": chemprop_compare._row_summary(row)}}


def test_merge_joins_seeds_in_order_and_summarises_them_all():
    merged = chemprop_compare.merge(
        [_record([3, 4], [0.4, 0.5]), _record([0, 1, 2], [0.1, 0.2, 0.3])]
    )
    assert merged["seeds"] == [0, 1, 2, 3, 4]
    row = merged["rows"]["esol_random"]
    assert [run["rmse"] for run in row["gnkit"]["per_seed"]] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert row["gnkit"]["rmse"]["mean"] == pytest.approx(0.3)
    assert row["gnkit"]["rmse"]["std"] == pytest.approx(math.sqrt(0.02))  # population std
    assert row["chemprop"]["rmse"]["mean"] == pytest.approx(0.4)
    assert "speedup" not in row and row["seeds_finished"] == 5


def test_merge_keeps_the_rows_of_the_data_sets_asked_for():
    one, two = _record([0], [0.1]), _record([1], [0.2])
    one["rows"]["lipophilicity_random"] = one["rows"]["esol_random"]
    merged = chemprop_compare.merge([one, two], ["esol"])
    assert list(merged["rows"]) == ["esol_random"]
    assert merged["rows"]["esol_random"]["seeds"] == [0, 1]
    only = chemprop_compare.merge([one, two], ["lipophilicity"])["rows"]["lipophilicity_random"]
    assert only["seeds"] == [0] and only["gnkit"]["rmse"]["mean"] == pytest.approx(0.1)


def test_merge_refuses_shared_seeds_and_different_epochs():
    with pytest.raises(ValueError, match="share seeds"):
        chemprop_compare.merge([_record([0, 1], [0.1, 0.2]), _record([1], [0.3])])
    other = {**_record([2], [0.3]), "epochs": 100}
    with pytest.raises(ValueError, match="different epochs"):
        chemprop_compare.merge([_record([0, 1], [0.1, 0.2]), other])


def test_dmpnn_benchmark_times_both_reverses_on_a_real_batch():
    from benchmarks import dmpnn

    (result,) = dmpnn.main(
        ["--data", "freesolv", "--rounds", "1", "--steps", "1", "--max-molecules", "80"]
    ).values()
    assert result["edges"] % 2 == 0 and result["nodes"] > 0
    assert set(result["milliseconds"]) == {"swap", "gather"}
