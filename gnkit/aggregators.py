"""Aggregators: functions that pool the rows of each segment into one row.

The protocol is one signature, `aggregate(data, segment_ids, num_segments,
indices_are_sorted=False)`, with `data` `[E, ..., F]`, int `segment_ids` `[E]` and a static int
`num_segments` `S`, returning `[S, ..., F']`. jraph's segment functions fit it, and so does a bound
Flax module such as `gnkit.nn.LCMAggregation`. The named aggregators here (`sum`, `mean`, `max`,
`min`, `var`, `std`) are built on the safe segment ops: an empty segment gives 0 and finite
gradients. Everything is jittable.

Learned aggregation: `tree_reduce` combines each segment's elements with any binary operator in a
balanced binary tree; the Flax module `gnkit.nn.LCMAggregation` (Ong and Velickovic 2022,
"Learnable Commutative Monoids for Graph Neural Networks") runs it with a commutative learned
operator. This module holds no parameters and does not import Flax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np

from gnkit import segment

# `sum`, `max` and `min` are left out so that a star import does not shadow the builtins: use
# them as `aggregators.sum` or by name through `get_aggregator`.
__all__ = [
    "Aggregator",
    "degree_scaler",
    "get_aggregator",
    "mean",
    "mean_log_degree",
    "multi_aggregation",
    "power_mean",
    "softmax_aggregation",
    "std",
    "to_dense_segments",
    "tree_depth",
    "tree_reduce",
    "var",
]


class Aggregator(Protocol):
    """`(data [E, ..., F], segment_ids [E], num_segments, indices_are_sorted) -> [S, ..., F']`."""

    def __call__(
        self,
        data: jax.Array,
        segment_ids: jax.Array,
        num_segments: int | None,
        indices_are_sorted: bool = False,
    ) -> jax.Array: ...


def sum(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Sum over each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, 0 for an empty segment.
    """
    return segment.safe_segment_sum(data, segment_ids, num_segments, indices_are_sorted)


def mean(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Mean over each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, float, 0 for an empty segment.
    """
    return segment.safe_segment_mean(data, segment_ids, num_segments, indices_are_sorted)


def max(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Maximum over each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, 0 for an empty segment.
    """
    return segment.safe_segment_max(data, segment_ids, num_segments, indices_are_sorted)


def min(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Minimum over each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, 0 for an empty segment.
    """
    return segment.safe_segment_min(data, segment_ids, num_segments, indices_are_sorted)


def var(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Population variance over each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, 0 for an empty segment.
    """
    return segment.safe_segment_variance(data, segment_ids, num_segments, indices_are_sorted)


def std(data, segment_ids, num_segments=None, indices_are_sorted=False):
    """Standard deviation over each segment, `[E, ...]` -> `[S, ...]`. Jittable.

    0 where the variance is at most 1e-5 (empty and single-element segments included), with a
    finite gradient everywhere; see `gnkit.segment.safe_segment_std`.

    Args:
      data: the values to combine, `[E, ...]` (one row per edge, node or graph element).
      segment_ids: int `[E]`, each row's segment (e.g. the receiver); ids outside `[0, S)` are
        dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1`.
      indices_are_sorted: promise that `segment_ids` is sorted, for a faster scatter.

    Returns:
      `[S, ...]`, 0 where the variance is at most 1e-5.
    """
    return segment.safe_segment_std(data, segment_ids, num_segments, indices_are_sorted)


def softmax_aggregation(temperature: float | jax.Array = 1.0) -> Aggregator:
    r"""Softmax-weighted sum per feature: :math:`\sum_i \operatorname{softmax}_i(t x_i)\, x_i`.

    Over each segment's elements :math:`x_i`, with :math:`t` the `temperature`, as PyTorch
    Geometric's `SoftmaxAggregation` (Li et al. 2020, DeeperGCN): each feature column gets its own
    weights. :math:`t \to 0` tends to the mean, :math:`t \to \infty` to the max,
    :math:`t \to -\infty` to the min. `temperature` may be a traced array (e.g. a learned
    parameter). Returns an aggregator `[E, ..., F]` -> `[S, ..., F]`, 0 on empty segments;
    jittable.
    """

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        weights = segment.safe_segment_softmax(
            data * temperature, segment_ids, num_segments, indices_are_sorted
        )
        return segment.safe_segment_sum(
            data * weights, segment_ids, num_segments, indices_are_sorted
        )

    return aggregate


def power_mean(
    p: float | jax.Array,
    min_value: float = 1e-6,
    max_value: float = 100.0,
) -> Aggregator:
    """Power mean over each segment: `(mean_i clip(x_i, min_value, max_value) ** p) ** (1 / p)`.

    For non-negative features and `p > 0` (DeeperGCN, Li et al. 2020). `p` may be traced
    (learned). The result lies in `[min_value, max_value]`; an empty segment gives exactly 0 with
    zero gradient. The small positive floor keeps the gradient of `x ** p` finite for `p < 1`.
    Returns an aggregator `[E, ...]` -> `[S, ...]`; jittable.

    PyTorch Geometric 2.8's `PowerMeanAggregation(p, clamp_min=1e-4, clamp_max=100)` clamps the
    inputs to `[clamp_min, clamp_max]` as here, and also clamps each segment's mean of powers to
    that range before the root, so its result lies in `[clamp_min ** (1/p), clamp_max ** (1/p)]`
    (an empty segment gives `clamp_min ** (1/p)`); when `p` is the number 1 it clamps nothing
    (a plain mean, negative inputs included), where this clips for every `p`. With
    `min_value=1e-4` the two agree on every non-empty segment whose mean of powers lies in
    `[1e-4, 100]`.
    """

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        powers = jnp.clip(data, min_value, max_value) ** p
        means = segment.safe_segment_mean(powers, segment_ids, num_segments, indices_are_sorted)
        nonempty = means > 0
        return jnp.where(nonempty, jnp.where(nonempty, means, 1.0) ** (1.0 / p), 0.0)

    return aggregate


_NAMED: dict[str, Aggregator] = {
    "sum": sum,
    "mean": mean,
    "max": max,
    "min": min,
    "var": var,
    "std": std,
    "softmax": softmax_aggregation(),
}


def get_aggregator(aggregator: str | Aggregator) -> Aggregator:
    """The aggregator named `aggregator` ('sum', 'mean', 'max', 'min', 'var', 'std', 'softmax').

    A callable is returned unchanged, so every argument that takes an aggregator takes either.

    Example:
        >>> import jax.numpy as jnp
        >>> from gnkit import aggregators
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> segment_ids = jnp.array([0, 0, 1, 1, 2])
        >>> print(aggregators.get_aggregator("max")(data, segment_ids, 4))
        [2. 4. 5. 0.]
        >>> print(aggregators.get_aggregator("mean")(data, segment_ids, 4))
        [1.5 3.5 5.  0. ]
    """
    if callable(aggregator):
        return aggregator
    if aggregator not in _NAMED:
        raise ValueError(f"unknown aggregator {aggregator!r}; expected one of {sorted(_NAMED)}")
    return _NAMED[aggregator]


def multi_aggregation(*aggregators: str | Aggregator) -> Aggregator:
    """Several aggregators side by side: their outputs concatenated along the last axis.

    E.g. `multi_aggregation('mean', 'max', 'std')` maps `[E, ..., F]` to `[S, ..., 3F]` (PNA's
    aggregators). Data needs a feature axis. Jittable.
    """
    if not aggregators:
        raise ValueError("multi_aggregation needs at least one aggregator")
    resolved = [get_aggregator(a) for a in aggregators]

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        outputs = [a(data, segment_ids, num_segments, indices_are_sorted) for a in resolved]
        return jnp.concatenate(outputs, axis=-1)

    return aggregate


_SCALERS = ("identity", "amplification", "attenuation")


def _degree_factor(scaler: str, degree: jax.Array, delta) -> jax.Array | float:
    if scaler == "amplification":
        return jnp.log(degree + 1) / delta
    if scaler == "attenuation":
        return delta / jnp.log(jnp.maximum(degree, 1) + 1)
    return 1.0


def degree_scaler(
    aggregator: str | Aggregator,
    scaler: str | Sequence[str],
    average_log_degree: float | jax.Array,
) -> Aggregator:
    """PNA's degree scalers (Corso et al. 2020) applied to an aggregator's output.

    With `d` a segment's element count and `delta = average_log_degree` (the training set's mean
    of `log(d + 1)` over receiving nodes, see `mean_log_degree`): 'identity' leaves the output
    alone, 'amplification' multiplies it by `log(d + 1) / delta`, 'attenuation' by
    `delta / log(max(d, 1) + 1)`, so attenuation stays finite on empty segments. These are the
    formulas of PyTorch Geometric 2.8's `DegreeScalerAggregation` (its `avg_deg_log` is
    `mean_log_degree` of the training in-degrees); its 'linear' and 'inverse_linear' scalers are
    not here. A sequence of scalers concatenates the scaled outputs along the last axis,
    `[S, ..., len(scaler) * F]`. Jittable.
    """
    base = get_aggregator(aggregator)
    scalers = (scaler,) if isinstance(scaler, str) else tuple(scaler)
    unknown = [s for s in scalers if s not in _SCALERS]
    if unknown or not scalers:
        raise ValueError(f"unknown scaler(s) {unknown or scalers}; expected some of {_SCALERS}")

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        pooled = base(data, segment_ids, num_segments, indices_are_sorted)
        degree = segment.segment_count(segment_ids, pooled.shape[0], indices_are_sorted)
        degree = jnp.reshape(degree, (-1,) + (1,) * (pooled.ndim - 1)).astype(pooled.dtype)
        outputs = [pooled * _degree_factor(s, degree, average_log_degree) for s in scalers]
        return jnp.concatenate(outputs, axis=-1) if len(outputs) > 1 else outputs[0]

    return aggregate


def mean_log_degree(degrees) -> float:
    """`delta` for `degree_scaler`: the mean of `log(d + 1)` over `degrees` (host, NumPy).

    `degrees` is the in-degree of each (real) receiving node of the training set, e.g.
    `np.bincount(receivers, minlength=n_nodes)`.
    """
    return float(np.mean(np.log(np.asarray(degrees, np.float64) + 1.0)))


def tree_depth(max_degree: int) -> int:
    """Levels of the balanced binary tree over `max_degree` elements: `ceil(log2(max_degree))`."""
    if max_degree < 1:
        raise ValueError(f"max_degree must be >= 1, got {max_degree}")
    return (max_degree - 1).bit_length()


def to_dense_segments(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int,
    width: int,
    indices_are_sorted: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Lays each segment's elements out in a row: `[E, ...]` -> `[S, width, ...]` and a mask.

    Row `s` holds segment `s`'s elements in their order in `data`, from slot 0; the other slots
    hold zeros. No elements at all give an all-False mask. Unsorted ids cost a stable argsort,
    then it is one gather. Jittable (`num_segments` and `width` static).

    Args:
      data: the elements, `[E, ...]`.
      segment_ids: int `[E]`, each element's segment; ids outside `[0, S)` are dropped.
      num_segments: `S` (static).
      width: slots per row (static); elements past it are dropped.
      indices_are_sorted: promise that `segment_ids` is sorted, which skips the argsort.

    Returns:
      `(dense, mask)`: `dense` `[S, width, ...]` with zeros in the empty slots, and `mask` bool
      `[S, width]`, True on the first `min(count, width)` slots of each row.
    """
    mask_shape = (num_segments, width) + (1,) * (jnp.ndim(data) - 1)
    if jnp.shape(data)[0] == 0:
        empty = jnp.zeros((num_segments, width), bool)
        return jnp.zeros((num_segments, width) + jnp.shape(data)[1:], data.dtype), empty
    if indices_are_sorted:
        order, sorted_ids = None, segment_ids
    else:
        order = jnp.argsort(segment_ids, stable=True)
        sorted_ids = jnp.asarray(segment_ids)[order]
    bounds = jnp.searchsorted(sorted_ids, jnp.arange(num_segments + 1, dtype=sorted_ids.dtype))
    starts, counts = bounds[:-1], jnp.diff(bounds)
    slots = jnp.arange(width)
    mask = slots[None, :] < counts[:, None]
    sources = jnp.where(mask, starts[:, None] + slots[None, :], 0)
    if order is not None:
        sources = order[sources]
    dense = jnp.take(data, sources, axis=0, mode="clip")
    return jnp.where(jnp.reshape(mask, mask_shape), dense, 0), mask


def tree_reduce(
    binary_op: Callable[[jax.Array, jax.Array], jax.Array],
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int,
    max_degree: int,
    indices_are_sorted: bool = False,
) -> jax.Array:
    """Reduces each segment with `binary_op` in a balanced binary tree: `[E, ...]` -> `[S, ...]`.

    A segment's elements `e0 .. e{n-1}` (in their order in `data`) are paired level by level,
    `(e0, e1), (e2, e3), ...`; an odd last element is carried up unchanged, so five elements give
    `op(op(op(e0, e1), op(e2, e3)), e4)`. The tree depends only on `n`, not on `max_degree` or on
    other segments: padding slots never enter `binary_op`'s results. A one-element segment gives
    the element, an empty one zeros. There are `tree_depth(max_degree)` levels and
    `binary_op(a, b)` is called once per level on arrays `[S, k, ...]` (the slots that do not hold
    two real elements are computed on zeros and discarded). The order is `op(left, right)`.
    Jittable.

    Args:
      binary_op: `(left, right) -> combined`, called on arrays `[S, k, ...]`; need not
        be commutative, but `binary_op(0, 0)` must be finite.
      data: the elements, `[E, ...]`.
      segment_ids: int `[E]`, each element's segment; ids outside `[0, S)` are dropped.
      num_segments: `S` (static).
      max_degree: at least the largest segment size (static); elements past it are dropped.
      indices_are_sorted: promise that `segment_ids` is sorted, which skips the argsort.

    Returns:
      `[S, ...]`: each segment reduced, its single element if it has one, zeros if empty.
    """
    depth = tree_depth(max_degree)
    nodes, mask = to_dense_segments(data, segment_ids, num_segments, max_degree, indices_are_sorted)
    padding = 2**depth - max_degree
    nodes = jnp.pad(nodes, [(0, 0), (0, padding)] + [(0, 0)] * (nodes.ndim - 2))
    mask = jnp.pad(mask, [(0, 0), (0, padding)])
    for _ in range(depth):
        left, right = nodes[:, 0::2], nodes[:, 1::2]
        has_right = mask[:, 1::2]
        has_right = jnp.reshape(has_right, has_right.shape + (1,) * (nodes.ndim - 2))
        nodes = jnp.where(has_right, binary_op(left, right), left)
        mask = mask[:, 0::2]
    return nodes[:, 0]
