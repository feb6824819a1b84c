"""Aggregators against NumPy references; LCM's tree against trees written out by hand."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from gnkit import aggregators
from gnkit.nn import LCMAggregation

# Five segments: 0 has three elements, 1 is empty, 2 has one, 3 has three, 4 is empty (trailing).
IDS = np.array([3, 0, 2, 0, 3, 0, 3])
NUM_SEGMENTS = 5
DEGREES = np.array([3, 0, 1, 3, 0])


def _data(shape=(7, 2), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _reference(data, reduce):
    """Per-segment NumPy reduction in float64, 0 on empty segments: `[S, F]`."""
    out = np.zeros((NUM_SEGMENTS,) + data.shape[1:])
    for s in range(NUM_SEGMENTS):
        rows = data[IDS == s].astype(np.float64)
        if len(rows):
            out[s] = reduce(rows)
    return out


def _np_softmax_aggregate(rows, t):
    weights = np.exp(t * rows - (t * rows).max(0))
    return (weights / weights.sum(0) * rows).sum(0)


def _np_std(rows):
    var = rows.var(0)
    return np.where(var > 1e-5, np.sqrt(var), 0.0)


NAMED = {
    "sum": lambda r: r.sum(0),
    "mean": lambda r: r.mean(0),
    "max": lambda r: r.max(0),
    "min": lambda r: r.min(0),
    "var": lambda r: r.var(0),
    "std": _np_std,
    "softmax": lambda r: _np_softmax_aggregate(r, 1.0),
}


def _apply(aggregate, data, sort=False):
    ids = IDS
    if sort:
        order = np.argsort(IDS, kind="stable")
        data, ids = data[order], IDS[order]
    return aggregate(jnp.asarray(data), jnp.asarray(ids), NUM_SEGMENTS, indices_are_sorted=sort)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_aggregators_match_numpy(name):
    data = _data()
    expected = _reference(data, NAMED[name])
    for sort in (False, True):
        out = _apply(aggregators.get_aggregator(name), data, sort)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(out)[[1, 4]], 0.0)


def test_module_level_names_are_the_named_aggregators():
    data = _data()
    for name in ("sum", "mean", "max", "min", "var", "std"):
        np.testing.assert_array_equal(
            _apply(getattr(aggregators, name), data),
            _apply(aggregators.get_aggregator(name), data),
        )


@pytest.mark.parametrize("temperature", [0.5, -2.0])
def test_softmax_aggregation_matches_numpy(temperature):
    data = _data()
    out = _apply(aggregators.softmax_aggregation(temperature), data)
    expected = _reference(data, lambda r: _np_softmax_aggregate(r, temperature))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_softmax_aggregation_tends_to_max():
    data = _data()
    out = _apply(aggregators.softmax_aggregation(200.0), data)
    np.testing.assert_allclose(out, _reference(data, NAMED["max"]), atol=1e-3)


@pytest.mark.parametrize("p", [1.0, 2.0, 0.5])
def test_power_mean_matches_numpy(p):
    data = np.abs(_data()) + 0.1
    data[0, 0] = 150.0  # clipped to 100
    out = _apply(aggregators.power_mean(p), data)
    expected = _reference(data, lambda r: np.mean(np.clip(r, 1e-6, 100.0) ** p, 0) ** (1 / p))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_power_mean_clips_negative_inputs():
    data = np.array([[-3.0], [4.0], [-1.0], [0.0], [2.0], [5.0], [-8.0]], np.float32)
    out = _apply(aggregators.power_mean(2.0), data)
    # segment 0: rows 1, 3, 5 -> 4, 1e-6, 5; segment 2: 1e-6; segment 3: 1e-6, 2, 1e-6.
    np.testing.assert_allclose(
        out[:, 0], [np.sqrt(41 / 3), 0.0, 1e-6, np.sqrt(4 / 3), 0.0], rtol=1e-5
    )


def test_multi_aggregation_concatenates():
    data = _data()
    aggregate = aggregators.multi_aggregation("mean", "max", aggregators.softmax_aggregation(0.5))
    out = _apply(aggregate, data)
    assert out.shape == (NUM_SEGMENTS, 6)
    expected = np.concatenate(
        [
            _reference(data, NAMED["mean"]),
            _reference(data, NAMED["max"]),
            _reference(data, lambda r: _np_softmax_aggregate(r, 0.5)),
        ],
        axis=-1,
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_degree_scalers():
    data = np.abs(_data()) + 1.0
    delta = 1.3
    aggregate = aggregators.degree_scaler(
        "sum", ["identity", "amplification", "attenuation"], delta
    )
    out = _apply(aggregate, data)
    summed = _reference(data, NAMED["sum"])
    amplification = np.log(DEGREES + 1.0) / delta
    attenuation = delta / np.log(np.maximum(DEGREES, 1) + 1.0)
    expected = np.concatenate(
        [summed, summed * amplification[:, None], summed * attenuation[:, None]], axis=-1
    )
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    assert np.all(np.isfinite(out))


def test_degree_scaler_single_scaler_keeps_width():
    data = _data()
    out = _apply(aggregators.degree_scaler("mean", "attenuation", 2.0), data)
    expected = _reference(data, NAMED["mean"]) * (2.0 / np.log([4.0, 2.0, 2.0, 4.0, 2.0]))[:, None]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_mean_log_degree():
    assert aggregators.mean_log_degree([0, 1, 3]) == pytest.approx(
        (math.log(1) + math.log(2) + math.log(4)) / 3
    )


def test_lookup_errors():
    assert aggregators.get_aggregator(aggregators.mean) is aggregators.mean
    with pytest.raises(ValueError, match="unknown aggregator 'median'"):
        aggregators.get_aggregator("median")
    with pytest.raises(ValueError, match="unknown scaler"):
        aggregators.degree_scaler("sum", "linear", 1.0)
    with pytest.raises(ValueError, match="at least one"):
        aggregators.multi_aggregation()


GRADIENT_CASES = {
    **{name: aggregators.get_aggregator(name) for name in NAMED},
    "power_mean": aggregators.power_mean(3.0),
    "scaled": aggregators.degree_scaler("max", ["amplification", "attenuation"], 1.0),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_finite_on_empty_segments(name):
    aggregate = GRADIENT_CASES[name]
    grads = jax.grad(lambda x: jnp.sum(_apply(aggregate, x)))(jnp.asarray(_data()))
    assert np.all(np.isfinite(grads))


@pytest.mark.parametrize(
    "aggregate",
    [aggregators.softmax_aggregation(0.7), aggregators.power_mean(2.5)],
    ids=["softmax", "power_mean"],
)
def test_check_grads(aggregate):
    data = jnp.asarray(np.abs(_data(seed=2)) + 0.5)  # inside power_mean's clip range
    check_grads(lambda x: _apply(aggregate, x), (data,), order=1, atol=2e-2, rtol=2e-2)


# LCM: balanced tree reduction.


def test_tree_depth_is_ceil_log2():
    for n in [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 100, 1024, 1025]:
        assert aggregators.tree_depth(n) == math.ceil(math.log2(n))
    with pytest.raises(ValueError):
        aggregators.tree_depth(0)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9])
def test_tree_reduce_calls_op_once_per_level(n):
    calls = []

    def op(a, b):
        calls.append(a.shape)
        return a + b

    ids = jnp.zeros(n, jnp.int32)
    jax.eval_shape(lambda x: aggregators.tree_reduce(op, x, ids, 1, n), jnp.ones((n, 1)))
    assert len(calls) == math.ceil(math.log2(n))


def test_tree_reduce_layout_written_by_hand():
    # A non-commutative op that records the tree: op(a, b) = 10 a + b, digits are elements.
    def op(a, b):
        return 10 * a + b

    # segment 0: 1 2 3 4 5 -> ((1o2)o(3o4))o5; segment 1: empty; segment 2: 7;
    # segment 3: 1 2 3 -> (1o2)o3; segment 4: 4 3 2 1 -> (4o3)o(2o1). Ids interleaved, unsorted.
    ids = np.array([0, 3, 0, 4, 2, 0, 3, 4, 4, 0, 3, 4, 0])
    values = np.array([1, 1, 2, 4, 7, 3, 2, 3, 2, 4, 3, 1, 5], np.float32)
    expected = [10 * (10 * 12 + 34) + 5, 0, 7, 10 * 12 + 3, 10 * 43 + 21]
    reduce = jax.jit(aggregators.tree_reduce, static_argnums=(0, 3, 4, 5))
    out = reduce(op, jnp.asarray(values)[:, None], jnp.asarray(ids), 5, 5)
    np.testing.assert_array_equal(out[:, 0], expected)
    order = np.argsort(ids, kind="stable")  # sorted ids, and slack in max_degree: same trees
    out = reduce(op, jnp.asarray(values[order])[:, None], jnp.asarray(ids[order]), 5, 13, True)
    np.testing.assert_array_equal(out[:, 0], expected)


def test_tree_reduce_drops_elements_past_max_degree_and_handles_no_elements():
    reduce = jax.jit(aggregators.tree_reduce, static_argnums=(0, 3, 4))
    out = reduce(jnp.add, jnp.arange(1.0, 6.0), jnp.zeros(5, jnp.int32), 1, 3)
    np.testing.assert_array_equal(out, [6.0])
    out = reduce(jnp.add, jnp.zeros((0, 2)), jnp.zeros(0, jnp.int32), 3, 4)
    np.testing.assert_array_equal(out, np.zeros((3, 2)))


FEATURES = 4


@pytest.fixture(scope="module")
def lcm():
    """An LCM (projection 3 -> 4), its parameters, jitted `apply`, `combine` and projection."""
    module = LCMAggregation(features=FEATURES, max_degree=5)
    data = jnp.asarray(_data((7, 3)))
    # Random parameters of the right shapes: cheaper to build than compiling the initializers.
    init = functools.partial(module.init, num_segments=NUM_SEGMENTS)
    shapes = jax.eval_shape(init, jax.random.key(0), data, jnp.asarray(IDS))
    rng = np.random.default_rng(0)
    params = jax.tree_util.tree_map(
        lambda leaf: jnp.asarray(rng.normal(scale=0.5, size=leaf.shape), leaf.dtype), shapes
    )
    apply = jax.jit(module.apply, static_argnums=3)
    combine = jax.jit(
        lambda a, b: module.apply(params, a, b, method=LCMAggregation.combine)
    )
    projection = params["params"]["projection"]

    def project(x):
        return np.maximum(x @ np.asarray(projection["kernel"]) + projection["bias"], 0.0)

    return module, params, apply, combine, project


def test_lcm_operator_is_commutative(lcm):
    _, _, _, combine, _ = lcm
    a, b = jnp.asarray(_data((2, FEATURES), seed=1))
    np.testing.assert_allclose(combine(a, b), combine(b, a), rtol=1e-6, atol=1e-7)
    assert not np.allclose(combine(a, b), a) and not np.allclose(combine(a, b), b)


def test_lcm_matches_tree_written_by_hand(lcm):
    _, params, apply, c, project = lcm
    data = _data((7, 3), seed=3)
    ids = jnp.array([0, 0, 0, 0, 0, 2, 3])  # sizes 5, 0, 1, 1, 0
    out = apply(params, jnp.asarray(data), ids, NUM_SEGMENTS)
    e = jnp.asarray(project(data))  # PyG's projection: relu(Dense(x))
    np.testing.assert_allclose(out[0], c(c(c(e[0], e[1]), c(e[2], e[3])), e[4]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out)[[1, 4]], 0.0)
    np.testing.assert_allclose(out[2:4], e[5:7], rtol=1e-6)


def test_lcm_two_element_permutation_and_padding_invariance(lcm):
    _, params, apply, _, _ = lcm
    data = jnp.asarray(_data((7, 3), seed=4))
    swapped = data[jnp.array([0, 3, 2, 1, 4, 5, 6])]
    ids = jnp.array([1, 0, 2, 0, 3, 3, 3])  # segment 0 holds rows 1 and 3
    out = apply(params, data, ids, NUM_SEGMENTS)
    np.testing.assert_allclose(apply(params, swapped, ids, NUM_SEGMENTS)[0], out[0], rtol=1e-6)
    wider = LCMAggregation(features=FEATURES, max_degree=16)
    wider_apply = jax.jit(wider.apply, static_argnums=3)
    np.testing.assert_allclose(wider_apply(params, data, ids, NUM_SEGMENTS), out, rtol=1e-6)


def test_lcm_gradients_finite_with_empty_segments(lcm):
    module, params, _, _, _ = lcm
    ids = jnp.asarray(IDS)

    def loss(p, x):
        return jnp.sum(module.apply(p, x, ids, NUM_SEGMENTS) ** 2)

    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(params, jnp.asarray(_data((7, 3))))
    leaves = jax.tree_util.tree_leaves(grads)
    assert all(np.all(np.isfinite(g)) for g in leaves)
    assert any(np.any(g != 0) for g in leaves)


def test_lcm_without_projection_needs_matching_width():
    module = LCMAggregation(features=3, max_degree=2, project=False)
    with pytest.raises(ValueError, match="features=3"):
        jax.eval_shape(module.init, jax.random.key(0), jnp.ones((2, 5)), jnp.array([0, 0]), 1)


def test_lcm_module_lives_in_nn():
    """The Flax module sits in `gnkit.nn` (tests/test_dependencies.py checks that nothing below
    it imports Flax); `gnkit.aggregators` keeps the functional tree."""
    assert not hasattr(aggregators, "LCMAggregation")
    assert LCMAggregation.__module__ == "gnkit.nn.lcm"
