"""Running a script as the GPU image would: only its packages importable, and a list of what the
script imported (`tests/import_blocker/sitecustomize.py` does the blocking and the listing)."""

import importlib
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCKER = ROOT / "tests" / "import_blocker"
sys.path.insert(0, str(BLOCKER))
from image_packages import normalise, requirement_closure  # noqa: E402

sys.path.remove(str(BLOCKER))

# The accelerator image (Python 3.12): jax with CUDA, flax, optax, chex, orbax, numpy, torch with
# CUDA, torch-geometric, and what they require. jraph is not there: the benchmark suite gets it
# from a carried pure-Python wheel (`benchmarks/accelerator.py --wheels`); `CARRIED` lets a test
# treat it as installed instead.
IMAGE_PACKAGES = (
    "jax", "jaxlib", "flax", "optax", "chex", "orbax-checkpoint", "numpy", "torch",
    "torch-geometric",
)  # fmt: skip
CARRIED = ("jraph",)
# Loaded modules that no distribution provides and the standard library does not name.
INTERPRETER_MODULES = {"cython_runtime", "sitecustomize", "image_packages"}


def run_as_image(args: list[str], log_dir: pathlib.Path, timeout: float, carried=CARRIED):
    """`python ARGS` in the repository root with only the image's packages (and `carried`)
    importable and tyro, rich (outside flax) and matplotlib blocked, for it and its children.
    The completed process; each interpreter's module list lands in `log_dir`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BLOCKER), str(ROOT)])
    env["GNKIT_IMAGE_PACKAGES"] = ",".join(IMAGE_PACKAGES + tuple(carried))
    env["GNKIT_IMPORT_LOG"] = str(log_dir / "imports")
    env.pop("XLA_FLAGS", None)
    command = [sys.executable, *args]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def imported_outside_gnkit(log_dir: pathlib.Path) -> dict[str, dict[str, str]]:
    """Per interpreter (log file name), the top-level modules it loaded that are neither
    gnkit's, the repository's, the standard library's nor the interpreter's own, with the file
    each came from."""
    lists = {}
    for path in sorted(log_dir.glob("imports.*")):
        rows = [line.split("\t") for line in path.read_text().splitlines() if line]
        lists[path.name] = {
            name: where
            for name, where in rows
            if name not in sys.stdlib_module_names
            and not name.startswith("_")
            and name not in {"gnkit", "benchmarks", "tests"} | INTERPRETER_MODULES
        }
    return lists


def wheel_of(package: str, folder: pathlib.Path) -> pathlib.Path:
    """The installed `package` zipped as a wheel file in `folder` (its files, bytecode caches left
    out), as a checkout would carry it (what the accelerator plan unpacks; `pip download` makes
    the real one)."""
    source = pathlib.Path(importlib.import_module(package).__file__).parent
    wheel = folder / f"{package}-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in source.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(source.parent))
    return wheel


def distributions_of(modules: list[str]) -> dict[str, set[str]]:
    """The installed distributions that provide each top-level module."""
    owners = importlib.metadata.packages_distributions()
    return {name: {normalise(owner) for owner in owners.get(name, [])} for name in modules}


def image_closure(carried=CARRIED) -> set[str]:
    """The image's distributions and all they require, plus `carried`."""
    return requirement_closure(IMAGE_PACKAGES + tuple(carried))
