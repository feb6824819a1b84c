"""A cell-list neighbour search for large periodic structures, jittable at static sizes.

The cell is cut into `bins` along each axis, each at least `cutoff` thick, so every pair within
the cutoff lies in one of the 27 bins around an atom's own. Each atom then tests only the atoms
of those bins: O(n_atoms x 27 x bin_capacity) instead of the dense search's O(n_atoms^2 x
images). The pairs are the same as `gnkit.atoms.device_neighbor_list`'s (`DeviceNeighbors`,
ASE's `(i, j, S)`, receiver-major), for fully periodic cells at least 3 cutoffs thick along each
axis (`cell_list_bins` says how many bins fit; use the dense list otherwise).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.atoms.device_neighbors import (
    DeviceNeighbors,
    _check_arrays,
    _check_cutoff,
    _check_static,
    _packed,
    _padding_index,
    _reciprocal,
)

_OFFSETS = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)


def cell_list_bins(cell, cutoff: float) -> tuple[int, int, int] | None:
    """Bins per axis for `cell_list_neighbor_list`: `floor(plane spacing / cutoff)`, or None
    when an axis fits fewer than 3 (then the dense `device_neighbor_list` is the one to use).
    Host-side.

    Args:
      cell: `[3, 3]`, rows are the lattice vectors of a fully periodic cell.
      cutoff: the pair cutoff in Å.
    """
    _check_cutoff(cutoff)
    spacings = 1.0 / np.linalg.norm(np.linalg.inv(np.asarray(cell, np.float64)), axis=0)
    bins = tuple(int(math.floor(spacing / cutoff)) for spacing in spacings)
    return bins if min(bins) >= 3 else None


def cell_list_neighbor_list(
    positions,
    cell,
    cutoff: float,
    *,
    capacity: int,
    bins: tuple[int, int, int],
    bin_capacity: int,
    atom_mask=None,
) -> tuple[DeviceNeighbors, jax.Array]:
    """Every pair closer than `cutoff` in a fully periodic cell, through a cell list.

    Jittable with `capacity`, `bins` and `bin_capacity` static. The same pairs as
    `device_neighbor_list(positions, cell, True, cutoff, ...)` while neither `overflow` nor the
    returned `bin_overflow` is set; `image_overflow` is set when the cell has become too thin
    for `bins` (each bin must stay at least `cutoff` thick).

    Args:
      positions: `[n_atoms, 3]` in Å, inside or outside the cell.
      cell: `[3, 3]`, rows are the lattice vectors (periodic along all three).
      cutoff: the pair cutoff in Å, positive.
      capacity: pair slots (static).
      bins: bins per axis (static), from `cell_list_bins`, each at least 3.
      bin_capacity: the most atoms one bin can hold (static).
      atom_mask: `bool [n_atoms]`, False on padding atoms; None for all real.

    Returns:
      `(neighbors, bin_overflow)`: `DeviceNeighbors` (padding slots as in
      `device_neighbor_list`) and `bool []`, True when a bin held more than `bin_capacity`
      atoms (pairs are then missing: raise `bin_capacity`).
    """
    _check_arrays(positions, cell, True, atom_mask)
    _check_cutoff(cutoff)
    _check_static(capacity, bins)
    _check_static(bin_capacity, (0, 0, 0))
    if min(bins) < 3:
        raise ValueError(f"bins must be at least 3 per axis, got {bins}; use the dense list.")
    positions = jax.lax.stop_gradient(jnp.asarray(positions))
    dtype = positions.dtype
    cell = jax.lax.stop_gradient(jnp.asarray(cell, dtype))
    n_atoms = positions.shape[0]
    atom_mask = jnp.ones(n_atoms, bool) if atom_mask is None else jnp.asarray(atom_mask, bool)
    inverse = _reciprocal(cell[None])[0]
    fractional = positions @ inverse
    offsets = jnp.floor(fractional)
    wrapped = positions - offsets @ cell
    counts = np.asarray(bins)
    atom_bins = jnp.clip(jnp.floor((fractional - offsets) * counts), 0, counts - 1).astype(
        jnp.int32
    )
    n_bins = int(np.prod(counts))
    flat_bins = (atom_bins[:, 0] * counts[1] + atom_bins[:, 1]) * counts[2] + atom_bins[:, 2]
    flat_bins = jnp.where(atom_mask, flat_bins, n_bins)  # padding atoms in no bin

    # the atoms of each bin: [n_bins, bin_capacity], -1 on empty places
    order = jnp.argsort(flat_bins, stable=True).astype(jnp.int32)
    sorted_bins = flat_bins[order]
    starts = jnp.searchsorted(sorted_bins, jnp.arange(n_bins), side="left")
    sizes = jnp.searchsorted(sorted_bins, jnp.arange(n_bins), side="right") - starts
    places = starts[:, None] + jnp.arange(bin_capacity)[None]
    table = jnp.where(
        jnp.arange(bin_capacity)[None] < sizes[:, None],
        order[jnp.clip(places, 0, n_atoms - 1)],
        -1,
    )

    # for each receiver j: the 27 bins around its own, and the cell shift of wrapping into them
    around = atom_bins[:, None, :] + _OFFSETS[None]  # [n_atoms, 27, 3]
    wraps = jnp.floor_divide(around, counts)
    around = around - wraps * counts
    around_flat = (around[..., 0] * counts[1] + around[..., 1]) * counts[2] + around[..., 2]
    senders = table[around_flat].reshape(n_atoms, -1)  # [n_atoms, 27 * bin_capacity]
    image_shifts = jnp.repeat(-wraps, bin_capacity, axis=1).astype(dtype)  # S' of each sender
    safe_senders = jnp.maximum(senders, 0)
    vectors = wrapped[:, None, :] - wrapped[safe_senders] + image_shifts @ cell
    receivers = jnp.arange(n_atoms, dtype=jnp.int32)[:, None]
    self_pair = (senders == receivers) & jnp.all(image_shifts == 0, axis=-1)
    keep = (
        (senders >= 0)
        & atom_mask[:, None]
        & ~self_pair
        & (jnp.sum(vectors * vectors, axis=-1) < jnp.asarray(cutoff, dtype) ** 2)
    )

    width = senders.shape[1]

    def pairs_at(index):
        receivers = index // width
        senders = safe_senders.reshape(-1)[index]
        shifts = image_shifts.reshape(-1, 3)[index] + offsets[senders] - offsets[receivers]
        return senders, receivers, shifts

    pair_senders, pair_receivers, shifts, n_pairs = _packed(
        keep.reshape(-1), capacity, _padding_index(atom_mask), pairs_at
    )
    spacings_needed = cutoff * jnp.linalg.norm(inverse, axis=0) * counts  # > 1: bins too thin
    neighbors = DeviceNeighbors(
        senders=pair_senders,
        receivers=pair_receivers,
        shifts=shifts,
        n_pairs=n_pairs,
        overflow=n_pairs > capacity,
        image_overflow=jnp.any(spacings_needed > 1 + 1e-4),
    )
    return neighbors, jnp.any(sizes > bin_capacity)
