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
    for workers in (1, 2):
        assert 0.0 <= result["training"][f"prefetch_{workers}_wait_fraction"] <= 1.0
