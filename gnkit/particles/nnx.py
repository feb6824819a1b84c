"""`GNS` and `SEGNN`, the Flax NNX twins of `gnkit.particles.gns.GNS` and
`gnkit.particles.segnn.SEGNN`.

Each is a `gnkit.nnx.Twin`: its parameters are the linen module's, laid out the same way, and its
`__call__` runs the linen module's `apply` on them, so both APIs give the same accelerations
and `gnkit.nnx.from_linen` / `to_linen_variables` move weights either way. Jittable (under
`nnx.jit`, or split with `nnx.split` and merged inside `jax.jit`).
"""

from __future__ import annotations

from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nnx.twin import Twin, sample_graph
from gnkit.particles import gns, segnn


class GNS(Twin, linen=gns.GNS):
    """The GNS simulator (`gnkit.particles.gns.GNS`) for NNX.

    Args:
      in_node_features: node width of the input graph (`history * dim`, plus `dim` with an
        external force).
      in_edge_features: edge width (`dim + 1`).
      rngs: initialises the parameters.
      **options: the linen module's attributes (`dim`, `latent_size`, `num_layers`,
        `num_message_passing_steps`).
    """

    def __init__(self, *, in_node_features: int, in_edge_features: int, rngs: nnx.Rngs,
                 **options):
        sample = sample_graph(nodes=in_node_features, edges=in_edge_features, globals_=1)
        self._build(gns.GNS, options, rngs, (sample,))

    def __call__(self, graph: GraphsTuple):
        """Normalised accelerations `[n_node, dim]` of a graph from `particle_graph` or
        `device_particle_graph`."""
        return self._apply(graph)


class SEGNN(Twin, linen=segnn.SEGNN):
    """The steerable simulator (`gnkit.particles.segnn.SEGNN`) for NNX.

    Args:
      rngs: initialises the parameters.
      **options: the linen module's attributes (`dim`, `history`, `external_force`,
        `scalar_units`, `lmax_hidden`, `lmax_attributes`, `num_message_passing_steps`,
        `blocks`, `velocity_aggregate`); the input widths follow from them.
    """

    def __init__(self, *, rngs: nnx.Rngs, **options):
        module = segnn.SEGNN(**options)
        nodes = (module.history + module.external_force) * module.dim
        sample = sample_graph(nodes=nodes, edges=module.dim + 1, globals_=1)
        self._build(segnn.SEGNN, options, rngs, (sample,))

    def __call__(self, graph: GraphsTuple):
        """Normalised accelerations `[n_node, dim]` of a graph from `particle_graph` or
        `device_particle_graph`."""
        return self._apply(graph)
