"""`MLP`, the NNX twin of `gnkit.nn.MLP`."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.nn import mlp
from gnkit.nnx.training_twin import TrainingTwin


class MLP(TrainingTwin, linen=mlp.MLP):
    """Dense layers with an activation between them, optional LayerNorm and dropout
    (`gnkit.nn.MLP`, same parameters and numbers).

    Args:
      in_features: the input width `F_in`.
      features: output sizes of the layers, e.g. `(96, 96, 9)`.
      rngs: initialises the parameters; with `dropout_rate > 0` a dropout stream is forked from
        it (`rngs.dropout.fork()`).
      **options: `gnkit.nn.MLP`'s other attributes (`activation`, `activate_final`,
        `layer_norm`, `dropout_rate`).

    Input `[..., F_in]`, output `[..., features[-1]]`. Jittable under `nnx.jit`. Dropout is on
    in training mode (`model.train()`, or `deterministic=False` at the call).
    """

    def __init__(self, in_features: int, features: Sequence[int], *, rngs: nnx.Rngs, **options):
        self._build(mlp.MLP, dict(features=features, **options), rngs,
                    (jnp.zeros((1, in_features)),),
                    dropout=options.get("dropout_rate", 0.0) > 0.0)

    def __call__(
        self,
        inputs: jax.Array,
        deterministic: bool | None = None,
        *,
        rngs: nnx.Rngs | jax.Array | None = None,
    ) -> jax.Array:
        """`[..., F_in] -> [..., features[-1]]`; dropout is active with `deterministic=False`
        (default: the module's mode), its key drawn from `rngs` (an `nnx.Rngs`, or a key used
        as is) or the stream kept at construction."""
        training = self._training(deterministic)
        return self._apply(inputs, not training, training=training, rngs=rngs)
