"""Input checks for structures: each error names the structure (its index in a list) and the atom.

Host-side (NumPy). `gnkit.atoms.atoms_to_graphs` runs them on every structure it converts.
"""

from __future__ import annotations

import numpy as np

from gnkit.atoms.neighbor_list import Neighbors, neighbor_list


class StructureError(ValueError):
    """A structure that cannot become a graph; the message names the structure and the atom."""


def _name(structure: int | None) -> str:
    return "structure" if structure is None else f"structure {structure}"


def check_arrays(positions, cell, pbc, atomic_numbers, *, structure: int | None = None) -> None:
    """Raises `StructureError` for non-finite positions or cell, atomic number 0 or below (0
    marks padding atoms), or periodic lattice vectors that span no volume (area, length for two,
    one periodic axes). Host-side.

    Args:
      positions: `[n_atoms, 3]` in Å.
      cell: `[3, 3]`, rows are the lattice vectors.
      pbc: `bool [3]`.
      atomic_numbers: `int [n_atoms]`.
      structure: the structure's index in its list, named in the message.
    """
    name = _name(structure)
    positions = np.asarray(positions, np.float64)
    bad_atoms = np.flatnonzero(~np.isfinite(positions).all(axis=1))
    if bad_atoms.size:
        atom = int(bad_atoms[0])
        raise StructureError(
            f"{name}: atom {atom} has a non-finite position {positions[atom].tolist()} "
            f"({bad_atoms.size} atoms in all); positions must be finite (Å)."
        )
    bad_numbers = np.flatnonzero(np.asarray(atomic_numbers) < 1)
    if bad_numbers.size:
        atom = int(bad_numbers[0])
        raise StructureError(
            f"{name}: atom {atom} has atomic number {int(np.asarray(atomic_numbers)[atom])}, "
            "expected 1 or more (0 marks padding atoms in gnkit's graphs)."
        )
    cell = np.asarray(cell, np.float64)
    pbc = np.asarray(pbc, bool)
    if not np.isfinite(cell).all():
        raise StructureError(f"{name}: the cell has non-finite entries, cell = {cell.tolist()}.")
    periodic = cell[pbc]
    if len(periodic) == 0:
        return
    volume = float(np.sqrt(max(np.linalg.det(periodic @ periodic.T), 0.0)))
    lengths = float(np.prod(np.linalg.norm(periodic, axis=1)))
    if lengths == 0 or volume <= 1e-6 * lengths:
        raise StructureError(
            f"{name}: the periodic lattice vectors (cell rows {np.flatnonzero(pbc).tolist()}) "
            f"span a volume of {volume:.3g} Å^{len(periodic)}, expected linearly independent "
            f"rows for pbc={pbc.tolist()}; cell = {cell.tolist()}."
        )


def check_overlaps(neighbors: Neighbors, min_distance: float, *, structure: int | None = None):
    """Raises `StructureError` if a pair of `neighbors` is closer than `min_distance` Å. Host-side.

    Args:
      neighbors: a list from `gnkit.atoms.neighbor_list` with a cutoff of at least
        `min_distance`.
      min_distance: the smallest distance allowed between two atoms (or an atom and its
        periodic image), in Å.
      structure: the structure's index in its list, named in the message.
    """
    # each pair is listed both ways: name it once, lower index first
    close = np.flatnonzero(
        (neighbors.distances < min_distance) & (neighbors.senders <= neighbors.receivers)
    )
    if not close.size:
        return
    pair = int(close[0])
    sender, receiver = int(neighbors.senders[pair]), int(neighbors.receivers[pair])
    shift = neighbors.shifts[pair].tolist()
    what = (
        f"atom {sender} and its periodic image at shift {shift}"
        if sender == receiver
        else f"atoms {sender} and {receiver} (shift {shift})"
    )
    raise StructureError(
        f"{_name(structure)}: {what} are {neighbors.distances[pair]:.4g} Å apart, closer than "
        f"min_distance={min_distance} Å (overlapping atoms)."
    )


def check_structure(atoms, *, min_distance: float = 0.1, structure: int | None = None) -> None:
    """Raises `StructureError` if an ASE `Atoms` cannot become a graph. Host-side.

    Non-finite positions or cell, atomic number 0, periodic lattice vectors that span no
    volume, and atoms (or periodic images) closer than `min_distance` are errors; the message
    names the structure and the first offending atom.

    Args:
      atoms: an `ase.Atoms`.
      min_distance: the smallest distance allowed between two atoms, in Å.
      structure: the structure's index in its list, named in the message.
    """
    positions, cell, pbc = atoms.get_positions(), atoms.cell.array, atoms.pbc
    check_arrays(positions, cell, pbc, atoms.numbers, structure=structure)
    if min_distance > 0:
        check_overlaps(
            neighbor_list(positions, cell, pbc, min_distance), min_distance, structure=structure
        )
