"""Data sets of atomistic structures: rMD17 aspirin (shipped), an EMT periodic set (made), QM9.

- `load_aspirin(split)`: the 3,000 rMD17 aspirin frames in `gnkit/data/atoms/`, split into
  train / validation (seeded, from 1,200 frames) and test (1,800), as ASE `Atoms` or graphs;
- `make_emt_dataset(n, seed)`, `write_emt_dataset(path, n, seed)`: fcc Cu / Al supercells
  (vacancies, strain, rattling, Langevin MD frames) labelled by ASE's EMT with energy, forces
  and stress;
- `load_qm9(split, n_train=, n_validation=, n_test=, seed=)`: a seeded subset of QM9's 130,831
  molecules with U0 in eV, through the `qm9pack` package (the `qm9` extra).

Writing the EMT set from the command line (extended XYZ, compressed by the name's suffix):

    python -m gnkit.atoms.datasets emt --out emt.xyz.xz --n 1000 --seed 0

and a split of a seeded QM9 subset (`load_qm9`'s sizes and seed):

    python -m gnkit.atoms.datasets qm9 --out qm9_train.xyz.xz --split train --n-train 10000

Host-side.
"""

from gnkit.atoms.datasets.aspirin import ASPIRIN_FILES, aspirin_path, load_aspirin
from gnkit.atoms.datasets.emt import EMT_LATTICE_CONSTANTS, make_emt_dataset, write_emt_dataset
from gnkit.atoms.datasets.qm9 import (
    HARTREE_EV,
    QM9_MOLECULES,
    load_qm9,
    qm9_data_folder,
    qm9_molecules,
)

__all__ = [
    "ASPIRIN_FILES",
    "EMT_LATTICE_CONSTANTS",
    "HARTREE_EV",
    "QM9_MOLECULES",
    "aspirin_path",
    "load_aspirin",
    "load_qm9",
    "make_emt_dataset",
    "qm9_data_folder",
    "qm9_molecules",
    "write_emt_dataset",
]
