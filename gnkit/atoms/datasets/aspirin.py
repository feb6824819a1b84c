"""rMD17 aspirin shipped with gnkit: 3,000 DFT frames of one molecule, energies and forces.

`gnkit/data/atoms/` holds two extended XYZ files (xz) from the ACEsuit `mace-jax` repository's
`data/` folder, a sample of the revised MD17 aspirin trajectory (Christensen and von Lilienfeld,
Mach. Learn.: Sci. Technol. 1, 045018, 2020; PBE/def2-SVP; CC0): 1,200 frames for training and
1,800 for testing, 21 atoms each (C9 H8 O4), no cell. Energies (eV) lie between -17618.6 and
-17616.6, forces are in eV/Å. The frames are not rMD17's official 1,000-frame splits, so
published test errors (MACE 2.2 meV energy, 6.6 meV/Å forces) compare approximately. Sources
and published numbers: `gnkit/data/atoms/SOURCES.md`. Host-side.
"""

from __future__ import annotations

import functools
import io
import lzma
from importlib import resources

import numpy as np

__all__ = ["ASPIRIN_FILES", "aspirin_path", "load_aspirin"]

#: The shipped files by part: 1,200 training frames (train and validation), 1,800 test frames.
ASPIRIN_FILES = {"train": "rmd17_aspirin_train.xyz.xz", "test": "rmd17_aspirin_test.xyz.xz"}

_SPLITS = ("train", "validation", "test")


def aspirin_path(part: str):
    """Path of the shipped file of `part` (`"train"`: 1,200 frames, `"test"`: 1,800). Host."""
    if part not in ASPIRIN_FILES:
        raise ValueError(f"aspirin_path: part must be one of {tuple(ASPIRIN_FILES)}, got {part!r}.")
    return resources.files("gnkit").joinpath("data", "atoms", ASPIRIN_FILES[part])


@functools.cache
def _parsed(part: str) -> tuple:
    """The frames of the shipped file, parsed once per process (a few seconds each)."""
    import ase.io

    with lzma.open(aspirin_path(part), "rt") as stream:
        text = stream.read()
    return tuple(ase.io.read(io.StringIO(text), index=":", format="extxyz"))


def _read(part: str) -> list:
    """Fresh copies of the shipped frames of `part`, with their energy and forces."""
    from ase.calculators.singlepoint import SinglePointCalculator

    frames = []
    for parsed in _parsed(part):
        atoms = parsed.copy()
        atoms.calc = SinglePointCalculator(atoms, **parsed.calc.results)
        frames.append(atoms)
    return frames


def load_aspirin(
    split: str = "train",
    *,
    n_validation: int = 250,
    seed: int = 0,
    cutoff: float | None = None,
    **graph_options,
) -> list:
    """The frames of one split of the shipped rMD17 aspirin set, as ASE `Atoms` or graphs.

    Train and validation split the 1,200-frame file: a permutation drawn with
    `numpy.random.default_rng(seed)` gives `n_validation` frames to validation and the rest to
    train (950 / 250 by default; `n_validation=200` gives the 1,000 / 200 of rMD17 practice);
    both keep the file's order. Test is the 1,800-frame file. Host-side.

    Args:
      split: `"train"`, `"validation"` or `"test"`.
      n_validation: frames of the 1,200 that go to validation.
      seed: the split's seed.
      cutoff: None returns `ase.Atoms` (energy and forces held by their
        `SinglePointCalculator`); a cutoff (Å) returns `atoms_to_graph` graphs with
        `globals["energy"]` and `nodes["forces"]`.
      **graph_options: passed on to `gnkit.atoms.atoms_to_graphs` with a cutoff (`dtype`).

    Returns:
      A list of `ase.Atoms`, or of single-graph `GraphsTuple` graphs.
    """
    if split not in _SPLITS:
        raise ValueError(f"load_aspirin: split must be one of {_SPLITS}, got {split!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"load_aspirin: seed must be an int >= 0, got {seed!r}.")
    if split == "test":
        frames = _read("test")
    else:
        frames = _read("train")
        if (isinstance(n_validation, bool) or not isinstance(n_validation, int | np.integer)
                or not 0 < n_validation < len(frames)):
            raise ValueError(
                f"load_aspirin: n_validation must be between 1 and {len(frames) - 1}, got "
                f"{n_validation}."
            )
        order = np.random.default_rng(seed).permutation(len(frames))
        chosen = order[:n_validation] if split == "validation" else order[n_validation:]
        frames = [frames[index] for index in np.sort(chosen)]
    if cutoff is None:
        return frames
    from gnkit.atoms.structures import atoms_to_graphs

    return atoms_to_graphs(frames, cutoff, **graph_options)
