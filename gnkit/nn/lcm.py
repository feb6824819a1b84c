"""Learnable commutative monoid aggregation (Ong and Velickovic 2022), a Flax linen module.

The functional tree (`gnkit.aggregators.tree_reduce`) holds no parameters; this module gives it a
learned commutative operator and is called like any gnkit aggregator.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.aggregators import tree_reduce
from gnkit.nn.input_width import check_input_width


class LCMAggregation(nn.Module):
    r"""Learnable commutative monoid aggregation (Ong and Velickovic 2022).

    :math:`\mathrm{op}(a, b) = \tfrac12 (\mathrm{GRU}(a, b) + \mathrm{GRU}(b, a))` (input,
    hidden) is commutative by construction; `tree_reduce` applies it over each segment in a tree
    of depth :math:`\lceil \log_2 \mathrm{max\_degree} \rceil`. Called as an `Aggregator`:
    `[E, F_in]` -> `[S, features]`, jittable.

    Attributes:
      features: output size (PyG's `out_channels`), also the GRU's hidden size.
      max_degree: static bound on the number of elements of a segment (PyG's `max_num_elements`);
        elements past it are dropped.
      project: apply `activation(Dense(features))` to the inputs first, as PyG's `project=True`.
        Without it the input size must equal `features`.
      activation: the projection's activation (PyG: ReLU).

    Differences from PyTorch Geometric's `LCMAggregation`:
      - Padding: PyG pads every segment with zero vectors to the batch's largest degree and folds
        those zeros in through the GRU, so a node's output changes with the other nodes' degrees
        (a one-element segment does not give its element back). Here missing elements are carried
        up unchanged: the result depends only on the segment's own elements.
      - Empty segments give zeros (PyG: the GRU tree over zero vectors).
      - Unsorted ids are accepted (a stable argsort keeps each segment's element order); PyG
        requires sorted ids.
      - Flax's `GRUCell` has one bias per reset/update gate where PyTorch's has two that add up:
        the same functions, but weights map over by summing those biases.

    As in PyG, the tree follows the elements' order, so the whole aggregation is not permutation
    invariant beyond two elements (only each combine step is).

    Example:
        Five rows `[5, 4]` aggregated into two segments:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> aggregate = gn.nn.LCMAggregation(features=4, max_degree=4)
        >>> data, segment_ids = jnp.ones((5, 4)), jnp.array([0, 0, 1, 1, 1])
        >>> params = aggregate.init(jax.random.key(0), data, segment_ids, 2)
        >>> aggregate.apply(params, data, segment_ids, 2).shape
        (2, 4)
    """

    features: int
    max_degree: int
    project: bool = True
    activation: Callable[[jax.Array], jax.Array] = nn.relu

    def setup(self):
        self.projection = nn.Dense(self.features) if self.project else None
        self.gru = nn.GRUCell(self.features)

    def combine(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """The commutative operator on `[..., features]` arrays: both GRU orders, averaged."""
        inputs = jnp.stack([a, b])
        hidden = jnp.stack([b, a])
        updated, _ = self.gru(hidden, inputs)
        return (updated[0] + updated[1]) / 2

    def __call__(self, data, segment_ids, num_segments, indices_are_sorted=False):
        if self.project:
            check_input_width(self, ("projection", "kernel"), data.shape[-1],
                              what="input features", found_in="input")
            data = self.activation(self.projection(data))
        elif data.shape[-1] != self.features:
            raise ValueError(
                f"LCMAggregation(project=False) needs inputs of size features={self.features}, "
                f"got {data.shape[-1]}"
            )
        return tree_reduce(
            self.combine, data, segment_ids, num_segments, self.max_degree, indices_are_sorted
        )
