"""`graph.require`, the entry check of every block: one graph, of arrays, with the fields it needs.

Every public block and helper must reject a malformed input with the same message (after the
block's name) before any update function runs, eagerly and under `jit`.
"""

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest

import gnkit
from gnkit import attention, blocks, convolutions
from gnkit.graph import require


def _graph(**changes):
    graph = gnkit.GraphsTuple(
        nodes=np.arange(10, dtype=np.float32).reshape(5, 2),
        edges=np.ones((4, 3), np.float32),
        senders=np.array([0, 1, 3, 4], np.int32),
        receivers=np.array([1, 2, 4, 3], np.int32),
        globals=np.zeros((2, 1), np.float32),
        n_node=np.array([3, 2], np.int32),
        n_edge=np.array([2, 2], np.int32),
    )
    return graph._replace(**changes)


def _must_not_run(*args, **kwargs):
    pytest.fail("an update function ran on a graph the entry check should have rejected")


ENTRY_POINTS = {
    "edge_block": lambda: blocks.edge_block(_must_not_run),
    "node_block": lambda: blocks.node_block(_must_not_run),
    "global_block": lambda: blocks.global_block(_must_not_run),
    "graph_network": lambda: blocks.graph_network(_must_not_run, _must_not_run, _must_not_run),
    "graph_independent": lambda: blocks.graph_independent(node_fn=_must_not_run),
    "interaction_network": lambda: blocks.interaction_network(_must_not_run, _must_not_run),
    "relation_network": lambda: blocks.relation_network(_must_not_run, _must_not_run),
    "deep_sets": lambda: blocks.deep_sets(_must_not_run, _must_not_run),
    "comm_net": lambda: blocks.comm_net(_must_not_run),
    "broadcast_sender_nodes_to_edges": lambda: blocks.broadcast_sender_nodes_to_edges,
    "broadcast_receiver_nodes_to_edges": lambda: blocks.broadcast_receiver_nodes_to_edges,
    "broadcast_globals_to_edges": lambda: blocks.broadcast_globals_to_edges,
    "broadcast_globals_to_nodes": lambda: blocks.broadcast_globals_to_nodes,
    "aggregate_received_edges": lambda: blocks.aggregate_received_edges,
    "aggregate_sent_edges": lambda: blocks.aggregate_sent_edges,
    "aggregate_edges_to_globals": lambda: blocks.aggregate_edges_to_globals,
    "aggregate_nodes_to_globals": lambda: blocks.aggregate_nodes_to_globals,
    "graph_attention": lambda: attention.graph_attention(
        _must_not_run, _must_not_run, _must_not_run
    ),
    "gat": lambda: attention.gat(_must_not_run, _must_not_run),
    "gcn": lambda: convolutions.gcn(_must_not_run),
    "graph_sage": lambda: convolutions.graph_sage(_must_not_run),
    "gin": lambda: convolutions.gin(_must_not_run),
}
USES_NODES = [
    "edge_block", "node_block", "graph_network", "comm_net", "deep_sets", "graph_independent",
    "graph_attention", "gat", "gcn", "graph_sage", "gin",
]

LIST_OF_GRAPHS = (
    r"^\w+ got a list of 2 GraphsTuples; expected one GraphsTuple\. "
    r"Batch them into one with gnkit\.batch_np first\.$"
)
SENDERS_LIST = (
    r"^\w+ got graph\.senders as a list; expected an integer array \[n_edge\] "
    r"\(np\.ndarray or jax\.Array\)\. Convert it with np\.asarray\.$"
)
NODES_NESTED_LIST = (
    r"^\w+ got graph\.nodes\[0\]\[0\] as a float; expected an array \[N, \.\.\.\], one row per "
    r"node\. A nested Python list is read as a tree of scalars: convert it with np\.asarray\.$"
)
NODES_SCALAR_LEAF = (
    r"^\w+ got graph\.nodes\[0\]\[0\] as a scalar; expected an array \[N, \.\.\.\], one row per "
    r"node\. A nested Python list is read as a tree of scalars: convert it with np\.asarray\."
)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_names_a_list_of_graphs(entry):
    apply = ENTRY_POINTS[entry]()
    with pytest.raises(TypeError, match=LIST_OF_GRAPHS):
        apply([_graph(), _graph()])


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_names_a_list_field(entry):
    apply = ENTRY_POINTS[entry]()
    with pytest.raises(TypeError, match=SENDERS_LIST):
        apply(_graph(senders=[0, 1, 3, 4]))
    with pytest.raises(TypeError, match=NODES_NESTED_LIST):
        apply(_graph(nodes=[[0.0, 1.0]] * 5))


@pytest.mark.parametrize("entry", ["graph_network", "gcn", "aggregate_received_edges"])
def test_entry_check_under_jit(entry):
    apply = jax.jit(ENTRY_POINTS[entry]())
    with pytest.raises(TypeError, match=LIST_OF_GRAPHS.rstrip("$")):
        apply([_graph(), _graph()])
    with pytest.raises(TypeError, match=SENDERS_LIST.rstrip("$")):
        apply(_graph(senders=[0, 1, 3, 4]))


@pytest.mark.parametrize("entry", USES_NODES)
def test_blocks_using_nodes_reject_scalar_leaves_under_jit(entry):
    apply = jax.jit(ENTRY_POINTS[entry]())
    with pytest.raises(ValueError, match=NODES_SCALAR_LEAF):
        apply(_graph(nodes=[[0.0, 1.0]] * 5))


def test_require_names_missing_fields():
    message = (
        r"^edge_block needs graph\.senders, graph\.receivers, but they are None\. Give the graph "
        r"those fields, or switch off the option of the block that uses them\.$"
    )
    with pytest.raises(ValueError, match=message):
        require(_graph(senders=None, receivers=None), "senders", "receivers", block="edge_block")


def test_require_names_something_that_is_not_a_graph():
    with pytest.raises(TypeError, match=r"^gcn expected a GraphsTuple; got a ndarray\.$"):
        require(np.zeros((5, 2)), "nodes", block="gcn")


def test_require_accepts_jraph_graphs_and_lists_of_arrays_as_feature_trees():
    graph = _graph(nodes=[np.zeros((5, 2), np.float32), np.ones(5, np.float32)])
    require(jraph.GraphsTuple(**graph._asdict()), "nodes", "senders", block="edge_block")
    doubled = blocks.graph_independent(node_fn=lambda nodes: [2 * x for x in nodes])(graph)
    np.testing.assert_array_equal(doubled.nodes[0], np.zeros((5, 2)))
    np.testing.assert_array_equal(doubled.nodes[1], np.full(5, 2.0))


def test_require_accepts_tracers_and_numpy_scalars_of_the_right_shape():
    graph = jax.tree_util.tree_map(jnp.asarray, _graph())
    summed = jax.jit(blocks.aggregate_nodes_to_globals)(graph)
    np.testing.assert_allclose(summed, [[0 + 2 + 4, 1 + 3 + 5], [6 + 8, 7 + 9]])
    require(_graph(globals={"step": np.zeros(2, np.int32)}), "globals", block="global_block")
