"""Atomistic structures as graphs: ASE structures in, neighbour lists with periodic boundaries.

Needs the `atoms` extra (`pip install "gnkit[atoms]"`: ASE, e3nn-jax, vesin). Nothing here is
imported by `import gnkit`.

- `atoms_to_graph`, `atoms_to_graphs`, `read_graphs`: ASE `Atoms` (one, a list, an extended XYZ
  file) to `GraphsTuple` with positions, atomic numbers, cell, pbc, integer cell shifts and the
  energy / forces / stress targets; `atoms_bucket_policy` for batches that compile a few times;
- `neighbor_list`: the host list (vesin), pairs in both directions with their cell shifts;
- `device_neighbor_list`, `graph_with_device_neighbors`, `DeviceNeighbors`, `image_ranges`:
  the jittable list at a static capacity that reports overflow, for arrays or a padded batch;
  `GrowingNeighborList`, `grown_capacity`: the host policy that grows it and reruns;
  `cell_list_neighbor_list`, `cell_list_bins`: a cell-list search for large periodic cells;
- `build_verlet_list`, `needs_rebuild`, `verlet_neighbors`, `VerletList`: a skin list reused on
  the device while atoms move less than half the skin;
- `check_structure`, `StructureError`: NaN positions, zero-volume periodic cells, overlapping
  atoms, each named by structure and atom;
- `Calculator`: an ASE calculator (energy, forces, stress) for a linen or NNX potential;
- `run_md`, `md_chunk`, `init_md_state`, `MDState`, `MDStats`, `NeighborSettings`,
  `VelocityVerlet`, `Langevin`, `model_energy_fn`, `positions_energy_fn`, `kinetic_energy`,
  `kinetic_temperature` (`gnkit.atoms.md`): jitted NVE / Langevin NVT on the Verlet list, grown
  on overflow, with an extended XYZ trajectory;
- `load_aspirin`, `make_emt_dataset`, `write_emt_dataset` (`gnkit.atoms.datasets`): the shipped
  rMD17 aspirin frames and an EMT-labelled periodic Cu / Al set.
"""

from gnkit.extras import require

require("atoms", "gnkit.atoms")

from gnkit.atoms.calculator import Calculator  # noqa: E402
from gnkit.atoms.cell_list import cell_list_bins, cell_list_neighbor_list  # noqa: E402
from gnkit.atoms.checks import StructureError, check_structure  # noqa: E402
from gnkit.atoms.datasets import load_aspirin, make_emt_dataset, write_emt_dataset  # noqa: E402
from gnkit.atoms.device_neighbors import (  # noqa: E402
    DeviceNeighbors,
    GrowingNeighborList,
    device_neighbor_list,
    graph_with_device_neighbors,
    grown_capacity,
    image_ranges,
)
from gnkit.atoms.md import (  # noqa: E402
    Langevin,
    MDState,
    MDStats,
    NeighborSettings,
    VelocityVerlet,
    init_md_state,
    kinetic_energy,
    kinetic_temperature,
    md_chunk,
    model_energy_fn,
    positions_energy_fn,
    run_md,
)
from gnkit.atoms.neighbor_list import Neighbors, neighbor_list  # noqa: E402
from gnkit.atoms.structures import (  # noqa: E402
    atoms_bucket_policy,
    atoms_to_graph,
    atoms_to_graphs,
    read_graphs,
)
from gnkit.atoms.verlet import (  # noqa: E402
    VerletList,
    build_verlet_list,
    needs_rebuild,
    verlet_neighbors,
)

__all__ = [
    "Calculator",
    "DeviceNeighbors",
    "GrowingNeighborList",
    "Langevin",
    "MDState",
    "MDStats",
    "NeighborSettings",
    "Neighbors",
    "StructureError",
    "VelocityVerlet",
    "VerletList",
    "atoms_bucket_policy",
    "atoms_to_graph",
    "atoms_to_graphs",
    "build_verlet_list",
    "cell_list_bins",
    "cell_list_neighbor_list",
    "check_structure",
    "device_neighbor_list",
    "graph_with_device_neighbors",
    "grown_capacity",
    "image_ranges",
    "init_md_state",
    "kinetic_energy",
    "kinetic_temperature",
    "load_aspirin",
    "make_emt_dataset",
    "md_chunk",
    "model_energy_fn",
    "needs_rebuild",
    "neighbor_list",
    "positions_energy_fn",
    "read_graphs",
    "run_md",
    "verlet_neighbors",
    "write_emt_dataset",
]
