"""Host neighbour lists: every pair of atoms within a cutoff, across periodic boundaries (vesin).

The pairs follow ASE's `neighbor_list("ijS")`: both directions of every pair, self-image pairs
`(i, i, S != 0)` kept, `(i, i, 0)` left out, and the vector from atom `i` to atom `j` is
`positions[j] - positions[i] + S @ cell` (rows of `cell` are the lattice vectors). Host-side
(NumPy); the jittable list with a static capacity is `gnkit.atoms.device_neighbor_list`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import vesin


class Neighbors(NamedTuple):
    """Pairs of atoms within a cutoff, sorted by receiver, then sender, then shift.

    Attributes:
      senders: `int32 [n_pairs]`, ASE's `i`.
      receivers: `int32 [n_pairs]`, ASE's `j`.
      shifts: `int [n_pairs, 3]`, ASE's `S`: the cell shift of the receiver's image.
      distances: `float [n_pairs]`, `|positions[j] - positions[i] + S @ cell|`.
    """

    senders: np.ndarray
    receivers: np.ndarray
    shifts: np.ndarray
    distances: np.ndarray


def completed_cell(cell, pbc) -> np.ndarray:
    """The cell with each non-periodic row replaced by a unit vector normal to the periodic ones.

    Pairs never cross a non-periodic boundary, so those rows only fix how positions split into
    fractional coordinates; normal unit rows make a full-rank cell out of, for example, a slab
    whose third row is zero. The periodic rows are kept as they are. Host-side.

    Args:
      cell: `[3, 3]`, rows are the lattice vectors.
      pbc: `bool [3]` (or one bool for all axes), periodic axes.

    Returns:
      `float64 [3, 3]`: the periodic rows of `cell`, the others orthonormal and normal to them
      (the identity when no axis is periodic).
    """
    cell = np.asarray(cell, np.float64)
    pbc = np.broadcast_to(np.asarray(pbc, bool), (3,))
    completed = cell.copy()
    periodic = cell[pbc]
    # The right singular vectors past the periodic rows' rank span the normal space.
    _, _, vt = np.linalg.svd(np.vstack([periodic, np.zeros((3 - len(periodic), 3))]))
    completed[~pbc] = vt[len(periodic):]
    return completed


def neighbor_list(positions, cell, pbc, cutoff: float) -> Neighbors:
    """Every pair of atoms closer than `cutoff`, with cell shifts, through vesin. Host-side.

    Equal, as a set of `(i, j, S)`, to ASE's `ase.neighborlist.neighbor_list("ijS", atoms,
    cutoff)`, including cutoffs larger than half the cell (several images of one pair, and of an
    atom with itself), triclinic cells, mixed `pbc` and positions outside the cell. Assumes valid
    input (finite positions, periodic lattice vectors that span a volume): see
    `gnkit.atoms.check_structure`.

    Args:
      positions: `[n_atoms, 3]` in Å.
      cell: `[3, 3]`, rows are the lattice vectors; rows of non-periodic axes are not used (zero
        is fine).
      pbc: `bool [3]` (or one bool for all axes).
      cutoff: the pair cutoff in Å, positive.

    Returns:
      `Neighbors(senders, receivers, shifts, distances)`, sorted by receiver, then sender, then
      shift.
    """
    if not cutoff > 0:
        raise ValueError(f"neighbor_list needs a positive cutoff, got cutoff={cutoff}.")
    positions = np.asarray(positions, np.float64).reshape(-1, 3)
    pbc = np.broadcast_to(np.asarray(pbc, bool), (3,))
    box = completed_cell(cell, pbc) if pbc.any() else np.zeros((3, 3))
    if len(positions) == 0:
        empty = np.zeros(0, np.int32)
        return Neighbors(empty, empty, np.zeros((0, 3), np.int64), np.zeros(0))
    calculator = vesin.NeighborList(cutoff=float(cutoff), full_list=True)
    senders, receivers, shifts, distances = calculator.compute(
        positions, box, pbc, quantities="ijSd"
    )
    shifts = np.asarray(shifts, np.int64).reshape(-1, 3)
    order = np.lexsort((shifts[:, 2], shifts[:, 1], shifts[:, 0], senders, receivers))
    return Neighbors(
        senders=np.asarray(senders, np.int32)[order],
        receivers=np.asarray(receivers, np.int32)[order],
        shifts=shifts[order],
        distances=np.asarray(distances, np.float64)[order],
    )
