"""Train / validation / test splits equal to chemprop v2's, and chemprop's splits file.

`random_split` and `scaffold_split` return the indices `chemprop.data.make_split_indices` returns
for the same number of molecules (or molecules), sizes and seed (chemprop draws them with
astartes; the definitions are restated here so that gnkit needs neither):

- random: a permutation from `numpy.random.RandomState(seed)`, rotated left by one (astartes
  takes scikit-learn's one-element test draw off the front and appends it), then the first
  `floor(n * train)` rows train, the next `floor(n * val)` validate, the rest test.
- scaffold (chemprop's `scaffold_balanced`): molecules grouped by their Bemis-Murcko scaffold
  SMILES (RDKit's `MurckoScaffoldSmiles`, no chirality, atom maps cleared); groups ordered by
  size, smallest first (ties by first appearance), the groups no larger than
  `min(floor(n * val), floor(n * test))` shuffled by `numpy.random.default_rng(seed)` and put
  before the others; then each group in turn goes to test if it fits in `floor(n * test)`, else
  to validation if it fits in `floor(n * val)`, else to train.

Sizes are normalised as chemprop's splitter normalises them (train and test divided by their
sum with val when the three do not sum to exactly 1.0). Host NumPy.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

Split = dict[str, np.ndarray]
SPLIT_NAMES = ("train", "val", "test")


def _normalised(sizes: Sequence[float]) -> tuple[float, float, float]:
    if len(sizes) != 3 or min(sizes) <= 0:
        raise ValueError(f"sizes must be three positive fractions (train, val, test), got {sizes}")
    train, val, test = (float(size) for size in sizes)
    total = train + test + val
    if total != 1.0:
        return train / total, val, test / total
    return train, val, test


def random_split(n: int, sizes: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0) -> Split:
    """chemprop v2's random split of `n` rows: `{"train", "val", "test"}` index arrays. Host."""
    if n < 3:
        raise ValueError(f"n must be at least 3 to split three ways, got {n}")
    train, val, _ = _normalised(sizes)
    permutation = np.random.RandomState(seed).permutation(n)
    order = np.concatenate([permutation[1:], permutation[:1]])
    n_train, n_val = math.floor(n * train), math.floor(n * val)
    return {
        "train": order[:n_train],
        "val": order[n_train : n_train + n_val],
        "test": order[n_train + n_val :],
    }


def _molecule(smiles_or_molecule, argument: str, row: int | None = None):
    """The RDKit molecule of a SMILES string (parsed by `parse_smiles`, naming `row`) or a copy
    of an RDKit molecule; `TypeError` naming `argument` for anything else."""
    from rdkit import Chem

    from gnkit.chem.graphs import parse_smiles

    if isinstance(smiles_or_molecule, str):
        return parse_smiles(smiles_or_molecule, row)
    if isinstance(smiles_or_molecule, Chem.Mol):
        return Chem.Mol(smiles_or_molecule)
    raise TypeError(
        f"{argument} must be a SMILES str or an RDKit Mol, got "
        f"{type(smiles_or_molecule).__name__} ({smiles_or_molecule!r})"
    )


def _scaffold(molecule) -> str:
    from rdkit.Chem.Scaffolds import MurckoScaffold

    for atom in molecule.GetAtoms():
        atom.SetAtomMapNum(0)
    return MurckoScaffold.MurckoScaffoldSmiles(mol=molecule, includeChirality=False)


def murcko_scaffold(smiles_or_molecule) -> str:
    """The Bemis-Murcko scaffold SMILES of a molecule (RDKit, no chirality, atom maps cleared);
    `""` for a molecule without rings. Raises `TypeError` for anything but a `str` or an RDKit
    `Mol`, and `InvalidSmilesError` (with RDKit's reason) for a string RDKit rejects. Host."""
    return _scaffold(_molecule(smiles_or_molecule, "smiles_or_molecule"))


def scaffold_split(
    molecules: Sequence, sizes: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0
) -> Split:
    """chemprop v2's `scaffold_balanced` split of `molecules` (SMILES strings or RDKit
    molecules): `{"train", "val", "test"}` index arrays. A molecule of another type is a
    `TypeError`, a string RDKit rejects an `InvalidSmilesError`; both name its row. Host."""
    n = len(molecules)
    if n < 3:
        raise ValueError(f"molecules must hold at least 3 molecules, got {n}")
    train, val, test = _normalised(sizes)
    scaffolds = [
        _scaffold(_molecule(molecule, f"molecules[{row}]", row))
        for row, molecule in enumerate(molecules)
    ]
    counts = Counter(scaffolds)
    by_size = sorted(counts, key=lambda scaffold: counts[scaffold])
    n_val, n_test = math.floor(n * val), math.floor(n * test)
    shufflable = min(n_test, n_val)
    small = [scaffold for scaffold in by_size if counts[scaffold] <= shufflable]
    np.random.default_rng(seed).shuffle(small)
    large = [scaffold for scaffold in by_size if counts[scaffold] > shufflable]
    members: dict[str, list[int]] = {}
    for index, scaffold in enumerate(scaffolds):
        members.setdefault(scaffold, []).append(index)
    split: dict[str, list[int]] = {name: [] for name in SPLIT_NAMES}
    for scaffold in small + large:
        group = members[scaffold]
        if len(split["test"]) + len(group) <= n_test:
            split["test"].extend(group)
        elif len(split["val"]) + len(group) <= n_val:
            split["val"].extend(group)
        else:
            split["train"].extend(group)
    return {name: np.asarray(indices, np.int64) for name, indices in split.items()}


def write_splits_file(path: str | Path, splits: Sequence[Split]) -> Path:
    """Write `splits` (one dict per replicate) as chemprop's `--splits-file` JSON: a list of
    `{"train": [...], "val": [...], "test": [...]}`. Host."""
    path = Path(path)
    records = [{name: [int(i) for i in split[name]] for name in SPLIT_NAMES} for split in splits]
    path.write_text(json.dumps(records))
    return path


def _indices(value, path: Path, name: str) -> np.ndarray:
    """chemprop's index lists: a list of ints or a string such as `"0,1,5-9"`."""
    if isinstance(value, list):
        return np.asarray(value, np.int64)
    if not isinstance(value, str):
        raise ValueError(f"{path}: {name!r} must be a list of indices or a string, got {value!r}")
    indices: list[int] = []
    for part in filter(None, value.split(",")):
        start, _, end = part.partition("-")
        indices.extend(range(int(start), int(end or start) + 1))
    return np.asarray(indices, np.int64)


def read_splits_file(path: str | Path) -> list[Split]:
    """Read a chemprop splits file (the JSON `write_splits_file` writes, or chemprop's own
    `splits.json`; index strings such as `"0-99,120"` too); a missing `val` or `test` is
    empty. Host."""
    path = Path(path)
    records = json.loads(path.read_text())
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{path}: a splits file is a JSON list of objects with 'train' etc.")
    splits = []
    for record in records:
        if "train" not in record:
            raise ValueError(f"{path}: a split without 'train': keys {sorted(record)}")
        splits.append({name: _indices(record.get(name, []), path, name) for name in SPLIT_NAMES})
    return splits
