"""Atomistic structures as graphs: ASE structures in, neighbour lists with periodic boundaries.

Needs the `atoms` extra (`pip install "gnkit[atoms]"`: ASE, e3nn-jax, vesin). Nothing here is
imported by `import gnkit`.

- `atoms_to_graph`, `atoms_to_graphs`, `read_graphs`: ASE `Atoms` (one, a list, an extended XYZ
  file) to `GraphsTuple` with positions, atomic numbers, cell, pbc, integer cell shifts and the
  energy / forces / stress targets; `atoms_bucket_policy` for batches that compile a few times;
- `neighbor_list`: the host list (vesin), pairs in both directions with their cell shifts;
- `check_structure`, `StructureError`: NaN positions, zero-volume periodic cells, overlapping
  atoms, each named by structure and atom;
- `Calculator`: an ASE calculator (energy, forces, stress) for a linen or NNX potential;
- `load_aspirin`, `make_emt_dataset`, `write_emt_dataset` (`gnkit.atoms.datasets`): the shipped
  rMD17 aspirin frames and an EMT-labelled periodic Cu / Al set.
"""

from gnkit.extras import require

require("atoms", "gnkit.atoms")

from gnkit.atoms.calculator import Calculator  # noqa: E402
from gnkit.atoms.checks import StructureError, check_structure  # noqa: E402
from gnkit.atoms.datasets import load_aspirin, make_emt_dataset, write_emt_dataset  # noqa: E402
from gnkit.atoms.neighbor_list import Neighbors, neighbor_list  # noqa: E402
from gnkit.atoms.structures import (  # noqa: E402
    atoms_bucket_policy,
    atoms_to_graph,
    atoms_to_graphs,
    read_graphs,
)

__all__ = [
    "Calculator",
    "Neighbors",
    "StructureError",
    "atoms_bucket_policy",
    "atoms_to_graph",
    "atoms_to_graphs",
    "check_structure",
    "load_aspirin",
    "make_emt_dataset",
    "neighbor_list",
    "read_graphs",
    "write_emt_dataset",
]
