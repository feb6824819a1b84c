"""Segment reductions: jraph-named ones against jraph, safe ones against NumPy references."""

import functools
import inspect

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest
from jax.test_util import check_grads

from gnkit import segment

# Five segments: 0 has three elements, 1 is empty, 2 has one, 3 has three, 4 is empty (trailing).
IDS = np.array([3, 0, 2, 0, 3, 0, 3])
NUM_SEGMENTS = 5
MEMBERS = [[1, 3, 5], [], [2], [0, 4, 6], []]


def _data(shape=(7, 2, 3), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _layout(data, ids, sort):
    """The same segments with ids sorted (rows permuted) when `sort`."""
    if not sort:
        return data, ids
    order = np.argsort(ids, kind="stable")
    return data[order], ids[order]


def _reference(data, ids, num_segments, reduce, empty=0.0):
    """Per-segment NumPy reduction in float64: `[S, ...]`."""
    out = np.full((num_segments,) + data.shape[1:], empty, np.float64)
    for s in range(num_segments):
        rows = data[ids == s].astype(np.float64)
        if len(rows):
            out[s] = reduce(rows)
    return out


def _np_std(rows, eps=1e-5):
    var = rows.var(axis=0)
    return np.where(var > eps, np.sqrt(var), 0.0)


SAFE_CASES = {
    "sum": (segment.safe_segment_sum, lambda r: r.sum(axis=0)),
    "mean": (segment.safe_segment_mean, lambda r: r.mean(axis=0)),
    "max": (segment.safe_segment_max, lambda r: r.max(axis=0)),
    "min": (segment.safe_segment_min, lambda r: r.min(axis=0)),
    "variance": (segment.safe_segment_variance, lambda r: r.var(axis=0)),
    "std": (segment.safe_segment_std, _np_std),
}


def test_layout_is_what_the_comments_say():
    assert [list(np.flatnonzero(IDS == s)) for s in range(NUM_SEGMENTS)] == MEMBERS


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("name", sorted(SAFE_CASES))
def test_safe_reductions_match_numpy(name, sort):
    fn, reduce = SAFE_CASES[name]
    data, ids = _layout(_data(), IDS, sort)
    out = fn(jnp.asarray(data), jnp.asarray(ids), NUM_SEGMENTS, indices_are_sorted=sort)
    assert out.shape == (NUM_SEGMENTS, 2, 3)
    expected = _reference(data, ids, NUM_SEGMENTS, reduce)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(out[4], 0.0)


def test_hand_computed_mean_and_variance():
    data = jnp.array([2.0, 1.0, 7.0, 3.0, 4.0, 5.0, 6.0])
    # segment 0: rows 1, 3, 5 -> 1, 3, 5; segment 2: 7; segment 3: 2, 4, 6.
    np.testing.assert_allclose(
        segment.safe_segment_mean(data, jnp.asarray(IDS), NUM_SEGMENTS), [3, 0, 7, 4, 0]
    )
    np.testing.assert_allclose(
        segment.safe_segment_variance(data, jnp.asarray(IDS), NUM_SEGMENTS),
        [8 / 3, 0, 0, 8 / 3, 0],
        rtol=1e-6,
    )


def test_variance_is_two_pass_accurate_for_large_means():
    data = jnp.array([1e4 + 1.0, 1e4 - 1.0, 1e4 + 1.0, 1e4 - 1.0], jnp.float32)
    out = segment.safe_segment_variance(data, jnp.array([0, 0, 0, 0]), 1)
    np.testing.assert_allclose(out, [1.0], rtol=1e-6)


def test_safe_max_min_empty_value_and_integers():
    data = jnp.array([[5, -2], [1, 9], [-4, 0]], jnp.int32)
    ids = jnp.array([0, 0, 2])
    np.testing.assert_array_equal(
        segment.safe_segment_max(data, ids, 3, empty_value=-7), [[5, 9], [-7, -7], [-4, 0]]
    )
    np.testing.assert_array_equal(
        segment.safe_segment_min(data, ids, 3, empty_value=-7), [[1, -2], [-7, -7], [-4, 0]]
    )
    assert segment.safe_segment_max(data, ids, 3).dtype == jnp.int32


def test_safe_max_treats_all_neg_inf_segment_as_empty():
    data = jnp.array([-jnp.inf, -jnp.inf, 2.0])
    out = segment.safe_segment_max(data, jnp.array([0, 0, 1]), 2, empty_value=-1.0)
    np.testing.assert_array_equal(out, [-1.0, 2.0])


def test_safe_normalize_matches_numpy():
    data = _data((7, 2))
    out = segment.safe_segment_normalize(jnp.asarray(data), jnp.asarray(IDS), NUM_SEGMENTS)
    expected = np.zeros_like(data, np.float64)
    for rows in filter(None, MEMBERS):
        x = data[rows].astype(np.float64)
        expected[rows] = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(out[2], 0.0)  # the single-element segment


def _np_softmax(logits, ids, num_segments, valid):
    out = np.zeros(logits.shape, np.float64)
    for s in range(num_segments):
        rows = np.flatnonzero(ids == s)
        for column in np.ndindex(logits.shape[1:]):
            index = (rows,) + column
            ok = valid[index]
            if ok.any():
                z = logits[index][ok].astype(np.float64)
                weights = np.exp(z - z.max())
                out[(rows[ok],) + column] = weights / weights.sum()
    return out


@pytest.mark.parametrize("sort", [False, True])
def test_safe_softmax_matches_numpy_with_mask_and_neg_inf(sort):
    logits = _data((7, 2)) * 3 + 500.0  # large logits: must not overflow
    logits[4, 1] = -np.inf
    mask = np.array([True, True, True, True, True, False, True])
    order = np.argsort(IDS, kind="stable") if sort else np.arange(7)
    logits, ids, mask = logits[order], IDS[order], mask[order]
    out = segment.safe_segment_softmax(
        jnp.asarray(logits), jnp.asarray(ids), NUM_SEGMENTS, indices_are_sorted=sort, mask=mask
    )
    valid = np.isfinite(logits) & mask[:, None]
    np.testing.assert_allclose(out, _np_softmax(logits, ids, NUM_SEGMENTS, valid), atol=1e-6)
    sums = _reference(np.asarray(out), ids, NUM_SEGMENTS, lambda r: r.sum(0))
    np.testing.assert_allclose(sums, [[1, 1], [0, 0], [1, 1], [1, 1], [0, 0]], rtol=1e-6)


def test_safe_softmax_all_masked_segment_gives_zeros_and_finite_grads():
    inf = np.inf
    logits = jnp.array([[-inf, -inf], [0, 0], [5, 5], [0, 0], [-inf, -inf], [np.log(2), 0], [1, 1]])
    mask = jnp.array([True, True, False, True, True, True, False])
    # segment 0 (rows 1, 3, 5) has weights 1:1:2 and 1:1:1; segment 2 (row 2) is masked;
    # segment 3 (rows 0, 4, 6) is all -inf or masked.
    expected = [[0, 0], [1 / 4, 1 / 3], [0, 0], [1 / 4, 1 / 3], [0, 0], [1 / 2, 1 / 3], [0, 0]]

    def softmax(x):
        return segment.safe_segment_softmax(x, jnp.asarray(IDS), NUM_SEGMENTS, mask=mask)

    np.testing.assert_allclose(softmax(logits), expected, rtol=1e-6)
    grads = jax.grad(lambda x: jnp.sum(softmax(x) * jnp.arange(14.0).reshape(7, 2)))(logits)
    assert np.all(np.isfinite(grads))
    np.testing.assert_array_equal(np.asarray(grads)[[0, 2, 4, 6]], 0.0)
    assert np.all(np.asarray(grads)[[1, 3, 5], 0] != 0.0)


def test_safe_softmax_mask_broadcasts_over_heads():
    logits = jnp.asarray(_data((7, 2)))
    mask = jnp.array([True, False, True, True, True, True, False])
    out = segment.safe_segment_softmax(logits, jnp.asarray(IDS), NUM_SEGMENTS, mask=mask)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(out[6], 0.0)
    np.testing.assert_allclose(out[3] + out[5], 1.0, rtol=1e-6)


SAFE_FUNCTIONS = [fn for fn, _ in SAFE_CASES.values()] + [
    segment.safe_segment_normalize,
    segment.safe_segment_softmax,
]


@pytest.mark.parametrize("fn", SAFE_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_gradients_finite_with_empty_and_single_element_segments(fn):
    data = jnp.asarray(_data((7, 2)))
    ids = jnp.asarray(IDS)

    def loss(x):
        return jnp.sum(jnp.sin(fn(x, ids, NUM_SEGMENTS)))

    grads = jax.grad(loss)(data)
    assert np.all(np.isfinite(grads)), fn.__name__


@pytest.mark.parametrize(
    "fn",
    [
        segment.safe_segment_mean,
        segment.safe_segment_max,
        segment.safe_segment_std,
        segment.safe_segment_normalize,
        segment.safe_segment_softmax,
    ],
    ids=lambda fn: fn.__name__,
)
def test_check_grads(fn):
    data = jnp.asarray(_data((7, 2), seed=3))
    check_grads(
        lambda x: fn(x, jnp.asarray(IDS), NUM_SEGMENTS), (data,), order=1, atol=2e-2, rtol=2e-2
    )


def test_std_zero_variance_has_zero_gradient():
    data = jnp.array(
        [[2.0, 1.0], [5.0, 1.0], [2.0, 1.0], [9.0, 1.0], [3.0, 3.0], [2.0, 1.0], [4.0, 7.0]]
    )
    grads = jax.grad(lambda x: segment.safe_segment_std(x, jnp.asarray(IDS), NUM_SEGMENTS).sum())(
        data
    )
    # segment 0 (rows 1, 3, 5) is constant in column 1, segment 2 (row 2) has one element.
    np.testing.assert_array_equal(np.asarray(grads)[[1, 3, 5], 1], 0.0)
    np.testing.assert_array_equal(grads[2], 0.0)
    assert np.all(np.asarray(grads)[[1, 3, 5], 0] != 0.0)


def test_safe_ops_under_jit_with_sorted_ids():
    data, ids = _layout(_data((7, 2)), IDS, sort=True)
    for fn in SAFE_FUNCTIONS:
        jitted = jax.jit(functools.partial(fn, num_segments=NUM_SEGMENTS, indices_are_sorted=True))
        np.testing.assert_allclose(
            jitted(data, ids), fn(data, ids, NUM_SEGMENTS), rtol=1e-6, atol=1e-7
        )


def test_segment_count():
    np.testing.assert_array_equal(segment.segment_count(jnp.asarray(IDS), 5), [3, 0, 1, 3, 0])


JRAPH_NAMES = [
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_max_or_constant",
    "segment_min_or_constant",
    "segment_variance",
    "segment_normalize",
    "segment_softmax",
    "partition_softmax",
]


@pytest.mark.parametrize("name", JRAPH_NAMES)
def test_signatures_match_jraph(name):
    ours = inspect.signature(getattr(segment, name)).parameters
    theirs = inspect.signature(getattr(jraph, name)).parameters
    assert list(ours) == list(theirs)
    assert [p.default for p in ours.values()] == [p.default for p in theirs.values()]


def _random_segments(sort, seed, dtype=np.float32, out_of_range=False):
    rng = np.random.default_rng(seed)
    ids = rng.choice([0, 1, 2, 3, 5, 7], size=40)  # segments 4 and 6 are empty
    if out_of_range:
        ids[:3] = 8  # dropped by every reduction
    if sort:
        ids = np.sort(ids)
    data = rng.normal(size=(40, 3)) * 4
    return data.astype(dtype), ids


REDUCTIONS = [
    "segment_sum",
    "segment_mean",
    "segment_max",
    "segment_min",
    "segment_variance",
]


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_match_jraph(name, sort):
    data, ids = _random_segments(sort, seed=1, out_of_range=True)
    ours = getattr(segment, name)(jnp.asarray(data), jnp.asarray(ids), 8, indices_are_sorted=sort)
    theirs = getattr(jraph, name)(jnp.asarray(data), jnp.asarray(ids), 8, indices_are_sorted=sort)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["segment_sum", "segment_mean", "segment_max", "segment_min"])
def test_integer_reductions_match_jraph(name):
    data, ids = _random_segments(sort=False, seed=2, dtype=np.int32)
    ours = getattr(segment, name)(jnp.asarray(data), jnp.asarray(ids), 8)
    theirs = getattr(jraph, name)(jnp.asarray(data), jnp.asarray(ids), 8)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("name", ["segment_max_or_constant", "segment_min_or_constant"])
def test_or_constant_match_jraph(name):
    data, ids = _random_segments(sort=False, seed=3)
    data[ids == 5] = -np.inf  # an all -inf segment keeps -inf (emptiness is by count)
    ours = getattr(segment, name)(jnp.asarray(data), jnp.asarray(ids), 8, constant=-2.5)
    theirs = getattr(jraph, name)(jnp.asarray(data), jnp.asarray(ids), 8, constant=-2.5)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours[4], -2.5)


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("name", ["segment_normalize", "segment_softmax"])
def test_elementwise_match_jraph(name, sort):
    data, ids = _random_segments(sort, seed=4)
    ours = getattr(segment, name)(jnp.asarray(data), jnp.asarray(ids), 8, indices_are_sorted=sort)
    theirs = getattr(jraph, name)(jnp.asarray(data), jnp.asarray(ids), 8, indices_are_sorted=sort)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_segment_softmax_keeps_jraph_nan_on_all_neg_inf():
    logits = jnp.array([-jnp.inf, -jnp.inf, 1.0])
    ids = jnp.array([0, 0, 1])
    ours = segment.segment_softmax(logits, ids, 2)
    np.testing.assert_array_equal(ours, jraph.segment_softmax(logits, ids, 2))
    assert np.isnan(ours[0]) and ours[2] == 1.0


def test_partition_softmax_matches_jraph_and_jits():
    logits = jnp.asarray(_data((7, 2)))
    partitions = jnp.array([3, 0, 3, 1])
    ours = jax.jit(segment.partition_softmax, static_argnums=2)(logits, partitions, 7)
    np.testing.assert_allclose(ours, jraph.partition_softmax(logits, partitions, 7), rtol=1e-6)
    np.testing.assert_allclose(ours[:3].sum(0), 1.0, rtol=1e-6)
