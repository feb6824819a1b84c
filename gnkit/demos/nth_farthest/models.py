"""N-th farthest's two models: a recurrent core over the sequence, then an MLP to the labels.

- `rmc`: `nn.RelationalMemory` (the `paper` preset: 8 slots, 8 heads of size 32, 1 attention
  block, a 2-layer attention MLP, per-unit gates), as the paper;
- `lstm`: `flax.linen.OptimizedLSTMCell` under `flax.linen.RNN` (the `paper` preset: 512 units),
  a baseline of similar size (1.46 M parameters against the RMC model's 1.33 M).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from gnkit._varying import varying_like
from gnkit.demos.nth_farthest.config import NthFarthestConfig
from gnkit.nn import MLP, RelationalMemory
from gnkit.tasks import nth_farthest as task


class NthFarthestModel(nn.Module):
    """A recurrent core over the sequence, then an MLP from its final output to 8 logits.

    Called with inputs `[B, 8, 40]`; returns logits `[B, 8]`. Jittable.
    """

    core: nn.RNNCellBase
    mlp_features: Sequence[int]
    num_objects: int = task.NUM_OBJECTS

    @nn.compact
    def __call__(self, inputs: jax.Array) -> jax.Array:
        carry = self.core.initialize_carry(jax.random.key(0), inputs[:, 0].shape)
        carry = varying_like(carry, inputs)
        outputs = nn.RNN(self.core, name="rnn")(inputs, initial_carry=carry)
        head = MLP(tuple(self.mlp_features) + (self.num_objects,), name="mlp")
        return head(outputs[:, -1])


def build_model(name: str, config: NthFarthestConfig) -> NthFarthestModel:
    """The flax module of model `name` (`rmc` or `lstm`)."""
    if name == "rmc":
        core = RelationalMemory(
            mem_slots=config.mem_slots,
            head_size=config.head_size,
            num_heads=config.num_heads,
            num_blocks=config.num_blocks,
            attention_mlp_layers=config.attention_mlp_layers,
            gate_style=None if config.gate_style == "none" else config.gate_style,
        )
    else:
        core = nn.OptimizedLSTMCell(config.lstm_units)
    return NthFarthestModel(
        core=core, mlp_features=config.mlp_features, num_objects=config.num_objects
    )


def parameter_count(name: str, config: NthFarthestConfig) -> int:
    """How many parameters model `name` has."""
    model = build_model(name, config)
    shapes = jax.eval_shape(model.init, jax.random.key(0), dummy_inputs(config))
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(shapes))


def dummy_inputs(config: NthFarthestConfig) -> jax.Array:
    """Zero inputs of one sequence, `[1, K, F + 3K]`, for initialisation."""
    size = task.input_size(config.num_objects, config.num_features)
    return jnp.zeros((1, config.num_objects, size), jnp.float32)
