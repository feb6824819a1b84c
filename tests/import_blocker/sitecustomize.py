"""Makes this interpreter import only what a GPU image holds; loaded at start-up by every Python
whose `PYTHONPATH` holds this folder (children included).

- `tyro`, `rich` and `matplotlib` cannot be imported, except `rich` by flax (a flax dependency
  that `flax.linen` imports itself) and by rich itself;
- with `$GNKIT_IMAGE_PACKAGES` (distribution names, comma-separated), a top-level module that an
  installed distribution outside those packages and their requirements provides cannot be
  imported from site-packages either (optional imports, such as torch_geometric's of pandas,
  then fail as they would there), while a copy elsewhere (a carried wheel, unpacked) imports;
- with `$GNKIT_IMPORT_LOG`, each loaded top-level module and its file go to
  `$GNKIT_IMPORT_LOG.<pid>` at exit, one a line.
"""

import atexit
import builtins
import importlib.machinery
import importlib.metadata
import os
import sys
import sysconfig

from image_packages import normalise, requirement_closure

BLOCKED = {"tyro", "rich", "matplotlib"}
ALLOWED_IMPORTERS = ("flax", "rich")
SITE_PACKAGES = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}


def _installed(spec) -> bool:
    """Whether a module spec points into this interpreter's site-packages."""
    places = [spec.origin, *(spec.submodule_search_locations or [])]
    return any(str(place).startswith(tuple(SITE_PACKAGES)) for place in places if place)


class _ImagePathFinder(importlib.machinery.PathFinder):
    """The path finder, blind to tyro and matplotlib and to the installed copies of `ABSENT`
    top-level modules: `import tyro` fails as it does where tyro is not installed, and
    `importlib.util.find_spec("pandas")` is None. A copy elsewhere on `sys.path` (a carried
    wheel, unpacked) is found as usual."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in BLOCKED - {"rich"}:
            return None
        spec = super().find_spec(name, path, target)
        if spec is not None and top in ABSENT and _installed(spec):
            return None
        return spec


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
    """`name<TAB>file` for each loaded top-level module (file empty for built-in ones)."""
    modules = {name: module for name, module in list(sys.modules.items()) if "." not in name}
    lines = [
        f"{name}\t{getattr(module, '__file__', None) or ''}" for name, module in modules.items()
    ]
    with open(f"{os.environ['GNKIT_IMPORT_LOG']}.{os.getpid()}", "w") as log:
        log.write("\n".join(sorted(lines)) + "\n")


ABSENT = _outside_image(os.environ.get("GNKIT_IMAGE_PACKAGES", ""))
sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = _ImagePathFinder
builtins.__import__ = _checked_import
if os.environ.get("GNKIT_IMPORT_LOG"):
    atexit.register(_log_modules)
