"""Per-task test and validation metrics of the molecules demo, missing labels (NaN) left out:
RMSE and MAE for regression, AUROC and PRC-AUC for classification, and the calibration of
predicted probabilities (reliability-diagram bins, expected calibration error). Host NumPy."""

from __future__ import annotations

import numpy as np

REGRESSION_METRICS = ("rmse", "mae")
CLASSIFICATION_METRICS = ("auroc", "prc_auc")


def metric_names(task: str) -> tuple[str, ...]:
    """The metrics of `task` (`"regression"` or `"classification"`), the first one selecting
    the best validated state."""
    return CLASSIFICATION_METRICS if task == "classification" else REGRESSION_METRICS


def errors(predictions: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """RMSE and MAE of `predictions` `[n]` against `targets` `[n]`."""
    difference = predictions - targets
    return {
        "rmse": float(np.sqrt(np.mean(difference**2))),
        "mae": float(np.mean(np.abs(difference))),
    }


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of `values` `[n]`, tied values sharing their mean rank."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    ends = np.concatenate([starts[1:], [len(values)]])
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)
    return ranks


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of `scores` `[n]` for binary `labels` `[n]` (the Mann-Whitney
    statistic, ties counted half), NaN when only one class is present."""
    positive = labels == 1
    n_positive, n_negative = int(positive.sum()), int((~positive).sum())
    if not n_positive or not n_negative:
        return float("nan")
    ranks = _average_ranks(np.asarray(scores, np.float64))
    return float(
        (ranks[positive].sum() - n_positive * (n_positive + 1) / 2) / (n_positive * n_negative)
    )


def prc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the precision-recall curve (trapezoids over recall, the curve starting at
    recall 0 and precision 1, one point per distinct score: scikit-learn's
    `auc(*precision_recall_curve(...)[1::-1])`, chemprop's `prc-auc`), NaN when only one class
    is present."""
    labels = np.asarray(labels) == 1
    if labels.all() or not labels.any():
        return float("nan")
    order = np.argsort(-np.asarray(scores, np.float64), kind="mergesort")
    ordered = np.asarray(scores, np.float64)[order]
    last_of_each = np.flatnonzero(np.concatenate([ordered[1:] != ordered[:-1], [True]]))
    true_positives = np.cumsum(labels[order])[last_of_each]
    predicted = last_of_each + 1
    precision = np.concatenate([[1.0], true_positives / predicted])
    recall = np.concatenate([[0.0], true_positives / true_positives[-1]])
    return float(np.sum(np.diff(recall) * (precision[1:] + precision[:-1]) / 2))


def task_metrics(predictions: np.ndarray, targets: np.ndarray, task: str) -> list[dict]:
    """Each task's metrics: `predictions` and `targets` `[n, tasks]` (targets NaN where the label
    is missing; classification predictions are probabilities). A task without labels, or
    (classification) with one class only, gets NaN."""
    per_task = []
    for column in range(targets.shape[1]):
        known = np.isfinite(targets[:, column])
        predicted, measured = predictions[known, column], targets[known, column]
        if task == "classification":
            per_task.append(
                {"auroc": auroc(measured, predicted), "prc_auc": prc_auc(measured, predicted)}
            )
        elif known.any():
            per_task.append(errors(predicted, measured))
        else:
            per_task.append({"rmse": float("nan"), "mae": float("nan")})
    return per_task


def mean_metrics(per_task: list[dict]) -> dict[str, float]:
    """Each metric's mean over the tasks where it is defined (NaN when it is nowhere)."""
    means = {}
    for name in per_task[0]:
        values = np.array([entry[name] for entry in per_task], np.float64)
        finite = values[np.isfinite(values)]
        means[name] = float(finite.mean()) if len(finite) else float("nan")
    return means


def calibration_bins(labels: np.ndarray, probabilities: np.ndarray, bins: int = 10) -> dict:
    """The reliability diagram of `probabilities` `[n]` for binary `labels` `[n]` (NaN labels
    left out): `bins` equal-width bins over [0, 1], bin `b` holding the probabilities in
    `[b / bins, (b + 1) / bins)` (the last one 1 too).

    Returns:
      `edges` `[bins + 1]`, `counts` `[bins]` (int), `mean_predicted` and `observed` `[bins]`
      (each bin's mean probability and fraction of positive labels, NaN for an empty bin), and
      `ece`, the expected calibration error `sum_b counts_b / n * |observed_b -
      mean_predicted_b|` over the non-empty bins (Naeini et al. 2015; NaN without labels).
    """
    labels, probabilities = np.asarray(labels, np.float64), np.asarray(probabilities, np.float64)
    known = np.isfinite(labels)
    labels, probabilities = labels[known], probabilities[known]
    which = np.minimum((probabilities * bins).astype(np.int64), bins - 1)
    counts = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_predicted = np.bincount(which, probabilities, bins) / counts
        observed = np.bincount(which, labels, bins) / counts
    filled = counts > 0
    gaps = np.abs(observed[filled] - mean_predicted[filled])
    ece = float(np.sum(counts[filled] * gaps) / len(labels)) if len(labels) else float("nan")
    return {
        "edges": np.linspace(0.0, 1.0, bins + 1),
        "counts": counts,
        "mean_predicted": mean_predicted,
        "observed": observed,
        "ece": ece,
    }
