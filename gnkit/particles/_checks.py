"""Argument checks of `gnkit.particles`: one ValueError naming the argument. Host-side.

Checks look at Python and NumPy numbers only; a traced value (inside `jit`) passes unchecked.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _concrete(value) -> bool:
    return isinstance(value, numbers.Number | np.generic)


def check_count(name: str, value, minimum: int = 1) -> None:
    """`value` is an integer of at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_number(name: str, value, *, above: float | None = None,
                 at_least: float | None = None) -> None:
    """`value` is a finite real number `> above` (or `>= at_least`); traced values pass."""
    if not _concrete(value):
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if above is not None and not value > above:
        raise ValueError(f"{name} must be > {above:g}, got {value!r}")
    if at_least is not None and not value >= at_least:
        raise ValueError(f"{name} must be >= {at_least:g}, got {value!r}")


def check_box(box, dim: int | None = None) -> np.ndarray:
    """The box lengths as float64 `[dim]`: 2 or 3 positive finite values (`dim` of them when
    given)."""
    lengths = np.asarray(box, np.float64)
    wanted = (dim,) if dim is not None else (2, 3)
    if lengths.ndim != 1 or len(lengths) not in wanted:
        raise ValueError(f"box must hold {' or '.join(map(str, wanted))} lengths (one per "
                         f"axis), got shape {lengths.shape}")
    if not np.all(np.isfinite(lengths) & (lengths > 0)):
        raise ValueError(f"box lengths must be positive and finite, got {lengths.tolist()}")
    return lengths
