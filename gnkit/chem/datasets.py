"""The MoleculeNet regression sets shipped with gnkit (ESOL, FreeSolv, Lipophilicity) and a
reader for any CSV of SMILES and targets.

`load_dataset(name)` reads `gnkit/data/molecules/<file>.csv.xz` (sources and licences in
`gnkit/data/molecules/SOURCES.md`): the SMILES strings and the measured target of each row, in
the file's order (the order chemprop reads the same CSV in, so split indices agree).
`read_csv(path, smiles_column, target_columns)` reads one's own file the same way, one target
column per task, an empty cell a missing label (NaN). Host.
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
    """One data set: `smiles` (one string per row), `targets` float64 `[rows]` (a shipped set)
    or `[rows, tasks]` (`read_csv`, NaN where a label is missing), `tasks` the target columns'
    names (empty for a shipped set: its `info.target_column`)."""

    name: str
    smiles: tuple[str, ...]
    targets: np.ndarray
    info: DatasetInfo | None
    tasks: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.smiles)

    def take(self, rows) -> MoleculeDataset:
        """The data set's rows `rows` (positions or a slice, as NumPy indexes `[rows]`), in
        that order. Host."""
        positions = np.arange(len(self))[rows]
        return dataclasses.replace(
            self, smiles=tuple(self.smiles[i] for i in positions), targets=self.targets[positions]
        )

    def to_csv(self, path: str | Path) -> Path:
        """Write `smiles,target` rows (a CSV chemprop reads with `-s smiles -t target`), or with
        `tasks` `smiles,<task>,...` rows, a missing label an empty cell (as `read_csv` reads)."""
        path = Path(path)
        targets = self.targets.reshape(len(self), -1)
        with path.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["smiles", *(self.tasks or ("target",))])
            for text, labels in zip(self.smiles, targets, strict=True):
                writer.writerow([text, *(repr(float(t)) if np.isfinite(t) else "" for t in labels)])
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


def _number(text: str, line: int, column: str, path: Path) -> float:
    text = text.strip()
    if not text:
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"{path} line {line}, column {column!r}: {text!r} is not a number (leave a missing "
            "label empty)"
        ) from None


def read_csv(
    path: str | Path, smiles_column: str = "smiles", target_columns: tuple[str, ...] = ()
) -> MoleculeDataset:
    """A CSV of SMILES and targets as a `MoleculeDataset` (targets `[rows, tasks]`). Host.

    Args:
      path: the CSV file (a header row, then one molecule a row, as chemprop reads it).
      smiles_column: the column of SMILES strings.
      target_columns: one column per task; empty: every column except `smiles_column`.

    Returns:
      The data set named by the file's stem; an empty cell is a missing label (NaN).

    Raises:
      TypeError: `target_columns` is a str, not a sequence of names.
      KeyError: a named column is not in the header (the message lists the file's columns).
      ValueError: a column named twice in `target_columns` or also the `smiles_column`, a cell
        that is neither empty nor a number (naming its line and column), or a file without data
        rows.
    """
    if isinstance(target_columns, str):
        raise TypeError(
            f"target_columns must be a sequence of column names, got the str {target_columns!r} "
            f"(one column: ({target_columns!r},))"
        )
    if len(set(target_columns)) < len(target_columns):
        raise ValueError(f"target_columns names a column twice: {tuple(target_columns)}")
    if smiles_column in target_columns:
        raise ValueError(f"target_columns holds the smiles_column {smiles_column!r}")
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    targets = tuple(target_columns) or tuple(c for c in header if c != smiles_column)
    for column in (smiles_column, *targets):
        if column not in header:
            raise KeyError(f"{path}: no column {column!r}; its columns: {', '.join(header)}")
    if not targets:
        raise ValueError(f"{path}: no target column beside {smiles_column!r}")
    if not rows:
        raise ValueError(f"{path}: no data rows")
    values = np.asarray(
        [
            [_number(row[column] or "", line, column, path) for column in targets]
            for line, row in enumerate(rows, start=2)
        ],
        np.float64,
    )
    smiles = tuple(row[smiles_column] or "" for row in rows)
    info = DatasetInfo(str(path), smiles_column, ",".join(targets), ", ".join(targets), "")
    return MoleculeDataset(path.stem, smiles, values, info, targets)
