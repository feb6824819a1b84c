"""The typed-nodes demo: its UMLS typed graph against the triple files, its four models against
NumPy with the same weights, and a tiny `train` + `eval` through `main`."""

import collections
import json

import jax
import numpy as np
import pytest

from gnkit.demos.typed_nodes import data as demo_data
from gnkit.demos.typed_nodes import main, models
from gnkit.demos.typed_nodes.config import CONFIGS
from gnkit.kg import graph_directory, read_triples

TINY = CONFIGS["tiny"]


@pytest.fixture(scope="module")
def umls():
    """The demo's data at the tiny preset, and the UMLS triples as names, read from the files."""
    triples = [t for split in ("train", "valid", "test")
               for t in read_triples(graph_directory("umls") / f"{split}.txt.xz")]
    return demo_data.load_data(TINY), triples


def _names_by_row(data):
    from gnkit.kg import load_graph

    entities = load_graph("umls").entities
    return [entities[e] for e in data.entity]


def test_node_sets_and_labels_follow_isa_from_the_files(umls):
    data, triples = umls
    parents = collections.defaultdict(set)
    for head, relation, tail in triples:
        if relation == "isa":
            parents[head].add(tail)

    def above(name):
        return {name}.union(*(above(p) for p in parents[name]))

    names = _names_by_row(data)
    assert len(names) == 135 == len(set(names))
    for row, name in enumerate(names):
        ancestors = above(name)
        root = "entity" if "entity" in ancestors else "event"
        assert demo_data.NODE_SETS[data.node_set[row]] == root, name
        children = demo_data.BRANCHES[root]
        expected = [k for k, child in enumerate(children) if child in ancestors]
        assert data.labels[row] == (expected[0] if expected else -1), name
    assert sorted(names[row] for row in np.flatnonzero(data.labels < 0)) == ["entity", "event"]
    for s, name in enumerate(demo_data.NODE_SETS):
        nodes = data.graph.nodes[name]
        assert int(nodes.n_node[0]) == np.sum(data.node_set == s)
        np.testing.assert_array_equal(nodes.features, np.eye(2)[[s] * int(nodes.n_node[0])])
    assert list(data.node_set) == sorted(data.node_set)  # rows: node set by node set


def test_edge_sets_are_the_largest_relation_groups_with_their_inverses(umls):
    data, triples = umls
    names = _names_by_row(data)
    set_of = {name: demo_data.NODE_SETS[s] for name, s in zip(names, data.node_set, strict=True)}
    groups = collections.Counter()
    pairs = collections.defaultdict(collections.Counter)
    for head, relation, tail in triples:
        if relation != "isa":
            key = (relation, set_of[head], set_of[tail])
            groups[key] += 1
            pairs[key][head, tail] += 1
    offset = {name: int(np.sum(data.node_set < s)) for s, name in enumerate(demo_data.NODE_SETS)}
    kept = []
    for key, edges in data.graph.edges.items():
        sender, receiver = key.node_sets
        found = collections.Counter(
            (names[offset[sender] + int(s)], names[offset[receiver] + int(r)])
            for s, r in zip(edges.senders, edges.receivers, strict=True))
        if key.name.startswith("rev_"):
            found = collections.Counter({(r, s): n for (s, r), n in found.items()})
            key_of_triples = (key.name[4:], receiver, sender)
        else:
            key_of_triples = (key.name, sender, receiver)
            kept.append(key_of_triples)
        assert found == pairs[key_of_triples], key
        assert int(edges.n_edge[0]) == groups[key_of_triples]
    assert len(data.graph.edges) == 2 * TINY.edge_sets == 2 * len(kept)
    smallest_kept = min(groups[key] for key in kept)
    assert all(count <= smallest_kept for key, count in groups.items() if key not in kept)
    homogeneous = data.homogeneous
    both_ways = sum(2 * groups[key] for key in kept)
    assert int(homogeneous.n_edge[0]) == homogeneous.senders.size == both_ways
    typed_rows = collections.Counter()
    for key, edges in data.graph.edges.items():
        sender, receiver = key.node_sets
        typed_rows.update(zip((offset[sender] + edges.senders).tolist(),
                              (offset[receiver] + edges.receivers).tolist(), strict=True))
    assert collections.Counter(zip(homogeneous.senders.tolist(),
                                   homogeneous.receivers.tolist(), strict=True)) == typed_rows


def test_split_is_disjoint_and_covers_the_labelled_nodes_50_20_30(umls):
    data, _ = umls
    splits = data.splits
    assert {name: int(mask.sum()) for name, mask in splits.items()} == \
        {"train": 66, "valid": 27, "test": 40}  # 133 labelled: round(66.5), round(93.1) - 66
    together = splits["train"].astype(int) + splits["valid"] + splits["test"]
    np.testing.assert_array_equal(together, data.labels >= 0)


def _param_name(key, keys):
    """An edge set's parameters: its name, or `sender__name__receiver` where the name repeats."""
    if sum(other.name == key.name for other in keys) == 1:
        return key.name
    return f"{key.node_sets[0]}__{key.name}__{key.node_sets[1]}"


def _dense(params, x):
    return x @ np.asarray(params["kernel"]) + (np.asarray(params["bias"]) if "bias" in params
                                               else 0.0)


def _relu(x):
    return np.maximum(x, 0.0)


def _mean_into(values, receivers, n_receiver):
    total = np.zeros((n_receiver, values.shape[1]))
    np.add.at(total, receivers, values)
    count = np.bincount(receivers, minlength=n_receiver)[:, None]
    return total / np.maximum(count, 1)


def _typed_reference(params, graph, layer_fn):
    features = {name: np.asarray(nodes.features, np.float64) for name, nodes in
                graph.nodes.items()}
    for layer in range(2):
        features = {name: _relu(out) for name, out in layer_fn(params, layer, features).items()}
    return np.concatenate([_dense(params[f"classify_{name}"], features[name])
                           for name in demo_data.NODE_SETS])


def test_rgcn_and_hetero_sage_equal_a_per_relation_numpy_loop(umls):
    data, _ = umls
    graph, batch, keys = data.graph, demo_data.full_batch(data), list(data.graph.edges)
    sizes = {name: int(nodes.n_node[0]) for name, nodes in graph.nodes.items()}

    def rgcn_layer(params, layer, x):
        weights = params[f"rgcn_{layer}"]
        out = {name: _dense(weights[f"self_{name}"], x[name]) for name in x}
        for key, edges in graph.edges.items():
            sender, receiver = key.node_sets
            messages = _dense(weights[_param_name(key, keys)], x[sender][edges.senders])
            out[receiver] = out[receiver] + _mean_into(messages, edges.receivers, sizes[receiver])
        return out

    def sage_layer(params, layer, x):
        weights = params[f"sage_{layer}"]
        out = {}
        for key, edges in graph.edges.items():
            sender, receiver = key.node_sets
            own = weights[_param_name(key, keys)]
            neighbors = _mean_into(x[sender][edges.senders], edges.receivers, sizes[receiver])
            update = _dense(own["neighbors"], neighbors) + _dense(own["root"], x[receiver])
            out[receiver] = out.get(receiver, 0.0) + update
        return out

    for family, layer_fn in (("rgcn", rgcn_layer), ("hetero_sage", sage_layer)):
        model = models.build_model(family, TINY.hidden)
        params = model.init(jax.random.key(1), batch)
        expected = _typed_reference(params["params"], graph, layer_fn)
        np.testing.assert_allclose(model.apply(params, batch), expected, rtol=1e-4, atol=1e-5)


def test_gcn_twin_and_mlp_equal_numpy(umls):
    data, _ = umls
    batch, homogeneous = demo_data.full_batch(data), data.homogeneous
    n = homogeneous.n_node[0]
    adjacency = np.eye(n)  # PyG's GCNConv: self-edges replaced by one per node
    off_diagonal = homogeneous.senders != homogeneous.receivers
    np.add.at(adjacency, (homogeneous.receivers[off_diagonal], homogeneous.senders[off_diagonal]),
              1.0)
    scale = 1.0 / np.sqrt(adjacency.sum(1))
    propagate = scale[:, None] * adjacency * scale[None]
    model = models.build_model("gcn", TINY.hidden)
    params = model.init(jax.random.key(2), batch)
    weights, x = params["params"], np.asarray(homogeneous.nodes, np.float64)
    for layer in range(2):
        gcn = weights[f"gcn_{layer}"]
        x = _relu(propagate @ (x @ np.asarray(gcn["linear"]["kernel"])) + np.asarray(gcn["bias"]))
    np.testing.assert_allclose(model.apply(params, batch), _dense(weights["classify"], x),
                               rtol=1e-4, atol=1e-5)

    model = models.build_model("mlp", TINY.hidden)
    params = model.init(jax.random.key(3), batch)
    mlp, x = params["params"]["mlp"], np.asarray(homogeneous.nodes, np.float64)
    x = _dense(mlp["dense_2"], _relu(_dense(mlp["dense_1"], _relu(_dense(mlp["dense_0"], x)))))
    np.testing.assert_allclose(model.apply(params, batch), x, rtol=1e-4, atol=1e-5)
    # no edges read: the MLP's logits are one row per node set
    assert len(np.unique(np.asarray(model.apply(params, batch)).round(5), axis=0)) == 2


def test_tiny_train_then_eval_through_main(tmp_path, capsys, umls):
    data, _ = umls
    run = tmp_path / "run"
    assert main(["train", "--config", "tiny", "--run-dir", str(run), "--no-progress"]) == 0
    trained = json.loads((run / "train.json").read_text())
    assert sorted(trained["models"]) == ["gcn0", "hetero_sage0", "mlp0", "rgcn0"]
    assert {row["updates"] for row in trained["models"].values()} <= {2, 4}
    assert trained["split"] == {"train": 66, "valid": 27, "test": 40}
    assert trained["edge_sets"] == 8 and trained["nodes"] == {"entity": 100, "event": 35}
    test = data.labels[data.splits["test"]]
    for row in trained["models"].values():  # accuracies are whole test nodes out of 40
        assert row["test"] * test.size == pytest.approx(round(row["test"] * test.size))
    # majority: each node set's most common training label, counted here
    majority = []
    for s in range(2):
        inside = data.node_set == s
        common = np.bincount(data.labels[inside & data.splits["train"]]).argmax()
        majority.extend(data.labels[inside & data.splits["test"]] == common)
    assert trained["majority"] == pytest.approx(np.mean(majority), abs=1e-4)
    assert trained["families"]["rgcn"]["test_mean"] == trained["models"]["rgcn0"]["test"]
    capsys.readouterr()
    out = tmp_path / "eval.json"
    assert main(["eval", "--run-dir", str(run), "--json", str(out), "--no-progress"]) == 0
    assert json.loads(out.read_text())["models"] == trained["models"]
