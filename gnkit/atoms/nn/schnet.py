"""SchNet (Schütt et al. 2017, 2018): continuous-filter convolutions over interatomic distances.

An atom's features start as an embedding of its species and pass through interaction blocks,
each adding `update(cfconv(x))` to them, where the continuous-filter convolution multiplies each
neighbour's features by a filter generated from the Gaussian expansion of the distance and damped
by the cosine cutoff; an atom-wise MLP turns the final features into the atom's energy.
The layout is schnetpack's and PyTorch Geometric's `SchNet`; with the same weights and edges this
module gives PyG's per-atom outputs (see `SchNet`'s weight mapping).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.atoms.features import cosine_cutoff, edge_vectors, gaussian_basis, safe_norm
from gnkit.atoms.species import graph_species_index
from gnkit.graph import GraphsTuple

__all__ = ["SchNet", "cfconv", "shifted_softplus"]


def shifted_softplus(x: jax.Array) -> jax.Array:
    """`softplus(x) - log 2`, SchNet's activation (0 at 0). Jittable."""
    return jax.nn.softplus(x) - jnp.log(2.0).astype(jnp.result_type(x))


def cfconv(
    atom_features: jax.Array, filters: jax.Array, senders: jax.Array, receivers: jax.Array
) -> jax.Array:
    r"""The continuous-filter convolution :math:`y_i = \sum_{j} x_j \odot W_{ji}`.

    Each edge carries its sender's features, multiplied element-wise by the edge's filter, to its
    receiver. Jittable.

    Args:
      atom_features: `[n_atoms, F]` features `x`.
      filters: `[n_edge, F]` filters `W` (already damped by the cutoff).
      senders: int `[n_edge]`, the neighbours `j`.
      receivers: int `[n_edge]`, the atoms `i` that the sums belong to.

    Returns:
      `[n_atoms, F]`.
    """
    return jax.ops.segment_sum(atom_features[senders] * filters, receivers,
                               atom_features.shape[0])


class _Interaction(nn.Module):
    """One SchNet interaction block: `update(cfconv(atoms_to_filters(x), W))`, `[n_atoms, F]`."""

    features: int
    num_filters: int

    @nn.compact
    def __call__(self, atom_features, expanded, envelope, senders, receivers):
        hidden = shifted_softplus(nn.Dense(self.num_filters, name="filter_0")(expanded))
        filters = nn.Dense(self.num_filters, name="filter_1")(hidden) * envelope[:, None]
        inputs = nn.Dense(self.num_filters, use_bias=False, name="atoms_to_filters")(atom_features)
        convolved = cfconv(inputs, filters, senders, receivers)
        outputs = shifted_softplus(nn.Dense(self.features, name="filters_to_atoms")(convolved))
        return nn.Dense(self.features, name="update")(outputs)


class SchNet(nn.Module):
    """SchNet's per-atom energies, `graph -> [n_atoms]` (0 on padding atoms). Jittable.

    The embedding of each atom's species (`"embedding"`, rows in `species` order) goes through
    `num_interactions` residual interaction blocks (`"interaction_k"`): a filter network on
    `gaussian_basis(r, num_basis, cutoff)` (`"filter_0"`, shifted softplus, `"filter_1"`) times
    `cosine_cutoff(r, cutoff)`, the continuous-filter convolution of the atoms' features projected
    to `num_filters` (`"atoms_to_filters"`, no bias), then `"filters_to_atoms"`, shifted
    softplus and `"update"`. The output MLP (`"output_0"` to `features // 2`, shifted softplus,
    `"output_1"` to 1) gives each atom's energy.

    PyTorch Geometric's `SchNet(hidden_channels=features, num_filters, num_interactions,
    num_gaussians=num_basis, cutoff)` has the same layers: `embedding.weight[species]` is
    `"embedding"`'s table; in `interactions[k]`, `mlp[0]`, `mlp[2]`, `conv.lin1`, `conv.lin2`,
    `lin` are `filter_0`, `filter_1`, `atoms_to_filters`, `filters_to_atoms`, `update`; `lin1`,
    `lin2` are `output_0`, `output_1` (each kernel is the torch weight transposed).

    Attributes:
      species: the atomic numbers the model knows, e.g. `(1, 6, 8)`.
      cutoff: the cutoff radius (Å); edges at or beyond it contribute nothing.
      features: the width of the atoms' features.
      num_filters: the width of the filters.
      num_interactions: the number of interaction blocks.
      num_basis: the number of Gaussians in the distance expansion.
    """

    species: Sequence[int]
    cutoff: float = 5.0
    features: int = 128
    num_filters: int = 128
    num_interactions: int = 3
    num_basis: int = 50

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        atomic_numbers = graph.nodes["atomic_numbers"]
        species = graph_species_index(graph, self.species)
        distances = safe_norm(edge_vectors(graph))
        expanded = gaussian_basis(distances, self.num_basis, self.cutoff)
        envelope = cosine_cutoff(distances, self.cutoff)
        atom_features = nn.Embed(len(self.species), self.features, name="embedding")(species)
        for index in range(self.num_interactions):
            atom_features = atom_features + _Interaction(
                self.features, self.num_filters, name=f"interaction_{index}"
            )(atom_features, expanded, envelope, graph.senders, graph.receivers)
        hidden = shifted_softplus(nn.Dense(self.features // 2, name="output_0")(atom_features))
        energies = nn.Dense(1, name="output_1")(hidden)[:, 0]
        return jnp.where(atomic_numbers > 0, energies, 0.0)
