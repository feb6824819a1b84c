"""The molecules demo's calibration of classification probabilities: reliability-diagram bins and
the expected calibration error against numbers worked out by hand and a NumPy loop over the
bins, the report's summary and figure on made-up predictions, and a tiny classification run
whose report draws the reliability diagram."""

import csv
import json

import numpy as np
import pytest

from gnkit import experiments
from gnkit.demos.molecules import report
from gnkit.demos.molecules.metrics import calibration_bins


def test_bins_and_ece_equal_the_hand_computation():
    probabilities = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9, 1.0, 0.0, 0.5])
    labels = np.array([0, 0, 1, 1, 0, 1, 1, 0, np.nan])  # the missing label drops 0.5
    bins = calibration_bins(labels, probabilities, bins=4)
    # [0, .25): 0.1, 0.2, 0.0 (labels 0, 0, 0); [.25, .5): 0.3 (1); [.5, .75): 0.6, 0.7 (1, 0);
    # [.75, 1]: 0.9, 1.0 (1, 1). ECE = (3 * 0.1 + 1 * 0.7 + 2 * 0.15 + 2 * 0.05) / 8.
    np.testing.assert_array_equal(bins["edges"], [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(bins["counts"], [3, 1, 2, 2])
    np.testing.assert_allclose(bins["mean_predicted"], [0.1, 0.3, 0.65, 0.95])
    np.testing.assert_allclose(bins["observed"], [0.0, 1.0, 0.5, 1.0])
    assert bins["ece"] == pytest.approx(1.4 / 8)


def _numpy_reference(labels, probabilities, bins):
    """Bin by bin with masks: [lo, hi), the last bin closed."""
    edges = np.linspace(0, 1, bins + 1)
    counts, predicted, observed = [], [], []
    for index, (low, high) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        inside = (probabilities >= low) & (
            (probabilities <= high) if index == bins - 1 else (probabilities < high)
        )
        counts.append(int(inside.sum()))
        predicted.append(probabilities[inside].mean() if inside.any() else np.nan)
        observed.append(labels[inside].mean() if inside.any() else np.nan)
    counts = np.array(counts)
    gaps = np.nan_to_num(np.abs(np.array(observed) - np.array(predicted)))
    return counts, np.array(predicted), np.array(observed), float(counts @ gaps / counts.sum())


def test_bins_and_ece_equal_a_numpy_loop_over_the_bins_with_empty_bins():
    rng = np.random.default_rng(0)
    probabilities = rng.beta(0.5, 2.0, 300)  # mostly small: the top bins stay empty
    probabilities[probabilities > 0.7] = 0.05
    labels = (rng.random(300) < probabilities**0.7).astype(float)
    bins = calibration_bins(labels, probabilities, bins=10)
    counts, predicted, observed, ece = _numpy_reference(labels, probabilities, 10)
    np.testing.assert_array_equal(bins["counts"], counts)
    assert (counts[7:] == 0).all() and np.isnan(bins["observed"][7:]).all()
    np.testing.assert_allclose(bins["mean_predicted"], predicted, equal_nan=True)
    np.testing.assert_allclose(bins["observed"], observed, equal_nan=True)
    assert bins["ece"] == pytest.approx(ece)


def test_labels_drawn_from_the_probabilities_are_nearly_calibrated():
    rng = np.random.default_rng(1)
    probabilities = rng.random(200_000)
    labels = (rng.random(200_000) < probabilities).astype(float)
    assert calibration_bins(labels, probabilities)["ece"] < 0.01
    assert calibration_bins(1 - labels, probabilities)["ece"] > 0.45  # the reverse is not


def test_report_summary_and_reliability_figure(tmp_path):
    labels = {0: np.array([[0, 1], [1, 0], [1, 1], [0, np.nan]], float),
              1: np.array([[1, 0], [0, 0], [1, 1]], float)}
    predicted = {0: np.array([[0.1, 0.8], [0.7, 0.2], [0.9, 0.6], [0.3, 0.5]]),
                 1: np.array([[0.6, 0.1], [0.2, 0.4], [0.8, 0.95]])}
    parity = {seed: (labels[seed], predicted[seed]) for seed in labels}
    seed_eces = [0.1, 0.3]
    summary = report.calibration_summary(parity, ("a", "b"), seed_eces)
    assert summary["bins"] == report.CALIBRATION_BINS
    assert summary["test_ece"] == {"mean": 0.2, "std": 0.1}
    pooled_a = calibration_bins(
        np.array([0, 1, 1, 0, 1, 0, 1]), np.array([0.1, 0.7, 0.9, 0.3, 0.6, 0.2, 0.8])
    )
    assert summary["tasks"]["a"] == round(pooled_a["ece"], 4)
    # Task a's bins each hold one molecule: its ECE is the mean |label - probability|.
    assert pooled_a["ece"] == pytest.approx(np.mean([0.1, 0.3, 0.1, 0.3, 0.4, 0.2, 0.2]))
    results = {"model": "dmpnn", "data": "own.csv", "split": "random"}
    path = report.plot_calibration(parity, ("a", "b"), results, tmp_path / "calibration.png")
    assert path.stat().st_size > 0


def _write_classification_csv(path, rows=48):
    from gnkit import chem

    esol = chem.load_dataset("esol")
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["smiles", "soluble"])
        for text, value in zip(esol.smiles[:rows], esol.targets[:rows], strict=True):
            writer.writerow([text, int(value > -3)])
    return path


@pytest.mark.slow
def test_a_classification_run_reports_calibration_and_draws_the_diagram(tmp_path, capsys):
    pytest.importorskip("rdkit")
    from gnkit.demos.molecules import DEMO, main

    data = _write_classification_csv(tmp_path / "own.csv")
    run = tmp_path / "run"
    argv = ["train", "--config", "tiny", "--data", str(data), "--set", "descriptors=false",
            "--set", "epochs=2", "--set", "seeds=1", "--run-dir", str(run), "--no-progress",
            "--json", str(tmp_path / "r.json")]  # fmt: skip
    assert main(argv) == 0
    assert "expected calibration error (10 bins): " in capsys.readouterr().out
    results = json.loads((tmp_path / "r.json").read_text())
    (entry,) = results["seeds"].values()
    assert results["calibration"]["test_ece"]["mean"] == entry["test_ece"]
    assert 0.0 <= entry["test_ece"] <= 1.0
    assert (run / "calibration.png").stat().st_size > 0
    assert results["figures"]["calibration"] == str(run / "calibration.png")
    evaluated = experiments.run_verb(DEMO, "eval", None, run, progress=False)
    assert evaluated["calibration"] == results["calibration"]
