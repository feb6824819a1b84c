"""The encode-process-decode architecture of graph_nets' demos (Battaglia et al. 2018, Fig. 6c).

An encoder embeds each field on its own; a core graph network, its parameters shared across
steps, is applied `num_processing_steps` times to the concatenation `[encoded, previous latent]`;
after every step a decoder and a linear output layer read the latent graph out, so a loss can be
put on every step. Jittable.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.blocks import Aggregator
from gnkit.graph import GraphsTuple, require
from gnkit.nn.graph_network import GraphIndependent, GraphNetwork


class EncodeProcessDecode(nn.Module):
    """graph_nets' EncodeProcessDecode: encoder, core applied N times, decoder after each step.

    Every MLP has `num_layers` layers of `latent_size` units, ReLU after each (also the last).
    The encoder and decoder are `GraphIndependent`; the core is a `GraphNetwork` (edge, node and
    global update) whose input at each step is `[encoded, latent]`, so its inputs are
    `2 * latent_size` wide. The output layer is a Dense per field.

    Call with a graph with nodes `[N, F_v]`, edges `[E, F_e]`, globals `[G, F_u]`, senders and
    receivers, and a static `num_processing_steps`. Returns a list of `num_processing_steps`
    graphs (one per step) with nodes `[N, node_output_size]`, edges `[E, edge_output_size]`,
    globals `[G, global_output_size]`. The steps run under `jax.lax.scan` (`nn.scan`: one
    compiled step for any number of steps); `scan=False` unrolls them in Python, with the same
    parameters and results. Jittable.

    Attributes:
      edge_output_size: width of the output edges; None gives `edges=None` in the outputs.
      node_output_size: width of the output nodes; None gives `nodes=None`.
      global_output_size: width of the output globals; None gives `globals=None`.
      latent_size: units of every MLP layer, and the latent graph's width.
      num_layers: layers of every MLP.
      layer_norm: LayerNorm after every MLP (the demos' `make_mlp_model`).
      aggregator: the core's reduction of edges per node and of edges and nodes per graph.
      factorised: the core's first layers are `FactorisedDense` (default); False concatenates.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).

    Example:
        On a three-node cycle with node `[3, 4]`, edge `[3, 2]` and global `[1, 5]` features:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.ones((3, 2)), globals=jnp.ones((1, 5)))
        >>> model = gn.nn.EncodeProcessDecode(edge_output_size=1, node_output_size=2,
        ...                                   global_output_size=3, latent_size=8, num_layers=1)
        >>> params = model.init(jax.random.key(0), graph, num_processing_steps=2)
        >>> outputs = model.apply(params, graph, num_processing_steps=2)
        >>> len(outputs), outputs[-1].nodes.shape, outputs[-1].globals.shape
        (2, (3, 2), (1, 3))
    """

    edge_output_size: int | None = None
    node_output_size: int | None = None
    global_output_size: int | None = None
    latent_size: int = 16
    num_layers: int = 2
    layer_norm: bool = True
    aggregator: Aggregator = "sum"
    factorised: bool = True
    indices_are_sorted: bool = False

    def setup(self):
        hidden = (self.latent_size,) * self.num_layers
        mlp = dict(activate_final=True, layer_norm=self.layer_norm)
        self.encoder = GraphIndependent(hidden, hidden, hidden, **mlp)
        self.core = GraphNetwork(
            hidden,
            hidden,
            hidden,
            aggregator=self.aggregator,
            global_aggregator=self.aggregator,
            factorised=self.factorised,
            indices_are_sorted=self.indices_are_sorted,
            **mlp,
        )
        sizes = (self.edge_output_size, self.node_output_size, self.global_output_size)
        self.decoder = GraphIndependent(*(None if s is None else hidden for s in sizes), **mlp)
        self.output_transform = GraphIndependent(*(None if s is None else (s,) for s in sizes))

    def __call__(
        self, graph: GraphsTuple, num_processing_steps: int, scan: bool = True
    ) -> list[GraphsTuple]:
        require(
            graph, "nodes", "edges", "globals", "senders", "receivers", block="EncodeProcessDecode"
        )
        encoded = self.encoder(graph)
        latent = (encoded.nodes, encoded.edges, encoded.globals)
        if scan:
            scanned = nn.scan(
                _step_fn,
                variable_broadcast="params",
                split_rngs={"params": False},
                in_axes=nn.broadcast,
                length=num_processing_steps,
            )
            _, stacked = scanned(self, latent, encoded)
            per_step = [
                jax.tree_util.tree_map(lambda x, i=i: x[i], stacked)
                for i in range(num_processing_steps)
            ]
        else:
            per_step = []
            for _ in range(num_processing_steps):
                latent, fields = self._step(latent, encoded)
                per_step.append(fields)
        return [graph._replace(nodes=n, edges=e, globals=u) for n, e, u in per_step]

    def _step(self, latent, encoded: GraphsTuple):
        """One core step on `[encoded, latent]`; returns the new latent and the decoded fields."""
        nodes, edges, globals_ = latent
        core_input = encoded._replace(
            nodes=jnp.concatenate([encoded.nodes, nodes], axis=-1),
            edges=jnp.concatenate([encoded.edges, edges], axis=-1),
            globals=jnp.concatenate([encoded.globals, globals_], axis=-1),
        )
        updated = self.core(core_input)
        decoded = self.output_transform(self.decoder(updated))
        fields = (
            None if self.node_output_size is None else decoded.nodes,
            None if self.edge_output_size is None else decoded.edges,
            None if self.global_output_size is None else decoded.globals,
        )
        return (updated.nodes, updated.edges, updated.globals), fields


def _step_fn(module: EncodeProcessDecode, latent, encoded):
    return module._step(latent, encoded)
