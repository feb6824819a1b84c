"""`RecurrentRelationalNetwork`, the NNX twin of `gnkit.nn.RecurrentRelationalNetwork`.

Besides the whole network (`__call__`, the steps under `jax.lax.scan` with the linen twin's remat
settings), the twin exposes its step, so NNX code can drive the loop itself:

    carry, context = model.start(graph)
    step = nnx.remat(lambda model, carry, context: model.step(carry, context))
    scanned = nnx.scan(step, in_axes=(nnx.StateAxes({...: None}), nnx.Carry, None),
                       out_axes=(nnx.Carry, 0), length=num_steps)
    _, outputs = scanned(model, carry, context)  # == model(graph, num_steps)
"""

from __future__ import annotations

import jax
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import rrn
from gnkit.nnx.twin import Twin, sample_graph


def _start(module: rrn.RecurrentRelationalNetwork, graph):
    return module._start(graph)


def _step(module: rrn.RecurrentRelationalNetwork, carry, context):
    return module._step(carry, context)


class RecurrentRelationalNetwork(Twin, linen=rrn.RecurrentRelationalNetwork):
    """A recurrent relational network over the nodes of a `GraphsTuple`
    (`gnkit.nn.RecurrentRelationalNetwork`, same parameters and numbers).

    `__call__(graph, num_steps, scan=True)` returns the readout at every step,
    `[num_steps, N, readout_features[-1]]`. Jittable (`num_steps` static).

    Args:
      in_features: the node width `F`.
      in_edge_features: the edge width (None: no edge features).
      rngs: initialises the parameters.
      **options: the linen twin's attributes (`encoder_features`, `cell`, `remat`, ...).
    """

    def __init__(
        self,
        in_features: int,
        *,
        in_edge_features: int | None = None,
        rngs: nnx.Rngs,
        **options,
    ):
        sample = sample_graph(nodes=in_features, edges=in_edge_features)
        self._build(rrn.RecurrentRelationalNetwork, options, rngs, (sample, 1))

    def __call__(self, graph: GraphsTuple, num_steps: int, scan: bool = True) -> jax.Array:
        """The readout after each of `num_steps` steps: `[num_steps, N, C]`."""
        return self._apply(graph, num_steps, scan)

    def start(self, graph: GraphsTuple):
        """`(carry, context)`: the initial recurrent state (an LSTM's `(c, h)`, else `h`,
        `[N, H]` each) and the loop-invariant terms of `graph` that every step reads."""
        return self._apply(graph, method=_start)

    def step(self, carry, context):
        """One message-passing step: `(new carry, readout [N, C])`."""
        return self._apply(carry, context, method=_step)
