"""The metrics of RelBench's tasks, in NumPy: AUROC, average precision, MAE. Host."""

from __future__ import annotations

import numpy as np


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The area under the ROC curve: the chance that a random positive scores above a random
    negative, ties counting one half (the Mann-Whitney statistic). NaN without both classes.

    Args:
      labels: `[n]`, 0 or 1.
      scores: `[n]`, higher for positive.
    """
    labels, scores = np.asarray(labels) > 0.5, np.asarray(scores, np.float64)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(scores.size)
    sorted_scores = scores[order]
    # Average ranks over ties (1-based).
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], scores.size]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2
    rank_sum = ranks[labels].sum()
    return float((rank_sum - positives * (positives + 1) / 2) / (positives * negatives))


def average_precision(labels: np.ndarray, scores: np.ndarray) -> float:
    """Average precision: the mean, over the positives, of the precision among the rows scored
    at least as high (scikit-learn's definition, ties taken together). NaN without positives.

    Args:
      labels: `[n]`, 0 or 1.
      scores: `[n]`, higher for positive.
    """
    labels, scores = np.asarray(labels) > 0.5, np.asarray(scores, np.float64)
    if not labels.any():
        return float("nan")
    order = np.argsort(-scores, kind="mergesort")
    sorted_labels, sorted_scores = labels[order], scores[order]
    last_of_tie = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    true_positives = np.cumsum(sorted_labels)[last_of_tie]
    seen = (np.flatnonzero(last_of_tie) + 1).astype(np.float64)
    precision = true_positives / seen
    recall_gain = np.diff(np.r_[0, true_positives]) / labels.sum()
    return float(np.sum(precision * recall_gain))


def mae(labels: np.ndarray, predictions: np.ndarray) -> float:
    """The mean absolute error."""
    return float(np.mean(np.abs(np.asarray(predictions, np.float64) - np.asarray(labels))))


def task_metrics(kind: str, labels: np.ndarray, predictions: np.ndarray) -> dict[str, float]:
    """`{auroc, average_precision}` of a binary task's scores, `{mae}` of a regression's."""
    if kind == "binary":
        return {"auroc": auroc(labels, predictions),
                "average_precision": average_precision(labels, predictions)}
    return {"mae": mae(labels, predictions)}
