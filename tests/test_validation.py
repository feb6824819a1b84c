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


# case: (changes to the valid graph, the message (hand-written), whether the check reads values).
MALFORMED = {
    "sender out of range": (
        dict(senders=np.array([0, 1, 3, 5], np.int32)),
        r"graph\.senders must be < the number of nodes \(5\); found maximum 5\.",
        True,
    ),
    "negative receiver": (
        dict(receivers=np.array([1, -2, 4, 3], np.int32)),
        r"graph\.receivers must be >= 0; found minimum -2\.",
        True,
    ),
    "float indices": (
        dict(senders=np.array([0.0, 1, 3, 4], np.float32)),
        r"graph\.senders must hold integer indices; found dtype float32\.",
        False,
    ),
    "2-D indices": (
        dict(senders=np.array([[0, 1], [3, 4]], np.int32)),
        r"graph\.senders must be 1-D \[n_edge\]; found shape \(2, 2\)\.",
        False,
    ),
    "length mismatch": (
        dict(receivers=np.array([1, 2, 4], np.int32)),
        r"graph\.senders has 4 entries but graph\.receivers has 3;",
        False,
    ),
    "node count": (
        dict(n_node=np.array([3, 3], np.int32)),
        r"sum\(graph\.n_node\) must equal the number of node rows \(5\); found 6\.",
        True,
    ),
    "edge count": (
        dict(n_edge=np.array([2, 1], np.int32)),
        r"sum\(graph\.n_edge\) must equal the number of edges in graph\.senders \(4\); found 3\.",
        True,
    ),
    "graph count": (
        dict(n_edge=np.array([4], np.int32)),
        r"graph\.n_edge has 1 entries but graph\.n_node has 2;",
        False,
    ),
    "float counts": (
        dict(n_node=np.array([3.0, 2.0], np.float32)),
        r"graph\.n_node must hold integer counts; found dtype float32\.",
        False,
    ),
    "globals rows": (
        dict(globals=np.zeros((3, 1), np.float32)),
        r"graph\.globals has 3 rows; expected 2 \(one row per graph, len\(n_node\)\)\.",
        False,
    ),
    "edges rows": (
        dict(edges=np.ones((3, 3), np.float32)),
        r"graph\.edges has 3 rows; expected 4 \(one row per entry of senders\)\.",
        False,
    ),
    "nested leaves": (
        dict(nodes={"x": np.zeros((5, 2), np.float32), "kind": np.zeros(4, np.int32)}),
        r"graph\.nodes leaves must share their leading size; "
        r"found \['kind'\]: \(4,\), \['x'\]: \(5, 2\)\.",
        False,
    ),
    "scalar globals": (
        dict(globals=np.float32(0.0)),
        r"got graph\.globals as a scalar; expected an array \[G, \.\.\.\], one row per graph\.",
        False,
    ),
    "cross-graph edge": (
        dict(receivers=np.array([1, 3, 4, 3], np.int32)),
        r"graph\.receivers\[1\] = 3 lies outside graph 0 of its edge \(nodes 0\.\.2\)",
        True,
    ),
    "negative node count": (
        dict(n_node=np.array([6, -1], np.int32)),
        r"graph\.n_node must be >= 0; found minimum -1\.",
        True,
    ),
    "negative edge count": (
        dict(n_edge=np.array([5, -1], np.int32)),
        r"graph\.n_edge must be >= 0; found minimum -1\.",
        True,
    ),
}


def test_valid_graph_passes_and_is_returned_unchanged():
    graph = _two_graphs()
    assert validate(graph, check_finite=True) is graph


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_host_validation_names_the_field_expected_and_found(case):
    changes, message, _ = MALFORMED[case]
    with pytest.raises(ValueError, match=message):
        validate(_two_graphs(**changes))


def test_feature_trees_may_be_lists_of_arrays():
    graph = _two_graphs(nodes=[np.zeros((5, 2), np.float32), np.zeros(5, np.int32)])
    assert validate(graph) is graph


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
    changes, message, value_dependent = MALFORMED[case]
    graph = jax.tree_util.tree_map(jnp.asarray, _two_graphs(**changes))
    run = checked(_sum_received)
    if case == "nested leaves":
        run = checked(lambda graph: graph.n_node)
    with pytest.raises(ValueError, match=message):
        run(graph)
    if value_dependent:
        with pytest.raises(ValueError) as host_error:
            validate(graph)
        with pytest.raises(ValueError) as device_error:
            run(graph)
        assert str(host_error.value).splitlines()[0] in str(device_error.value)


def test_checked_mode_rejects_non_finite_features_only_when_asked():
    x = jnp.array([[0, 1], [2, np.nan], [4, 5], [6, 7], [8, np.inf]], jnp.float32)
    graph = jax.tree_util.tree_map(jnp.asarray, _two_graphs())
    graph = graph._replace(nodes={"x": x, "kind": graph.nodes["kind"]})
    checked(_sum_received)(graph)
    with pytest.raises(ValueError, match=r"graph.nodes\['x'\] must be finite; found 2 NaN"):
        checked(_sum_received, check_finite=True)(graph)


def _three_graphs(**changes):
    """The two-graph batch plus an empty third graph, so three counts can wrap to the sums."""
    graph = _two_graphs(
        globals=np.zeros((3, 1), np.float32),
        n_node=np.array([3, 2, 0], np.int32),
        n_edge=np.array([2, 2, 0], np.int32),
    )
    return graph._replace(**changes)


# Counts whose sum wraps around the dtype to exactly the 5 node rows or the 4 edges:
# (2**63 - 1) * 2 + 7 = 2**64 + 5 and (2**31 - 1) * 2 + 7 = 2**32 + 5.
NODE_COUNTS_WRAP_INT64 = np.array([2**63 - 1, 2**63 - 1, 7], np.int64)
EDGE_COUNTS_WRAP_INT64 = np.array([2**63 - 1, 2**63 - 1, 6], np.int64)
NODE_COUNTS_WRAP_INT32 = np.array([2**31 - 1, 2**31 - 1, 7], np.int32)
EDGE_COUNTS_WRAP_INT32 = np.array([2**31 - 1, 2**31 - 1, 6], np.int32)
OVERFLOW_INT64 = (
    r"sum\(graph\.{field}\) overflows int64; the running sum wraps around at "
    r"graph\.{field}\[1\] = 9223372036854775807 after a total of 9223372036854775807\."
)
OVERFLOW_INT32 = (
    r"sum\(graph\.{field}\) overflows int32; the running sum wraps around at "
    r"graph\.{field}\[1\] = 2147483647 after a total of 2147483647\."
)


def test_host_rejects_node_counts_whose_sum_wraps_around():
    graph = _three_graphs(n_node=NODE_COUNTS_WRAP_INT64, n_edge=np.array([4, 0, 0], np.int64))
    assert int(np.sum(graph.n_node)) == 5
    with pytest.raises(ValueError, match=OVERFLOW_INT64.format(field="n_node")):
        validate(graph)


def test_host_rejects_edge_counts_whose_sum_wraps_around():
    graph = _three_graphs(
        n_node=np.array([5, 0, 0], np.int64), n_edge=EDGE_COUNTS_WRAP_INT64,
        senders=None, receivers=None, edges=None,
    )
    with pytest.raises(ValueError, match=OVERFLOW_INT64.format(field="n_edge")):
        validate(graph)


@pytest.mark.parametrize(
    "field, changes",
    [
        ("n_node", dict(n_node=NODE_COUNTS_WRAP_INT32, n_edge=np.array([4, 0, 0], np.int32))),
        ("n_edge", dict(n_node=np.array([5, 0, 0], np.int32), n_edge=EDGE_COUNTS_WRAP_INT32)),
    ],
)
def test_checked_mode_rejects_counts_whose_int32_sum_wraps_around(field, changes):
    graph = jax.tree_util.tree_map(jnp.asarray, _three_graphs(**changes))
    assert int(jnp.sum(getattr(graph, field))) == {"n_node": 5, "n_edge": 4}[field]
    with pytest.raises(ValueError, match=OVERFLOW_INT32.format(field=field)):
        checked(_sum_received)(graph)
    host_sum = {"n_node": 2**32 + 5, "n_edge": 2**32 + 4}[field]  # NumPy sums int32 in int64
    host_message = rf"sum\(graph\.{field}\) must equal .*; found {host_sum}\."
    with pytest.raises(ValueError, match=host_message):
        validate(graph)


# case: (changes, host (error, message), checked mode (error, message)); hand-written messages.
ARRAY_EXPECTED = r"expected an integer array \[{shape}\] \(np\.ndarray or jax\.Array\)\. " + (
    r"Convert it with np\.asarray\."
)
NESTED_LIST = r"A nested Python list is read as a tree of scalars: convert it with np\.asarray\."
NOT_ARRAYS = {
    "senders as a list": (
        dict(senders=[0, 1, 3, 4]),
        (TypeError, r"got graph\.senders as a list; " + ARRAY_EXPECTED.format(shape="n_edge")),
        (TypeError, r"got graph\.senders as a list; " + ARRAY_EXPECTED.format(shape="n_edge")),
    ),
    "n_node as a tuple": (
        dict(n_node=(3, 2)),
        (TypeError, r"got graph\.n_node as a tuple; " + ARRAY_EXPECTED.format(shape="n_graph")),
        (TypeError, r"got graph\.n_node as a tuple; " + ARRAY_EXPECTED.format(shape="n_graph")),
    ),
    "nodes as a nested list": (
        dict(nodes=[[0.0, 1.0]] * 5),
        (TypeError, r"got graph\.nodes\[0\]\[0\] as a float; expected an array \[N, \.\.\.\], "
         r"one row per node\. " + NESTED_LIST),
        (ValueError, r"got graph\.nodes\[0\]\[0\] as a scalar; expected an array "
         r"\[N, \.\.\.\], one row per node\. " + NESTED_LIST),
    ),
    "globals as a Python float": (
        dict(globals=0.0),
        (TypeError, r"got graph\.globals as a float; expected an array \[G, \.\.\.\], one row "
         r"per graph\."),
        (ValueError, r"got graph\.globals as a scalar; expected an array \[G, \.\.\.\], one "
         r"row per graph\."),
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_ARRAYS))
def test_host_validation_rejects_fields_that_are_not_arrays(case):
    changes, (error, message), _ = NOT_ARRAYS[case]
    with pytest.raises(error, match="^validate " + message):
        validate(_two_graphs(**changes))


@pytest.mark.parametrize("case", sorted(NOT_ARRAYS))
def test_checked_mode_rejects_fields_that_are_not_arrays(case):
    changes, _, (error, message) = NOT_ARRAYS[case]
    with pytest.raises(error, match="^check_graph " + message):
        checked(_sum_received)(_two_graphs(**changes))


def test_list_of_graphs_is_pointed_to_batch_np():
    graphs = [_two_graphs(), _two_graphs()]
    message = (
        r"^validate got a list of 2 GraphsTuples; expected one GraphsTuple\. "
        r"Batch them into one with gnkit\.batch_np first\.$"
    )
    with pytest.raises(TypeError, match=message):
        validate(graphs)
    with pytest.raises(TypeError, match=message.replace("validate", "check_graph").rstrip("$")):
        checked(_sum_received)(graphs)
    batch = gnkit.batch_np(graphs)
    assert validate(batch) is batch


def test_something_else_than_a_graph_says_what_it_got():
    with pytest.raises(TypeError, match=r"^validate expected a GraphsTuple; got a dict\.$"):
        validate(_two_graphs()._asdict())


def test_checked_mode_returns_outputs_of_valid_graph():
    graph = jax.tree_util.tree_map(jnp.asarray, _two_graphs())
    np.testing.assert_allclose(checked(_sum_received)(graph), _sum_received(graph))
