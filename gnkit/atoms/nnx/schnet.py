"""The NNX twin of `gnkit.atoms.nn.SchNet`: the same math and parameters, as an NNX module."""

from __future__ import annotations

from collections.abc import Sequence

import jax
from flax import nnx

from gnkit.atoms.nn import schnet
from gnkit.atoms.nnx._sample import sample_structure
from gnkit.graph import GraphsTuple
from gnkit.nnx.twin import Twin


class SchNet(Twin, linen=schnet.SchNet):
    """SchNet's per-atom energies (`gnkit.atoms.nn.SchNet`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å).
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.SchNet`'s other attributes (`features`, `num_filters`,
        `num_interactions`, `num_basis`).
    """

    def __init__(self, species: Sequence[int], cutoff: float = 5.0, *, rngs: nnx.Rngs,
                 **options):
        self._build(schnet.SchNet, dict(species=tuple(species), cutoff=cutoff, **options), rngs,
                    (sample_structure(species),))

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Per-atom energies `[n_atoms]`, 0 on padding atoms. Jittable under `nnx.jit`."""
        return self._apply(graph)
