"""Flax linen interatomic potentials: `graph -> [n_atoms]` per-atom energies.

Each takes the atomic numbers it knows (`species`), a `cutoff` and its sizes; energies, forces and
stress come from `gnkit.atoms.potential.energy_forces_stress`. NNX twins are in `gnkit.atoms.nnx`.
"""

from gnkit.atoms.nn.mace import MACE
from gnkit.atoms.nn.nequip import NequIP
from gnkit.atoms.nn.painn import PaiNN
from gnkit.atoms.nn.schnet import SchNet

__all__ = ["MACE", "NequIP", "PaiNN", "SchNet"]
