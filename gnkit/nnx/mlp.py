"""`MLP`, the NNX twin of `gnkit.nn.MLP`."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.nn import mlp
from gnkit.nnx.twin import Twin


class MLP(Twin, linen=mlp.MLP):
    """Dense layers with an activation between them, optional LayerNorm and dropout
    (`gnkit.nn.MLP`, same parameters and numbers).

    Args:
      in_features: the input width `F_in`.
      features: output sizes of the layers, e.g. `(96, 96, 9)`.
      rngs: initialises the parameters; with `dropout_rate > 0` it is kept as the dropout
        stream (`rngs.dropout()`).
      **options: `gnkit.nn.MLP`'s other attributes (`activation`, `activate_final`,
        `layer_norm`, `dropout_rate`).

    Input `[..., F_in]`, output `[..., features[-1]]`. Jittable under `nnx.jit`.
    """

    def __init__(self, in_features: int, features: Sequence[int], *, rngs: nnx.Rngs, **options):
        self._build(mlp.MLP, dict(features=features, **options), rngs,
                    (jnp.zeros((1, in_features)),))
        self.rngs = rngs if self.linen_module.dropout_rate > 0.0 else None

    def __call__(
        self, inputs: jax.Array, deterministic: bool = True, *, rngs: nnx.Rngs | None = None
    ) -> jax.Array:
        """`[..., F_in] -> [..., features[-1]]`; dropout is active with `deterministic=False`,
        its key drawn from `rngs` (or the stream kept at construction)."""
        keys = None
        if not deterministic and self.linen_module.dropout_rate > 0.0:
            stream = rngs if rngs is not None else getattr(self, "rngs", None)
            if stream is None:
                raise ValueError("MLP: dropout with deterministic=False needs rngs")
            keys = {"dropout": stream.dropout()}
        return self._apply(inputs, deterministic, rngs=keys)
