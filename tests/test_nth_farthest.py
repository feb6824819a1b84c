"""Tests of the N-th farthest task generator, its labels recomputed independently, and the demo."""

import itertools

import numpy as np
import pytest

from gnkit.tasks import nth_farthest


def _decode(inputs):
    """Split step inputs [B, 8, 40] back into vectors, labels, n and m."""
    vectors = inputs[..., :16].astype(np.float64)
    labels = inputs[..., 16:24].argmax(-1)
    n, m = inputs[:, 0, 24:32].argmax(-1), inputs[:, 0, 32:40].argmax(-1)
    return vectors, labels, n, m


def test_sample_shapes_encoding_and_ranges():
    inputs, targets = nth_farthest.sample(np.random.default_rng(0), 64)
    assert inputs.shape == (64, 8, 40) and inputs.dtype == np.float32
    assert targets.shape == (64,) and np.issubdtype(targets.dtype, np.integer)
    assert np.all(np.abs(inputs[..., :16]) <= 1.0)
    one_hots = inputs[..., 16:].reshape(64, 8, 3, 8)
    assert np.all(np.sort(one_hots, axis=-1)[..., -1] == 1)
    assert np.all(one_hots.sum(-1) == 1)
    _, labels, _, _ = _decode(inputs)
    assert all(sorted(row) == list(range(8)) for row in labels.tolist())
    np.testing.assert_array_equal(inputs[:, :, 24:], inputs[:, :1, 24:].repeat(8, axis=1))
    assert set(targets.tolist()) <= set(range(8))


def test_targets_recomputed_by_brute_force():
    inputs, targets = nth_farthest.sample(np.random.default_rng(1), 200)
    vectors, labels, n, m = _decode(inputs)
    for b in range(200):
        by_label = {int(label): vectors[b, i] for i, label in enumerate(labels[b])}
        reference = by_label[int(m[b])]
        distance = {label: np.sqrt(np.sum((v - reference) ** 2)) for label, v in by_label.items()}
        ranked = sorted(distance, key=lambda label: -distance[label])
        assert targets[b] == ranked[n[b]]


def test_hand_made_example():
    # four objects on a line at 0, 1, 3, 7 with labels 2, 0, 3, 1; reference: label 0 (at 1)
    vectors = np.array([[[0.0], [1.0], [3.0], [7.0]]])
    labels = np.array([[2, 0, 3, 1]])
    expected = {0: 1, 1: 3, 2: 2, 3: 0}   # distances 6 (label 1), 2 (3), 1 (2), 0 (0)
    for n, label in expected.items():
        assert nth_farthest.answer(vectors, labels, np.array([n]), np.array([0]))[0] == label


def test_question_covers_every_n_and_m_and_targets_are_balanced():
    inputs, targets = nth_farthest.sample(np.random.default_rng(2), 4000)
    _, _, n, m = _decode(inputs)
    questions = set(zip(n.tolist(), m.tolist(), strict=True))
    assert questions == set(itertools.product(range(8), range(8)))
    counts = np.bincount(targets, minlength=8)
    assert counts.min() > 400   # ~500 each: labels are a random permutation


def test_same_seed_same_held_out_set():
    a_inputs, a_targets = nth_farthest.held_out_set(3, 16)
    b_inputs, b_targets = nth_farthest.held_out_set(3, 16)
    np.testing.assert_array_equal(a_inputs, b_inputs)
    np.testing.assert_array_equal(a_targets, b_targets)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        nth_farthest.sample(np.random.default_rng(0), 0)
