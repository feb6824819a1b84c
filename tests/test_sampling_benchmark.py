"""The sampling benchmark runs at quick size and reports both samplers, PyG or why not, and the
prefetched step's waiting fraction."""

import json

import pytest


@pytest.mark.slow
def test_quick_sampling_benchmark_writes_every_row(tmp_path, capsys):
    from benchmarks import sampling

    path = tmp_path / "sampling.json"
    sampling.main(["--quick", "--json", str(path)])
    printed = capsys.readouterr().out
    assert "gnkit shared" in printed and "PyG NeighborLoader disjoint" in printed
    result = json.loads(path.read_text())
    for name in ("gnkit shared", "gnkit disjoint"):
        row = result["sampling"][name]
        assert row["subgraphs_per_s"] > 0 and 0 < row["mean_real_nodes"] < row["node_rows"]
    for name in ("PyG NeighborLoader shared", "PyG NeighborLoader disjoint"):
        row = result["sampling"][name]
        assert "unavailable" in row or row["subgraphs_per_s"] > 0
    dgl = result["dgl"]
    if "unavailable" not in dgl:  # DGL's venv present: both sides' samples passed the checks
        for side in ("gnkit", "dgl"):
            assert all(dgl[side]["check"][key]
                       for key in ("edges_exist", "counts_match", "distinct_edges"))
            assert dgl[side]["neighbors"]["seeds_per_s"] > 0
    for workers in (1, 2):
        assert 0.0 <= result["training"][f"prefetch_{workers}_wait_fraction"] <= 1.0


def test_sample_check_against_hand_counts():
    import numpy as np

    from benchmarks.sampling import check_counts
    from gnkit.graph import GraphsTuple

    # Edges 0->2, 1->2, 3->2, 2->0: node 2 has in-degree 3, node 0 in-degree 1.
    graph = GraphsTuple(nodes=None, edges=None, senders=np.array([0, 1, 3, 2]),
                        receivers=np.array([2, 2, 2, 0]), globals=None,
                        n_node=np.array([4]), n_edge=np.array([4]))
    fanouts = (2, 1)
    good = check_counts(np.array([0, 1, 2]), np.array([2, 2, 0]), np.array([0, 1, 3]),
                        np.array([0, 0, 1]), np.zeros(3, int), fanouts, graph)
    assert good == {"edges_exist": True, "counts_match": True, "distinct_edges": True,
                    "expanded": 2}
    short = check_counts(np.array([0]), np.array([2]), np.array([0]), np.array([0]),
                         np.zeros(1, int), fanouts, graph)
    assert not short["counts_match"]
    wrong_end = check_counts(np.array([3, 1]), np.array([2, 2]), np.array([0, 1]),
                             np.array([0, 0]), np.zeros(2, int), fanouts, graph)
    assert not wrong_end["edges_exist"]
    repeated = check_counts(np.array([0, 0]), np.array([2, 2]), np.array([0, 0]),
                            np.array([0, 0]), np.zeros(2, int), fanouts, graph)
    assert not repeated["distinct_edges"]
