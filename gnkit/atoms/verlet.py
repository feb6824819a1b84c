"""Verlet (skin) lists on the device: one list within `cutoff + skin`, reused while atoms move.

`build_verlet_list` runs `device_neighbor_list` with the cutoff widened by `skin` and keeps the
positions it was built at. While no real atom has moved more than `skin / 2` from there
(`needs_rebuild` is False), every pair now closer than `cutoff` is in the list, so
`verlet_neighbors` finds exactly the pairs the full search would: it filters the list by the
current distances and compacts them to the front, the same edges (no extra ones under a zero
envelope) as `device_neighbor_list(positions, ..., cutoff)`. The cell is taken as fixed between
rebuilds (rebuild after a cell change); positions that an integrator wraps back into the cell
count as moved, which only makes rebuilds more frequent. All functions are jittable.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from gnkit.atoms.device_neighbors import (
    DeviceNeighbors,
    _check_cutoff,
    _packed,
    _padding_index,
    device_neighbor_list,
)


class VerletList(NamedTuple):
    """A skin list and the state it was built in.

    Attributes:
      neighbors: `DeviceNeighbors` within `cutoff + skin` at `reference_positions`.
      reference_positions: `[n_atoms, 3]`, the positions at the build.
      atom_mask: `bool [n_atoms]`, False on padding atoms.
      skin: `[]`, the skin in Å.
    """

    neighbors: DeviceNeighbors
    reference_positions: jax.Array
    atom_mask: jax.Array
    skin: jax.Array


def build_verlet_list(
    positions,
    cell,
    pbc,
    cutoff: float,
    skin: float,
    *,
    capacity: int,
    images: tuple[int, int, int],
    atom_mask=None,
) -> VerletList:
    """The pairs within `cutoff + skin`, with the positions to measure moves from. Jittable with
    `capacity` and `images` static.

    Args:
      positions: `[n_atoms, 3]` in Å.
      cell: `[3, 3]`, rows are the lattice vectors.
      pbc: `bool [3]`.
      cutoff: the model's cutoff in Å, positive.
      skin: the extra distance in Å, non-negative.
      capacity: pair slots (static), room for the pairs within `cutoff + skin`.
      images: images per axis (static), `image_ranges(cell, pbc, cutoff + skin)`.
      atom_mask: `bool [n_atoms]`, False on padding atoms; None for all real.

    Returns:
      `VerletList`; check `neighbors.overflow` / `neighbors.image_overflow` as for the list.
    """
    _check_cutoff(cutoff)
    if not isinstance(skin, jax.core.Tracer) and not skin >= 0:
        raise ValueError(f"the Verlet list needs a non-negative skin, got skin={skin!r}.")
    positions = jnp.asarray(positions)
    neighbors = device_neighbor_list(
        positions, cell, pbc, cutoff + skin, capacity=capacity, images=images,
        atom_mask=atom_mask,
    )
    mask = jnp.ones(positions.shape[0], bool) if atom_mask is None else jnp.asarray(atom_mask)
    return VerletList(neighbors, positions, mask, jnp.asarray(skin, positions.dtype))


def needs_rebuild(verlet: VerletList, positions) -> jax.Array:
    """`bool []`: True when a real atom is more than `skin / 2` from where the list was built.

    Jittable. Padding atoms are not looked at.

    Args:
      verlet: the list.
      positions: `[n_atoms, 3]`, the current positions (unwrapped: as given to the build).
    """
    moved = jnp.sum((positions - verlet.reference_positions) ** 2, axis=-1)
    return jnp.any(verlet.atom_mask & (moved > (verlet.skin / 2) ** 2))


def verlet_neighbors(verlet: VerletList, positions, cell, cutoff: float) -> DeviceNeighbors:
    """The pairs of the skin list now closer than `cutoff`, compacted to the front. Jittable.

    Equal to `device_neighbor_list(positions, cell, pbc, cutoff, ...)` as a set of pairs while
    `needs_rebuild(verlet, positions)` is False. The capacity is the skin list's; padding slots
    point at the same padding atom; `overflow` and `image_overflow` are the skin list's.

    Args:
      verlet: the list.
      positions: `[n_atoms, 3]`, the current positions.
      cell: `[3, 3]`, the cell of the build.
      cutoff: the model's cutoff in Å (the build's, without the skin).

    Returns:
      `DeviceNeighbors` with the pairs within `cutoff`; `n_pairs` counts them.
    """
    skin_list = verlet.neighbors
    positions = jax.lax.stop_gradient(jnp.asarray(positions))
    cell = jnp.asarray(cell, positions.dtype)
    vectors = (
        positions[skin_list.receivers] - positions[skin_list.senders] + skin_list.shifts @ cell
    )
    within = skin_list.pair_mask & (jnp.sum(vectors * vectors, axis=-1) < cutoff**2)
    def pairs_at(index):
        return skin_list.senders[index], skin_list.receivers[index], skin_list.shifts[index]

    senders, receivers, shifts, n_pairs = _packed(
        within, within.shape[0], _padding_index(verlet.atom_mask), pairs_at
    )
    return skin_list._replace(senders=senders, receivers=receivers, shifts=shifts, n_pairs=n_pairs)
