"""Makes this interpreter import only what a GPU image holds; loaded at start-up by every Python
whose `PYTHONPATH` holds this folder (children included).

- `tyro`, `rich` and `matplotlib` cannot be imported, except `rich` by flax (a flax dependency
  that `flax.linen` imports itself) and by rich itself;
- with `$GNKIT_IMAGE_PACKAGES` (distribution names, comma-separated), a top-level module that an
  installed distribution outside those packages and their requirements provides cannot be
  imported either (optional imports, such as torch_geometric's of pandas, then fail as they
  would there);
- with `$GNKIT_IMPORT_LOG`, the top-level names of all loaded modules go to
  `$GNKIT_IMPORT_LOG.<pid>` at exit, one a line.
"""

import atexit
import builtins
import importlib.machinery
import importlib.metadata
import os
import sys

from image_packages import normalise, requirement_closure

BLOCKED = {"tyro", "rich", "matplotlib"}
ALLOWED_IMPORTERS = ("flax", "rich")


class _ImagePathFinder(importlib.machinery.PathFinder):
    """The path finder, blind to `ABSENT` top-level modules: `import tyro` fails as it does where
    tyro is not installed, and `importlib.util.find_spec("pandas")` is None."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in ABSENT:
            return None
        return super().find_spec(name, path, target)


def _outside_image(packages: str) -> set[str]:
    """Top-level modules that only distributions outside the image provide."""
    if not packages:
        return set()
    image = requirement_closure(packages.split(","))
    return (
        {
            module
            for module, owners in importlib.metadata.packages_distributions().items()
            if not {normalise(owner) for owner in owners} & image
        }
        - {"gnkit", "benchmarks", "tests"}
        - set(sys.stdlib_module_names)
    )


_import = builtins.__import__


def _checked_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`rich` only for flax and rich: an import statement anywhere else fails, even when flax
    has already loaded rich (a cached module never reaches a meta-path finder)."""
    if level == 0 and name.partition(".")[0] in BLOCKED:
        importer = (globals or {}).get("__name__", "")
        if not importer.startswith(ALLOWED_IMPORTERS):
            raise ModuleNotFoundError(f"{name} is blocked here (imported by {importer})", name=name)
    return _import(name, globals, locals, fromlist, level)


def _log_modules() -> None:
    names = sorted({name.partition(".")[0] for name in list(sys.modules)})
    with open(f"{os.environ['GNKIT_IMPORT_LOG']}.{os.getpid()}", "w") as log:
        log.write("\n".join(names) + "\n")


ABSENT = (BLOCKED - {"rich"}) | _outside_image(os.environ.get("GNKIT_IMAGE_PACKAGES", ""))
sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = _ImagePathFinder
builtins.__import__ = _checked_import
if os.environ.get("GNKIT_IMPORT_LOG"):
    atexit.register(_log_modules)
