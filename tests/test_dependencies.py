"""Every third-party module the package imports is a declared runtime dependency.

A fresh `pip install .` must be enough for the demos; networkx is the one optional import (the
`networkx` extra), loaded lazily with a clear error when missing.
"""

import ast
import pathlib
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
OPTIONAL = {"networkx"}


def _imported_top_level_modules():
    modules = set()
    for path in (ROOT / "gnkit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    return {name for name in modules if name not in sys.stdlib_module_names} - {"gnkit"}


def test_imports_are_declared_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        requirement.split(">")[0].split("=")[0].split("<")[0].strip().replace("-", "_")
        for requirement in project["dependencies"]
    }
    undeclared = _imported_top_level_modules() - declared - OPTIONAL
    assert not undeclared, f"imported but not in [project].dependencies: {sorted(undeclared)}"
