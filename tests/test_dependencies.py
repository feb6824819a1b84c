"""What the package imports, and where: declared dependencies, light `import gnkit`, layering.

`import gnkit` needs only the runtime dependencies (jax, flax, optax, numpy) and loads no plotting,
progress or CLI library; those belong to the demos (the `demos` extra). networkx is the one
optional import of the library (the `networkx` extra), loaded lazily with a clear error.
"""

import ast
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gnkit"
OPTIONAL = {"networkx"}
DEMO_ONLY_MODULES = ("gnkit/demos/", "gnkit/experiments/", "gnkit/progress.py")
# Domain packages and the extra whose dependencies they may import.
DOMAIN_EXTRAS = {
    "gnkit/chem/": "chem",
    "gnkit/typed_graph/conversions.py": "pyg",
    "gnkit/rdl/": "rdl",
    "gnkit/demos/rdl/": "rdl",
    "gnkit/atoms/": "atoms",
    "gnkit/demos/potentials/": "atoms",
    "gnkit/atoms/datasets/qm9.py": "qm9",
    "gnkit/particles/": "particles",
}
BELOW_NN = (
    "graph.py",
    "validation.py",
    "batching",
    "segment.py",
    "aggregators.py",
    "blocks.py",
    "attention.py",
    "convolutions.py",
    "dmpnn.py",
    "chem",
    "models.py",
    "parallel",
)


def _third_party_imports(path: pathlib.Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(node.module.split(".")[0])
    return {name for name in modules if name not in sys.stdlib_module_names} - {"gnkit"}


def _imports_by_file() -> dict[str, set[str]]:
    return {
        str(path.relative_to(ROOT)): _third_party_imports(path) for path in PACKAGE.rglob("*.py")
    }


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[\w.-]+", r).group().replace("-", "_") for r in requirements}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_library_imports_are_runtime_dependencies_and_demo_imports_are_in_the_demos_extra():
    runtime = _names(_project()["dependencies"])
    demos = _names(_project()["optional-dependencies"]["demos"])
    for path, modules in _imports_by_file().items():
        allowed = runtime | OPTIONAL
        if path.startswith(DEMO_ONLY_MODULES):
            allowed = allowed | demos
        for prefix, extra in DOMAIN_EXTRAS.items():
            if path.startswith(prefix):
                allowed = allowed | _names(_project()["optional-dependencies"][extra])
        assert modules <= allowed, f"{path} imports undeclared {sorted(modules - allowed)}"


def test_every_declared_runtime_dependency_is_imported():
    imported = set().union(*_imports_by_file().values())
    unused = _names(_project()["dependencies"]) - imported
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_nothing_below_nn_imports_flax():
    offenders = [
        path
        for path, modules in _imports_by_file().items()
        if path.removeprefix("gnkit/").startswith(BELOW_NN) and "flax" in modules
    ]
    assert not offenders, f"modules below gnkit.nn import Flax: {offenders}"


def test_import_gnkit_loads_no_plotting_progress_or_cli_library():
    """Every name of `gnkit` used (they load on first use), `gnkit.nn` and `gnkit.nnx` aside."""
    code = (
        "import sys, gnkit\n"
        "[getattr(gnkit, name) for name in gnkit.__all__ if name not in ('nn', 'nnx')]\n"
        "print(sorted(m for m in ('matplotlib', 'rich', 'tqdm', 'tyro', 'flax') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    assert loaded == "[]", f"import gnkit loaded {loaded}"
