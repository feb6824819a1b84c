"""The results pages (`docs/results/<demo>.md`) and the README's demo table show the numbers of
the run records (`docs/results/<demo>.json`), and every record says which command and commit
made its numbers."""

import importlib.util
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
COMMIT = re.compile(r"[0-9a-f]{40}")


def _load_tables():
    spec = importlib.util.spec_from_file_location("results_tables", RESULTS / "_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tables = _load_tables()
PAGES = sorted(RESULTS.glob("*.md"))
RECORDS = sorted(RESULTS.glob("*.json"))


def test_every_page_has_its_record_and_every_record_its_page():
    assert PAGES, "no results pages"
    assert [page.stem for page in PAGES] == [record.stem for record in RECORDS]


@pytest.mark.parametrize("path", RECORDS, ids=lambda path: path.stem)
def test_record_names_command_commit_and_cpu_time_of_every_run(path):
    record = json.loads(path.read_text())
    assert record["demo"] == path.stem
    assert set(record) == {"demo", "paper", "runs"} and record["runs"]
    for name, run in record["runs"].items():
        assert {"command", "commit", "cpu_minutes", "transcribed_from", "results"} <= set(run), name
        assert set(run) <= {"command", "commit", "cpu_minutes", "transcribed_from", "results",
                            "note"}, name
        assert COMMIT.fullmatch(run["commit"]), (name, run["commit"])
        assert run["command"].strip(), name
        assert run["cpu_minutes"] is None or run["cpu_minutes"] > 0, name
        source = run["transcribed_from"]
        # A transcribed run says where its numbers were read and why no --json file exists.
        if source is not None:
            assert re.fullmatch(r"README\.md at [0-9a-f]{40}", source), (name, source)
            assert "note" in run, name


@pytest.mark.parametrize("path", [*PAGES, ROOT / "README.md"], ids=lambda path: path.stem)
def test_page_tables_are_the_rendering_of_their_templates(path):
    """Editing a number on a page (or in a record) without the other fails here; `python
    docs/results/_tables.py` re-renders every table from the records."""
    text = path.read_text()
    assert text.count("<!-- table\n") == text.count("<!-- end table -->") >= 1
    assert tables.stale_tables(path) == []


def test_readme_demo_table_links_every_demo_results_page():
    """Every page of a demo (`gnkit.demos.<page>`) is a row with a headline number; the other
    pages (experiments in `benchmarks/`) are linked from the README's text."""
    readme = (ROOT / "README.md").read_text()
    block = tables.TABLE.search(readme)["template"]
    for page in PAGES:
        if importlib.util.find_spec(f"gnkit.demos.{page.stem}") is None:
            assert f"docs/results/{page.name}" in readme, page.name
            continue
        assert f"docs/results/{page.name}" in block, page.name
        assert "{" + page.stem + "/" in block, f"no headline number from {page.stem}.json"


def test_sudoku_record_is_a_real_eval_of_100_puzzles_per_level():
    """The Sudoku record was written by `eval --json`: its overall accuracies are the means of
    the 18 levels of 100 puzzles each."""
    results = json.loads((RESULTS / "sudoku.json").read_text())["runs"]["shipped_checkpoint"]
    per_givens = results["results"]["per_givens"]
    assert sorted(per_givens, key=int) == [str(level) for level in range(17, 35)]
    assert {row["puzzles"] for row in per_givens.values()} == {100}
    mean = sum(row["puzzle_accuracy"] for row in per_givens.values()) / len(per_givens)
    assert results["results"]["puzzle_accuracy"] == pytest.approx(mean, abs=1e-9)
    assert all(len(row["puzzle_accuracy_per_step"]) == 64 for row in per_givens.values())


@pytest.fixture()
def scratch_records(tmp_path, monkeypatch):
    record = {
        "demo": "toy",
        "paper": {"rn": [0.5, 0.75]},
        "runs": {"default": {"command": "gnkit toy train", "commit": "a" * 40, "cpu_minutes": 2.5,
                             "transcribed_from": None,
                             "results": {"per_level": {"17": {"solved": 0.25},
                                                       "18": {"solved": 0.125}},
                                         "curve": [0.1, 0.2, 0.3]}}},
    }
    (tmp_path / "toy.json").write_text(json.dumps(record))
    monkeypatch.setattr(tables, "RESULTS", tmp_path)
    return tmp_path


def test_render_fields_stars_run_fields_and_other_records(scratch_records):
    template = "| level | 17 | 18 |\n|---|---|---|\n| solved | {default:per_level.*.solved:.1%} |\n"
    assert tables.render(template, "toy") == (
        "| level | 17 | 18 |\n|---|---|---|\n| solved | 25.0% | 12.5% |\n"
    )
    assert tables.render("| i | 0 | 1 |\n| paper | {paper:rn.*:.2f} |\n", "toy") == (
        "| i | 0 | 1 |\n| paper | 0.50 | 0.75 |\n"
    )
    assert tables.render("{default:curve.2} {default:@cpu_minutes} {default:@commit:.7}", "toy") \
        == "0.3 2.5 aaaaaaa"
    assert tables.render("{toy/default:per_level.18.solved:.3f}", None) == "0.125"


def test_render_names_the_missing_run_or_key(scratch_records):
    with pytest.raises(KeyError, match="no run 'long'"):
        tables.render("{long:per_level.17.solved}", "toy")
    with pytest.raises(KeyError, match="no 'unsolved' in path"):
        tables.render("{default:per_level.17.unsolved}", "toy")
    with pytest.raises(FileNotFoundError, match="names the demo 'nope'"):
        tables.render("{nope/default:x}", None)


def test_stale_tables_finds_a_changed_number_and_refresh_fixes_it(scratch_records):
    page = scratch_records / "toy.md"
    page.write_text("# Toy\n\n<!-- table\n| a |\n|---|\n| {default:per_level.17.solved} |\n"
                    "-->\n| a |\n|---|\n| 0.3 |\n<!-- end table -->\n")
    assert len(tables.stale_tables(page)) == 1
    tables.refresh(page)
    assert tables.stale_tables(page) == []
    assert "| 0.25 |\n<!-- end table -->" in page.read_text()
