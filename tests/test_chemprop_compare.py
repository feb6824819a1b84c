"""benchmarks.chemprop_compare and benchmarks.dmpnn stay runnable: tiny runs of gnkit's side
(always) and of both tools with the thread probe per data set (where chemprop is installed: the
bench extra); the merge of records on other seeds."""

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


def _record(seeds, rmse):
    def run(value):
        return {"rmse": value, "mae": value / 2, "epoch_seconds": [1.0, 1.0], "cpu_minutes": 1.0}

    row = {"gnkit": [run(v) for v in rmse], "chemprop": [run(v + 0.1) for v in rmse]}
    return {"epochs": 50, "default_epochs": None, "seeds": seeds,
            "rows": {"esol_random": chemprop_compare._row_summary(row)}}


def test_merge_joins_seeds_in_order_and_summarises_them_all():
    merged = chemprop_compare.merge(
        [_record([3, 4], [0.4, 0.5]), _record([0, 1, 2], [0.1, 0.2, 0.3])]
    )
    assert merged["seeds"] == [0, 1, 2, 3, 4]
    row = merged["rows"]["esol_random"]
    assert [run["rmse"] for run in row["gnkit"]["per_seed"]] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert row["gnkit"]["rmse"]["mean"] == pytest.approx(0.3)
    assert row["gnkit"]["rmse"]["std"] == pytest.approx(math.sqrt(0.02))  # population std
    assert row["chemprop"]["rmse"]["mean"] == pytest.approx(0.4)
    assert "speedup" not in row and row["seeds_finished"] == 5


def test_merge_keeps_the_rows_of_the_data_sets_asked_for():
    one, two = _record([0], [0.1]), _record([1], [0.2])
    one["rows"]["lipophilicity_random"] = one["rows"]["esol_random"]
    merged = chemprop_compare.merge([one, two], ["esol"])
    assert list(merged["rows"]) == ["esol_random"]
    assert merged["rows"]["esol_random"]["seeds"] == [0, 1]
    only = chemprop_compare.merge([one, two], ["lipophilicity"])["rows"]["lipophilicity_random"]
    assert only["seeds"] == [0] and only["gnkit"]["rmse"]["mean"] == pytest.approx(0.1)


def test_merge_refuses_shared_seeds_and_different_epochs():
    with pytest.raises(ValueError, match="share seeds"):
        chemprop_compare.merge([_record([0, 1], [0.1, 0.2]), _record([1], [0.3])])
    other = {**_record([2], [0.3]), "epochs": 100}
    with pytest.raises(ValueError, match="different epochs"):
        chemprop_compare.merge([_record([0, 1], [0.1, 0.2]), other])


def test_dmpnn_benchmark_times_both_reverses_on_a_real_batch():
    from benchmarks import dmpnn

    (result,) = dmpnn.main(
        ["--data", "freesolv", "--rounds", "1", "--steps", "1", "--max-molecules", "80"]
    ).values()
    assert result["edges"] % 2 == 0 and result["nodes"] > 0
    assert set(result["milliseconds"]) == {"swap", "gather"}
