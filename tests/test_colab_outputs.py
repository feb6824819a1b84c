"""The notebooks as saved: executed top to bottom, printed configs that match today's config
dataclasses, and a first cell that installs gnkit where it is missing (no kernel is started)."""

import ast
import dataclasses
import importlib
import json
import pathlib
import re
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLABS = ROOT / "colabs"
NOTEBOOKS = sorted(COLABS.glob("*.ipynb"))
IDS = [path.stem for path in NOTEBOOKS]
EXTRAS_LINE = re.compile(r'^EXTRAS = "([^"]*)"$', re.M)
DEMO_IMPORT = re.compile(
    r"^\s*from (gnkit\.demos(?:\.\w+)*) import (\w+)|^\s*import (gnkit\.demos(?:\.\w+)+)", re.M
)
CONFIG_REPR = re.compile(r"\b([A-Z]\w*Config)\(")


def read(path):
    return nbformat.read(path, as_version=4)


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def output_texts(notebook):
    """The text of every saved output: streams, and the plain text of results and displays."""
    for cell in code_cells(notebook):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                yield output["text"]
            elif "data" in output and "text/plain" in output["data"]:
                yield output["data"]["text/plain"]


def demo_config_fields(notebook):
    """{config class name: its field names} for the CONFIGS of every demo module imported."""
    modules = set()
    for cell in code_cells(notebook):
        for package, name, module in DEMO_IMPORT.findall(cell.source):
            modules.add(module or f"{package}.{name}")
    classes = {}
    for module_name in sorted(modules):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:  # `from gnkit.demos.x import function`: x is the module
            module = importlib.import_module(module_name.rsplit(".", 1)[0])
        for config in getattr(module, "CONFIGS", {}).values():
            classes[type(config).__name__] = {field.name for field in dataclasses.fields(config)}
    return classes


def top_level_keys(arguments):
    """`a=1, b=(2, 3), c='x=y'` -> ['a', 'b', 'c']: the keyword names at depth 0 of a repr."""
    keys, depth, start, quote = [], 0, 0, None
    for index, char in enumerate(arguments + ","):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            name = arguments[start:index].split("=", 1)[0].strip()
            if name:
                keys.append(name)
            start = index + 1
    return keys


def printed_configs(text):
    """(class name, [field names]) of every `SomethingConfig(...)` repr in `text`."""
    for match in CONFIG_REPR.finditer(text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        yield match.group(1), top_level_keys(text[match.end() : end - 1])


def printed_json_config_keys(text):
    """The keys of every JSON object printed under a `"config":` key in `text`."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r'"config":\s*', text):
        try:
            value, _ = decoder.raw_decode(text, match.end())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield list(value)


def unknown_config_fields(notebook):
    """Printed config fields (and config classes) that the notebook's demos do not define."""
    classes = demo_config_fields(notebook)
    every_field = set().union(*classes.values()) if classes else set()
    unknown = []
    for text in output_texts(notebook):
        for class_name, keys in printed_configs(text):
            if class_name not in classes:
                unknown.append(f"class {class_name}")
            else:
                unknown += [f"{class_name}.{key}" for key in keys if key not in classes[class_name]]
        for keys in printed_json_config_keys(text):
            unknown += [f"config.{key}" for key in keys if key not in every_field]
    return unknown


def install_cell(notebook):
    return code_cells(notebook)[0].source


def test_every_notebook_is_found():
    assert len(NOTEBOOKS) >= 12


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_code_cell_was_executed_in_order(path):
    cells = code_cells(read(path))
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), counts
    for cell in cells:
        for output in cell.outputs:
            assert output.output_type != "error", output.get("ename")
            if output.output_type == "execute_result":
                assert output.execution_count == cell.execution_count
    plotting = [cell for cell in cells if "plt.show()" in cell.source or "Image(" in cell.source]
    for cell in plotting:
        assert any("image/png" in output.get("data", {}) for output in cell.outputs), cell.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_saved_outputs_name_only_existing_config_fields(path):
    assert unknown_config_fields(read(path)) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_saved_notebook_is_modest_and_records_its_source(path):
    assert path.stat().st_size < 500_000
    record = read(path).metadata["gnkit_outputs"]
    assert re.fullmatch(r"[0-9a-f]{40}(\+modified)?", record["commit"])
    assert record["cpu_minutes"] >= 0


def printed_by(notebook, statement):
    """The text printed by the one code cell whose source contains `statement`."""
    (cell,) = [cell for cell in code_cells(notebook) if statement in cell.source]
    return "".join(output["text"] for output in cell.outputs if output.output_type == "stream")


def recorded_run(demo, run):
    return json.loads((ROOT / "docs" / "results" / f"{demo}.json").read_text())["runs"][run]


@pytest.mark.parametrize("name", ["shortest_path", "physics", "sort"])
def test_graph_nets_notebooks_at_the_default_config_show_the_results_page_numbers(name):
    """These notebooks train the demo's default config, the run the results page records."""
    printed = printed_by(read(COLABS / f"{name}.ipynb"), 'json.dumps(results["test"]')
    assert json.loads(printed) == recorded_run(name, "default")["results"]["test"]


def test_kg_notebook_shows_the_results_page_numbers_of_its_run():
    printed = printed_by(read(COLABS / "kg.ipynb"), "round(results[key], 3)")
    recorded = recorded_run("kg", "umls_rotate")["results"]
    metrics = ("mrr", "hits@1", "hits@3", "hits@10")
    assert ast.literal_eval(printed) == {key: round(recorded[key], 3) for key in metrics}


def test_stale_config_fields_are_caught():
    """The sort notebook once saved a config printed before fields were renamed."""
    stale = (
        "DemoConfig(train_steps=60, batch_size=16, latent_size=16, num_processing_steps=10, "
        "test_sizes=((8, 16), (16, 32)), eval_every_steps=60, seed=0)\n"
    )
    renamed_class = "SortConfig(updates=5)\n"
    as_json = '{"demo": "sort", "config": {"updates": 60, "train_steps": 60}, "test": {}}'
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("from gnkit.demos.graph_nets import sort"),
        nbformat.v4.new_code_cell(
            "print(config)",
            outputs=[
                nbformat.v4.new_output("stream", text=text)
                for text in (stale, renamed_class, as_json)
            ],
        ),
    ]
    assert unknown_config_fields(notebook) == [
        "DemoConfig.train_steps",
        "DemoConfig.num_processing_steps",
        "DemoConfig.eval_every_steps",
        "class SortConfig",
        "config.train_steps",
    ]


def test_top_level_keys_skip_nested_and_quoted_commas():
    assert top_level_keys("a=1, b=(2, 3), c='x, y=z', d={'e': 1, 'f': 2}") == ["a", "b", "c", "d"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_demo_notebook_names_its_results_page(path):
    notebook = read(path)
    markdown = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    pages = re.findall(r"docs/results/\w+\.md", markdown)
    assert all((ROOT / page).is_file() for page in pages), pages
    if demo_config_fields(notebook):
        assert pages


def test_no_cell_asks_for_input():
    for path in NOTEBOOKS:
        for cell in code_cells(read(path)):
            assert not re.search(r"\b(input|getpass)\(", cell.source), (path.stem, cell.source)


def test_first_code_cells_are_one_install_cell():
    """The same cell everywhere but for the extras, each an extra that pyproject.toml defines."""
    import tomllib

    defined = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    defined = set(defined["optional-dependencies"])
    shapes = set()
    for path in NOTEBOOKS:
        source = install_cell(read(path))
        (extras,) = EXTRAS_LINE.findall(source)
        assert "demos" in extras.split(",") and set(extras.split(",")) <= defined, extras
        shapes.add(EXTRAS_LINE.sub('EXTRAS = "..."', source))
    assert len(shapes) == 1


@pytest.fixture
def run_install_cell(monkeypatch):
    """Runs the rdl notebook's first cell with gnkit unimportable (or not) and pip recorded."""
    source = install_cell(read(COLABS / "rdl.ipynb"))
    calls = []

    def fake_run(command, check):
        assert check
        calls.append(command)

    def run(cwd, gnkit_missing=True):
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(subprocess, "run", fake_run)
        monkeypatch.setattr(sys, "path", list(sys.path))
        if gnkit_missing:
            monkeypatch.setitem(sys.modules, "gnkit", None)  # find_spec("gnkit") gives None
        exec(compile(source, "install_cell", "exec"), {})
        return calls

    return run


def test_install_cell_installs_the_checkout_it_sits_in(run_install_cell):
    calls = run_install_cell(COLABS)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    assert calls == [pip + ["-e", f"{ROOT}[demos,rdl,networkx]"]]
    assert sys.path[0] == str(ROOT)


def test_install_cell_outside_a_checkout_installs_from_the_index(run_install_cell, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "another"\n')
    calls = run_install_cell(tmp_path)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    assert calls == [pip + ["gnkit[demos,rdl,networkx]"]]


def test_install_cell_does_nothing_when_gnkit_imports(run_install_cell, tmp_path):
    assert run_install_cell(tmp_path, gnkit_missing=False) == []
