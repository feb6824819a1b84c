"""MACE (Batatia et al. 2022) as a Flax linen module on e3nn-jax: per-atom energies of a structure.

The layers are those of mace (`mace.modules.MACE`, `RealAgnosticInteractionBlock` first,
`RealAgnosticResidualInteractionBlock` after) and mace-jax, in e3nn-jax's idiom:

- species embedding: a linear map of the one-hot species to `num_features x 0e`;
- edges: spherical harmonics `Y` up to `max_l` of the edge directions, and the radial features
  `bessel_basis(r, num_basis) * polynomial_envelope(r, p=envelope_p)`, scaled to unit mean
  square from `mean_min_distance` to the cutoff when it is given (mlip's MACE does this;
  mace-torch does not);
- each interaction `t`: the A-basis
  `A_i = W_down sum_j R(r_ij) * (W_up h_j x Y(r_ij)) / avg_num_neighbors`, with the radial MLP
  `R` (SiLU, `radial_mlp` hidden widths, no biases) giving one weight per tensor-product path
  and edge (`gnkit.atoms.equivariant.convolution`); on the first interaction a species-dependent
  linear map of `A` (mace's `skip_tp`); the B-basis by the symmetric contraction up to
  `correlation` with species-dependent weights (`gnkit.atoms.equivariant.symmetric_contraction`),
  then a linear map, plus, from the second interaction on, the residual `sc`: a
  species-dependent linear map of the layer's input `h` (mace's `skip_tp`);
- readouts: a linear map to one scalar after each interaction but the last; the last of two or
  more interactions keeps only scalar features and reads them out by linear -> SiLU -> linear
  through `readout_features` scalars (mace's `MLP_irreps`); a single interaction keeps
  `hidden_irreps` and the linear readout, as in mace. An atom's energy is the sum of its readouts.

The per-atom energies are MACE's interaction energies: the isolated-atom energies E0 and a scale /
shift are `gnkit.atoms.potential`'s (`fit_reference_energies`, `ScaleShift`), as mace adds them
outside its interaction blocks. Parameters are e3nn-jax's (`e3nn.flax.Linear`,
`e3nn.flax.MultiLayerPerceptron`) under mace's block names (`node_embedding`,
`interactions_{t}`, `products_{t}`, `readouts_{t}`). Derivatives are plain autodiff, forward
and reverse: forces, stress, force training and Hessians (`jax.hessian`) work.
"""

from __future__ import annotations

from collections.abc import Sequence

import e3nn_jax as e3nn
import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.atoms.equivariant import (
    atom_mask,
    edge_embedding,
    symmetric_contraction,
    symmetric_contraction_weight_shapes,
)
from gnkit.atoms.nn._equivariant_head import embedded_species, radial_convolution
from gnkit.atoms.nn._species_linear import SpeciesLinear
from gnkit.graph import GraphsTuple


def _same_multiplicity(irreps: e3nn.Irreps, name: str) -> int:
    muls = {mul for mul, _ in e3nn.Irreps(irreps)}
    if len(muls) != 1:
        raise ValueError(
            f"MACE: {name} must have one multiplicity for every irrep (the channels of the "
            f"symmetric contraction), e.g. '128x0e + 128x1o', found {irreps}"
        )
    return muls.pop()


class SymmetricContraction(nn.Module):
    """The B-basis of one MACE layer (`gnkit.atoms.equivariant.symmetric_contraction`).

    Parameters `"w{nu}_{ir}"` `[num_species, n_basis, num_features]`, initialised normal with
    standard deviation `n_basis ** -0.5` (mace-jax's element normalisation). Jittable.

    Attributes:
      correlation: the largest order `nu`.
      irreps_out: the irreps to produce (multiplicities ignored).
      num_species: the number of species.
    """

    correlation: int
    irreps_out: str
    num_species: int

    @nn.compact
    def __call__(self, features: e3nn.IrrepsArray, species: jax.Array) -> e3nn.IrrepsArray:
        """`[n_atoms, C, irreps_in]`, int `[n_atoms]` -> `[n_atoms, C, irreps_out']`."""
        shapes = symmetric_contraction_weight_shapes(
            features.irreps, self.correlation, self.irreps_out, self.num_species,
            features.shape[1],
        )
        weights = {
            name: self.param(name, nn.initializers.normal(shape[1] ** -0.5), shape,
                             features.dtype)
            for name, shape in shapes.items()
        }
        return symmetric_contraction(features, species, weights, self.correlation,
                                     self.irreps_out)


class _Interaction(nn.Module):
    """mace's interaction block: the A-basis of one layer `[n_atoms, target_irreps]`, and the
    residual `sc` `[n_atoms, hidden_irreps]` (None on the first layer)."""

    target_irreps: str
    hidden_irreps: str
    num_species: int
    radial_mlp: tuple[int, ...]
    avg_num_neighbors: float
    first: bool

    @nn.compact
    def __call__(self, node_features, species, harmonics, radial, graph):
        residual = None
        if not self.first:
            residual = SpeciesLinear(self.hidden_irreps, self.num_species, name="skip_tp")(
                species, node_features)
        node_features = e3nn.flax.Linear(node_features.irreps, name="linear_up")(node_features)
        messages = radial_convolution(node_features, harmonics, radial, graph,
                                      self.target_irreps, self.radial_mlp, name="radial_mlp")
        messages = e3nn.flax.Linear(self.target_irreps, name="linear")(messages)
        messages = messages / self.avg_num_neighbors
        if self.first:
            messages = SpeciesLinear(self.target_irreps, self.num_species, name="skip_tp")(
                species, messages)
        return messages, residual


class _Product(nn.Module):
    """mace's product basis block: the symmetric contraction, then a linear map."""

    hidden_irreps: str
    correlation: int
    num_species: int

    @nn.compact
    def __call__(self, messages, species):
        features = messages.mul_to_axis().remove_zero_chunks()
        features = SymmetricContraction(
            self.correlation, self.hidden_irreps, self.num_species, name="symmetric_contraction"
        )(features, species)
        features = features.axis_to_mul()
        return e3nn.flax.Linear(self.hidden_irreps, name="linear")(features)


class _Readout(nn.Module):
    """mace's readouts: linear to one scalar, or (`hidden_features`) linear -> SiLU -> linear."""

    hidden_features: int | None

    @nn.compact
    def __call__(self, features):
        if self.hidden_features is None:
            return e3nn.flax.Linear("1x0e", name="linear")(features).array[:, 0]
        hidden = e3nn.flax.Linear(f"{self.hidden_features}x0e", name="linear_1")(features)
        hidden = e3nn.scalar_activation(hidden, [jax.nn.silu])
        return e3nn.flax.Linear("1x0e", name="linear_2")(hidden).array[:, 0]


class MACE(nn.Module):
    """MACE: higher-order equivariant message passing; `__call__(graph) -> [n_atoms]` energies.

    Defaults are the sizes of the MACE paper's rMD17 aspirin model: 2 interactions,
    `128x0e + 128x1o` hidden, `Y` up to `l = 3`, correlation 3 (body order 4), cutoff 5 Å, 8
    Bessel functions under the `p = 5` envelope, a `[64, 64, 64]` radial MLP and a 16-scalar
    last readout. Jittable; padding atoms (atomic number 0) get energy 0 and move no real atom's
    energy.

    Attributes:
      species: the atomic numbers the model knows, e.g. `(1, 6, 8)`.
      cutoff: the radial cutoff (Å), MACE's `r_max`.
      num_interactions: the number of layers (at least 1).
      hidden_irreps: the node features between layers, one multiplicity for every irrep.
      max_l: the largest degree of the edges' spherical harmonics (MACE's `max_ell`).
      correlation: the symmetric contraction's order (body order `correlation + 1`).
      num_basis: the number of Bessel functions (MACE's `num_bessel`).
      envelope_p: the polynomial envelope's order (MACE's `num_polynomial_cutoff`).
      radial_mlp: the radial MLP's hidden widths.
      readout_features: the scalars of the last readout's hidden layer (MACE's `MLP_irreps`).
      avg_num_neighbors: the A-basis normaliser, the training set's mean neighbour count
        (`gnkit.atoms.equivariant.average_num_neighbors`).
      mean_min_distance: the training set's mean shortest edge (Å,
        `gnkit.atoms.equivariant.average_min_distance`); the radial features are scaled to unit
        mean square between it and the cutoff (`radial_normalisation`). None: unscaled, as
        mace-torch's.
    """

    species: Sequence[int]
    cutoff: float = 5.0
    num_interactions: int = 2
    hidden_irreps: str = "128x0e + 128x1o"
    max_l: int = 3
    correlation: int = 3
    num_basis: int = 8
    envelope_p: int = 5
    radial_mlp: Sequence[int] = (64, 64, 64)
    readout_features: int = 16
    avg_num_neighbors: float = 1.0
    mean_min_distance: float | None = None

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Per-atom energies `[n_atoms]` of the structure graph (0 on padding atoms). Jittable."""
        if self.num_interactions < 1:
            raise ValueError(f"MACE: num_interactions must be at least 1, got "
                             f"{self.num_interactions}")
        num_features = _same_multiplicity(self.hidden_irreps, "hidden_irreps")
        num_species = len(self.species)
        species, features = embedded_species(graph, self.species, num_features,
                                             name="node_embedding")
        harmonics, radial = edge_embedding(
            graph, max_l=self.max_l, num_basis=self.num_basis, cutoff=self.cutoff,
            envelope_p=self.envelope_p, min_distance=self.mean_min_distance,
        )
        target_irreps = str(num_features * e3nn.Irreps.spherical_harmonics(self.max_l))
        energies = []
        for layer in range(self.num_interactions):
            last = layer == self.num_interactions - 1 and layer > 0
            hidden = e3nn.Irreps(self.hidden_irreps)
            hidden = str(hidden.filter(keep="0e") if last else hidden)
            messages, residual = _Interaction(
                target_irreps, hidden, num_species, tuple(self.radial_mlp),
                self.avg_num_neighbors, first=layer == 0, name=f"interactions_{layer}",
            )(features, species, harmonics, radial, graph)
            features = _Product(hidden, self.correlation, num_species,
                                name=f"products_{layer}")(messages, species)
            if residual is not None:
                features = features + residual
            readout = _Readout(self.readout_features if last else None, name=f"readouts_{layer}")
            energies.append(readout(features))
        atom_energies = jnp.sum(jnp.stack(energies), axis=0)
        return jnp.where(atom_mask(graph), atom_energies, 0.0)
