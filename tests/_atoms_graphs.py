"""Structure graphs for the gnkit.atoms tests, built straight from ASE's neighbour list.

`graph_of(atoms, cutoff)` is the layout of gnkit.atoms' contract (senders = ASE's i, receivers =
ASE's j, shifts = S), independent of the package's own builder, so the models' tests do not rest
on the code they would check it against.
"""

import ase
import numpy as np
from ase.neighborlist import neighbor_list

import gnkit as gn


def graph_of(atoms: ase.Atoms, cutoff: float, dtype=np.float64) -> gn.GraphsTuple:
    """One structure's graph, NumPy arrays, with energy / forces / stress where `atoms.info` /
    `atoms.arrays` hold them (`"energy"`, `"forces"`, `"stress"` as 3x3)."""
    senders, receivers, shifts = neighbor_list("ijS", atoms, cutoff)
    nodes = {"positions": atoms.positions.astype(dtype),
             "atomic_numbers": atoms.numbers.astype(np.int32)}
    globals_ = {"cell": np.asarray(atoms.cell[:], dtype)[None],
                "pbc": np.asarray(atoms.pbc, bool)[None]}
    if "forces" in atoms.arrays:
        nodes["forces"] = atoms.arrays["forces"].astype(dtype)
    for name in ("energy", "stress"):
        if name in atoms.info:
            globals_[name] = np.asarray(atoms.info[name], dtype)[None]
    return gn.GraphsTuple(
        nodes=nodes,
        edges={"shifts": shifts.astype(dtype)},
        senders=senders.astype(np.int32),
        receivers=receivers.astype(np.int32),
        globals=globals_,
        n_node=np.array([len(atoms)], np.int32),
        n_edge=np.array([len(senders)], np.int32),
    )


def batch_of(structures, cutoff: float, dtype=np.float64) -> gn.GraphsTuple:
    """The batch of the structures' graphs (NumPy)."""
    return gn.batch_np([graph_of(atoms, cutoff, dtype) for atoms in structures])


def random_molecule(rng: np.random.Generator, numbers, spread: float = 1.6) -> ase.Atoms:
    """Atoms of `numbers` at random positions in a ball, no two closer than 0.8 Å."""
    positions = []
    while len(positions) < len(numbers):
        candidate = rng.normal(scale=spread, size=3)
        if all(np.linalg.norm(candidate - other) > 0.8 for other in positions):
            positions.append(candidate)
    return ase.Atoms(numbers=numbers, positions=np.array(positions))


def random_crystal(rng: np.random.Generator, numbers, size: float = 3.2) -> ase.Atoms:
    """A periodic triclinic cell of edge about `size` holding `numbers` at random positions."""
    cell = size * np.eye(3) + rng.uniform(-0.3, 0.3, size=(3, 3))
    fractions = []
    while len(fractions) < len(numbers):
        candidate = rng.uniform(size=3)
        atoms = ase.Atoms(numbers=[1] * (len(fractions) + 1), cell=cell, pbc=True,
                          scaled_positions=np.array(fractions + [candidate]))
        if len(atoms) == 1 or atoms.get_distances(len(atoms) - 1, range(len(atoms) - 1),
                                                  mic=True).min() > 0.8:
            fractions.append(candidate)
    return ase.Atoms(numbers=numbers, cell=cell, pbc=True, scaled_positions=np.array(fractions))
