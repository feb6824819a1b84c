"""A multi-layer perceptron, the update function most graph networks use."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax

from gnkit.nn.input_width import check_input_width


class MLP(nn.Module):
    """Dense layers with an activation between them, optional LayerNorm and dropout.

    Attributes:
      features: output sizes of the layers, e.g. `(96, 96, 9)`.
      activation: applied after every layer but the last (and after the last if
        `activate_final`).
      activate_final: whether the last layer is followed by the activation.
      layer_norm: apply LayerNorm to the output (graph_nets' demo MLPs do).
      dropout_rate: dropout after each hidden activation; active only when
        `deterministic=False` is passed and a `'dropout'` rng is given.

    Input `[..., F_in]`, output `[..., features[-1]]`; an input of another width than the one
    the parameters were built on raises an `InputWidthError`. Jittable.

    Example:
        Two rows of four features:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> model = gn.nn.MLP(features=(16, 3))
        >>> params = model.init(jax.random.key(0), jnp.ones((2, 4)))
        >>> model.apply(params, jnp.ones((2, 4))).shape
        (2, 3)
    """

    features: Sequence[int]
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    activate_final: bool = False
    layer_norm: bool = False
    dropout_rate: float = 0.0

    @nn.compact
    def __call__(self, inputs: jax.Array, deterministic: bool = True) -> jax.Array:
        check_input_width(self, ("dense_0", "kernel"), inputs.shape[-1],
                          what="input features", found_in="input")
        hidden = inputs
        last = len(self.features) - 1
        for index, width in enumerate(self.features):
            hidden = nn.Dense(width, name=f"dense_{index}")(hidden)
            if index < last or self.activate_final:
                hidden = self.activation(hidden)
                if index < last and self.dropout_rate > 0.0:
                    hidden = nn.Dropout(self.dropout_rate)(hidden, deterministic=deterministic)
        if self.layer_norm:
            hidden = nn.LayerNorm()(hidden)
        return hidden
