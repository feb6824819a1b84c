"""The graph-files demo: a node and a graph classifier trained end to end on small tables made
here, whose accuracy on a separable synthetic task must be high; its predictions CSVs; the
one-line errors of bad files through the command; every new flag in each verb's `--help`."""

import csv
import json
import re

import numpy as np
import pytest

from gnkit.demos.graph_files import main

pytest.importorskip("duckdb")

NODE_COLUMNS = ["--id-column", "node", "--source-column", "a", "--target-column", "b",
                "--label-column", "y"]


def ring_tables(folder, seed, size=200):
    """A ring whose node v links to v+1 and v+2 (every closed neighbourhood has 5 nodes), a
    feature `x` and a noise column, and labels `y` the sign of `x` averaged twice over each
    closed neighbourhood: what two GCN layers compute, so a GCN can be exact and an MLP on
    `x` alone cannot."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=size)
    neighbourhood = np.arange(size)[:, None] + np.arange(-2, 3)[None, :]
    smoothed = x[neighbourhood % size].mean(axis=1)
    labels = np.where(smoothed[neighbourhood % size].mean(axis=1) > 0, "pos", "neg")
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "nodes.csv").open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["node", "x", "noise", "y"])
        writer.writerows([f"v{i}", x[i], rng.normal(), labels[i]] for i in range(size))
    with (folder / "edges.csv").open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["a", "b"])
        writer.writerows([f"v{i}", f"v{(i + step) % size}"] for i in range(size)
                         for step in (1, 2))
    return folder / "edges.csv", folder / "nodes.csv", labels


def read_csv(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def run_json(capsys, argv):
    assert main([*argv, "--json", "-", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def node_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ring")
    edges, nodes, labels = ring_tables(folder, seed=1)
    run_dir = folder / "run"
    argv = ["train", "--config", "tiny", "--edges", str(edges), "--nodes", str(nodes),
            *NODE_COLUMNS, "--models", "gcn", "--updates", "60", "--set", "sizes=0.5,0.25,0.25",
            "--set", "learning_rate=0.03", "--run-dir", str(run_dir), "--no-progress",
            "--json", str(folder / "train.json")]
    assert main(argv) == 0
    return folder, run_dir, json.loads((folder / "train.json").read_text()), labels


def test_a_gcn_learns_a_propagated_sign_that_the_floors_miss(node_run):
    _, _, results, _ = node_run
    gcn = results["models"]["gcn"]
    assert results["task"] == "node" and results["classes"] == ["neg", "pos"]
    assert results["split_sizes"] == {"train": 100, "valid": 50, "test": 50}
    assert results["features"] == ["x", "noise"]
    assert gcn["valid"] > 0.9 and gcn["test"] > 0.9, gcn
    assert results["floors"]["majority"]["test"] < 0.75


def test_the_predictions_csv_holds_every_node_and_gives_the_reported_accuracy(node_run):
    _, run_dir, results, labels = node_run
    rows = read_csv(run_dir / "predictions_gcn.csv")
    assert list(rows[0]) == ["node", "split", "label", "prediction", "probability", "p_neg",
                             "p_pos"]
    assert [row["node"] for row in rows] == [f"v{i}" for i in range(200)]
    assert [row["label"] for row in rows] == labels.tolist()
    probabilities = np.array([[float(row["p_neg"]), float(row["p_pos"])] for row in rows])
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    predicted = np.array(["neg", "pos"])[probabilities.argmax(axis=1)]
    assert [row["prediction"] for row in rows] == predicted.tolist()
    test = [row["split"] == "test" for row in rows]
    assert sum(test) == 50
    accuracy = np.mean((predicted == labels)[test])
    assert accuracy == pytest.approx(results["models"]["gcn"]["test"])


def test_eval_reports_what_train_reported(node_run, capsys):
    _, run_dir, results, _ = node_run
    again = run_json(capsys, ["eval", "--run-dir", str(run_dir)])
    assert again["models"]["gcn"]["test"] == results["models"]["gcn"]["test"]
    assert again["floors"] == results["floors"]


def test_predict_on_new_tables_writes_their_predictions(node_run, capsys):
    folder, run_dir, _, _ = node_run
    edges, nodes, labels = ring_tables(folder / "new", seed=2, size=120)
    summary = run_json(capsys, ["predict", "--run-dir", str(run_dir), "--input-edges",
                                str(edges), "--input-nodes", str(nodes)])
    assert summary["model"] == "gcn" and summary["predicted"] == 120
    assert summary["output"] == str(folder / "new" / "nodes_preds.csv")
    rows = read_csv(summary["output"])
    assert "split" not in rows[0] and len(rows) == 120
    predicted = np.array([row["prediction"] for row in rows])
    assert summary["labelled_accuracy"] == pytest.approx(np.mean(predicted == labels))
    assert summary["labelled_accuracy"] > 0.9
    unlabelled = folder / "new" / "unlabelled.csv"  # the same nodes without the label column
    unlabelled.write_text("".join(line.rsplit(",", 1)[0] + "\n"
                                  for line in nodes.read_text().splitlines()))
    output = folder / "new" / "out.csv"
    summary = run_json(capsys, ["predict", "--run-dir", str(run_dir), "--model", "gcn",
                                "--input-edges", str(edges), "--input-nodes", str(unlabelled),
                                "--output", str(output)])
    assert summary["labelled_accuracy"] is None
    again = read_csv(output)
    assert [row["label"] for row in again] == [""] * 120
    assert [row["prediction"] for row in again] == predicted.tolist()
    assert main(["predict", "--run-dir", str(run_dir), "--model", "gat"]) == 2
    assert "--model gat: not a model of this run (gcn)" in capsys.readouterr().err


def test_a_graph_classifier_learns_each_graphs_sign(tmp_path, capsys):
    """Paths of 3 to 7 nodes whose features are the graph's sign plus noise; the labels in a
    table of their own, keyed by the graph column, where the last 10 graphs have none (and
    are predicted with `--missing-labels predict`)."""
    rng = np.random.default_rng(0)
    nodes, edges, graphs = [["id", "molecule", "f"]], [["source", "target"]], [["molecule",
                                                                                 "label"]]
    for graph in range(120):
        sign = rng.choice([-1.0, 1.0])
        size = int(rng.integers(3, 8))
        ids = [f"g{graph}_{atom}" for atom in range(size)]
        nodes += [[node, f"g{graph}", sign + 0.5 * rng.normal()] for node in ids]
        edges += list(zip(ids, ids[1:], strict=False))
        if graph < 110:
            graphs.append([f"g{graph}", "active" if sign > 0 else "inactive"])
    for name, rows in (("nodes", nodes), ("edges", edges), ("graphs", graphs)):
        with (tmp_path / f"{name}.csv").open("w", newline="") as file:
            csv.writer(file).writerows(rows)
    results = run_json(capsys, [
        "train", "--config", "tiny", "--edges", str(tmp_path / "edges.csv"), "--nodes",
        str(tmp_path / "nodes.csv"), "--labels", str(tmp_path / "graphs.csv"),
        "--graph-column", "molecule", "--models", "gcn", "--missing-labels", "predict",
        "--run-dir", str(tmp_path / "run")])
    assert results["task"] == "graph" and results["graphs"] == 120
    assert results["split_sizes"] == {"train": 88, "valid": 11, "test": 11}
    assert results["models"]["gcn"]["test"] > 0.9, results["models"]
    rows = read_csv(tmp_path / "run" / "predictions_gcn.csv")
    assert list(rows[0])[:3] == ["molecule", "split", "label"] and len(rows) == 120
    assert [row["molecule"] for row in rows[110:]] == [f"g{graph}" for graph in range(110, 120)]
    assert all(row["split"] == row["label"] == "" for row in rows[110:])
    assert all(row["split"] and row["label"] for row in rows[:110])


def test_bad_files_are_one_line_errors_naming_the_flag_file_column_and_row(tmp_path, capsys):
    edges, nodes, _ = ring_tables(tmp_path, seed=0, size=12)
    bad_edges = tmp_path / "bad_edges.csv"
    bad_edges.write_text(edges.read_text() + "v3,v99\n")
    argv = ["train", "--config", "tiny", "--edges", str(edges), "--nodes", str(nodes),
            "--run-dir", str(tmp_path / "run")]
    assert main([*argv, "--edges", str(bad_edges), *NODE_COLUMNS]) == 2
    assert capsys.readouterr().err == (
        f"gnkit graph-files: error: --edges {bad_edges} line 26: column 'b': node id 'v99' is "
        f"not in --nodes {nodes}\n")
    assert main([*argv, *NODE_COLUMNS[:-1], "class"]) == 2
    assert capsys.readouterr().err == (
        f"gnkit graph-files: error: --nodes {nodes}: no column 'class' (label_column); its "
        "columns: node, x, noise, y\n")
    assert main([*argv, "--edges", str(tmp_path / "gone.csv"), *NODE_COLUMNS]) == 2
    assert capsys.readouterr().err == (
        f"gnkit graph-files: error: --edges {tmp_path / 'gone.csv'}: no such file\n")
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").glob("metrics*"))


NEW_FLAGS = {
    "train": ["--edges", "--nodes", "--labels", "--id-column", "--source-column",
              "--target-column", "--label-column", "--feature-columns", "--graph-column",
              "--split-column", "--missing-labels", "--directed", "--models", "--updates"],
    "predict": ["--model", "--input-edges", "--input-nodes", "--input-labels", "--output"],
}


@pytest.mark.parametrize("verb", ["train", "eval", "predict"])
def test_each_verbs_help_lists_the_new_flags_with_a_line_each(verb, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps at the terminal's width
    assert main([verb, "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    flags = NEW_FLAGS["train"] + (NEW_FLAGS["predict"] if verb == "predict" else [])
    for flag in flags:
        rows = [row for row, line in enumerate(lines) if line.strip().startswith(flag + " ")]
        assert len(rows) == 1, flag
        words = lines[rows[0]].split()[2:]  # after the flag and its metavar: its help line,
        if not words:  # which argparse puts on the next line after a long flag
            words = lines[rows[0] + 1].split()
            assert not words[0].startswith("-"), flag
        assert len(words) > 2 and "config's" not in words, flag  # a line that says what


@pytest.mark.slow
def test_the_own_graphs_guide_code_runs():
    """The guide's Python blocks, in order: its error, the networkx and PyG-style paths and a
    short training run on the karate club."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "guides" / "own_graphs.md"
    code = "\n".join(re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M))
    namespace = {"__name__": "docs_own_graphs"}
    exec(compile(code, str(page), "exec"), namespace)
    assert namespace["results"]["classes"] == ["Mr. Hi", "Officer"]
