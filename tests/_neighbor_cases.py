"""Random structures for the gnkit.atoms neighbour-list tests, and pairs as sets of (i, j, S).

`random_case(rng, kind)` gives one structure of a kind in `KINDS`: triclinic periodic cells,
cutoffs above half the cell, mixed pbc (also with zero rows on open axes), 1-atom cells,
molecules and isolated atoms, with positions also outside the cell.
"""

import numpy as np

from gnkit.atoms.neighbor_list import completed_cell

KINDS = ["triclinic", "large_cutoff", "mixed", "one_atom", "molecule", "isolated"]
MAX_ATOMS = 8


def pair_set(senders, receivers, shifts) -> set:
    """The pairs as a set of `(i, j, S)` with `S` a tuple of ints."""
    shifts = np.rint(np.asarray(shifts)).astype(int).reshape(-1, 3).tolist()
    return set(zip(np.asarray(senders).tolist(), np.asarray(receivers).tolist(),
                   map(tuple, shifts), strict=True))


def away_from_cutoff(pairs: set, positions, cell, cutoff: float, margin: float) -> set:
    """The pairs whose float64 distance is more than `margin` from the cutoff."""
    kept = set()
    for sender, receiver, shift in pairs:
        vector = positions[receiver] - positions[sender] + np.array(shift) @ cell
        if abs(np.linalg.norm(vector) - cutoff) > margin:
            kept.add((sender, receiver, shift))
    return kept


def random_case(rng: np.random.Generator, kind: str):
    """(positions, cell, pbc, cutoff) of one kind of structure, at most `MAX_ATOMS` atoms."""
    n_atoms = int(rng.integers(2, MAX_ATOMS + 1))
    cell = np.diag(rng.uniform(2.5, 5.0, 3)) + rng.uniform(-1.0, 1.0, (3, 3))
    pbc = rng.random(3) < 0.5
    cutoff = rng.uniform(0.8, 3.0)
    if kind == "triclinic":
        pbc = np.ones(3, bool)
    elif kind == "large_cutoff":  # above half of the smallest height: several images
        pbc = np.ones(3, bool)
        heights = 1 / np.linalg.norm(np.linalg.inv(cell), axis=0)
        cutoff = rng.uniform(0.6, 1.6) * heights.max()
    elif kind == "mixed":
        pbc[int(rng.integers(3))] = not pbc.any()
        if rng.random() < 0.5:
            cell[~pbc] = 0.0  # a slab / wire with no lattice vector along the open axes
    elif kind == "one_atom":
        n_atoms, pbc = 1, np.ones(3, bool)
        cutoff = rng.uniform(1.0, 2.0) * np.linalg.norm(cell, axis=1).min()
    elif kind == "molecule":
        cell, pbc = np.zeros((3, 3)), np.zeros(3, bool)
    elif kind == "isolated":  # far apart atoms without pbc: no pair at all
        cell, pbc = np.zeros((3, 3)), np.zeros(3, bool)
        return np.arange(n_atoms)[:, None] * np.array([10.0, 0, 0]), cell, pbc, 3.0
    fractional = rng.uniform(-0.5, 1.5, (n_atoms, 3))  # also outside the cell
    positions = fractional @ completed_cell(cell, pbc) if pbc.any() else 3 * fractional
    return positions, cell, pbc, cutoff
