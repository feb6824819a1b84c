"""benchmarks.chemprop_compare stays runnable: a tiny run of gnkit's side (always) and of both
sides with the thread probe per data set (where chemprop is installed: the bench extra)."""

import json
import math

import pytest

from benchmarks import chemprop_compare

TINY = ["--splits", "random", "--seeds", "0", "--epochs", "2", "--max-molecules", "60"]


def test_gnkit_side_trains_each_seed_and_writes_its_row(tmp_path):
    record = tmp_path / "record.json"
    results = chemprop_compare.main(
        ["--data", "esol", *TINY, "--no-chemprop", "--no-default", "--json", str(record)]
    )
    assert json.loads(record.read_text()) == results
    (row,) = results["rows"].values()
    assert set(row) == {"gnkit"}
    (run,) = row["gnkit"]["per_seed"]
    assert len(run["epoch_seconds"]) == 2
    assert math.isfinite(run["rmse"]) and 0 <= run["mae"] <= run["rmse"]


@pytest.mark.slow
def test_chemprop_side_probes_threads_for_each_data_set(tmp_path):
    pytest.importorskip("chemprop")
    results = chemprop_compare.main(
        ["--data", "esol,freesolv", *TINY, "--no-default", "--threads", "1,2",
         "--probe-epochs", "2"]
    )
    probes = results["chemprop_thread_probe_seconds_per_epoch"]
    assert set(probes) == {"esol", "freesolv"}
    for name, row in (("esol", results["rows"]["esol_random"]),
                      ("freesolv", results["rows"]["freesolv_random"])):
        (run,) = row["chemprop"]["per_seed"]
        assert run["threads"] == min(probes[name], key=probes[name].get)
        assert len(run["epoch_seconds"]) == 2
        assert row["speedup"] == pytest.approx(
            row["chemprop"]["seconds_per_epoch"] / row["gnkit"]["seconds_per_epoch"]
        )
