"""QM9 (Ramakrishnan et al., Sci. Data 1, 140022, 2014) through the `qm9pack` package.

`qm9pack` (PyPI, by QM9's author; the `qm9` extra) ships QM9's 130,831 molecules (H, C, N, O,
F; up to 29 atoms) as CSV files in its `data/` folder: B3LYP/6-31G(2df,p) geometries in Å
(`XYZ_Ang`), elements, and properties in atomic units; `InternalEnergy_0K_au` is U0 in Hartree.
`load_qm9` reads the CSVs with pandas (without importing `qm9pack`, whose `get_data` needs
setuptools' `pkg_resources`), draws a seeded subset, and returns ASE `Atoms` with the energy
U0 in eV (1 Ha = 27.211386 eV) held by a `SinglePointCalculator`, or graphs. Host-side.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import numpy as np

__all__ = ["HARTREE_EV", "QM9_MOLECULES", "load_qm9", "qm9_data_folder", "qm9_molecules"]

#: eV per Hartree (CODATA 2018), the unit QM9's CSV gives U0 in.
HARTREE_EV = 27.211386245988
#: The molecules `qm9pack` ships (QM9's 133,885 less the 3,054 that failed its consistency check).
QM9_MOLECULES = 130_831

_PARTS = ("qm9_part1.csv", "qm9_part2.csv", "qm9_part3.csv")
_COLUMNS = ["Index", "Elements", "XYZ_Ang", "InternalEnergy_0K_au"]
_SPLITS = ("train", "validation", "test")


def qm9_data_folder() -> Path:
    """The folder of `qm9pack`'s CSV files, found without importing `qm9pack`. Host.

    Raises:
      ImportError: when `qm9pack` is not installed (`pip install 'gnkit[qm9]'`).
    """
    spec = importlib.util.find_spec("qm9pack")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("load_qm9 needs the qm9pack package: pip install 'gnkit[qm9]'")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@functools.lru_cache(maxsize=1)
def _table():
    """`(index, elements, xyz, u0_hartree)` arrays over every molecule, in the files' order."""
    import pandas as pd

    folder = qm9_data_folder()
    frame = pd.concat(
        [pd.read_csv(folder / part, usecols=_COLUMNS) for part in _PARTS], ignore_index=True
    )
    return (
        frame["Index"].to_numpy(np.int64),
        frame["Elements"].to_numpy(object),
        frame["XYZ_Ang"].to_numpy(object),
        frame["InternalEnergy_0K_au"].to_numpy(np.float64),
    )


def _molecule(index: int, elements: str, xyz: str, u0_hartree: float):
    """One molecule as `ase.Atoms` with U0 (eV) as its calculator's energy."""
    import ase
    from ase.calculators.singlepoint import SinglePointCalculator

    symbols = [symbol.strip(" '\"") for symbol in elements.strip("[]").split(",")]
    atoms = ase.Atoms(symbols=symbols, positions=np.array(json.loads(xyz), np.float64))
    atoms.info["qm9_index"] = int(index)
    atoms.calc = SinglePointCalculator(atoms, energy=u0_hartree * HARTREE_EV)
    return atoms


def _check_count(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"load_qm9: {name} must be an int >= {low}, got {value!r}.")


def qm9_molecules(qm9_indices) -> list:
    """The molecules with QM9 numbers `qm9_indices` (1 to 133,885; `dsgdb9nsd_000001` is 1,
    methane), as `ase.Atoms` with U0 (eV) as their calculator's energy, in the order asked.

    Host-side.

    Raises:
      ValueError: naming the first number that QM9 does not hold (one of the 3,054 molecules
        its consistency check removed, or out of range).
    """
    index, elements, xyz, u0 = _table()
    wanted = np.asarray(qm9_indices, np.int64).reshape(-1)
    rows = np.searchsorted(index, wanted)
    found = (rows < len(index)) & (index[np.minimum(rows, len(index) - 1)] == wanted)
    if not found.all():
        missing = int(wanted[np.flatnonzero(~found)[0]])
        raise ValueError(f"qm9_molecules: QM9 holds no molecule number {missing}.")
    return [_molecule(index[row], elements[row], xyz[row], u0[row]) for row in rows]


def load_qm9(
    split: str = "train",
    *,
    n_train: int = 10_000,
    n_validation: int = 1_000,
    n_test: int = 2_000,
    seed: int = 0,
    cutoff: float | None = None,
    **graph_options,
) -> list:
    """The molecules of one split of a seeded QM9 subset, as ASE `Atoms` or graphs.

    A permutation of the 130,831 molecules drawn with `numpy.random.default_rng(seed)` gives its
    first `n_test` to test, the next `n_validation` to validation and the next `n_train` to train;
    each split keeps the files' order (QM9's index). The splits are disjoint, and a larger
    `n_train` with the same seed and test / validation sizes keeps the same test and validation
    molecules (a learning curve's fixed test set). The CSVs are read once per process (about
    10 s). Host-side.

    Args:
      split: `"train"`, `"validation"` or `"test"`.
      n_train: molecules in train (>= 1).
      n_validation: molecules in validation (>= 0).
      n_test: molecules in test (>= 0); the three together at most 130,831.
      seed: the subset's seed.
      cutoff: None returns `ase.Atoms` (U0 in eV held by a `SinglePointCalculator`,
        `info["qm9_index"]` QM9's molecule number); a cutoff (Å) returns `atoms_to_graphs`
        graphs with `globals["energy"]` (U0, eV).
      **graph_options: passed on to `gnkit.atoms.atoms_to_graphs` with a cutoff (`dtype`).

    Returns:
      A list of `ase.Atoms`, or of single-graph `GraphsTuple` graphs.
    """
    if split not in _SPLITS:
        raise ValueError(f"load_qm9: split must be one of {_SPLITS}, got {split!r}.")
    _check_count("n_train", n_train, 1)
    _check_count("n_validation", n_validation, 0)
    _check_count("n_test", n_test, 0)
    _check_count("seed", seed, 0)
    total = int(n_train) + int(n_validation) + int(n_test)
    if total > QM9_MOLECULES:
        raise ValueError(
            f"load_qm9: n_train + n_validation + n_test must be at most {QM9_MOLECULES}, got "
            f"{total}."
        )
    index, elements, xyz, u0 = _table()
    order = np.random.default_rng(seed).permutation(len(index))
    bounds = {"test": (0, n_test), "validation": (n_test, n_test + n_validation),
              "train": (n_test + n_validation, total)}[split]
    rows = np.sort(order[bounds[0]:bounds[1]])
    molecules = [_molecule(index[row], elements[row], xyz[row], u0[row]) for row in rows]
    if cutoff is None:
        return molecules
    from gnkit.atoms.structures import atoms_to_graphs

    return atoms_to_graphs(molecules, cutoff, targets=("energy",), **graph_options)
