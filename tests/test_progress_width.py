"""The progress line on an 80-column terminal: the count, rate and times are whole; only the
status (the latest metrics) is cut."""

from gnkit.progress import ProgressBar


def test_an_80_column_line_keeps_counts_and_times_whole(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    bar = ProgressBar(5000, initial=1234, description="training")
    bar.update(3)
    bar.set_status({"loss": 0.8557, "accuracy": 0.9123, "cell": 0.456})
    bar.close()
    line = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert len(line) <= 80
    assert line.startswith("training ") and " 1237/5000 " in line
    assert " 0:00:00 eta -:--:-- loss=0.8557" in line and "…" not in line.split("loss=")[0]
    assert "cell=0.456" not in line  # the status gave way


def test_rates_of_any_size_keep_to_five_characters():
    from gnkit.progress import _short

    assert [_short(v) for v in (1, 9.996, 42.42, 999.4, 999.6, 1234, 56_789, 3.2e9, 7e15)] == [
        "1", "10", "42.4", "999", "1k", "1.23k", "56.8k", "3.2G", ">1P"]


def test_a_fast_rate_leaves_the_times_whole(monkeypatch, capsys):
    """A rate of thousands of steps a second (a fast machine) is as wide as the column."""
    monkeypatch.setenv("COLUMNS", "80")
    bar = ProgressBar(5000, initial=1234, description="training")
    bar._progress.update(bar._task, rate="1.23k step/s")  # the widest rate text
    bar.set_status({"loss": 0.8557})
    bar.close()
    line = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert "1.23k step/s" in line and "…" not in line.split("loss=")[0]
