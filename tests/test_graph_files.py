"""gnkit.graph_files: tables read through DuckDB, the checks and their one-line errors, the
networkx and PyG-style paths, and the conversion to a GraphsTuple; against hand-computed
values and networkx."""

import numpy as np
import pytest

from gnkit import graph_files

pytest.importorskip("duckdb")

NODES = "id,x,y,label\n007,1.5,2,b\n8,3,-4,a\n9,5,6,10\nq,0,1,a\n"
EDGES = "source,target\n007,8\n8,9\n9,9\nq,007\n"


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def files(tmp_path):
    return write(tmp_path, "e.csv", EDGES), write(tmp_path, "n.csv", NODES)


def test_csv_tables_keep_string_ids_and_number_nodes_edges_and_classes(files):
    edges, nodes = files
    labelled = graph_files.read_graph_files(edges, nodes)
    assert labelled.node_ids.tolist() == ["007", "8", "9", "q"]  # leading zeros kept
    assert labelled.feature_names == ("x", "y")
    np.testing.assert_array_equal(labelled.features, [[1.5, 2], [3, -4], [5, 6], [0, 1]])
    np.testing.assert_array_equal(labelled.senders, [0, 1, 2, 3])
    np.testing.assert_array_equal(labelled.receivers, [1, 2, 2, 0])
    assert labelled.classes == ("10", "a", "b")  # sorted as text: not every label is a number
    np.testing.assert_array_equal(labelled.labels, [2, 1, 0, 1])
    np.testing.assert_array_equal(labelled.split, [-1, -1, -1, -1])
    assert labelled.task == "node" and labelled.graph_ids is None


def test_numeric_labels_sort_as_numbers_and_a_split_column_is_read(tmp_path):
    nodes = write(tmp_path, "n.csv", "id,label,part\na,10,train\nb,9,VALID\nc,10,test\n")
    edges = write(tmp_path, "e.csv", "source,target\na,b\n")
    labelled = graph_files.read_graph_files(edges, nodes, split_column="part")
    assert labelled.classes == ("9", "10")
    np.testing.assert_array_equal(labelled.labels, [1, 0, 1])
    np.testing.assert_array_equal(labelled.split, [0, 1, 2])
    # No feature column: one feature, log(1 + degree) (a: 1, b: 1, c: 0).
    assert labelled.feature_names == ("log_degree",)
    np.testing.assert_allclose(labelled.features[:, 0], np.log1p([1, 1, 0]), rtol=1e-6)


def test_parquet_tables_read_as_the_same_csv_tables(tmp_path, files):
    import duckdb

    edges, nodes = files
    for path in (edges, nodes):  # typed Parquet columns (BIGINT ids would drop the zeros)
        duckdb.execute(f"COPY (SELECT * FROM read_csv('{path}', all_varchar = true)) "
                       f"TO '{path.with_suffix('.parquet')}' (FORMAT parquet)")
    from_csv = graph_files.read_graph_files(edges, nodes)
    from_parquet = graph_files.read_graph_files(edges.with_suffix(".parquet"),
                                                nodes.with_suffix(".parquet"))
    for field in ("node_ids", "features", "senders", "receivers", "labels"):
        np.testing.assert_array_equal(getattr(from_parquet, field), getattr(from_csv, field))
    with pytest.raises(graph_files.GraphFileError, match=r"n.parquet row 2: column 'id': "
                       r"duplicate id '8' \(also \S+n.parquet row 1\)"):
        duckdb.execute(f"COPY (SELECT '8' AS id, 1.0 AS x UNION ALL SELECT '8', 2.0 UNION ALL "
                       f"SELECT '8', 3.0) TO '{tmp_path / 'n.parquet'}' (FORMAT parquet)")
        graph_files.read_graph_files(edges.with_suffix(".parquet"), tmp_path / "n.parquet")


# (table, new text, keyword arguments, the whole message with {dir} for the folder)
BAD = {
    "dangling edge": ("e.csv", EDGES + "9,zz\n", {},
                      "{dir}/e.csv line 6: column 'target': node id 'zz' is not in {dir}/n.csv"),
    "duplicate id": ("n.csv", NODES + "8,0,0,a\n", {},
                     "{dir}/n.csv line 6: column 'id': duplicate id '8' (also {dir}/n.csv line 3)"),
    "empty id": ("n.csv", NODES + ",0,0,a\n", {}, "{dir}/n.csv line 6: column 'id' is empty"),
    "missing label": ("n.csv", NODES + "r,0,0,\ns,1,1,\n", {},
                      "{dir}/n.csv line 6: column 'label' is empty (2 such; missing_labels="
                      "predict leaves such rows out of training and predicts them)"),
    "missing column": ("n.csv", NODES, {"label_column": "class"},
                       "{dir}/n.csv: no column 'class' (label_column); its columns: id, x, y, "
                       "label"),
    "missing edge column": ("e.csv", "from,target\n8,9\n", {},
                            "{dir}/e.csv: no column 'source' (source_column); its columns: "
                            "from, target"),
    "text feature": ("n.csv", NODES + "r,abc,0,a\n", {},
                     "{dir}/n.csv line 6: column 'x' holds 'abc', not a number "
                     "(feature_columns picks the feature columns)"),
    "empty feature": ("n.csv", NODES + "r,,0,a\n", {"feature_columns": ["x"]},
                      "{dir}/n.csv line 6: column 'x' is empty"),
    "infinite feature": ("n.csv", NODES + "r,inf,0,a\n", {},
                         "{dir}/n.csv line 6: column 'x' holds 'inf' (feature_columns picks "
                         "the feature columns)"),
    "one class": ("n.csv", "id,label\n8,a\n9,a\n", {},
                  "{dir}/n.csv: column 'label' has 1 class; a classifier needs at least two"),
    "bad split": ("n.csv", "id,label,split\n8,a,train\n9,b,dev\n", {"split_column": "split"},
                  "{dir}/n.csv line 3: column 'split' holds 'dev'; expected train, valid or test"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_row_or_column_is_one_line_naming_file_column_and_row(tmp_path, case):
    write(tmp_path, "e.csv", "source,target\n8,9\n")
    write(tmp_path, "n.csv", NODES)
    table, text, keywords, message = BAD[case]
    write(tmp_path, table, text)
    with pytest.raises(graph_files.GraphFileError) as error:
        graph_files.read_graph_files(tmp_path / "e.csv", tmp_path / "n.csv", **keywords)
    assert str(error.value) == message.format(dir=tmp_path)
    assert "\n" not in str(error.value)


def test_files_that_cannot_be_read_are_named(tmp_path):
    with pytest.raises(graph_files.GraphFileError, match=r"x.json: expected a .csv, .tsv or "):
        graph_files.read_table(tmp_path / "x.json")
    with pytest.raises(graph_files.GraphFileError, match=r"^--nodes gone.csv: no such file$"):
        graph_files.read_table(tmp_path / "gone.csv", "--nodes gone.csv")
    write(tmp_path, "bad.parquet", "not parquet")
    with pytest.raises(graph_files.GraphFileError, match=r"bad.parquet: not a readable parquet"):
        graph_files.read_table(tmp_path / "bad.parquet")


def test_a_label_table_keys_labels_by_id_and_names_unknown_and_missing_ids(tmp_path, files):
    edges, nodes = files
    labels = write(tmp_path, "l.csv", "id,label\nq,x\n8,y\n")
    labelled = graph_files.read_graph_files(edges, nodes, labels, missing_labels="predict")
    assert labelled.classes == ("x", "y")
    np.testing.assert_array_equal(labelled.labels, [-1, 1, -1, 0])
    assert labelled.feature_names == ("x", "y")  # the nodes' label column is not a feature
    with pytest.raises(graph_files.GraphFileError, match=r"^\S+l.csv: no label for node id "
                       r"'007' \(2 such; missing_labels=predict"):
        graph_files.read_graph_files(edges, nodes, labels)
    write(tmp_path, "l.csv", "id,label\nq,x\n8,y\nnobody,x\n")
    with pytest.raises(graph_files.GraphFileError, match=r"l.csv line 4: column 'id': node id "
                       r"'nobody' is not in \S+n.csv$"):
        graph_files.read_graph_files(edges, nodes, labels, missing_labels="predict")


def test_a_graph_task_groups_nodes_by_graph_and_checks_edges_and_labels(tmp_path):
    nodes = write(tmp_path, "n.csv", "id,mol,x\na,m2,1\nb,m1,2\nc,m2,3\nd,m1,4\ne,m3,5\n")
    edges = write(tmp_path, "e.csv", "source,target\na,c\nd,b\nc,c\n")
    labels = write(tmp_path, "g.csv", "mol,label\nm1,no\nm2,yes\nm3,no\n")
    labelled = graph_files.read_graph_files(edges, nodes, labels, graph_column="mol")
    assert labelled.task == "graph" and labelled.graph_ids.tolist() == ["m2", "m1", "m3"]
    np.testing.assert_array_equal(labelled.labels, [1, 0, 0])
    np.testing.assert_array_equal(labelled.node_graph, [0, 1, 0, 1, 2])
    graph = graph_files.to_graphs_tuple(labelled)
    np.testing.assert_array_equal(graph.n_node, [2, 2, 1])  # m2: a, c; m1: b, d; m3: e
    np.testing.assert_array_equal(graph.nodes[:, 0], [1, 3, 2, 4, 5])
    # m2's a -> c, c -> c and the reverse c -> a; m1's d -> b and b -> d.
    assert sorted(zip(graph.senders.tolist(), graph.receivers.tolist(), strict=True)) == [
        (0, 1), (1, 0), (1, 1), (2, 3), (3, 2)]
    np.testing.assert_array_equal(graph.n_edge, [3, 2, 0])
    write(tmp_path, "e.csv", "source,target\na,c\na,d\n")
    with pytest.raises(graph_files.GraphFileError, match=r"e.csv line 3: the edge joins node "
                       r"'a' of graph 'm2' to node 'd' of graph 'm1'$"):
        graph_files.read_graph_files(edges, nodes, labels, graph_column="mol")


def test_graph_labels_in_the_node_table_must_agree_within_a_graph(tmp_path):
    nodes = write(tmp_path, "n.csv", "id,g,label\na,1,x\nb,1,x\nc,2,y\nd,2,x\n")
    edges = write(tmp_path, "e.csv", "source,target\na,b\n")
    with pytest.raises(graph_files.GraphFileError, match=r"n.csv line 5: column 'label': 'x' "
                       r"for the same graph id, which \S+n.csv line 4 gives 'y'$"):
        graph_files.read_graph_files(edges, nodes, graph_column="g")
    write(tmp_path, "n.csv", "id,g,label\na,1,x\nb,1,\nc,2,y\nd,2,y\n")
    labelled = graph_files.read_graph_files(edges, nodes, graph_column="g")
    np.testing.assert_array_equal(labelled.labels, [0, 1])


def test_networkx_graph_matches_networkx_degrees_and_both_directions():
    networkx = pytest.importorskip("networkx")
    karate = networkx.karate_club_graph()
    labelled = graph_files.from_networkx(karate, label="club", features=[])
    assert labelled.node_ids.tolist() == [str(node) for node in karate.nodes]
    assert labelled.classes == ("Mr. Hi", "Officer")
    clubs = [karate.nodes[node]["club"] for node in karate.nodes]
    np.testing.assert_array_equal(labelled.labels, [labelled.classes.index(c) for c in clubs])
    degrees = np.array([karate.degree(node) for node in karate.nodes])
    np.testing.assert_allclose(labelled.features[:, 0], np.log1p(degrees), rtol=1e-6)
    graph = graph_files.to_graphs_tuple(labelled)
    assert int(graph.n_edge[0]) == 2 * karate.number_of_edges()
    np.testing.assert_array_equal(np.bincount(graph.receivers, minlength=34), degrees)
    networkx.set_node_attributes(karate, 1.0, "weight")
    karate.add_node("lonely", club="Officer", weight="heavy")
    with pytest.raises(graph_files.GraphFileError, match=r"^networkx node 'lonely': column "
                       r"'weight' holds 'heavy', not a number \(feature_columns picks"):
        graph_files.from_networkx(karate, label="club")


def test_pyg_style_arrays_give_the_split_of_their_masks_and_graph_labels():
    edge_index = np.array([[0, 1, 2, 3], [1, 0, 3, 3]])
    x = np.array([[0.5], [1.5], [2.5], [3.5]])
    labelled = graph_files.from_edge_index(
        edge_index, x, np.array([1, 0, -1, 1]), train_mask=np.array([1, 1, 0, 0]) > 0,
        val_mask=np.array([0, 0, 0, 1]) > 0, test_mask=np.array([0, 0, 1, 0]) > 0,
        missing_labels="predict")
    np.testing.assert_array_equal(labelled.labels, [1, 0, -1, 1])
    np.testing.assert_array_equal(labelled.split, [0, 0, -1, 1])  # unlabelled: no split
    np.testing.assert_array_equal(labelled.features[:, 0], [0.5, 1.5, 2.5, 3.5])
    graphs = graph_files.from_edge_index(edge_index, x, np.array([0, 1]),
                                         batch=np.array([0, 0, 1, 1]))
    assert graphs.task == "graph" and graphs.graph_ids.tolist() == ["0", "1"]
    np.testing.assert_array_equal(graphs.labels, [0, 1])
    with pytest.raises(graph_files.GraphFileError, match=r"^edge_index column 1: the edge "
                       r"joins node '1' of graph '0' to node '2' of graph '1'$"):
        graph_files.from_edge_index(np.array([[0, 1], [1, 2]]), x, np.array([0, 1]),
                                    batch=np.array([0, 0, 1, 1]))


def test_written_tables_read_back_to_the_same_graph(tmp_path, files):
    edges, nodes = files
    labels = write(tmp_path, "l.csv", "id,label,split\nq,x,train\n8,y,test\n9,x,valid\n")
    labelled = graph_files.read_graph_files(edges, nodes, labels, split_column="split",
                                            missing_labels="predict")
    settings = graph_files.write_tables(labelled, tmp_path / "out")
    assert settings["labels"] == "" and settings["missing_labels"] == "predict"
    again = graph_files.read_graph_files(
        settings["edges"], settings["nodes"], split_column=settings["split_column"],
        feature_columns=settings["feature_columns"].split(","), missing_labels="predict")
    for field in ("node_ids", "features", "senders", "receivers", "labels", "split"):
        np.testing.assert_array_equal(getattr(again, field), getattr(labelled, field))
    assert again.classes == labelled.classes
