"""The MoleculeNet regression sets shipped with gnkit: ESOL, FreeSolv and Lipophilicity.

`load_dataset(name)` reads `gnkit/data/molecules/<file>.csv.xz` (sources and licences in
`gnkit/data/molecules/SOURCES.md`): the SMILES strings and the measured target of each row, in
the file's order (the order chemprop reads the same CSV in, so split indices agree). Host.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import lzma
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "molecules"


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """Where a shipped data set lives and what its columns mean."""

    file: str
    smiles_column: str
    target_column: str
    target: str
    unit: str


#: The shipped data sets by name (`esol`, `freesolv`, `lipophilicity`): file and columns.
DATASETS = {
    "esol": DatasetInfo(
        "ESOL.csv.xz",
        "smiles",
        "measured log solubility in mols per litre",
        "log solubility",
        "log mol/L",
    ),
    "freesolv": DatasetInfo(
        "FreeSolv.csv.xz", "smiles", "expt", "hydration free energy", "kcal/mol"
    ),
    "lipophilicity": DatasetInfo("Lipophilicity.csv.xz", "smiles", "exp", "logD at pH 7.4", "log"),
}


@dataclasses.dataclass(frozen=True)
class MoleculeDataset:
    """One regression data set: `smiles` (one string per row), `targets` float64 `[rows]`."""

    name: str
    smiles: tuple[str, ...]
    targets: np.ndarray
    info: DatasetInfo

    def __len__(self) -> int:
        return len(self.smiles)

    def to_csv(self, path: str | Path) -> Path:
        """Write `smiles,target` rows (a CSV chemprop reads with `-s smiles -t target`)."""
        path = Path(path)
        with path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["smiles", "target"])
            writer.writerows(zip(self.smiles, (repr(float(t)) for t in self.targets), strict=True))
        return path


def load_dataset(name: str) -> MoleculeDataset:
    """The shipped data set `name` (one of `DATASETS`: esol, freesolv, lipophilicity). Host."""
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; shipped: {', '.join(DATASETS)}")
    info = DATASETS[name]
    with lzma.open(DATA_DIR / info.file, "rb") as file:
        rows = list(csv.DictReader(io.TextIOWrapper(file, encoding="utf-8")))
    smiles = tuple(row[info.smiles_column] for row in rows)
    targets = np.asarray([float(row[info.target_column]) for row in rows], np.float64)
    return MoleculeDataset(name, smiles, targets, info)
