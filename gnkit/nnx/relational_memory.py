"""`RelationalMemory`, the NNX twin of `gnkit.nn.RelationalMemory`."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.nn import relational_memory
from gnkit.nnx.twin import Twin


class RelationalMemory(Twin, linen=relational_memory.RelationalMemory):
    """The relational memory core (`gnkit.nn.RelationalMemory`), a recurrent cell.

    `in_features` is the width of the flattened inputs; `**options` are the linen twin's
    attributes (`mem_slots`, `head_size`, `num_heads`, ...). Call as an NNX RNN cell:
    `cell(memory, inputs) -> (new_memory, output)`, `memory` `[B, S, M]` from
    `initialize_carry`, `inputs` `[B, ...]`, `output` `[B, S * M]`. Jittable.
    """

    def __init__(self, in_features: int, *, rngs: nnx.Rngs, **options):
        cell = relational_memory.RelationalMemory(**options)
        memory = relational_memory.initial_memory(1, cell.mem_slots, cell.mem_size)
        self._build(relational_memory.RelationalMemory, options, rngs,
                    (memory, jnp.zeros((1, in_features))))

    @property
    def mem_size(self) -> int:
        """The width `M` of a memory row."""
        return self.linen_module.mem_size

    def __call__(self, memory: jax.Array, inputs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One step: `(new_memory [B, S, M], output [B, S * M])`."""
        return self._apply(memory, inputs)

    def initialize_carry(
        self, input_shape: Sequence[int], rngs: nnx.Rngs | None = None
    ) -> jax.Array:
        """The identity initial memory `[B, S, M]` for inputs of shape `[B, ...]` (`rngs` is
        unused: the initial state is not random)."""
        del rngs
        return relational_memory.initial_memory(
            input_shape[0], self.linen_module.mem_slots, self.mem_size
        )
