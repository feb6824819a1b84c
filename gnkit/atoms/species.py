"""Atomic numbers to a model's species indices, and the host check that a model knows them all.

A model is built for a tuple of atomic numbers, `species` (say `(1, 6, 8)` for H, C, O); its
embedding row for an atom is the index of the atom's atomic number in that tuple. The models read
their species indices through `graph_species_index`, which rejects an atomic number the model does
not know whenever the graph's arrays are concrete (an eager call, `init` or `apply` outside `jit`);
inside `jit` the arrays are abstract, so check a batch on the host with `check_species` first.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.graph import GraphsTuple

__all__ = ["check_species", "graph_species_index", "species_index"]


def species_index(atomic_numbers: jax.Array, species: Sequence[int]) -> jax.Array:
    """The index of each atom's atomic number in `species`. Jittable.

    Padding atoms (atomic number 0) and atomic numbers not in `species` map to 0; use
    `check_species` on the host to reject the latter.

    Args:
      atomic_numbers: int `[n_atoms]`.
      species: the model's atomic numbers, e.g. `(1, 6, 8)`.

    Returns:
      int32 `[n_atoms]` in `[0, len(species))`.
    """
    known = jnp.asarray(tuple(species), jnp.int32)
    matches = jnp.asarray(atomic_numbers)[:, None] == known[None, :]
    return jnp.argmax(matches, axis=1).astype(jnp.int32)


def check_species(graph: GraphsTuple, species: Sequence[int]) -> None:
    """Raises a ValueError naming the first real atom whose atomic number is not in `species`.

    Host-side (reads the arrays). Padding atoms (atomic number 0) are ignored.

    Args:
      graph: a structure graph (or batch) with `nodes["atomic_numbers"]` `[n_atoms]`.
      species: the model's atomic numbers.
    """
    atomic_numbers = np.asarray(graph.nodes["atomic_numbers"])
    unknown = (atomic_numbers != 0) & ~np.isin(atomic_numbers, np.asarray(tuple(species)))
    if not unknown.any():
        return
    row = int(np.flatnonzero(unknown)[0])
    offsets = np.concatenate([[0], np.cumsum(np.asarray(graph.n_node))])
    structure = int(np.searchsorted(offsets, row, side="right") - 1)
    raise ValueError(
        f"atomic number {int(atomic_numbers[row])} of atom {row - int(offsets[structure])} in "
        f"structure {structure} (row {row} of nodes['atomic_numbers']) is not among the "
        f"model's species {tuple(int(z) for z in species)}"
    )


def graph_species_index(graph: GraphsTuple, species: Sequence[int]) -> jax.Array:
    """`species_index` of the graph's atoms, after `check_species` where the arrays are concrete.

    Jittable: under a transformation (`jit`, `grad`, `vmap`, `eval_shape`) the atomic numbers are
    abstract and only `species_index` runs; called on concrete arrays it first raises
    `check_species`'s ValueError naming the structure and atom of an unknown atomic number.

    Args:
      graph: a structure graph (or batch) with `nodes["atomic_numbers"]` `[n_atoms]`.
      species: the model's atomic numbers.

    Returns:
      int32 `[n_atoms]` in `[0, len(species))`.
    """
    atomic_numbers = graph.nodes["atomic_numbers"]
    if not isinstance(atomic_numbers, jax.core.Tracer) and not isinstance(
        graph.n_node, jax.core.Tracer
    ):
        check_species(graph, species)
    return species_index(atomic_numbers, species)
