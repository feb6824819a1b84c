"""The potentials demo's models: SchNet, PaiNN, NequIP or MACE of `gnkit.atoms.nn` at the
config's sizes, and their energies, forces and stress through the data set's scale / shift."""

from __future__ import annotations

import flax.linen as nn
import jax

from gnkit.demos.potentials.config import PotentialsConfig
from gnkit.demos.potentials.data import PotentialData
from gnkit.graph import GraphsTuple


def build_model(name: str, config: PotentialsConfig, data: PotentialData) -> nn.Module:
    """Model `name` (`schnet`, `painn`, `nequip`, `mace`) for the data's species, at the
    config's sizes and cutoff; NequIP and MACE normalise by the training set's mean neighbour
    count, and MACE scales its radial features from the training set's mean shortest edge.
    Every other size is the `gnkit.atoms.nn` default (the papers')."""
    from gnkit.atoms.nn import MACE, NequIP, PaiNN, SchNet  # the atoms extra, on first use

    species, cutoff = data.species, config.cutoff
    if name == "schnet":
        return SchNet(species, cutoff, features=config.schnet_features,
                      num_filters=config.schnet_features,
                      num_interactions=config.schnet_interactions)
    if name == "painn":
        return PaiNN(species, cutoff, features=config.painn_features,
                     num_interactions=config.painn_interactions)
    if name == "nequip":
        width = config.nequip_features
        irreps = " + ".join(
            f"{width}x{degree}{parity}" for degree in range(config.nequip_max_l + 1)
            for parity in "eo"
        )
        return NequIP(species, cutoff, num_layers=config.nequip_layers, hidden_irreps=irreps,
                      max_l=config.nequip_max_l, avg_num_neighbors=data.avg_num_neighbors)
    if name == "mace":
        width = config.mace_features
        return MACE(species, cutoff, num_interactions=config.mace_interactions,
                    hidden_irreps=f"{width}x0e + {width}x1o", max_l=config.mace_max_l,
                    correlation=config.mace_correlation,
                    avg_num_neighbors=data.avg_num_neighbors,
                    mean_min_distance=data.mean_min_distance)
    raise ValueError(f"unknown model {name!r}")


def scale_shift(data: PotentialData):
    """Outputs to per-atom energies relative to the E0s: `scale x + shift` (the E0s are added
    on the host, in float64), a `gnkit.atoms.potential.ScaleShift`."""
    from gnkit.atoms.potential import ScaleShift

    return ScaleShift(data.scale, data.shift, data.species, (0.0,) * len(data.species))


def make_predict(model: nn.Module, data: PotentialData):
    """`predict(params, graph) -> {"energy" [G], "forces" [N, 3], ("stress" [G, 3, 3])}`:
    relative energies (eV), forces (eV/Å) and, on EMT, stress (eV/Å^3). Jittable (not jitted)."""
    from gnkit.atoms.potential import energy_forces_stress, structure_energies

    outputs_to_energies = scale_shift(data)

    def predict(params, graph: GraphsTuple) -> dict[str, jax.Array]:
        def energy_fn(graph: GraphsTuple) -> jax.Array:
            outputs = model.apply(params, graph)
            energies = outputs_to_energies(outputs, graph.nodes["atomic_numbers"])
            return structure_energies(energies, graph)

        return energy_forces_stress(energy_fn, graph, stress=data.stress)

    return predict
