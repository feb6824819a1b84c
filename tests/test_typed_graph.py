"""gnkit.typed_graph host tools: the pytree under jit, batching, padding and masks, budgets,
validation messages (host and checked jit) and conversions (GraphsTuple, HeteroData, networkx).
Expected values are written by hand or recomputed with NumPy from the inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _typed_graphs import CITES, WRITES, WRITTEN_BY, make_graph, random_graphs

import gnkit
from gnkit import typed_graph as tg


def assert_same(a, b):
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def tiny():
    """Papers 0, 1 and author 0; author 0 writes both papers, paper 1 cites paper 0."""
    return tg.TypedGraph(
        tg.Context(np.array([1])),
        {"paper": tg.NodeSet(np.array([2]), np.array([[1.0], [2.0]])),
         "author": tg.NodeSet(np.array([1]), np.array([[5.0]]))},
        {CITES: tg.EdgeSet(np.array([1]), np.array([1]), np.array([0])),
         WRITES: tg.EdgeSet(np.array([2]), np.array([0, 0]), np.array([0, 1]))},
    )


# ------------------------------------------------------------------------------- pytree and jit


def test_set_names_are_static_structure_under_jit():
    traces = []

    @jax.jit
    def total(graph):
        traces.append(1)
        return sum(jnp.sum(s.features) for s in graph.nodes.values())

    graph = tiny()
    assert float(total(graph)) == 8.0
    papers = graph.nodes["paper"]._replace(features=np.array([[3.0], [4.0]]))
    assert float(total(graph._replace(nodes={**graph.nodes, "paper": papers}))) == 12.0
    assert len(traces) == 1  # new values, same names and shapes: no retrace
    renamed = graph._replace(nodes={"article": graph.nodes["paper"],
                                    "author": graph.nodes["author"]})
    assert float(total(renamed)) == 8.0
    assert len(traces) == 2  # a new node set name is a new structure
    leaves, treedef = jax.tree_util.tree_flatten(graph)
    assert "cites" in str(treedef) and all(isinstance(x, np.ndarray) for x in leaves)


def test_edge_lookup_by_name():
    graph = tiny()
    assert graph.edge_key_by_name("writes") == WRITES
    assert graph.num_edges("writes") == 2 and graph.num_nodes("author") == 1
    duplicated = graph._replace(edges={**graph.edges, tg.EdgeSetKey("writes", ("author",
                                       "author")): graph.edges[CITES]})
    with pytest.raises(KeyError, match="2 edge sets named 'writes'"):
        duplicated.edge_key_by_name("writes")
    with pytest.raises(KeyError, match="no edge set named 'reviews'"):
        graph.edge_set_by_name("reviews")


# ---------------------------------------------------------------------------- batch and unbatch


def test_batch_offsets_indices_by_their_own_node_sets():
    graph = tiny()
    both = tg.batch([graph, graph])
    assert both.nodes["paper"].n_node.tolist() == [2, 2]
    # cites: paper 1 -> paper 0, then the second copy shifted by 2 papers.
    assert both.edges[CITES].senders.tolist() == [1, 3]
    assert both.edges[CITES].receivers.tolist() == [0, 2]
    # writes: author 0 -> papers 0, 1; second copy: author 1 (one author before) -> papers 2, 3.
    assert both.edges[WRITES].senders.tolist() == [0, 0, 1, 1]
    assert both.edges[WRITES].receivers.tolist() == [0, 1, 2, 3]
    assert both.context.n_graph.tolist() == [1, 1]


def test_unbatch_inverts_batch():
    graphs = random_graphs(0, 5)
    batched = tg.batch(graphs)
    tg.validate(batched)
    for original, recovered in zip(graphs, tg.unbatch(batched), strict=True):
        assert_same(original, recovered)


def test_batch_rejects_different_schemas():
    graph = tiny()
    other = graph._replace(edges={CITES: graph.edges[CITES]})
    with pytest.raises(ValueError, match=r"graphs\[1\] has node sets"):
        tg.batch([graph, other])


# ------------------------------------------------------------------------- padding and masks


def test_padding_edges_point_at_padding_nodes_of_their_own_sets():
    graphs = random_graphs(1, 3)
    batched = tg.batch(graphs)
    sizes = tg.sizes_of(batched)
    budget = tg.Budget(
        n_graph=5,
        n_node={"paper": sizes.n_node["paper"] + 3, "author": sizes.n_node["author"] + 2},
        n_edge={"cites": sizes.n_edge[CITES] + 4, WRITES: sizes.n_edge[WRITES],
                "written_by": sizes.n_edge[WRITTEN_BY] + 1},
    )
    padded = tg.pad_to_budget(batched, budget)
    tg.validate(padded)
    n_paper, n_author = sizes.n_node["paper"], sizes.n_node["author"]
    assert padded.nodes["paper"].n_node.tolist() == batched.nodes["paper"].n_node.tolist() + [3, 0]
    assert padded.nodes["paper"].global_id[n_paper:].tolist() == [-1, -1, -1]
    assert padded.edges[CITES].senders[-4:].tolist() == [n_paper] * 4
    # written_by goes paper -> author: the padding edge leaves the first padding paper and
    # enters the first padding author.
    assert padded.edges[WRITTEN_BY].senders[-1] == n_paper
    assert padded.edges[WRITTEN_BY].receivers[-1] == n_author
    assert padded.edges[WRITES].n_edge.tolist()[-2:] == [0, 0]
    assert tg.graph_mask(padded).tolist() == [True] * 3 + [False] * 2
    assert np.asarray(tg.node_mask(padded, "author")).tolist() == [True] * n_author + [False] * 2
    assert int(np.sum(tg.edge_mask(padded, CITES))) == sizes.n_edge[CITES]
    jitted = jax.jit(lambda g: (tg.graph_mask(g), tg.node_mask(g, "paper"),
                                tg.edge_mask(g, "written_by")))(padded)
    assert int(jnp.sum(jitted[1])) == n_paper and int(jnp.sum(jitted[2])) == sizes.n_edge[
        WRITTEN_BY]
    assert_same(tg.unpad(padded), batched)


def test_pad_to_budget_names_the_set_that_does_not_fit():
    graph = tiny()
    budget = tg.Budget(3, {"paper": 2, "author": 4}, {"cites": 1, "writes": 2})
    with pytest.raises(ValueError, match=r"node set 'paper': 2 nodes \+ 1 padding node > budget 2"):
        tg.pad_to_budget(graph, budget)
    with pytest.raises(ValueError, match=r"budget's edge sets"):
        tg.pad_to_budget(graph, tg.Budget(3, {"paper": 3, "author": 2}, {"cites": 1}))


# ----------------------------------------------------------------------------------- budgets


def test_bucket_policy_rounds_each_set_up_its_ladder():
    graph = tg.batch(random_graphs(2, 4))
    sizes = tg.sizes_of(graph)
    policy = tg.BucketPolicy(growth=2.0, min_nodes={"paper": 8, "author": 4}, min_edges=4,
                             min_graphs=2, shared_rung=False)
    budget = policy.round(graph)

    def by_hand(minimum, needed):
        size = minimum
        while size < needed:
            size *= 2
        return size

    assert budget.n_graph == by_hand(2, sizes.n_graph + 1)
    assert budget.n_node == {"paper": by_hand(8, sizes.n_node["paper"] + 1),
                             "author": by_hand(4, sizes.n_node["author"] + 1)}
    assert budget.n_edge == {key: by_hand(4, count) for key, count in sizes.n_edge.items()}
    shared = tg.BucketPolicy(growth=2.0, min_nodes=8, min_edges=4, min_graphs=2).round(graph)
    rung = max(int(np.ceil(np.log2(need / minimum))) if need > minimum else 0
               for minimum, need in [(2, sizes.n_graph + 1), (8, sizes.n_node["paper"] + 1),
                                     (8, sizes.n_node["author"] + 1)]
               + [(4, count) for count in sizes.n_edge.values()])
    assert shared.n_graph == 2 * 2**rung and set(shared.n_edge.values()) == {4 * 2**rung}


def test_tight_budget_is_the_sum_of_the_largest_and_holds_every_batch():
    graphs = random_graphs(3, 9)
    budget = tg.tight_budget(graphs, batch_size=3)
    papers = sorted(int(g.nodes["paper"].n_node[0]) for g in graphs)
    cites = sorted(g.num_edges(CITES) for g in graphs)
    assert budget.n_graph == 4
    assert budget.n_node["paper"] == sum(papers[-3:]) + 1
    assert budget.n_edge[CITES] == sum(cites[-3:])
    for start in range(0, 9, 3):
        tg.pad_to_budget(tg.batch(graphs[start:start + 3]), budget)  # fits, or raises
    rng = np.random.default_rng(0)
    huge = [make_graph(rng, 6, 4, 7, 5) for _ in range(3)]
    small = tg.tight_budget(random_graphs(4, 9, max_paper=2), batch_size=3)
    assert not tg.sizes_of(tg.batch(huge)).overflow(tg.tight_budget(huge, 3))
    assert tg.sizes_of(tg.batch(huge)).overflow(small.resolved(tg.batch(huge)))


def test_fit_or_skip_drops_and_counts_batches_over_budget():
    graphs = random_graphs(5, 12)
    budget = tg.tight_budget(graphs[:6], batch_size=2)
    fit = tg.FitOrSkip(budget)
    kept = list(fit.batches(graphs, batch_size=2))
    expected_kept = [
        not tg.sizes_of(tg.batch(graphs[i:i + 2])).overflow(budget.resolved(graphs[0]))
        for i in range(0, 12, 2)
    ]
    assert fit.kept == sum(expected_kept) == len(kept) and fit.skipped == 6 - fit.kept
    assert fit.kept >= 3  # the first three pairs are within their own tight budget
    shapes = {str(jax.tree_util.tree_map(np.shape, batch)) for batch in kept}
    assert len(shapes) == 1


def test_compiles_over_a_stream_are_bounded_by_the_buckets():
    graphs = random_graphs(6, 60, max_paper=12, max_author=8)
    policy = tg.BucketPolicy(growth=1.5, min_nodes=8, min_edges=8, min_graphs=4)
    batches = list(tg.batch_stream(graphs, batch_size=3, policy=policy))
    budgets = {str(tg.sizes_of(b)) for b in batches}
    traces = []

    @jax.jit
    def step(graph):
        traces.append(1)
        return sum(jnp.sum(s.features * tg.node_mask(graph, name)[:, None])
                   for name, s in graph.nodes.items())

    totals = [float(step(b)) for b in batches]
    assert len(traces) == len(budgets) <= 3 < len(batches)
    for graphs_chunk, value in zip([graphs[i:i + 3] for i in range(0, 60, 3)], totals,
                                   strict=True):
        expected = sum(float(np.sum(g.nodes[n].features)) for g in graphs_chunk for n in g.nodes)
        assert abs(value - expected) < 1e-4


# -------------------------------------------------------------------------------- validation


def _edit(graph, key, **changes):
    return graph._replace(edges={**graph.edges, key: graph.edges[key]._replace(**changes)})


def _edit_nodes(graph, name, **changes):
    return graph._replace(nodes={**graph.nodes, name: graph.nodes[name]._replace(**changes)})


MALFORMED = {
    "sender out of range of its own set": (
        lambda g: _edit(g, WRITES, senders=np.array([0, 1])),
        r"edges\['writes', \('author', 'paper'\)\]\.senders\[1\] = 1 is out of range of node "
        r"set 'author' \(1 nodes\)\.",
    ),
    "negative receiver": (
        lambda g: _edit(g, CITES, receivers=np.array([-1])),
        r"edges\['cites', \('paper', 'paper'\)\]\.receivers\[0\] = -1 is out of range",
    ),
    "counts that do not sum": (
        lambda g: _edit_nodes(g, "paper", n_node=np.array([3])),
        r"sum\(nodes\['paper'\]\.n_node\) must equal the set's 2 rows; found 3\.",
    ),
    "edge counts that do not sum": (
        lambda g: _edit(g, WRITES, n_edge=np.array([1])),
        r"sum\(edges\['writes', \('author', 'paper'\)\]\.n_edge\) must equal the set's 2 "
        r"edges; found 1\.",
    ),
    "mismatched leading sizes": (
        lambda g: _edit(g, WRITES, features=np.zeros((3, 1))),
        r"edges\['writes', \('author', 'paper'\)\]\.features has shape \(3, 1\); expected 2 "
        r"rows \(len\(senders\)\)\.",
    ),
    "key naming a missing set": (
        lambda g: g._replace(edges={**g.edges, tg.EdgeSetKey("reviews", ("venue", "paper")):
                                    g.edges[CITES]}),
        r"edges key EdgeSetKey\(name='reviews', node_sets=\('venue', 'paper'\)\) names sender "
        r"node set 'venue', which is missing",
    ),
    "counts of the wrong length": (
        lambda g: _edit_nodes(g, "author", n_node=np.array([1, 0])),
        r"nodes\['author'\]\.n_node has 2 entries; expected 1, one per graph",
    ),
    "float indices": (
        lambda g: _edit(g, CITES, senders=np.array([1.0])),
        r"edges\['cites', \('paper', 'paper'\)\]\.senders must be a 1-D integer array",
    ),
    "time not int32": (
        lambda g: _edit_nodes(g, "paper", time=np.array([1, 2], np.int64)),
        r"nodes\['paper'\]\.time must be int32; found int64\.",
    ),
}
VALUE_CASES = {"sender out of range of its own set", "negative receiver",
               "counts that do not sum", "edge counts that do not sum"}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_validate_names_the_set_field_and_value(case):
    make, message = MALFORMED[case]
    with pytest.raises(ValueError, match=message):
        tg.validate(make(tiny()))


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_checked_jit_raises_the_same_messages(case):
    make, message = MALFORMED[case]
    total = tg.checked(lambda g: jnp.sum(g.nodes["paper"].features))
    assert float(total(tiny())) == 3.0
    with pytest.raises(Exception, match=message):
        total(make(tiny()))


def test_edge_must_stay_in_its_graph():
    batched = tg.batch([tiny(), tiny()])
    # writes in graph 1 must use author 1; author 0 belongs to graph 0.
    bad = _edit(batched, WRITES, senders=np.array([0, 0, 0, 1]))
    message = (r"edges\['writes', \('author', 'paper'\)\]\.senders\[2\] = 0 lies outside graph 1 "
               r"of its edge \(rows 1\.\.1 of node set 'author'\)")
    with pytest.raises(ValueError, match=message):
        tg.validate(bad)
    with pytest.raises(Exception, match=message):
        tg.checked(lambda g: 0)(bad)


# ------------------------------------------------------------------------------- conversions


def test_graphs_tuple_round_trip():
    graph = gnkit.GraphsTuple(
        nodes=np.arange(6.0).reshape(3, 2), edges=np.ones((2, 1)), senders=np.array([0, 2]),
        receivers=np.array([1, 2]), globals=np.zeros((2, 1)), n_node=np.array([2, 1]),
        n_edge=np.array([1, 1]))
    typed = tg.from_graphs_tuple(graph, node_set="atom", edge_set="bond")
    key = tg.EdgeSetKey("bond", ("atom", "atom"))
    assert list(typed.edges) == [key] and typed.num_graphs == 2
    tg.validate(typed)
    assert_same(tg.to_graphs_tuple(typed), graph)
    with pytest.raises(ValueError, match="one node set and at most one edge set"):
        tg.to_graphs_tuple(tiny())


def test_hetero_data_both_ways():
    torch = pytest.importorskip("torch")
    pyg_data = pytest.importorskip("torch_geometric.data")
    graph = random_graphs(7, 1)[0]
    data = tg.to_hetero_data(graph)
    assert isinstance(data, pyg_data.HeteroData)
    assert set(data.edge_types) == {("paper", "cites", "paper"), ("author", "writes", "paper"),
                                    ("paper", "written_by", "author")}
    writes = graph.edges[WRITES]
    np.testing.assert_array_equal(data["author", "writes", "paper"].edge_index.numpy(),
                                  np.stack([writes.senders, writes.receivers]))
    np.testing.assert_array_equal(data["paper"].x.numpy(), graph.nodes["paper"].features)
    np.testing.assert_array_equal(data["paper"].n_id.numpy(), graph.nodes["paper"].global_id)
    back = tg.from_hetero_data(data)
    assert back.nodes["paper"].features["x"].shape == graph.nodes["paper"].features.shape
    for name in graph.nodes:
        np.testing.assert_array_equal(back.nodes[name].features["x"], graph.nodes[name].features)
        np.testing.assert_array_equal(back.nodes[name].time, graph.nodes[name].time)
        np.testing.assert_array_equal(back.nodes[name].global_id, graph.nodes[name].global_id)
    for key in graph.edges:
        for field in ("senders", "receivers", "time"):
            np.testing.assert_array_equal(getattr(back.edges[key], field),
                                          getattr(graph.edges[key], field))
        np.testing.assert_array_equal(back.edges[key].features["edge_attr"],
                                      graph.edges[key].features)
    # A HeteroData built by hand, with a relation name used by two edge types.
    hand = pyg_data.HeteroData()
    hand["user"].x = torch.ones(2, 1)
    hand["item"].num_nodes = 3
    hand["user", "to", "item"].edge_index = torch.tensor([[0, 1], [2, 0]])
    hand["item", "to", "user"].edge_index = torch.tensor([[1], [1]])
    typed = tg.from_hetero_data(hand)
    tg.validate(typed)
    assert typed.nodes["item"].features is None and typed.num_nodes("item") == 3
    assert typed.edges[tg.EdgeSetKey("to", ("item", "user"))].receivers.tolist() == [1]
    with pytest.raises(KeyError, match="2 edge sets named 'to'"):
        typed.edge_key_by_name("to")


def test_networkx_both_ways():
    networkx = pytest.importorskip("networkx")
    graph = random_graphs(8, 1)[0]
    nx_graph = tg.to_networkx(graph)
    assert isinstance(nx_graph, networkx.MultiDiGraph)
    assert nx_graph.number_of_nodes() == graph.num_nodes("paper") + graph.num_nodes("author")
    assert nx_graph.number_of_edges() == sum(graph.num_edges(k) for k in graph.edges)
    assert nx_graph.nodes["author", 0]["node_set"] == "author"
    back = tg.from_networkx(nx_graph)
    assert_same(back, graph)
    with pytest.raises(ValueError, match="converts one graph"):
        tg.to_networkx(tg.batch([graph, graph]))
    plain = networkx.MultiDiGraph()
    plain.add_node("a", node_set="user")
    plain.add_node("b")
    with pytest.raises(ValueError, match="node 'b' has no 'node_set' attribute"):
        tg.from_networkx(plain)
