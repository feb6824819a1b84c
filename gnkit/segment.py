"""Segment reductions: jraph's names with jraph's meaning, and safe variants for the blocks.

A segment reduction combines the rows of `data` (`[E, ...]`, often one row per edge) that share a
segment id (often the receiver) into one row per segment (`[S, ...]`). Ids outside `[0, S)` are
dropped. Every function here is jittable when `num_segments` is a static int; with
`num_segments=None` it is `max(segment_ids) + 1`, which needs concrete ids (no `jit`).

Two families:

- `segment_sum`, `segment_mean`, `segment_max`, `segment_min`, `segment_max_or_constant`,
  `segment_min_or_constant`, `segment_variance`, `segment_normalize`, `segment_softmax`,
  `partition_softmax` have jraph 0.0.6's signatures and return jraph's values (so `segment_max` of
  an empty float segment is `-inf`, and `segment_softmax` of an all `-inf` segment is NaN). Like
  jraph's, they take arrays, not pytrees.
- `safe_segment_*` are what gnkit's blocks use by default: every output is finite on empty
  segments (0 unless stated) with finite gradients, the softmax is max-shifted and maskable, and
  `indices_are_sorted` reaches every scatter.

Both families share one implementation where jraph's values allow it: a mean is one scatter of the
data plus one scatter of int32 ones over `[E]` (jraph scatters ones of the data's full shape), and
variance and normalization reuse that count and the centred data.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
    "partition_softmax",
    "safe_segment_max",
    "safe_segment_mean",
    "safe_segment_min",
    "safe_segment_normalize",
    "safe_segment_softmax",
    "safe_segment_std",
    "safe_segment_sum",
    "safe_segment_variance",
    "segment_count",
    "segment_max",
    "segment_max_or_constant",
    "segment_mean",
    "segment_min",
    "segment_min_or_constant",
    "segment_normalize",
    "segment_softmax",
    "segment_sum",
    "segment_variance",
]


def segment_count(
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
) -> jax.Array:
    """The number of elements in each segment: int32 `[S]` from ids `[E]`. Jittable."""
    return jax.ops.segment_sum(
        jnp.ones(jnp.shape(segment_ids), jnp.int32),
        segment_ids,
        num_segments,
        indices_are_sorted=indices_are_sorted,
    )


def _trailing(values: jax.Array, ndim: int) -> jax.Array:
    """Appends unit axes to `values` so that it broadcasts against an array of rank `ndim`."""
    return jnp.reshape(values, jnp.shape(values) + (1,) * (ndim - jnp.ndim(values)))


def _gather(values: jax.Array, segment_ids: jax.Array, indices_are_sorted: bool) -> jax.Array:
    """`values[segment_ids]` (out-of-range ids clipped; their rows are never summed back)."""
    return jnp.take(values, segment_ids, axis=0, indices_are_sorted=indices_are_sorted, mode="clip")


def _mean_and_count(data, segment_ids, num_segments, indices_are_sorted, unique_indices):
    """Segment means `[S, ...]` (0 on empty segments) and counts clamped to 1, `[S, 1, ...]`."""
    sums = jax.ops.segment_sum(data, segment_ids, num_segments, indices_are_sorted, unique_indices)
    counts = segment_count(segment_ids, sums.shape[0], indices_are_sorted)
    counts = _trailing(jnp.maximum(counts, 1), sums.ndim)
    return sums / counts, counts


def _moments(data, segment_ids, num_segments, indices_are_sorted, unique_indices):
    """Data minus its segment mean `[E, ...]` and the segment variance `[S, ...]` (two-pass)."""
    means, counts = _mean_and_count(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    centred = data - _gather(means, segment_ids, indices_are_sorted)
    squares = jax.ops.segment_sum(
        centred * centred, segment_ids, means.shape[0], indices_are_sorted, unique_indices
    )
    return centred, squares / counts


def _jraph_mean_and_count(data, segment_ids, num_segments, indices_are_sorted, unique_indices):
    """jraph's arithmetic for its named ops: means `[S, ...]` and counts clamped to 1 of the
    data's full shape `[S, ...]` (a sum of ones), so the division rounds as jraph's does."""
    flags = (indices_are_sorted, unique_indices)
    sums = jax.ops.segment_sum(data, segment_ids, num_segments, *flags)
    counts = jax.ops.segment_sum(jnp.ones_like(data), segment_ids, num_segments, *flags)
    counts = jnp.maximum(counts, jnp.ones((), counts.dtype))
    return sums / counts, counts


def _jraph_moments(data, segment_ids, num_segments, indices_are_sorted, unique_indices):
    """`_moments` with jraph's arithmetic (`_jraph_mean_and_count`): centred data `[E, ...]` and
    variances `[S, ...]`, bit for bit as jraph computes them."""
    means, counts = _jraph_mean_and_count(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    centred = data - _gather(means, segment_ids, indices_are_sorted)
    squares = jax.ops.segment_sum(
        centred * centred, segment_ids, means.shape[0], indices_are_sorted, unique_indices
    )
    return centred, squares / counts


def segment_sum(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Sum of each segment: `[E, ...]` -> `[S, ...]`, 0 for an empty segment. Jittable.

    `jax.ops.segment_sum`, as in jraph.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, the data's dtype; 0 for an empty segment.

    Example:
        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> print(gn.segment_sum(data, jnp.array([0, 0, 1, 1, 2]), num_segments=4))
        [3. 7. 5. 0.]
    """
    return jax.ops.segment_sum(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def segment_mean(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Mean of each segment: `[E, ...]` -> `[S, ...]`, 0 for an empty segment. Jittable.

    Sum divided by `max(count, 1)` with jraph's arithmetic (the count is a sum of ones of the
    data's shape), so the result equals jraph's to the bit; integer data gives a float mean.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, float; 0 for an empty segment.

    Example:
        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> print(gn.segment_mean(data, jnp.array([0, 0, 1, 1, 2]), num_segments=4))
        [1.5 3.5 5.  0. ]
    """
    means, _ = _jraph_mean_and_count(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    return means


def segment_max(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Maximum of each segment: `[E, ...]` -> `[S, ...]`. Jittable.

    An empty segment gives the dtype's lowest value (`-inf` for floats), as jraph; use
    `safe_segment_max` where that value could reach a loss or a gradient.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`; the dtype's lowest value (`-inf`) for an empty segment.

    Example:
        The fourth segment is empty:

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> print(gn.segment_max(data, jnp.array([0, 0, 1, 1, 2]), num_segments=4))
        [  2.   4.   5. -inf]
    """
    return jax.ops.segment_max(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def segment_min(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Minimum of each segment: `[E, ...]` -> `[S, ...]`. Jittable.

    An empty segment gives the dtype's highest value (`+inf` for floats), as jraph.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`; the dtype's highest value (`+inf`) for an empty segment.
    """
    return jax.ops.segment_min(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def _where_empty(reduced, segment_ids, constant, indices_are_sorted):
    """`reduced` `[S, ...]` with the rows of empty segments replaced by `constant`."""
    counts = segment_count(segment_ids, reduced.shape[0], indices_are_sorted)
    return jnp.where(
        _trailing(counts > 0, reduced.ndim), reduced, jnp.asarray(constant, reduced.dtype)
    )


def segment_max_or_constant(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    constant: float = 0.0,
) -> jax.Array:
    """`segment_max` with `constant` for segments that have no element: `[S, ...]`. Jittable.

    As jraph: emptiness is decided by counting, so a segment whose elements are all `-inf` still
    gives `-inf`.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      constant: the value of segments that have no element.

    Returns:
      `[S, ...]`; `constant` for an empty segment.
    """
    maxima = segment_max(data, segment_ids, num_segments, indices_are_sorted, unique_indices)
    return _where_empty(maxima, segment_ids, constant, indices_are_sorted)


def segment_min_or_constant(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    constant: float = 0.0,
) -> jax.Array:
    """`segment_min` with `constant` for segments that have no element: `[S, ...]`. Jittable.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      constant: the value of segments that have no element.

    Returns:
      `[S, ...]`; `constant` for an empty segment.
    """
    minima = segment_min(data, segment_ids, num_segments, indices_are_sorted, unique_indices)
    return _where_empty(minima, segment_ids, constant, indices_are_sorted)


def segment_variance(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Population variance of each segment: `[E, ...]` -> `[S, ...]`, 0 if empty. Jittable.

    Two-pass (mean first, then mean squared deviation), as jraph, so it stays accurate when the
    mean is large compared with the spread; jraph's arithmetic, so equal to jraph's to the bit.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, the population variance; 0 for an empty segment.
    """
    _, variances = _jraph_moments(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    return variances


def segment_normalize(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    eps: float = 1e-8,
) -> jax.Array:
    """Z-scores within segments: `(x - mean) / sqrt(max(var, eps))`, `[E, ...]`. Jittable.

    jraph's definition. With the default `eps` a near-constant segment is scaled by up to 1e4;
    `safe_segment_normalize` uses `var + eps` instead. Equal to jraph's result to the bit.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      eps: floor of the variance (`max(var, eps)`), against division by zero.

    Returns:
      `[E, ...]`, each row's z-score within its segment.
    """
    centred, variances = _jraph_moments(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    scale = jax.lax.rsqrt(jnp.maximum(variances, jnp.asarray(eps, variances.dtype)))
    return centred * _gather(scale, segment_ids, indices_are_sorted)


def segment_softmax(
    logits: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Softmax over the elements of each segment: `[E, ...]` -> `[E, ...]`. Jittable.

    jraph's semantics: shifted by the segment maximum, no mask; a segment whose logits are all
    `-inf` gives NaN. `safe_segment_softmax` gives zeros there instead.

    Args:
      logits: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[E, ...]`, weights summing to 1 over each segment.

    Example:
        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> logits = jnp.array([0.0, 0.0, 1.0, 1.0, 5.0])
        >>> print(gn.segment_softmax(logits, jnp.array([0, 0, 1, 1, 2]), num_segments=3))
        [0.5 0.5 0.5 0.5 1. ]
    """
    maxima = segment_max(logits, segment_ids, num_segments, indices_are_sorted, unique_indices)
    exps = jnp.exp(logits - _gather(maxima, segment_ids, indices_are_sorted))
    totals = segment_sum(exps, segment_ids, maxima.shape[0], indices_are_sorted, unique_indices)
    return exps / _gather(totals, segment_ids, indices_are_sorted)


def partition_softmax(
    logits: jax.Array,
    partitions: jax.Array,
    sum_partitions: int | None = None,
) -> jax.Array:
    """Softmax within consecutive blocks of rows: `[sum(partitions), ...]`, e.g. per graph.

    `partitions` is int `[G]` (e.g. `n_node`); block `i` is `partitions[i]` consecutive rows.
    Jittable when `sum_partitions` (the static row count) is given, as jraph.
    """
    num_partitions = len(partitions)
    segment_ids = jnp.repeat(
        jnp.arange(num_partitions), partitions, axis=0, total_repeat_length=sum_partitions
    )
    return segment_softmax(logits, segment_ids, num_partitions, indices_are_sorted=True)


def safe_segment_sum(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Sum of each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    A sum is already safe: this is `segment_sum`, named for symmetry with the other safe ops.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, the data's dtype; 0 for an empty segment.
    """
    return segment_sum(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def safe_segment_mean(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Mean of each segment, `[E, ...]` -> `[S, ...]`; 0 if empty, finite gradients. Jittable.

    Same values as `segment_mean` (a sum divided by `max(count, 1)`).

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, float; 0 for an empty segment.
    """
    return segment_mean(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def _lowest(dtype) -> jax.Array:
    if jnp.issubdtype(dtype, jnp.floating):
        return jnp.asarray(-jnp.inf, dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        return jnp.asarray(jnp.iinfo(dtype).min, dtype)
    return jnp.asarray(False, dtype)


def _highest(dtype) -> jax.Array:
    if jnp.issubdtype(dtype, jnp.floating):
        return jnp.asarray(jnp.inf, dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        return jnp.asarray(jnp.iinfo(dtype).max, dtype)
    return jnp.asarray(True, dtype)


def safe_segment_max(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    empty_value: float = 0.0,
) -> jax.Array:
    """Maximum of each segment, `[E, ...]` -> `[S, ...]`; `empty_value` if empty. Jittable.

    Works for float, integer and bool data. One scatter, no count: a result still equal to the
    scatter's identity (`-inf` for floats, the lowest integer for ints) becomes `empty_value`.
    That covers empty segments and also segments whose elements are all `-inf` (e.g. fully masked
    scores). Those rows get a zero gradient; the others get the gradient of the maximum (split
    evenly between ties).

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      empty_value: the value of empty (or all `-inf`) segments.

    Returns:
      `[S, ...]`, the data's dtype; `empty_value` for an empty segment.

    Example:
        The fourth segment is empty; `segment_max` would give `-inf` there:

        >>> import jax.numpy as jnp
        >>> import gnkit as gn
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> print(gn.safe_segment_max(data, jnp.array([0, 0, 1, 1, 2]), num_segments=4))
        [2. 4. 5. 0.]
    """
    maxima = segment_max(data, segment_ids, num_segments, indices_are_sorted, unique_indices)
    empty = maxima == _lowest(maxima.dtype)
    return jnp.where(empty, jnp.asarray(empty_value, maxima.dtype), maxima)


def safe_segment_min(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    empty_value: float = 0.0,
) -> jax.Array:
    """Minimum of each segment, `[E, ...]` -> `[S, ...]`; `empty_value` if empty. Jittable.

    Mirror of `safe_segment_max`: a result equal to `+inf` (or the highest integer) becomes
    `empty_value`, with zero gradient.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      empty_value: the value of empty (or all `+inf`) segments.

    Returns:
      `[S, ...]`, the data's dtype; `empty_value` for an empty segment.
    """
    minima = segment_min(data, segment_ids, num_segments, indices_are_sorted, unique_indices)
    empty = minima == _highest(minima.dtype)
    return jnp.where(empty, jnp.asarray(empty_value, minima.dtype), minima)


def safe_segment_variance(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
) -> jax.Array:
    """Population variance of each segment, `[E, ...]` -> `[S, ...]`; 0 if empty. Jittable.

    Same values as `segment_variance` (two-pass, finite gradients everywhere).

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).

    Returns:
      `[S, ...]`, the population variance; 0 for an empty segment.
    """
    return segment_variance(data, segment_ids, num_segments, indices_are_sorted, unique_indices)


def safe_segment_std(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    eps: float = 1e-5,
) -> jax.Array:
    """Population standard deviation of each segment, `[E, ...]` -> `[S, ...]`. Jittable.

    `sqrt(var)` where `var > eps`, else exactly 0 with zero gradient (as PyTorch Geometric's
    `StdAggregation`): empty and single-element segments give 0, and the gradient is finite
    everywhere, while `d sqrt(var)` would be infinite at `var = 0`.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      eps: variances at or below it give exactly 0 (with zero gradient).

    Returns:
      `[S, ...]`; 0 where the variance is at most `eps`.
    """
    variances = segment_variance(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    spread = variances > eps
    return jnp.where(spread, jnp.sqrt(jnp.where(spread, variances, 1.0)), 0.0)


def safe_segment_normalize(
    data: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    eps: float = 1e-5,
) -> jax.Array:
    """Z-scores within segments: `(x - mean) / sqrt(var + eps)`, `[E, ...]`. Jittable.

    As LayerNorm, `eps` is added rather than used as a floor, so the scale is at most
    `1/sqrt(eps)` and smooth in `var`; a single-element segment gives 0.

    Args:
      data: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      eps: added to the variance before the square root (the scale is at most `1/sqrt(eps)`).

    Returns:
      `[E, ...]`, each row's z-score within its segment.
    """
    centred, variances = _moments(
        data, segment_ids, num_segments, indices_are_sorted, unique_indices
    )
    scale = jax.lax.rsqrt(variances + jnp.asarray(eps, variances.dtype))
    return centred * _gather(scale, segment_ids, indices_are_sorted)


def safe_segment_softmax(
    logits: jax.Array,
    segment_ids: jax.Array,
    num_segments: int | None = None,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mask: jax.Array | None = None,
) -> jax.Array:
    """Softmax over each segment's valid elements: `[E, ...]` -> `[E, ...]`. Jittable.

    An element is valid when its logit is not `-inf` and `mask` is True. Invalid elements get
    weight 0; a segment with no valid element gives all zeros, never NaN, and every gradient is
    finite. Logits are shifted by the (gradient-stopped) segment maximum over valid elements, so
    large logits do not overflow.
    Two scatters (max, sum) and two gathers, as `segment_softmax`.

    Args:
      logits: the values to combine, `[E, ...]`; rows with the same id form a segment.
      segment_ids: int `[E]`, each row's segment; ids outside `[0, S)` are dropped.
      num_segments: `S`, a static int under `jit`; None means `max(segment_ids) + 1` (not
        jittable).
      indices_are_sorted: promise that `segment_ids` is sorted (receiver-sorted edges, graph index
        vectors), which lets XLA use a faster scatter; a false promise may give wrong results.
      unique_indices: promise that no id occurs twice (as `jax.ops.segment_sum`'s).
      mask: bool `[E]` (or broadcastable to `logits` after appending trailing axes); False
        marks an element invalid. None: only `-inf` logits are invalid.

    Returns:
      `[E, ...]`, weights summing to 1 over each segment's valid elements; 0 for invalid ones.
    """
    valid = ~jnp.isneginf(logits)
    if mask is not None:
        valid = valid & _trailing(jnp.asarray(mask, bool), jnp.ndim(logits))
    masked = jnp.where(valid, logits, -jnp.inf)
    maxima = segment_max(masked, segment_ids, num_segments, indices_are_sorted, unique_indices)
    maxima = jax.lax.stop_gradient(jnp.where(jnp.isneginf(maxima), 0.0, maxima))
    shifted = jnp.where(valid, logits - _gather(maxima, segment_ids, indices_are_sorted), 0.0)
    exps = jnp.where(valid, jnp.exp(shifted), 0.0)
    totals = segment_sum(exps, segment_ids, maxima.shape[0], indices_are_sorted, unique_indices)
    totals = jnp.where(totals > 0, totals, 1.0)
    return exps / _gather(totals, segment_ids, indices_are_sorted)
