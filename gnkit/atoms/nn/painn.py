r"""PaiNN (Schütt, Unke, Gastegger 2021): equivariant message passing with scalar and vector
features.

Each atom holds scalar features `s` `[F]` and vector features `v` `[3, F]` (zero at the start).
A message block (eq. 7-8 of the paper) sends, along each edge `j -> i`, the split
`(a, b, c)` of `phi(s_j) * W(r_ij)` and adds `sum_j a` to `s_i` and
`sum_j (v_j * b + c * r_ij / |r_ij|)` to `v_i`; an update block (eq. 9-11) mixes each atom's own
`v` through two linear maps `U`, `V` and gates it by an MLP of `(s, |V v|)`. The radial filter
`W` is a Dense layer on the paper's `sin(n pi r / c) / r` basis times the cosine cutoff.
`r_ij = r_i - r_j` is the paper's direction: `gnkit.atoms.features.edge_vectors` of the edge
whose receiver is `i`.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.atoms.features import bessel_basis, cosine_cutoff, edge_vectors, safe_norm
from gnkit.atoms.species import graph_species_index
from gnkit.graph import GraphsTuple

__all__ = ["PaiNN", "painn_message", "painn_update"]


def painn_message(
    vectors: jax.Array,
    neighbour_terms: jax.Array,
    directions: jax.Array,
    senders: jax.Array,
    receivers: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    r"""PaiNN's message sums (eq. 7-8): the changes `(ds, dv)` of every atom's features.

    With `(a, b, c)` the three `F`-wide parts of each edge's `neighbour_terms`
    (:math:`\phi(s_j) \circ W(r_{ij})`), :math:`\Delta s_i = \sum_j a_{ij}` and
    :math:`\Delta v_i = \sum_j v_j \circ b_{ij} + c_{ij} \, r_{ij} / \lVert r_{ij} \rVert`.
    Jittable.

    Args:
      vectors: `[n_atoms, 3, F]` vector features `v`.
      neighbour_terms: `[n_edge, 3F]`, the sender's `phi(s_j)` times the edge's filter.
      directions: `[n_edge, 3]` unit vectors `r_ij / |r_ij|` (0 on padding edges).
      senders: int `[n_edge]`, the neighbours `j`.
      receivers: int `[n_edge]`, the atoms `i`.

    Returns:
      `ds` `[n_atoms, F]` and `dv` `[n_atoms, 3, F]`.
    """
    n_atoms = vectors.shape[0]
    to_scalars, to_vectors, to_directions = jnp.split(neighbour_terms, 3, axis=-1)
    vector_messages = (vectors[senders] * to_vectors[:, None, :]
                       + to_directions[:, None, :] * directions[:, :, None])
    return (jax.ops.segment_sum(to_scalars, receivers, n_atoms),
            jax.ops.segment_sum(vector_messages, receivers, n_atoms))


def painn_update(
    u_vectors: jax.Array, v_vectors: jax.Array, gates: jax.Array
) -> tuple[jax.Array, jax.Array]:
    r"""PaiNN's update (eq. 9-11): the changes `(ds, dv)` from `U v`, `V v` and the gates.

    With `(a_vv, a_sv, a_ss)` the three `F`-wide parts of `gates` (the MLP of `(s, |V v|)`),
    :math:`\Delta v = a_{vv} \circ U v` and
    :math:`\Delta s = a_{sv} \circ \langle U v, V v \rangle + a_{ss}`. Jittable.

    Args:
      u_vectors: `[n_atoms, 3, F]`, `U v`.
      v_vectors: `[n_atoms, 3, F]`, `V v`.
      gates: `[n_atoms, 3F]`.

    Returns:
      `ds` `[n_atoms, F]` and `dv` `[n_atoms, 3, F]`.
    """
    vector_gate, product_gate, scalar_shift = jnp.split(gates, 3, axis=-1)
    products = jnp.sum(u_vectors * v_vectors, axis=1)
    return product_gate * products + scalar_shift, vector_gate[:, None, :] * u_vectors


class _Message(nn.Module):
    """The message block: `phi` (`"phi_0"`, SiLU, `"phi_1"`) and the filter (`"filter"`)."""

    features: int

    @nn.compact
    def __call__(self, scalars, vectors, radial, envelope, directions, senders, receivers):
        phi = nn.Dense(3 * self.features, name="phi_1")(
            nn.silu(nn.Dense(self.features, name="phi_0")(scalars))
        )
        filters = nn.Dense(3 * self.features, name="filter")(radial) * envelope[:, None]
        return painn_message(vectors, phi[senders] * filters, directions, senders, receivers)


class _Update(nn.Module):
    """The update block: `U`, `V` (`"u"`, `"v"`, no bias) and the gate MLP (`"gate_0"`, SiLU,
    `"gate_1"`)."""

    features: int

    @nn.compact
    def __call__(self, scalars, vectors):
        u_vectors = nn.Dense(self.features, use_bias=False, name="u")(vectors)
        v_vectors = nn.Dense(self.features, use_bias=False, name="v")(vectors)
        inputs = jnp.concatenate([scalars, safe_norm(v_vectors, axis=1)], axis=-1)
        gates = nn.Dense(3 * self.features, name="gate_1")(
            nn.silu(nn.Dense(self.features, name="gate_0")(inputs))
        )
        return painn_update(u_vectors, v_vectors, gates)


class PaiNN(nn.Module):
    """PaiNN's per-atom energies, `graph -> [n_atoms]` (0 on padding atoms). Jittable.

    The scalars start as the embedding of each atom's species (`"embedding"`, rows in `species`
    order), the vectors at 0; `num_interactions` pairs of message (`"message_k"`) and update
    (`"update_k"`) blocks add to both, each block with its own weights. The radial basis is
    the paper's `sin(n pi r / c) / r` for `n = 1 .. num_basis`, times `cosine_cutoff(r, c)`. The
    output MLP (`"output_0"` to `features // 2`, SiLU, `"output_1"` to 1) turns the final
    scalars into each atom's energy.

    Attributes:
      species: the atomic numbers the model knows, e.g. `(1, 6, 8)`.
      cutoff: the cutoff radius (Å); edges at or beyond it contribute nothing.
      features: the width `F` of the scalar and vector features.
      num_interactions: the number of message / update block pairs.
      num_basis: the number of radial basis functions.
    """

    species: Sequence[int]
    cutoff: float = 5.0
    features: int = 128
    num_interactions: int = 3
    num_basis: int = 20

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        atomic_numbers = graph.nodes["atomic_numbers"]
        species = graph_species_index(graph, self.species)
        vectors_ij = edge_vectors(graph)
        distances = safe_norm(vectors_ij)
        directions = vectors_ij / jnp.where(distances > 0, distances, 1.0)[:, None]
        # bessel_basis carries DimeNet's sqrt(2 / c); the paper's basis is without it.
        radial = bessel_basis(distances, self.num_basis, self.cutoff) / jnp.sqrt(2.0 / self.cutoff)
        envelope = cosine_cutoff(distances, self.cutoff)
        scalars = nn.Embed(len(self.species), self.features, name="embedding")(species).astype(
            distances.dtype
        )
        vectors = jnp.zeros(scalars.shape[:1] + (3, self.features), scalars.dtype)
        for index in range(self.num_interactions):
            d_scalars, d_vectors = _Message(self.features, name=f"message_{index}")(
                scalars, vectors, radial, envelope, directions, graph.senders, graph.receivers
            )
            scalars, vectors = scalars + d_scalars, vectors + d_vectors
            d_scalars, d_vectors = _Update(self.features, name=f"update_{index}")(scalars, vectors)
            scalars, vectors = scalars + d_scalars, vectors + d_vectors
        hidden = nn.silu(nn.Dense(self.features // 2, name="output_0")(scalars))
        energies = nn.Dense(1, name="output_1")(hidden)[:, 0]
        return jnp.where(atomic_numbers > 0, energies, 0.0)
