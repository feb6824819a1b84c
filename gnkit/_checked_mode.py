"""What `gnkit.validate` and `gnkit.typed_graph.validate` share: one set of value checks run
with NumPy on the host (raising at the first failure) or recorded with `checkify` inside a
compiled call, and the wrapper that runs a check before a function under `checkify`."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify


def host_expect(condition, message: str, *values) -> None:
    """Raise `ValueError(message.format(*values))` unless `condition` holds. Host."""
    if not bool(condition):
        raise ValueError(message.format(*(np.asarray(value).item() for value in values)))


def device_expect(condition, message: str, *values) -> None:
    """Record `message` (formatted with `values`) for `checkify` unless `condition` holds."""
    checkify.check(condition, message, *(jnp.asarray(value) for value in values))


def repeat(xp, values, counts, total: int):
    """`values[i]` repeated `counts[i]` times; static length `total` under jax.numpy."""
    if xp is jnp:
        return jnp.repeat(values, counts, total_repeat_length=total)
    return np.repeat(values, counts)


def checked_call(check: Callable, fn: Callable, *, jit: bool) -> Callable:
    """`fn(graph, ...)` with `check(graph)` run first, under `checkify` (and `jax.jit` when
    `jit`); the returned function throws the recorded error, if any, after the call."""

    def with_checks(graph, *args, **kwargs):
        check(graph)
        return fn(graph, *args, **kwargs)

    checkified = checkify.checkify(with_checks, errors=checkify.user_checks)
    if jit:
        checkified = jax.jit(checkified)

    @functools.wraps(fn)
    def run(graph, *args, **kwargs):
        error, outputs = checkified(graph, *args, **kwargs)
        error.throw()
        return outputs

    return run
