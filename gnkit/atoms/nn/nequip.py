"""NequIP (Batzner et al. 2022) as a Flax linen module on e3nn-jax: a structure's per-atom energies.

The layers are those of nequip (`nequip.model`'s energy model: `chemical_embedding`, `num_layers`
`ConvNetLayer`s, `conv_to_output_hidden`, `output_hidden_to_scalar`), in e3nn-jax's idiom:

- species embedding: a linear map of the one-hot species to the hidden scalars (`Cx0e`);
- edges: spherical harmonics `Y` up to `max_l` of the edge directions, and NequIP's radial
  features `(2 / c) sin(n pi r / c) / r` times the polynomial envelope (`p = envelope_p`);
- each layer (nequip's `InteractionBlock` then `Gate`): a self-connection `sc` (a
  species-dependent linear map of the input, nequip's `FullyConnectedTensorProduct` with the
  one-hot species), then
  `h'_i = W_2 sum_j R(r_ij) * (W_1 h_j x Y(r_ij)) / sqrt(avg_num_neighbors) + sc_i`,
  with the radial MLP `R` (SiLU, `radial_mlp` hidden widths, no biases) giving one weight per
  tensor-product path and edge (`gnkit.atoms.equivariant.convolution`), to the hidden irreps
  reachable from the input plus one gate scalar per non-scalar irrep; the gated nonlinearity
  (`e3nn.gate`: SiLU on even and tanh on odd scalars, the same on the gates, nequip's defaults);
- readout: linear to `readout_features` scalars, linear to one scalar: the atom's energy.

The per-atom energies are the network's output; the isolated-atom energies and a per-species
scale / shift are `gnkit.atoms.potential`'s (`fit_reference_energies`, `ScaleShift`), as nequip
applies them after the network. The Bessel frequencies are fixed (nequip's
`BesselBasis_trainable=False`). Parameters are e3nn-jax's (`e3nn.flax.Linear`,
`e3nn.flax.MultiLayerPerceptron`) under nequip's block names.
"""

from __future__ import annotations

from collections.abc import Sequence

import e3nn_jax as e3nn
import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.atoms.equivariant import atom_mask, edge_embedding, gated_irreps
from gnkit.atoms.nn._equivariant_head import embedded_species, radial_convolution
from gnkit.atoms.nn._species_linear import SpeciesLinear
from gnkit.graph import GraphsTuple


class _Convolution(nn.Module):
    """nequip's InteractionBlock: `[n_atoms, irreps_in] -> [n_atoms, irreps_out]`."""

    irreps_out: str
    num_species: int
    radial_mlp: tuple[int, ...]
    avg_num_neighbors: float

    @nn.compact
    def __call__(self, features, species, harmonics, radial, graph):
        self_connection = SpeciesLinear(self.irreps_out, self.num_species, force_irreps_out=True,
                                        name="sc")(species, features)
        features = e3nn.flax.Linear(features.irreps, name="linear_1")(features)
        messages = radial_convolution(features, harmonics, radial, graph, self.irreps_out,
                                      self.radial_mlp, name="fc")
        messages = messages / self.avg_num_neighbors**0.5
        messages = e3nn.flax.Linear(self.irreps_out, force_irreps_out=True,
                                    name="linear_2")(messages)
        return messages + self_connection


class NequIP(nn.Module):
    """NequIP: E(3)-equivariant interatomic potential; `__call__(graph) -> [n_atoms]` energies.

    Defaults are nequip's example configuration: 4 layers of `32x0e + 32x0o + 32x1e + 32x1o`
    (`num_features` 32, `l_max` 1, `parity` true), cutoff 4 Å, 8 Bessel functions under the
    `p = 6` envelope, a `[64, 64]` radial MLP and a 16-scalar readout. Jittable; padding atoms
    (atomic number 0) get energy 0 and move no real atom's energy.

    Attributes:
      species: the atomic numbers the model knows, e.g. `(1, 6, 8)`.
      cutoff: the radial cutoff (Å), nequip's `r_max`.
      num_layers: the number of interaction layers (at least 1).
      hidden_irreps: the hidden features, nequip's `feature_irreps_hidden`; must hold `0e`.
      max_l: the largest degree of the edges' spherical harmonics (nequip's `l_max`).
      num_basis: the number of Bessel functions.
      envelope_p: the polynomial envelope's order (nequip's `PolynomialCutoff_p`).
      radial_mlp: the radial MLP's hidden widths (`invariant_layers` x `invariant_neurons`).
      readout_features: the scalars between the two readout maps
        (`conv_to_output_hidden_irreps_out`).
      avg_num_neighbors: the convolution's normaliser `sqrt(avg_num_neighbors)`, the training
        set's mean neighbour count (`gnkit.atoms.equivariant.average_num_neighbors`).
    """

    species: Sequence[int]
    cutoff: float = 4.0
    num_layers: int = 4
    hidden_irreps: str = "32x0e + 32x0o + 32x1e + 32x1o"
    max_l: int = 1
    num_basis: int = 8
    envelope_p: int = 6
    radial_mlp: Sequence[int] = (64, 64)
    readout_features: int = 16
    avg_num_neighbors: float = 1.0

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Per-atom energies `[n_atoms]` of the structure graph (0 on padding atoms). Jittable."""
        if self.num_layers < 1:
            raise ValueError(f"NequIP: num_layers must be at least 1, got {self.num_layers}")
        hidden = e3nn.Irreps(self.hidden_irreps)
        num_scalars = hidden.count("0e")
        if num_scalars == 0:
            raise ValueError(
                f"NequIP: hidden_irreps must hold even scalars (0e) for the embedding, found "
                f"{self.hidden_irreps}"
            )
        num_species = len(self.species)
        species, features = embedded_species(graph, self.species, num_scalars,
                                             name="chemical_embedding")
        harmonics, radial = edge_embedding(
            graph, max_l=self.max_l, num_basis=self.num_basis, cutoff=self.cutoff,
            envelope_p=self.envelope_p,
        )
        radial = radial * (2.0 / self.cutoff) ** 0.5  # NequIP's Bessel prefactor 2/c
        for layer in range(self.num_layers):
            reachable = e3nn.tensor_product(features.irreps, harmonics.irreps)
            features = _Convolution(
                str(gated_irreps(hidden, reachable)), num_species, tuple(self.radial_mlp),
                self.avg_num_neighbors, name=f"layer{layer}_convnet",
            )(features, species, harmonics, radial, graph)
            features = e3nn.gate(features, even_act=jax.nn.silu, odd_act=jnp.tanh,
                                 even_gate_act=jax.nn.silu, odd_gate_act=jnp.tanh)
        features = e3nn.flax.Linear(f"{self.readout_features}x0e",
                                    name="conv_to_output_hidden")(features)
        energies = e3nn.flax.Linear("1x0e", name="output_hidden_to_scalar")(features).array[:, 0]
        return jnp.where(atom_mask(graph), energies, 0.0)
