"""`LCMAggregation`, the NNX twin of `gnkit.nn.LCMAggregation`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from gnkit.nn import lcm
from gnkit.nnx.twin import Twin


def _combine(module: lcm.LCMAggregation, a, b):
    return module.combine(a, b)


class LCMAggregation(Twin, linen=lcm.LCMAggregation):
    """Learnable commutative monoid aggregation (`gnkit.nn.LCMAggregation`).

    Called as a gnkit aggregator, `[E, in_features] -> [S, features]`, so it can be
    passed as the `aggregator` of a `GraphNetwork` or a layer. Jittable.

    Args:
      in_features: the width of the aggregated rows (equal to `features` when `project=False`).
      features: the width of the result.
      max_degree: at least the largest segment size, as in `gnkit.aggregators.tree_reduce`.
      rngs: initialises the parameters.
      **options: the linen twin's other attributes (`project`, `activation`).
    """

    def __init__(
        self, in_features: int, features: int, max_degree: int, *, rngs: nnx.Rngs, **options
    ):
        sample = (jnp.zeros((1, in_features)), jnp.zeros((1,), jnp.int32), 1)
        self._build(lcm.LCMAggregation, dict(features=features, max_degree=max_degree, **options),
                    rngs, sample)

    def __call__(self, data, segment_ids, num_segments, indices_are_sorted=False) -> jax.Array:
        """`data` `[E, in_features]` reduced per segment: `[num_segments, features]`."""
        return self._apply(data, segment_ids, num_segments, indices_are_sorted)

    def combine(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """The commutative operator on `[..., features]` arrays."""
        return self._apply(a, b, method=_combine)
