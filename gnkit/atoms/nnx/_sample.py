"""The one-atom structure graph that initialises an atoms twin's linen module."""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp

from gnkit.graph import GraphsTuple


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
