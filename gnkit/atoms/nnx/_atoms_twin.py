"""The base of the atoms twins: built from `species`, a cutoff and the linen model's sizes."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nnx.twin import Twin


def sample_structure(species: Sequence[int]) -> GraphsTuple:
    """One atom of `species[0]` at the origin, one zero-length edge to itself, no cell."""
    return GraphsTuple(
        nodes={"positions": jnp.zeros((1, 3)),
               "atomic_numbers": jnp.asarray([species[0]], jnp.int32)},
        edges={"shifts": jnp.zeros((1, 3))},
        receivers=jnp.zeros((1,), jnp.int32),
        senders=jnp.zeros((1,), jnp.int32),
        globals={"cell": jnp.zeros((1, 3, 3)), "pbc": jnp.zeros((1, 3), bool)},
        n_node=jnp.array([1], jnp.int32),
        n_edge=jnp.array([1], jnp.int32),
    )


class AtomsTwin(Twin):
    """An NNX interatomic potential holding its linen twin's parameters: `graph -> [n_atoms]`.

    A subclass names its linen model (`class MACE(AtomsTwin, linen=mace.MACE)`); building it
    initialises that model on a one-atom structure.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å); None for the linen model's default.
      rngs: initialises the parameters.
      **options: the linen model's other attributes.
    """

    def __init_subclass__(cls, *, linen: type | None = None, **kwargs):
        super().__init_subclass__(linen=linen, **kwargs)
        if linen is not None:
            cls.linen_class = linen

    def __init__(self, species: Sequence[int], cutoff: float | None = None, *,
                 rngs: nnx.Rngs, **options):
        if cutoff is not None:
            options["cutoff"] = cutoff
        self._build(self.linen_class, dict(species=tuple(species), **options), rngs,
                    (sample_structure(species),))

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Per-atom energies `[n_atoms]`, 0 on padding atoms. Jittable under `nnx.jit`."""
        return self._apply(graph)
