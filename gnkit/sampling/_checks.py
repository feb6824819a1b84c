"""Argument checks shared by the samplers, so that bad input fails at the boundary. Host.

Each check returns the value in the form the samplers use (a Python int, a tuple of ints, an
int64 or numeric NumPy array) or raises one error that names the argument, what it expects and
what it got: a TypeError for the wrong kind of value, a ValueError for a wrong shape or range.
"""

from __future__ import annotations

import numbers

import numpy as np


def count(value, name: str, minimum: int) -> int:
    """`value` as an int, checked to be an integer (not a bool or float) `>= minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {minimum}; got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}.")
    return int(value)


def fanouts(values, name: str = "fanouts") -> tuple[int, ...]:
    """`values` as a tuple of ints `>= 1`, one per hop, as PyG's `num_neighbors` lists them.

    A bare int is refused rather than read as one hop (PyG takes a list too), and so is PyG's
    -1 (every neighbour), which has no fixed shape: give the largest in-degree instead.
    """
    message = (f"{name} must be a sequence of ints >= 1, one per hop, like PyG's num_neighbors "
               f"(e.g. (10, 5)); got {values!r}.")
    if isinstance(values, (str, bytes)) or not np.iterable(values):
        raise TypeError(message)
    counts = tuple(values)
    if not all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in counts):
        raise TypeError(message)
    if not counts or min(counts) < 1:
        raise ValueError(message)
    return tuple(int(c) for c in counts)


def ids(values, upper: int, name: str, most: tuple[str, int] | None = None) -> np.ndarray:
    """`values` as int64 `[n]` ids in `[0, upper)`; with `most = (bound's name, count)`, at most
    `count` of them.

    Any integer dtype is taken; floats and bools are refused rather than truncated. An empty
    sequence (`[]`, float64 to NumPy) is taken as no ids.
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of ids; got shape {values.shape}.")
    if most is not None and values.size > most[1]:
        raise ValueError(f"{name} must be at most {most[0]}={most[1]} ids; got {values.size}.")
    if values.size == 0:
        return values.astype(np.int64)
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"{name} must be integer ids; got dtype {values.dtype}.")
    outside = np.flatnonzero((values < 0) | (values >= upper))
    if outside.size:
        raise ValueError(f"{name} must be ids in [0, {upper}); got {values[outside[0]]} at "
                         f"position {outside[0]}.")
    return values.astype(np.int64)


def times(values, length: int, name: str) -> np.ndarray:
    """`values` as a numeric array of shape `[length]` (ints or floats; not strings or bools)."""
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.number):
        raise TypeError(f"{name} must be numeric; got dtype {values.dtype}.")
    if values.shape != (length,):
        raise ValueError(f"{name} must have shape [{length}]; got {values.shape}.")
    return values
