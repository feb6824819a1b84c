"""The NNX twin of `gnkit.atoms.nn.NequIP`: the same math and parameters, as an NNX module."""

from __future__ import annotations

from collections.abc import Sequence

import jax
from flax import nnx

from gnkit.atoms.nn import nequip
from gnkit.atoms.nnx._sample import sample_structure
from gnkit.graph import GraphsTuple
from gnkit.nnx.twin import Twin


class NequIP(Twin, linen=nequip.NequIP):
    """NequIP's per-atom energies (`gnkit.atoms.nn.NequIP`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å), nequip's `r_max`.
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.NequIP`'s other attributes (`num_layers`,
        `hidden_irreps`, `max_l`, `num_basis`, `envelope_p`, `radial_mlp`, `readout_features`,
        `avg_num_neighbors`).
    """

    def __init__(self, species: Sequence[int], cutoff: float = 4.0, *, rngs: nnx.Rngs,
                 **options):
        self._build(nequip.NequIP, dict(species=tuple(species), cutoff=cutoff, **options), rngs,
                    (sample_structure(species),))

    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Per-atom energies `[n_atoms]`, 0 on padding atoms. Jittable under `nnx.jit`."""
        return self._apply(graph)
