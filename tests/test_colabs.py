"""Every notebook in colabs/ executes top to bottom at its smoke-test size (a few updates; the
saved outputs come from `python colabs/regenerate.py` at the notebooks' default size). The
notebooks over about 15 s each run only with `-m slow`: each drives a demo whose own command-line
tests run by default."""

import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "colabs").glob("*.ipynb"))
SLOW = {
    "clevr", "kg", "molecules", "nth_farthest", "potentials", "pretty_clevr", "rdl",
    "shortest_path", "sort", "sort_of_clevr",
}


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.slow] if p.stem in SLOW else []) for p in NOTEBOOKS],
    ids=[path.stem for path in NOTEBOOKS],
)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("GNKIT_NOTEBOOK_SMOKE_TEST", "1")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    assert any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
