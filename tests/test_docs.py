"""The documentation: the Sphinx site builds without warnings, the API reference covers every
public name, docstring examples pass as doctests, and the guides' code runs.

Skipped when Sphinx (the `docs` extra) is not installed. The build runs once per session in a
temporary directory, with warnings as errors (`sphinx-build -W`); nothing is written into docs/.
"""

import doctest
import importlib
import importlib.util
import inspect
import json
import os
import pathlib
import re
import subprocess
import sys
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# Modules whose docstrings hold examples, run as doctests.
DOCTEST_MODULES = [
    "gnkit.graph",
    "gnkit.segment",
    "gnkit.blocks",
    "gnkit.aggregators",
    "gnkit.batching.batch_unbatch",
    "gnkit.batching.padding",
    "gnkit.batching.bucketing",
    "gnkit.batching.conversions",
    "gnkit.validation",
    "gnkit.convolutions",
    "gnkit.attention",
    "gnkit.models",
    "gnkit.typed_graph.types",
    "gnkit.typed_graph.batching",
    "gnkit.typed_graph.padding",
    "gnkit.typed_graph.budgets",
    "gnkit.typed_graph.validation",
]

# Namespaces whose `__all__` must be documented, each name under `namespace.name`.
DOCUMENTED_NAMESPACES = [
    "gnkit",
    "gnkit.nn",
    "gnkit.nnx",
    "gnkit.parallel",
    "gnkit.aggregators",
    "gnkit.experiments",
    "gnkit.sampling",
    "gnkit.graph_files",
    "gnkit.typed_graph",
    "gnkit.chem",
    "gnkit.atoms",
    "gnkit.atoms.datasets",
    "gnkit.atoms.features",
    "gnkit.atoms.species",
    "gnkit.atoms.potential",
    "gnkit.atoms.equivariant",
    "gnkit.atoms.nn",
    "gnkit.atoms.nn.schnet",
    "gnkit.atoms.nn.painn",
    "gnkit.atoms.nnx",
    "gnkit.particles",
]
# Modules without `__all__`: every public function and class defined in them is documented.
DOCUMENTED_MODULES = [
    "gnkit.train",
    "gnkit.tasks.sudoku",
    "gnkit.demos.sudoku.models",
    "gnkit.tasks.shortest_path",
    "gnkit.tasks.sorting",
    "gnkit.tasks.mass_spring",
    "gnkit.tasks.long_range",
    "gnkit.tasks.nth_farthest",
    "gnkit.tasks.pretty_clevr",
    "gnkit.tasks.sort_of_clevr",
    "gnkit.tasks.clevr.scenes",
    "gnkit.tasks.clevr.programs",
    "gnkit.tasks.clevr.questions",
    "gnkit.tasks.clevr.files",
    "gnkit.tasks.clevr.vocab",
    "gnkit.kg.scorers",
    "gnkit.kg.training",
    "gnkit.kg.evaluation",
    "gnkit.kg.triples",
    "gnkit.tasks.wordnet",
    "gnkit.tuning",
    "gnkit.dmpnn",
    "gnkit.chem.features",
    "gnkit.experiments.runner",
    "gnkit.atoms.checks",
    "gnkit.atoms.neighbor_list",
    "gnkit.atoms.nn.mace",
    "gnkit.particles.gns",
    "gnkit.particles.segnn",
    "gnkit.particles.nnx",
    "gnkit.particles.one_step",
    "gnkit.particles.rollout",
    "gnkit.particles.sinkhorn",
]

PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: str) -> str:
    """The fenced ```python blocks of a Markdown page, joined in order into one program."""
    return "\n".join(PYTHON_BLOCK.findall((DOCS / page).read_text()))


def run_page(page: str) -> dict:
    namespace = {"__name__": f"docs_{page.replace('/', '_')}"}
    exec(compile(python_blocks(page), str(DOCS / page), "exec"), namespace)
    return namespace


@pytest.fixture(scope="session")
def built_docs(tmp_path_factory):
    """Build the HTML site with warnings as errors; return the output directory."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("sphinx_book_theme")
    out = tmp_path_factory.mktemp("docs_html")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), str(DOCS), str(out)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )
    assert result.returncode == 0, f"sphinx-build failed:\n{result.stdout}\n{result.stderr}"
    return out


def inventory_names(path: pathlib.Path) -> set[str]:
    """Object names in a Sphinx `objects.inv` (version 2: four header lines, then zlib)."""
    data = path.read_bytes()
    header_end = 0
    for _ in range(4):
        header_end = data.index(b"\n", header_end) + 1
    assert data.startswith(b"# Sphinx inventory version 2"), data[:40]
    body = zlib.decompress(data[header_end:]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line.strip()}


def public_names() -> list[str]:
    """The full names the reference must hold: a class or function exported by several of the
    listed namespaces and modules (`gnkit.atoms.nn.SchNet`, also in `gnkit.atoms.nn.schnet`) is
    documented once, under the first; constants and type aliases under every name (two aliases
    of one type, such as jraph's `ArrayTree` and `NodeFeatures`, are one object)."""
    names, seen = [], set()

    def add(full_name, value):
        if not (inspect.isfunction(value) or inspect.isclass(value)):
            names.append(full_name)
        elif id(value) not in seen:
            seen.add(id(value))
            names.append(full_name)

    for namespace in DOCUMENTED_NAMESPACES:
        module = importlib.import_module(namespace)
        for name in module.__all__:
            if not inspect.ismodule(getattr(module, name)):
                add(f"{namespace}.{name}", getattr(module, name))
    for module_name in DOCUMENTED_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module_name:
                continue
            if inspect.isfunction(value) or inspect.isclass(value):
                add(f"{module_name}.{name}", value)
    return names


def test_docs_build_without_warnings_and_reference_every_public_name(built_docs):
    documented = inventory_names(built_docs / "objects.inv")
    missing = [name for name in public_names() if name not in documented]
    assert not missing, f"public names missing from the API reference (docs/api/): {missing}"
    for page in ["api/index", "migrating_from_jraph", "migrating_from_pyg", "results/sudoku",
                 "results/sort_of_clevr", "guides/graphs_and_padding",
                 "guides/blocks", "guides/training", "guides/rrn_sudoku", "guides/scale_out",
                 "guides/typed_graphs", "guides/molecules",
                 "guides/demos", "guides/performance", "guides/sampling", "guides/atoms",
                 "api/atoms", "api/particles"]:
        assert (built_docs / f"{page}.html").is_file(), page


def test_api_pages_group_names_once():
    """Each name is documented once, so cross-references are unambiguous."""
    entries = []
    for page in sorted((DOCS / "api").glob("*.rst")):
        current = None
        for line in page.read_text().splitlines():
            if line.startswith(".. currentmodule::"):
                current = line.split("::")[1].strip()
            match = re.match(r"\.\. auto(function|class|data):: (\S+)", line)
            if match:
                entries.append(f"{current}.{match[2]}" if current else match[2])
    duplicates = sorted({entry for entry in entries if entries.count(entry) > 1})
    assert not duplicates, duplicates


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    for test in finder.find(module, module_name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest failures in {module_name}"


def test_most_core_modules_have_examples():
    attempted = {}
    for module_name in DOCTEST_MODULES:
        tests = doctest.DocTestFinder().find(importlib.import_module(module_name), module_name)
        attempted[module_name] = sum(len(test.examples) for test in tests)
    without = [name for name, count in attempted.items() if count == 0]
    assert len(without) <= 1, f"modules without docstring examples: {without}"


def test_jraph_migration_page_lists_every_jraph_name():
    jraph = pytest.importorskip("jraph")
    page = (DOCS / "migrating_from_jraph.md").read_text()
    listed = set(re.findall(r"`([A-Za-z_]+)`", page))
    missing = sorted(set(jraph.__all__) - listed)
    assert not missing, f"jraph names missing from docs/migrating_from_jraph.md: {missing}"
    assert f"The {len(jraph.__all__)} names" in page


@pytest.mark.slow
def test_jraph_migration_worked_example_runs():
    pytest.importorskip("jraph")
    namespace = run_page("migrating_from_jraph.md")
    assert namespace["out"].globals.shape == (3, 2)


def test_pyg_migration_worked_example_computes_what_pyg_computes():
    """The page's PyG GCN and its gnkit port with the copied weights (the page asserts the
    outputs agree); one row per real graph."""
    pytest.importorskip("torch_geometric")
    namespace = run_page("migrating_from_pyg.md")
    assert namespace["out"].shape == namespace["expected"].shape == (3, 2)
    np = namespace["np"]
    np.testing.assert_allclose(namespace["out"], namespace["expected"], rtol=1e-5, atol=1e-5)


def test_pyg_migration_page_names_exist_in_gnkit():
    """Every `gn.NAME` and `gnkit.MODULE.NAME` the page maps a PyG name to exists."""
    page = (DOCS / "migrating_from_pyg.md").read_text()
    gnkit = importlib.import_module("gnkit")
    for name in set(re.findall(r"`gn\.([A-Za-z_]+)[`(]", page)):
        assert hasattr(gnkit, name), f"gn.{name}"
    for module, name in set(re.findall(r"`gnkit\.([a-z_.]+)\.([A-Za-z_]+)[`(]", page)):
        assert hasattr(importlib.import_module(f"gnkit.{module}"), name), f"gnkit.{module}.{name}"


@pytest.mark.parametrize(
    "page", ["index.md", "guides/graphs_and_padding.md", "guides/blocks.md", "guides/sampling.md",
             pytest.param("guides/linen_or_nnx.md", marks=pytest.mark.slow),  # two 300-step fits
             "guides/adding_a_demo.md", "guides/molecules.md"]
)
def test_guide_code_runs(page):
    namespace = run_page(page)
    if page == "guides/adding_a_demo.md":  # both models trained, resumable, in one run
        assert sorted(namespace["results"]["models"]) == ["narrow", "wide"]
        assert (namespace["run_dir"] / "checkpoints" / "wide" / "best.msgpack").exists()
    if page == "guides/sampling.md":  # every sampler the page is about, run
        from gnkit import sampling

        for name in ("NeighborSampler", "TypedNeighborSampler", "LinkNeighborSampler"):
            assert any(isinstance(value, getattr(sampling, name))
                       for value in namespace.values()), name
        # Per seed: papers 1 + 4 cited + 4 x 2 cited by those + 3 authors x 2 papers each;
        # authors 3 + 4 x 2 (of the hop-1 papers); one padding row per set.
        assert namespace["typed"].budget.n_node == {"paper": 32 * (1 + 4 + 4 * 2 + 3 * 2) + 1,
                                                    "author": 32 * (3 + 4 * 2) + 1}
    if page == "guides/linen_or_nnx.md":  # an NNX optimizer restored from a checkpoint
        assert namespace["saved"].step == 20 and len(namespace["resumed"]) == 10
        assert namespace["resumed"] == namespace["uninterrupted"]
    if page == "guides/molecules.md":  # the library's molecule API, without the demo's CLI
        assert namespace["n_edge"] % 2 == 0 and len(namespace["losses"]) == 96 // 32
        assert namespace["predicted"].shape == (12,)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", ["guides/training.md", "guides/rrn_sudoku.md", "guides/scale_out.md",
             "guides/typed_graphs.md"]
)
def test_longer_guide_code_runs(page):
    run_page(page)


@pytest.mark.slow
def test_atoms_guide_code_prints_its_errors_and_trains_in_both_apis():
    page = "guides/atoms.md"
    namespace = run_page(page)
    shown = re.search(r"^prints\n\n```text\n(.*?)^```", (DOCS / page).read_text(), re.S | re.M)
    assert shown[1].splitlines() == namespace["errors"]  # the errors as the page shows them
    # The batches in two padded shapes: two compiles over 24 steps.
    assert len(namespace["compiles"]) == 2 and len(namespace["losses"]) == 24
    assert namespace["losses"][-1] < namespace["losses"][0] / 4
    assert namespace["nnx_losses"][-1] < namespace["nnx_losses"][0] / 4


def _demo_table_module():
    spec = importlib.util.spec_from_file_location("demo_table", DOCS / "guides" / "_demo_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demos_page_lists_every_demo_of_the_command_as_the_registry_renders_it():
    """`python docs/guides/_demo_table.py` re-renders the table after a demo is added."""
    from gnkit import cli

    table = _demo_table_module().page_table()
    assert table == _demo_table_module().demo_table()
    commands = re.findall(r"^\| `gnkit ([\w-]+)` \|", table, re.MULTILINE)
    assert commands == list(cli.DEMOS)
    assert "| `gnkit molecules` | " in table and "| `demos`, `chem` |" in table


def test_the_molecules_notebook_states_the_default_presets_replicates_and_epochs():
    from gnkit.demos.molecules import CONFIGS

    cells = json.loads((ROOT / "colabs" / "molecules.ipynb").read_text())["cells"]
    text = "".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    stated = re.findall(r"default recipe \((\d+) replicates of (\d+) epochs\)", text)
    assert stated == [(str(CONFIGS["default"].seeds), str(CONFIGS["default"].epochs))]


def test_the_deprecated_train_state_alias_is_documented_as_deprecated_not_as_a_class():
    page = (DOCS / "api" / "train.rst").read_text()
    assert "autoclass:: gnkit.train.TrainState" not in page
    entry = page.split(".. py:data:: TrainState", 1)[1]
    assert entry.split("\n\n", 2)[1].strip().startswith("Deprecated:")
    from gnkit import train

    with pytest.warns(DeprecationWarning, match="TrainState is deprecated"):
        assert train.TrainState is train.TrainingState
