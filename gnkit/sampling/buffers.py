"""Reused, zero-padded output arrays for the samplers' feature gathers. Host NumPy, thread-safe.

A sample's feature arrays are padded to a fixed budget, most of it padding rows that must be
zero: for WordNet with fanouts (10, 5) and 512 seeds, 31,233 node rows of which about 3,500 are
real. Zeroing the padding anew for every batch costs more than sampling it. `PaddedBuffers` keeps
the arrays of earlier samples once nothing else refers to them (the moment they would otherwise
be freed) and remembers how many leading rows each last held, so a reused array only needs its
real rows written and the rows that were real last time and are padding now zeroed.

The arrays handed out are read-only views: a sample's features are never modified in place
(copy them to modify), so the padding of a reused array is still zero. Their contents never
change while any reference to them is alive.
"""

from __future__ import annotations

import sys
import threading

import numpy as np


def _references(array: np.ndarray) -> int:
    """`sys.getrefcount(array)`, always called the same way, so counts compare."""
    return sys.getrefcount(array)


def _pool_only_references() -> int:
    """`_references` of an array that only a pool entry refers to, called as `_claim` calls
    it: measured, since the count differs across Python versions."""
    entries = [[np.zeros(1), 0]]
    for entry in entries:
        return _references(entry[0])
    raise AssertionError("unreachable")


class PaddedBuffers:
    """Output arrays `[rows, ...]` reused once released, padding rows kept zero. Host.

    Args:
      keep: the most arrays of one shape and dtype kept for reuse.
    """

    def __init__(self, keep: int = 8):
        self.keep = int(keep)
        self._free_references = _pool_only_references()
        self._entries: dict[tuple, list[list]] = {}
        self._lock = threading.Lock()

    def _claim(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[list, np.ndarray]:
        """A pool entry `[array, dirty_rows]` no one else holds (or a new one) and its array.

        The returned reference to the array is taken under the lock, so no other thread can
        claim the entry while the caller uses it.
        """
        key = (shape, dtype.str)
        with self._lock:
            entries = self._entries.setdefault(key, [])
            for entry in entries:
                if _references(entry[0]) == self._free_references:
                    return entry, entry[0]
            entry = [np.zeros(shape, dtype), 0]
            if len(entries) < self.keep:
                entries.append(entry)
            return entry, entry[0]

    def gather(self, leaf: np.ndarray, ids: np.ndarray, n_rows: int) -> np.ndarray:
        """Rows `ids` `[n]` of `leaf` `[M, ...]` (zeros where `ids` is -1), then zero rows up
        to `n_rows`: a read-only `[n_rows, ...]` array.

        Args:
          leaf: the source rows.
          ids: int `[n]` rows of `leaf`, -1 for a zero row; `n <= n_rows`.
          n_rows: rows of the output.

        Returns:
          The read-only array; its padding rows `n ..` are zero.
        """
        n_ids = ids.shape[0]
        entry, array = self._claim((n_rows,) + leaf.shape[1:], leaf.dtype)
        absent = ids < 0
        # mode="clip" writes straight into `out` ("raise" goes through a buffer); the ids are
        # in range, so it clips nothing.
        np.take(leaf, np.where(absent, 0, ids), axis=0, out=array[:n_ids], mode="clip")
        array[:n_ids][absent] = 0
        if entry[1] > n_ids:
            array[n_ids : entry[1]] = 0
        entry[1] = n_ids
        view = array.view()
        view.flags.writeable = False
        return view
