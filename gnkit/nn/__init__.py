"""Flax linen modules built on gnkit's functional blocks."""

from gnkit.nn.mlp import MLP

__all__ = ["MLP"]
