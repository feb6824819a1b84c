"""Validation rejects each malformation with a message naming the field, on host and in jit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gnkit
from gnkit.validation import checked, validate


def _two_graphs(**changes):
    graph = gnkit.GraphsTuple(
        nodes={"x": np.arange(10, dtype=np.float32).reshape(5, 2), "kind": np.zeros(5, np.int32)},
        edges=np.ones((4, 3), np.float32),
        senders=np.array([0, 1, 3, 4], np.int32),
        receivers=np.array([1, 2, 4, 3], np.int32),
        globals=np.zeros((2, 1), np.float32),
        n_node=np.array([3, 2], np.int32),
        n_edge=np.array([2, 2], np.int32),
    )
    return graph._replace(**changes)


MALFORMED = {
    "sender out of range": (dict(senders=np.array([0, 1, 3, 5], np.int32)), "senders", True),
    "negative receiver": (dict(receivers=np.array([1, -2, 4, 3], np.int32)), "receivers", True),
    "float indices": (dict(senders=np.array([0.0, 1, 3, 4], np.float32)), "senders", False),
    "length mismatch": (dict(receivers=np.array([1, 2, 4], np.int32)), "receivers", False),
    "node count": (dict(n_node=np.array([3, 3], np.int32)), "n_node", True),
    "edge count": (dict(n_edge=np.array([2, 1], np.int32)), "n_edge", True),
    "graph count": (dict(n_edge=np.array([4], np.int32)), "n_edge", False),
    "globals rows": (dict(globals=np.zeros((3, 1), np.float32)), "globals", False),
    "nested leaves": (
        dict(nodes={"x": np.zeros((5, 2), np.float32), "kind": np.zeros(4, np.int32)}),
        "nodes",
        False,
    ),
    "cross-graph edge": (dict(receivers=np.array([1, 3, 4, 3], np.int32)), "receivers", True),
    "negative count": (
        dict(n_node=np.array([6, -1], np.int32)),
        "n_node",
        True,
    ),
}


def test_valid_graph_passes_and_is_returned_unchanged():
    graph = _two_graphs()
    assert validate(graph, check_finite=True) is graph


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_host_validation_names_the_field(case):
    changes, field, _ = MALFORMED[case]
    with pytest.raises(ValueError, match=rf"graph\.{field}"):
        validate(_two_graphs(**changes))


def test_cross_graph_message_says_where():
    changes, _, _ = MALFORMED["cross-graph edge"]
    message = r"graph.receivers\[1\] = 3 lies outside graph 0 .*nodes 0..2"
    with pytest.raises(ValueError, match=message):
        validate(_two_graphs(**changes))


def test_non_finite_features_only_when_asked():
    nodes = {"x": np.array([[0, 1], [2, np.nan], [4, 5], [6, 7], [8, np.inf]], np.float32),
             "kind": np.zeros(5, np.int32)}
    graph = _two_graphs(nodes=nodes)
    validate(graph)
    with pytest.raises(ValueError, match=r"graph.nodes\['x'\] must be finite; found 2 NaN"):
        validate(graph, check_finite=True)


def _sum_received(graph):
    return jax.ops.segment_sum(graph.nodes["x"][graph.senders], graph.receivers, 5)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_checked_mode_raises_same_problem_inside_jit(case):
    changes, field, value_dependent = MALFORMED[case]
    graph = jax.tree_util.tree_map(jnp.asarray, _two_graphs(**changes))
    run = checked(_sum_received)
    if case == "nested leaves":
        run = checked(lambda graph: graph.n_node)
    with pytest.raises(ValueError, match=rf"graph\.{field}"):
        run(graph)
    if value_dependent:
        with pytest.raises(ValueError) as host_error:
            validate(graph)
        with pytest.raises(ValueError) as device_error:
            run(graph)
        assert str(host_error.value).splitlines()[0] in str(device_error.value)


def test_checked_mode_returns_outputs_of_valid_graph():
    graph = jax.tree_util.tree_map(jnp.asarray, _two_graphs())
    np.testing.assert_allclose(checked(_sum_received)(graph), _sum_received(graph))
