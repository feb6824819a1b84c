"""Graph networks with learned MLP updates: `FactorisedDense`, `GraphNetwork`, `GraphIndependent`.

`GraphNetwork` runs the three stages of `gnkit.blocks.graph_network` (edge, node, global update;
Battaglia et al. 2018, Algorithm 1) with an MLP per stage. The first layer of each MLP sees the
concatenation of the stage's inputs, and most of those inputs are gathered from a smaller table:
an edge update reads its sender's and receiver's node rows and its graph's globals row. A Dense
layer over a concatenation is a sum of Dense layers over the pieces, and a Dense layer commutes
with a gather, so `FactorisedDense` projects each table once and gathers the projections:

    concat(e, v[senders], v[receivers], u[edge_graph]) @ W + b
      == e @ W_e + (v @ W_s)[senders] + (v @ W_r)[receivers] + (u @ W_u)[edge_graph] + b

with `W_e, W_s, W_r, W_u` the row blocks of `W`. That costs `O(N F H)` for the node tables instead
of `O(E F H)`, a large saving when `E >> N`. `factorised=False` computes the left-hand side with
the same parameters (one kernel, sliced into blocks), so the two are interchangeable.

When only the aggregated edges are needed (`GraphNetwork(edge_outputs=False)`), the edge MLP's
last layer, which is linear, moves after the aggregation, as in the recurrent relational network:

    sum_j (h_j @ W + b) == (sum_j h_j) @ W + deg * b
    mean_j (h_j @ W + b) == (mean_j h_j) @ W + b

(the mean's `b` is 0 for a node without edges, as the mean itself), so the last layer costs
`O(N H H)` instead of `O(E H H)` and the `[E, H]` per-edge outputs are never formed.

Everything is jittable; node, edge and global features are arrays `[N, F]`, `[E, F]`, `[G, F]`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from gnkit import aggregators
from gnkit.blocks import (
    Aggregator,
    aggregate_edges_to_globals,
    aggregate_nodes_to_globals,
    aggregate_received_edges,
    aggregate_sent_edges,
    graph_independent,
)
from gnkit.graph import GraphsTuple, edge_graph_index, node_graph_index, require
from gnkit.nn.input_width import check_input_width
from gnkit.nn.mlp import MLP

Initializer = Callable[..., jax.Array]
Part = tuple[jax.Array, jax.Array | None]
Reduction = Callable[[jax.Array], jax.Array]
_LINEAR_AGGREGATORS = (aggregators.sum, aggregators.mean)


def _gather(features: jax.Array, index: jax.Array | None) -> jax.Array:
    return features if index is None else jnp.take(features, index, axis=0)


@jax.custom_vjp
def _unrolled_matmul(rows: jax.Array, kernel: jax.Array) -> jax.Array:
    """`rows [M, K] @ kernel [K, F]` as `K` broadcast multiply-adds, which XLA fuses with the
    elementwise ops around it (a dot is never fused, so its `[M, F]` output would be written out).
    The gradients are plain matmuls."""
    return sum(rows[:, k, None] * kernel[k] for k in range(rows.shape[1]))


def _unrolled_matmul_fwd(rows, kernel):
    return _unrolled_matmul(rows, kernel), (rows, kernel)


def _unrolled_matmul_bwd(residuals, grad):
    rows, kernel = residuals
    return grad @ kernel.T, rows.T @ grad


_unrolled_matmul.defvjp(_unrolled_matmul_fwd, _unrolled_matmul_bwd)

# Row-aligned parts at most this wide are multiplied inside the fused gather-and-sum.
_UNROLLED_MAX_WIDTH = 16


class FactorisedDense(nn.Module):
    """A Dense layer over a concatenation of gathered inputs, computed piece by piece.

    Called with `parts`, a sequence of `(table [R_k, F_k], index [M] or None)` pairs, it returns
    `concat_k(table_k[index_k]) @ kernel + bias`, `[M, features]` (a None index means the table
    already has `M` rows), passed through `activation` if one is given. Factorised, each table is
    projected by its row block of `kernel` before the gather,
    `sum_k (table_k @ kernel_k)[index_k] + bias`; the two forms agree to float tolerance.

    In the factorised form the gathers, the sum, the bias and `activation` (a plain function)
    run under `jax.checkpoint`: the backward pass recomputes them from the `[R_k, features]`
    projections (elementwise work that XLA fuses into one loop) instead of keeping the gathered
    `[M, features]` arrays alive, and row-aligned parts at most 16 wide are multiplied inside
    that loop rather than by a separate matmul. Jittable.

    Attributes:
      features: output width.
      factorised: project each table before the gather (default) rather than concatenate the
        gathered inputs and multiply once; same parameters either way.
      use_bias: add `bias` `[features]`.
      kernel_init: initialiser of `kernel` `[sum_k F_k, features]`.
      bias_init: initialiser of `bias`.

    Example:
        Three edges' sender rows of a node table `[3, 4]` and their graph's row of a globals
        table `[1, 5]`:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> layer = gn.nn.FactorisedDense(features=8)
        >>> senders, edge_graph = jnp.array([0, 1, 2]), jnp.zeros(3, int)
        >>> parts = [(jnp.ones((3, 4)), senders), (jnp.ones((1, 5)), edge_graph)]
        >>> layer.apply(layer.init(jax.random.key(0), parts), parts).shape
        (3, 8)
    """

    features: int
    factorised: bool = True
    use_bias: bool = True
    kernel_init: Initializer = nn.initializers.lecun_normal()
    bias_init: Initializer = nn.initializers.zeros_init()

    @nn.compact
    def __call__(
        self,
        parts: Sequence[Part],
        activation: Callable[[jax.Array], jax.Array] | None = None,
    ) -> jax.Array:
        sizes = [table.shape[-1] for table, _ in parts]
        check_input_width(self, ("kernel",), sum(sizes), what="input features (all parts)",
                          argument="sum(in_features)", found_in="input")
        kernel = self.param("kernel", self.kernel_init, (sum(sizes), self.features))
        bias = self.param("bias", self.bias_init, (self.features,)) if self.use_bias else None
        if not self.factorised:
            gathered = [_gather(table, index) for table, index in parts]
            outputs = jnp.concatenate(gathered, axis=-1) @ kernel
            if bias is not None:
                outputs = outputs + bias
            return outputs if activation is None else activation(outputs)
        kernel_blocks = jnp.split(kernel, np.cumsum(sizes)[:-1], axis=0)
        projected, indices, unrolled = [], [], []
        for (table, index), block in zip(parts, kernel_blocks, strict=True):
            if index is None and table.shape[-1] <= _UNROLLED_MAX_WIDTH:
                unrolled.append((table, block))
            else:
                projected.append(table @ block)
                indices.append(index)

        def gather_and_sum(projected, unrolled, bias):
            terms = [_gather(table, index) for table, index in zip(projected, indices, strict=True)]
            terms += [_unrolled_matmul(table, block) for table, block in unrolled]
            outputs = sum(terms[1:], terms[0])
            if bias is not None:
                outputs = outputs + bias
            return outputs if activation is None else activation(outputs)

        return jax.checkpoint(gather_and_sum)(projected, unrolled, bias)


class _UpdateMLP(nn.Module):
    """`MLP` on the concatenated `parts`, its first layer a `FactorisedDense`.

    The parameters have `MLP`'s layout (`dense_0`, `dense_1`, ..., `LayerNorm_0`), with
    `dense_0`'s kernel over the concatenated input. Called with `reductions`, linear maps from
    rows `[M, H]` to `[S_k, H]` (segment sums or means), it returns one array per reduction,
    `reduce_k(h) @ W + reduce_k(ones [M, 1]) * b` with `h` the last layer's input and `W, b` its
    parameters: `reduce_k` of the per-row outputs, with the last layer applied after the
    reduction (valid without a final activation or LayerNorm; a one-layer MLP reduces its
    per-row outputs).
    """

    features: Sequence[int]
    activation: Callable[[jax.Array], jax.Array]
    activate_final: bool
    layer_norm: bool
    factorised: bool

    @nn.compact
    def __call__(
        self, parts: Sequence[Part], reductions: Sequence[Reduction] | None = None
    ) -> jax.Array | list[jax.Array]:
        last = len(self.features) - 1
        first_activation = None
        if (last > 0 or self.activate_final) and not isinstance(self.activation, nn.Module):
            first_activation = self.activation
        hidden = FactorisedDense(self.features[0], self.factorised, name="dense_0")(
            parts, first_activation
        )
        if reductions is not None and last == 0:
            return [reduce(hidden) for reduce in reductions]
        for index, width in enumerate(self.features):
            if index > 0:
                dense = nn.Dense(width, name=f"dense_{index}")
                if index == last and reductions is not None:
                    return [_reduce_then_dense(dense, reduce, hidden) for reduce in reductions]
                hidden = dense(hidden)
            activated = index == 0 and first_activation is not None
            if (index < last or self.activate_final) and not activated:
                hidden = self.activation(hidden)
        if self.layer_norm:
            hidden = nn.LayerNorm()(hidden)
        return hidden


def _reduce_then_dense(dense: nn.Dense, reduce: Reduction, rows: jax.Array) -> jax.Array:
    """`reduce(dense(rows))` for a linear `reduce`, computed as `dense(reduce(rows))` plus the
    bias times `reduce(ones) - 1` (`dense` adds the bias once)."""
    outputs = dense(reduce(rows))
    count = reduce(jnp.ones((rows.shape[0], 1), rows.dtype))
    return outputs + (count - 1.0) * dense.variables["params"]["bias"]


class GraphNetwork(nn.Module):
    """A graph network with an MLP per update and a factorised first layer.

    Stages (each skipped when its features are None), with inputs in this order:
      - edges `[E, F_e'] = mlp_e(edges, sender nodes, receiver nodes, globals)`;
      - nodes `[N, F_v'] = mlp_v(nodes, received edges, [sent edges,] globals)`, edges reduced
        per node by `aggregator`;
      - globals `[G, F_u'] = mlp_u(edges, nodes, globals)`, reduced per graph by
        `global_aggregator`.

    Each stage sees the previous stages' outputs. Each MLP's first layer is a `FactorisedDense`
    (see the module docstring).

    `edge_outputs=False` is for when only the aggregated edges matter (messages, as in an
    interaction network): the edge MLP's last layer is applied after each aggregation instead of
    on every edge (see the module docstring), which removes a matmul and several `[E, F]` passes
    from the step. The node and global outputs are the same as with `edge_outputs=True`, with
    the same parameters.

    Returns the graph with the updated fields. Jittable.

    Attributes:
      edge_features: the edge MLP's layer widths (`F_e'` last); None skips the edge stage.
      node_features: the node MLP's layer widths (`F_v'` last); None skips the node stage.
      global_features: the global MLP's layer widths (`F_u'` last); None (default) skips the
        global stage.
      activation: between the MLPs' layers (and after the last if `activate_final`).
      activate_final: apply `activation` after each MLP's last layer too.
      layer_norm: LayerNorm after each MLP.
      aggregator: reduces edges per node (a name or any `gnkit.aggregators` callable, e.g. an
        `LCMAggregation` module).
      global_aggregator: reduces edges and nodes per graph.
      use_sent_edges: also give the node MLP each node's reduced outgoing edges.
      use_globals: give every MLP the globals; False leaves them out of every input.
      factorised: the MLPs' first layer is a `FactorisedDense` (default); False concatenates the
        inputs instead, with the same parameters.
      indices_are_sorted: declares `graph.receivers` sorted (a faster scatter).
      edge_outputs: False applies the edge MLP's last layer after each aggregation instead of on
        every edge and returns `edges=None`; needs linear aggregations (`'sum'` or `'mean'`),
        `activate_final=False`, `layer_norm=False` and a node or global stage (else `ValueError`).

    Example:
        On a three-node cycle with node `[3, 4]`, edge `[3, 2]` and global `[1, 5]` features:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.ones((3, 2)), globals=jnp.ones((1, 5)))
        >>> model = gn.nn.GraphNetwork(edge_features=(8,), node_features=(8,), global_features=(6,))
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.edges.shape, out.nodes.shape, out.globals.shape
        ((3, 8), (3, 8), (1, 6))
    """

    edge_features: Sequence[int] | None
    node_features: Sequence[int] | None
    global_features: Sequence[int] | None = None
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    activate_final: bool = False
    layer_norm: bool = False
    aggregator: Aggregator = "sum"
    global_aggregator: Aggregator = "sum"
    use_sent_edges: bool = False
    use_globals: bool = True
    factorised: bool = True
    indices_are_sorted: bool = False
    edge_outputs: bool = True

    def _mlp(self, features: Sequence[int], name: str) -> _UpdateMLP:
        return _UpdateMLP(
            tuple(features),
            self.activation,
            self.activate_final,
            self.layer_norm,
            self.factorised,
            name=name,
        )

    def _check_edge_outputs(self) -> None:
        """Raise a `ValueError` if `edge_outputs=False` cannot give the default path's numbers."""
        problem = None
        if self.edge_features is None:
            problem = "there is no edge update (edge_features is None)"
        elif self.node_features is None and self.global_features is None:
            problem = "no node or global update aggregates the edges"
        elif self.activate_final or self.layer_norm:
            problem = "the edge MLP's last layer is not linear (activate_final or layer_norm)"
        else:
            used = []
            if self.node_features is not None:
                used.append(("aggregator", self.aggregator))
            if self.global_features is not None:
                used.append(("global_aggregator", self.global_aggregator))
            for name, aggregator in used:
                if aggregators.get_aggregator(aggregator) not in _LINEAR_AGGREGATORS:
                    problem = (
                        f"{name}={aggregator!r} does not commute with a linear layer "
                        "(only 'sum' and 'mean' do)"
                    )
        if problem is not None:
            raise ValueError(
                "GraphNetwork(edge_outputs=False) applies the edge MLP's last layer after "
                f"aggregating the edges, but {problem}. Use edge_outputs=True."
            )

    def _edge_reductions(self, graph: GraphsTuple) -> dict[str, Reduction]:
        """The edge aggregations the node and global stages read, as functions of `[E, H]`."""
        reductions = {}
        if self.node_features is not None:
            reductions["received"] = lambda edges: aggregate_received_edges(
                graph._replace(edges=edges),
                self.aggregator,
                indices_are_sorted=self.indices_are_sorted,
            )
            if self.use_sent_edges:
                require(graph, "senders", block="GraphNetwork")
                reductions["sent"] = lambda edges: aggregate_sent_edges(
                    graph._replace(edges=edges), self.aggregator
                )
        if self.global_features is not None:
            reductions["edges_to_globals"] = lambda edges: aggregate_edges_to_globals(
                graph._replace(edges=edges), self.global_aggregator
            )
        return reductions

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        if not self.edge_outputs:
            self._check_edge_outputs()
        with_globals = ("globals",) if self.use_globals else ()
        reduced = None
        if self.edge_features is not None:
            require(
                graph, "nodes", "edges", "senders", "receivers", *with_globals, block="GraphNetwork"
            )
            parts = [
                (graph.edges, None),
                (graph.nodes, graph.senders),
                (graph.nodes, graph.receivers),
            ]
            if self.use_globals:
                parts.append((graph.globals, edge_graph_index(graph)))
            edge_mlp = self._mlp(self.edge_features, "edge_update")
            if self.edge_outputs:
                graph = graph._replace(edges=edge_mlp(parts))
            else:
                reductions = self._edge_reductions(graph)
                aggregated = edge_mlp(parts, tuple(reductions.values()))
                reduced = dict(zip(reductions, aggregated, strict=True))
                graph = graph._replace(edges=None)
        if self.node_features is not None:
            if reduced is None:
                require(graph, "nodes", "edges", "receivers", *with_globals, block="GraphNetwork")
                received = aggregate_received_edges(
                    graph, self.aggregator, indices_are_sorted=self.indices_are_sorted
                )
                sent = None
                if self.use_sent_edges:
                    require(graph, "senders", block="GraphNetwork")
                    sent = aggregate_sent_edges(graph, self.aggregator)
            else:
                require(graph, "nodes", *with_globals, block="GraphNetwork")
                received, sent = reduced["received"], reduced.get("sent")
            parts = [(graph.nodes, None), (received, None)]
            if sent is not None:
                parts.append((sent, None))
            if self.use_globals:
                parts.append((graph.globals, node_graph_index(graph)))
            graph = graph._replace(nodes=self._mlp(self.node_features, "node_update")(parts))
        if self.global_features is not None:
            if reduced is None:
                require(graph, "nodes", "edges", *with_globals, block="GraphNetwork")
                edges_to_globals = aggregate_edges_to_globals(graph, self.global_aggregator)
            else:
                require(graph, "nodes", *with_globals, block="GraphNetwork")
                edges_to_globals = reduced["edges_to_globals"]
            parts = [
                (edges_to_globals, None),
                (aggregate_nodes_to_globals(graph, self.global_aggregator), None),
            ]
            if self.use_globals:
                parts.append((graph.globals, None))
            graph = graph._replace(globals=self._mlp(self.global_features, "global_update")(parts))
        return graph


class GraphIndependent(nn.Module):
    """An MLP on each field on its own (`gnkit.blocks.graph_independent`), no message passing.

    `edges' = MLP(edge_features)(edges)`, and likewise for nodes and globals; a field whose
    features are None is left as is. The MLP settings are shared by the three. Jittable.

    Attributes:
      edge_features: the edge MLP's layer widths; None leaves the edges as they are.
      node_features: the node MLP's layer widths; None leaves the nodes as they are.
      global_features: the global MLP's layer widths; None leaves the globals as they are.
      activation: between the MLPs' layers (and after the last if `activate_final`).
      activate_final: apply `activation` after each MLP's last layer too.
      layer_norm: LayerNorm after each MLP.

    Example:
        On a three-node cycle with node `[3, 4]`, edge `[3, 2]` and global `[1, 5]` features:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)),
        ...                           edges=jnp.ones((3, 2)), globals=jnp.ones((1, 5)))
        >>> model = gn.nn.GraphIndependent(edge_features=(8,), node_features=(8,),
        ...                                global_features=(6,))
        >>> out = model.apply(model.init(jax.random.key(0), graph), graph)
        >>> out.edges.shape, out.nodes.shape, out.globals.shape
        ((3, 8), (3, 8), (1, 6))
    """

    edge_features: Sequence[int] | None = None
    node_features: Sequence[int] | None = None
    global_features: Sequence[int] | None = None
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    activate_final: bool = False
    layer_norm: bool = False

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        def mlp(features, name):
            if features is None:
                return None
            return MLP(
                tuple(features),
                activation=self.activation,
                activate_final=self.activate_final,
                layer_norm=self.layer_norm,
                name=name,
            )

        return graph_independent(
            mlp(self.edge_features, "edge_mlp"),
            mlp(self.node_features, "node_mlp"),
            mlp(self.global_features, "global_mlp"),
        )(graph)
