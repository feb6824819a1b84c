"""Flax NNX interatomic potentials: the twins of `gnkit.atoms.nn`'s models.

Each has its linen twin's name, parameters (the linen `params` layout, as `nnx.Param`) and
numbers; `gnkit.nnx.from_linen` and `gnkit.nnx.to_linen_variables` move weights between the two.
"""

from gnkit.atoms.nnx.mace import MACE
from gnkit.atoms.nnx.nequip import NequIP
from gnkit.atoms.nnx.painn import PaiNN
from gnkit.atoms.nnx.schnet import SchNet

__all__ = ["MACE", "NequIP", "PaiNN", "SchNet"]
