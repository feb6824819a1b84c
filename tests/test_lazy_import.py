"""The lazy package init: `import gnkit` and the `gnkit` command's listing import no JAX, while
every public name still resolves to the object its submodule defines.

The import checks run in fresh interpreters (this one has JAX loaded already) and read
`sys.modules` or `-X importtime`, never a clock.
"""

import ast
import importlib
import json
import pathlib
import subprocess
import sys

import pytest

import gnkit

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("jax", "jaxlib", "numpy", "flax", "optax")


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def _loaded(script: str) -> list[str]:
    """The top-level packages of `HEAVY` in `sys.modules` after `script`, and its own output."""
    done = _python("-c", f"import sys\n{script}\nprint(json.dumps(sorted("
                   f"{{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv, status", [(["--help"], 0), (["--version"], 0), (["sodoku"], 2)])
def test_the_command_lists_versions_and_rejects_without_importing_jax(argv, status):
    done = _python("-X", "importtime", "-m", "gnkit", *argv)
    assert done.returncode == status, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "gnkit.cli" in imported  # the importtime listing is read correctly
    assert not {name.split(".")[0] for name in imported} & set(HEAVY), sorted(imported)
    # gnkit.tuning: the allocator setting `import gnkit` applies (ctypes only).
    assert not {name for name in imported if name.startswith("gnkit.")} - {"gnkit.cli",
                                                                           "gnkit.tuning"}


def test_import_gnkit_loads_no_submodule_until_a_name_is_used():
    script = (
        "import json, gnkit\n"
        "before = sorted(m for m in sys.modules if m.startswith(('gnkit', 'jax')))\n"
        "gnkit.segment_sum\n"
        "print(json.dumps(before))\n"
    )
    done = _python("-c", f"import sys\n{script}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["gnkit", "gnkit.tuning"]
    assert _loaded("import json, gnkit") == []
    # The same probe sees JAX once a name is used, and Flax only once `gnkit.nn` is.
    assert _loaded("import json, gnkit\ngnkit.GraphsTuple") == ["jax", "jaxlib", "numpy"]
    assert "flax" in _loaded("import json, gnkit\ngnkit.nn.GCN")


def test_every_name_is_the_object_its_submodule_exports():
    for name, module_name in gnkit._ORIGIN.items():
        module = importlib.import_module(f"gnkit.{module_name}")
        exported = getattr(module, "__all__", None)
        if exported is not None:
            assert name in exported, f"gnkit.{module_name} does not export {name}"
        else:
            assert not name.startswith("_") and hasattr(module, name), (module_name, name)
        assert getattr(gnkit, name) is getattr(module, name), name
    for name in gnkit._SUBPACKAGES:
        assert getattr(gnkit, name) is importlib.import_module(f"gnkit.{name}")
    assert len(set(gnkit.__all__)) == len(gnkit.__all__)


def test_the_type_checking_imports_name_the_same_objects_as_the_mapping():
    tree = ast.parse((ROOT / "gnkit" / "__init__.py").read_text())
    (block,) = [node for node in tree.body if isinstance(node, ast.If)]
    assert ast.unparse(block.test) == "_typing.TYPE_CHECKING"
    imported, subpackages = {}, set()
    for statement in block.body:
        assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
        for alias in statement.names:
            assert alias.asname is None, alias.asname
            if statement.module == "gnkit":
                subpackages.add(alias.name)
            else:
                imported[alias.name] = statement.module.removeprefix("gnkit.")
    assert imported == gnkit._ORIGIN
    assert subpackages == set(gnkit._SUBPACKAGES)


def test_star_import_and_jraph_alias_give_the_same_objects():
    namespace = {}
    exec("from gnkit import *", namespace)
    assert set(gnkit.__all__) <= set(namespace)
    assert all(namespace[name] is getattr(gnkit, name) for name in gnkit.__all__)
    jraph = importlib.import_module("gnkit")
    graph = jraph.GraphsTuple(nodes=None, edges=None, receivers=None, senders=None,
                              globals=None, n_node=None, n_edge=None)
    assert type(graph) is importlib.import_module("gnkit.graph").GraphsTuple
    from gnkit import GraphNetwork

    assert GraphNetwork is importlib.import_module("gnkit.models").GraphNetwork


def test_dir_lists_the_public_names_and_no_helpers():
    listed = dir(gnkit)
    assert set(gnkit.__all__) <= set(listed)
    assert {"batching", "segment", "graph", "__version__"} <= set(listed)
    private = [name for name in listed if name.startswith("_") and not name.startswith("__")]
    assert private == []
    assert not {"importlib", "typing", "TYPE_CHECKING"} & set(listed)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="no attribute 'segment_summ'"):
        gnkit.segment_summ  # noqa: B018
    assert not hasattr(gnkit, "importlib")


def test_the_command_table_names_each_demo_by_its_own_name():
    from gnkit import cli

    for name, (module_name, about) in cli.DEMOS.items():
        assert importlib.import_module(module_name).DEMO.name == name
        assert about and "\n" not in about
