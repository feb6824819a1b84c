"""The GPS benchmarks run at tiny size: the speed comparison against PyG's `GPSConv` (which
checks that both compute the same output before timing) and the long-range experiment."""

import json

import numpy as np
import pytest

from benchmarks import gps, long_range, workloads
from gnkit.tasks import long_range as long_range_task


def test_gps_speed_benchmark_runs_and_writes_json(tmp_path, capsys):
    path = tmp_path / "gps.json"
    result = gps.main(["--quick", "--json", str(path)])
    printed = capsys.readouterr().out
    assert "GPS layer step, 4 graphs" in printed
    assert json.loads(path.read_text()) == result
    assert result["nodes"] > 4 * 10 - 1 and result["graphs"] == 4
    if workloads.have_pyg():
        assert set(result["median_s"]) == {"gnkit", "pyg eager, 1 thread", "pyg eager, 2 threads"}
        best = min(result["median_s"][name] for name in result["median_s"] if name != "gnkit")
        assert result["ratio"] == pytest.approx(best / result["median_s"]["gnkit"])
        assert "PyG's best" in printed


@pytest.mark.slow
def test_long_range_experiment_runs_and_writes_its_record(tmp_path):
    record_path, plot_path = tmp_path / "long_range.json", tmp_path / "long_range.png"
    record = long_range.main(["--quick", "--json", str(record_path), "--plot", str(plot_path)])
    assert json.loads(record_path.read_text()) == record
    assert plot_path.stat().st_size > 1000
    run = record["runs"]["default"]
    assert run["command"].startswith("python -m benchmarks.long_range --quick")
    results = run["results"]
    assert set(results["models"]) == {"GINE", "GPS"}
    # The quick run tests one batch of the generator's seed-1 examples.
    test = long_range_task.generate(1, 32, threshold=8, kind="path")
    distances, counts = np.unique(test.distances, return_counts=True)
    for model in results["models"].values():
        accuracy = model["accuracy"]
        assert set(accuracy) == {"1-3", "4-8", ">8", "all"}
        assert all(0.0 <= value <= 1.0 for value in accuracy.values())
        by_distance = model["by_distance"]
        assert sorted(map(int, by_distance)) == distances.tolist()
        # Each test example is counted once, at its distance.
        overall = sum(by_distance[str(d)] * c for d, c in zip(distances, counts, strict=True))
        assert overall / counts.sum() == pytest.approx(accuracy["all"])
