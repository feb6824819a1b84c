"""`python -m benchmarks.nnx_vs_linen --quick`: every API's first step agrees with linen's and
each gets a timing row (the numbers themselves are not asserted: they depend on the machine)."""

import json

import pytest

from benchmarks import nnx_vs_linen


@pytest.mark.slow
def test_quick_run_times_every_api_on_both_models(tmp_path, capsys):
    path = tmp_path / "nnx.json"
    nnx_vs_linen.main(["--quick", "--reps", "2", "--json", str(path)])
    results = json.loads(path.read_text())["workloads"]
    assert len(results) == 2
    for rows in results.values():
        assert set(rows) == {"linen", "nnx", "nnx cached", "nnx split"}
        assert rows["linen"]["median_ratio"] == 1.0
        for row in rows.values():
            assert 0 < row["min_s"] <= row["median_s"] <= row["max_s"]
    printed = capsys.readouterr().out
    assert "GIN on W2's batch" in printed and "Sudoku RRN step" in printed
