"""Types for a verb's own argparse flags, with the same one-line errors as the config's fields."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(
    minimum: int | float, kind: type[int] | type[float] = int
) -> Callable[[str], int | float]:
    """An argparse `type=`: a `kind` (int or float) no smaller than `minimum`.

    `--per-level 0` with `type=at_least(1)` is rejected as "expected an integer >= 1, got '0'".
    """
    expected = f"{'an integer' if kind is int else 'a number'} >= {minimum}"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not value >= minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse
