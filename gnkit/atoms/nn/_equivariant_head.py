"""The pieces that NequIP and MACE share: the species embedding and the radial-MLP convolution.

Each is a function called inside a linen module's compact `__call__`; the e3nn-jax submodules it
creates belong to that module, under the name given, so each model keeps its own parameter names
(nequip's `chemical_embedding` and `fc`, mace's `node_embedding` and `radial_mlp`).
"""

from __future__ import annotations

from collections.abc import Sequence

import e3nn_jax as e3nn
import jax

from gnkit.atoms.equivariant import convolution, message_products
from gnkit.atoms.species import graph_species_index
from gnkit.graph import GraphsTuple


def embedded_species(
    graph: GraphsTuple, species: Sequence[int], num_scalars: int, name: str
) -> tuple[jax.Array, e3nn.IrrepsArray]:
    """Each atom's species index and the linear map (`name`) of its one-hot species to scalars.

    Jittable inside a compact method; on concrete arrays an atomic number not in `species` is
    a ValueError naming the structure and atom (`graph_species_index`).

    Args:
      graph: a structure graph with `nodes["atomic_numbers"]` `[n_atoms]` and
        `nodes["positions"]` (its dtype is the embedding's).
      species: the model's atomic numbers.
      num_scalars: the embedding's width.
      name: the `e3nn.flax.Linear`'s name.

    Returns:
      `(species_indices, features)`: int32 `[n_atoms]` and `[n_atoms, num_scalars x 0e]`.
    """
    indices = graph_species_index(graph, species)
    one_hot = e3nn.IrrepsArray(
        f"{len(species)}x0e",
        jax.nn.one_hot(indices, len(species), dtype=graph.nodes["positions"].dtype),
    )
    return indices, e3nn.flax.Linear(f"{num_scalars}x0e", name=name)(one_hot)


def radial_convolution(
    features: e3nn.IrrepsArray,
    harmonics: e3nn.IrrepsArray,
    radial: jax.Array,
    graph: GraphsTuple,
    irreps_out: str,
    radial_mlp: Sequence[int],
    name: str,
) -> e3nn.IrrepsArray:
    """`gnkit.atoms.equivariant.convolution` with its path weights from a radial MLP (`name`).

    The MLP (SiLU between its `radial_mlp` hidden layers, no biases, e3nn-jax's
    `MultiLayerPerceptron`) maps each edge's radial features to one weight per tensor-product
    path. Jittable inside a compact method.

    Args:
      features: `[n_atoms, irreps_in]`, the senders' features.
      harmonics: `[n_edge, irreps_sh]`, the edges' spherical harmonics.
      radial: `[n_edge, num_basis]`, the edges' radial features.
      graph: the structure graph (its senders and receivers).
      irreps_out: the irreps kept from the products.
      radial_mlp: the MLP's hidden widths.
      name: the MLP's name.

    Returns:
      `[n_atoms, message_irreps]`, the summed messages into each atom.
    """
    paths = message_products(features.irreps, harmonics.irreps, irreps_out)
    path_weights = e3nn.flax.MultiLayerPerceptron(
        (*radial_mlp, paths.num_irreps), jax.nn.silu, output_activation=False, name=name,
    )(radial)
    return convolution(features, harmonics, path_weights, graph.senders, graph.receivers,
                       irreps_out)
