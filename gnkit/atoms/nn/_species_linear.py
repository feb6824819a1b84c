"""A species-dependent equivariant linear map: one weight set per species, as
`e3nn.flax.Linear(irreps_out, num_indexed_weights=num_species)` defines it, computed as one
contraction over (species, channel) instead of a weight gather per atom.

e3nn-jax gathers every atom's weight matrices (`[n_atoms, mul_in, mul_out]` per path) and
multiplies each atom by its own; the gradient is then a scatter-add of per-atom outer products.
Here each path is one matmul: the input masked by species, `[n_atoms, species x mul_in]`, times
the stacked weights `[species x mul_in, mul_out]`, whose work grows with the species count (a
few in a molecule or an alloy) rather than memory traffic per atom. The parameters are
e3nn-jax's, same names, shapes and initialisation, so either module loads the other's.
"""

from __future__ import annotations

import e3nn_jax as e3nn
import flax.linen as nn
import jax
import jax.numpy as jnp


class SpeciesLinear(nn.Module):
    """`[n_atoms, irreps_in]` -> `[n_atoms, irreps_out]`, each atom through its species' map.

    Equal to `e3nn.flax.Linear(irreps_out, num_indexed_weights=num_species,
    force_irreps_out=force_irreps_out)` applied as `linear(species, features)`, without biases.
    Jittable.

    Attributes:
      irreps_out: the output irreps.
      num_species: how many weight sets (species indices run over `0..num_species-1`).
      force_irreps_out: keep output irreps the input cannot reach (as zeros), as e3nn-jax's.
    """

    irreps_out: str
    num_species: int
    force_irreps_out: bool = False

    @nn.compact
    def __call__(self, species: jax.Array, features: e3nn.IrrepsArray) -> e3nn.IrrepsArray:
        """int `[n_atoms]`, `[n_atoms, irreps_in]` -> `[n_atoms, irreps_out]`."""
        features = features.remove_zero_chunks().regroup()
        irreps_out = e3nn.Irreps(self.irreps_out).simplify()
        if not self.force_irreps_out:
            irreps_out = irreps_out.filter(keep=features.irreps)
        linear = e3nn.FunctionalLinear(features.irreps, irreps_out)
        one_hot = jax.nn.one_hot(species, self.num_species, dtype=features.dtype)
        paths = []
        for ins in linear.instructions:
            weight = self.param(
                f"w[{ins.i_in},{ins.i_out}] {linear.irreps_in[ins.i_in]},"
                f"{linear.irreps_out[ins.i_out]}",
                nn.initializers.normal(ins.weight_std),
                (self.num_species, *ins.path_shape),
                features.dtype,
            )
            chunk = features.chunks[ins.i_in]  # [n_atoms, mul_in, ir_dim] or None (zeros)
            if chunk is None:
                paths.append(None)
                continue
            n_atoms, mul_in, ir_dim = chunk.shape
            masked = one_hot[:, :, None, None] * chunk[:, None]  # [n_atoms, S, mul_in, ir_dim]
            stacked = weight.reshape(self.num_species * mul_in, -1)  # [S * mul_in, mul_out]
            paths.append(ins.path_weight * jnp.einsum(
                "nki,kw->nwi", masked.reshape(n_atoms, -1, ir_dim), stacked))
        output = linear.aggregate_paths(paths, features.shape[:-1], features.dtype)
        return output.rechunk(self.irreps_out) if self.force_irreps_out else output
