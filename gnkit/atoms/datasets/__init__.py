"""Data sets of atomistic structures: rMD17 aspirin (shipped) and an EMT periodic set (made).

- `load_aspirin(split)`: the 3,000 rMD17 aspirin frames in `gnkit/data/atoms/`, split into
  train / validation (seeded, from 1,200 frames) and test (1,800), as ASE `Atoms` or graphs;
- `make_emt_dataset(n, seed)`, `write_emt_dataset(path, n, seed)`: fcc Cu / Al supercells
  (vacancies, strain, rattling, Langevin MD frames) labelled by ASE's EMT with energy, forces
  and stress.

Writing the EMT set from the command line (extended XYZ, compressed by the name's suffix):

    python -m gnkit.atoms.datasets emt --out emt.xyz.xz --n 1000 --seed 0

Host-side.
"""

from gnkit.atoms.datasets.aspirin import ASPIRIN_FILES, aspirin_path, load_aspirin
from gnkit.atoms.datasets.emt import EMT_LATTICE_CONSTANTS, make_emt_dataset, write_emt_dataset

__all__ = [
    "ASPIRIN_FILES",
    "EMT_LATTICE_CONSTANTS",
    "aspirin_path",
    "load_aspirin",
    "make_emt_dataset",
    "write_emt_dataset",
]
