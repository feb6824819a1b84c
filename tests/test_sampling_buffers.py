"""Reused sample buffers: rows equal NumPy's gather, padding stays zero across reuse, an array
still referred to is never reused, and the arrays handed out are read-only."""

import numpy as np
import pytest

from gnkit.sampling.buffers import PaddedBuffers


def reference(leaf, ids, n_rows):
    out = np.zeros((n_rows,) + leaf.shape[1:], leaf.dtype)
    out[: ids.size] = np.where((ids >= 0)[:, None], leaf[np.maximum(ids, 0)], 0)
    return out


def test_reused_arrays_equal_a_fresh_gather_and_held_ones_are_not_reused():
    leaf = np.arange(40.0).reshape(20, 2) + 1
    buffers = PaddedBuffers()
    first = buffers.gather(leaf, np.array([3, -1, 5, 7, 9]), 8)
    np.testing.assert_array_equal(first, reference(leaf, np.array([3, -1, 5, 7, 9]), 8))
    held = first[2:]  # a view keeps the memory in use
    second = buffers.gather(leaf, np.array([1]), 8)
    assert not np.shares_memory(second, held)
    np.testing.assert_array_equal(held, reference(leaf, np.array([3, -1, 5, 7, 9]), 8)[2:])
    base_address = second.__array_interface__["data"][0]
    del second
    third = buffers.gather(leaf, np.array([2, 4]), 8)  # reuses the released array
    assert third.__array_interface__["data"][0] == base_address
    np.testing.assert_array_equal(third, reference(leaf, np.array([2, 4]), 8))


def test_sample_features_are_read_only():
    buffers = PaddedBuffers()
    out = buffers.gather(np.ones((4, 3), np.float32), np.array([0, 1]), 5)
    with pytest.raises(ValueError):
        out[0, 0] = 2.0
