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
