"""The benchmark workloads: the same model written with gnkit, with jraph and with PyG.

Each `make_*` function builds one workload at full or quick (tiny) size and returns a `Workload`:
contenders that each run one training step (forward, backward and an SGD update) when called,
plus each contender's forward output on the same weights, so the runner can check that the
libraries compute the same thing before timing them. The gnkit side is written the way a user
would write it with gnkit's public API and its fast-path options; the jraph side the way a jraph
user would (`jraph.GraphNetwork` with concatenated MLPs, `jraph.GAT`,
`jraph.GraphConvolution`); the PyG side with `MessagePassing`-style layers (`GATConv`,
`GCNConv`) when torch and torch_geometric are installed, once per torch intra-op thread count
asked for (`torch_threads`), on CUDA when torch sees a GPU. All contenders get the same weights
and the same receiver-sorted edges. Host only (builds jitted functions).

`WORKLOADS` names them for what they are: `graph-network`, `recurrent-graph-network`, `gat`,
`gcn-large-graph`, `relation-network`, `sudoku-rrn`, `segment-sum-probe`; the short names of
earlier runs (`w1`, `w1x8`, `w2`, `w3`, `w4`, `w5`, `probe`) stay as aliases. The harness
(`Contender`, `Workload`, the JAX and torch training steps) lives in `benchmarks/contenders.py`,
shared with `benchmarks/relational_workloads.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph
import numpy as np

from benchmarks import relational_workloads
from benchmarks.contenders import (  # the runner reaches the harness through here too
    Contender,
    Workload,
    cross_entropy,
    dense_pairs,
    have_pyg,
    jax_contender,
    to_torch,
    torch_device,
    torch_mlp,
    torch_variants,
)
from gnkit import attention, convolutions
from gnkit.blocks import aggregate_nodes_to_globals
from gnkit.graph import GraphsTuple, node_graph_index
from gnkit.nn.graph_network import GraphNetwork
from gnkit.nn.mlp import MLP
from gnkit.segment import safe_segment_sum
from gnkit.tasks import sudoku

__all__ = [
    "Contender",
    "GATModel",
    "GCNModel",
    "RecurrentGraphNetwork",
    "WORKLOADS",
    "Workload",
    "WorkloadTable",
    "have_pyg",
    "jax_contender",
    "large_graph",
    "make_gat",
    "make_gcn",
    "make_graph_network",
    "make_recurrent_graph_network",
    "make_segment_probe",
    "molecule_graph",
    "sudoku_graph",
    "torch_device",
    "torch_variants",
]


def _mean_square(output, batch):
    del batch
    return jnp.mean(output**2)


def _squared_error(output, batch):
    return jnp.mean((output - batch[1]) ** 2)


def _mlp_apply(layers, x):
    """A plain MLP from `[(kernel, bias), ...]`, ReLU between layers."""
    for index, (kernel, bias) in enumerate(layers):
        x = x @ kernel + bias
        if index < len(layers) - 1:
            x = jax.nn.relu(x)
    return x


# ----------------------------------------------------------------------------- W1: Sudoku GN


def sudoku_graph(num_puzzles: int, node_size: int, edge_size: int, seed: int = 0) -> GraphsTuple:
    """`num_puzzles` Sudoku constraint graphs (81 nodes, 1,620 receiver-sorted edges each)."""
    graph = sudoku.batch_graph(num_puzzles)
    rng = np.random.default_rng(seed)
    n_node, n_edge = int(np.sum(graph.n_node)), int(np.sum(graph.n_edge))
    return GraphsTuple(
        nodes=jnp.asarray(rng.normal(size=(n_node, node_size)), jnp.float32),
        edges=jnp.asarray(rng.normal(size=(n_edge, edge_size)), jnp.float32),
        receivers=jnp.asarray(graph.receivers, jnp.int32),
        senders=jnp.asarray(graph.senders, jnp.int32),
        globals=None,
        n_node=jnp.asarray(graph.n_node, jnp.int32),
        n_edge=jnp.asarray(graph.n_edge, jnp.int32),
    )


def _gn_module(hidden: int, **options) -> GraphNetwork:
    return GraphNetwork(
        edge_features=(hidden, hidden), node_features=(hidden, hidden), use_globals=False, **options
    )


def _gn_layers(params: dict) -> tuple[list, list]:
    """The edge and node MLPs of a gnkit `GraphNetwork`'s params as `(kernel, bias)` lists."""

    def layers(name):
        mlp = params[name]
        return dense_pairs(mlp, *sorted(key for key in mlp if key.startswith("dense_")))

    return layers("edge_update"), layers("node_update")


def _jraph_gn_step(edge_layers, node_layers):
    """One jraph GraphNetwork step as a jraph user writes it: MLPs on concatenated inputs."""

    def update_edge_fn(edges, sent, received, globals_):
        del globals_
        return _mlp_apply(edge_layers, jnp.concatenate([edges, sent, received], axis=-1))

    def update_node_fn(nodes, sent, received, globals_):
        del sent, globals_
        return _mlp_apply(node_layers, jnp.concatenate([nodes, received], axis=-1))

    return jraph.GraphNetwork(update_edge_fn, update_node_fn)


def _torch_gn(edge_layers, node_layers):
    import torch
    from torch_geometric.utils import scatter

    class TorchGraphNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.edge_mlp = torch_mlp(edge_layers)
            self.node_mlp = torch_mlp(node_layers)

        def forward(self, nodes, edges, senders, receivers):
            edges = self.edge_mlp(torch.cat([edges, nodes[senders], nodes[receivers]], dim=-1))
            received = scatter(edges, receivers, 0, dim_size=nodes.shape[0], reduce="sum")
            return self.node_mlp(torch.cat([nodes, received], dim=-1))

    return TorchGraphNetwork()


def make_graph_network(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W1: one graph-network step on a batch of Sudoku graphs, loss on the new nodes."""
    puzzles, hidden, edge_size = (2, 16, 4) if quick else (128, 96, 16)
    graph = sudoku_graph(puzzles, hidden, edge_size)
    fast = dict(factorised=True, indices_are_sorted=True, edge_outputs=False)
    variants = {"gnkit": fast}
    if ablations:
        variants["gnkit per-edge outputs"] = {**fast, "edge_outputs": True}
        variants["gnkit concat first layer"] = {**fast, "factorised": False}
        variants["gnkit unsorted"] = {**fast, "indices_are_sorted": False}
    params = _gn_module(hidden).init(jax.random.PRNGKey(0), graph)
    contenders = {}
    for name, options in variants.items():
        model = _gn_module(hidden, **options)

        def forward(params, graph, model=model):
            return model.apply(params, graph).nodes

        contenders[name] = jax_contender(forward, _mean_square, params, graph)
    if ablations:
        model = _gn_module(hidden, **variants["gnkit"])

        def forward(params, graph, model=model):
            return model.apply(params, graph).nodes

        contenders["gnkit no donation"] = jax_contender(
            forward, _mean_square, params, graph, donate=False
        )

    def jraph_forward(layers, graph):
        return _jraph_gn_step(*layers)(graph).nodes

    layers = _gn_layers(params["params"])
    contenders["jraph"] = jax_contender(jraph_forward, _mean_square, layers, graph)
    if pyg:
        inputs = [to_torch(x) for x in (graph.nodes, graph.edges)] + [
            to_torch(x).long() for x in (graph.senders, graph.receivers)
        ]
        loss = lambda out: (out**2).mean()  # noqa: E731

        def build():
            return _torch_gn(*layers), loss, inputs

        contenders.update(torch_variants("pyg eager", build, torch_threads))
        if not quick:
            contenders.update(torch_variants("pyg compiled", build, torch_threads, compiled=True))
    return Workload(
        "W1 graph network",
        f"{puzzles} Sudoku graphs ({graph.nodes.shape[0]} nodes, {graph.senders.shape[0]} edges),"
        f" edge MLP on [edge {edge_size}, sender {hidden}, receiver {hidden}], sum, node MLP,"
        f" 2 x {hidden}",
        contenders,
    )


class _GNCell(nn.Module):
    """One shared-weight processor step for `nn.scan`: nodes -> nodes, edges kept."""

    hidden: int
    edge_outputs: bool

    @nn.compact
    def __call__(self, nodes, graph):
        graph = graph._replace(nodes=nodes)
        options = dict(indices_are_sorted=True, edge_outputs=self.edge_outputs)
        return _gn_module(self.hidden, **options, name="gn")(graph).nodes, None


class RecurrentGraphNetwork(nn.Module):
    """`num_steps` applications of one graph network (shared weights) under `nn.scan`."""

    hidden: int
    num_steps: int
    remat: bool = False
    edge_outputs: bool = False

    @nn.compact
    def __call__(self, graph):
        cell = nn.remat(_GNCell, prevent_cse=False) if self.remat else _GNCell
        scanned = nn.scan(
            cell,
            variable_broadcast="params",
            split_rngs={"params": False},
            in_axes=nn.broadcast,
            length=self.num_steps,
        )
        nodes, _ = scanned(self.hidden, self.edge_outputs, name="step")(graph.nodes, graph)
        return nodes


def make_recurrent_graph_network(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W1 x 8: eight shared-weight graph-network steps (edges fixed, nodes carried)."""
    del pyg, torch_threads
    puzzles, hidden, edge_size, steps = (2, 16, 4, 3) if quick else (32, 96, 16, 8)
    graph = sudoku_graph(puzzles, hidden, edge_size)
    model = RecurrentGraphNetwork(hidden, steps)
    params = model.init(jax.random.PRNGKey(0), graph)
    contenders = {}
    variants = {"gnkit scan": model}
    if ablations:
        variants["gnkit scan + remat"] = RecurrentGraphNetwork(hidden, steps, remat=True)
        variants["gnkit scan per-edge outputs"] = RecurrentGraphNetwork(
            hidden, steps, edge_outputs=True
        )
    for name, module in variants.items():
        contenders[name] = jax_contender(module.apply, _mean_square, params, graph)
    layers = _gn_layers(params["params"]["step"]["gn"])

    def loop_forward(layers, graph):
        network = _jraph_gn_step(*layers)
        nodes = graph.nodes
        for _ in range(steps):
            nodes = network(graph._replace(nodes=nodes)).nodes
        return nodes

    def scan_forward(layers, graph):
        network = _jraph_gn_step(*layers)

        def body(nodes, _):
            return network(graph._replace(nodes=nodes)).nodes, None

        return jax.lax.scan(body, graph.nodes, None, length=steps)[0]

    for name, forward in (("jraph loop", loop_forward), ("jraph scan", scan_forward)):
        contenders[name] = jax_contender(forward, _mean_square, layers, graph)
    return Workload(
        f"W1 x {steps} recurrent",
        f"{steps} shared-weight steps of W1 on {puzzles} Sudoku graphs",
        contenders,
    )


# ----------------------------------------------------------------------------- W2: GAT


def molecule_graph(num_graphs: int, features: int, seed: int = 0) -> GraphsTuple:
    """`num_graphs` molecule-sized graphs (10-40 nodes, a random tree plus ~55% extra bonds,
    both directions), batched with receiver-sorted edges."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(10, 41, num_graphs)
    senders, receivers, n_edge, offset = [], [], [], 0
    for size in sizes:
        parents = np.array([rng.integers(0, child) for child in range(1, size)])
        extra = int(0.55 * size)
        a, b = rng.integers(0, size, extra), rng.integers(0, size, extra)
        keep = a != b
        u = np.concatenate([np.arange(1, size), a[keep]])
        v = np.concatenate([parents, b[keep]])
        s, r = np.concatenate([u, v]), np.concatenate([v, u])
        order = np.argsort(r, kind="stable")
        senders.append(s[order] + offset)
        receivers.append(r[order] + offset)
        n_edge.append(len(s))
        offset += size
    return GraphsTuple(
        nodes=jnp.asarray(rng.normal(size=(offset, features)), jnp.float32),
        edges=None,
        receivers=jnp.asarray(np.concatenate(receivers), jnp.int32),
        senders=jnp.asarray(np.concatenate(senders), jnp.int32),
        globals=None,
        n_node=jnp.asarray(sizes, jnp.int32),
        n_edge=jnp.asarray(n_edge, jnp.int32),
    )


class GATModel(nn.Module):
    """Three GAT layers (4 heads x 16), ReLU between, sum readout, MLP. `split_logits`: each
    node's sender and receiver scores computed once and gathered (`gat`'s fast path); False
    scores every edge from its gathered `[E, H, D]` rows (`logit_fn`), the ablation."""

    heads: int = 4
    head_size: int = 16
    layers: int = 3
    readout: tuple[int, ...] = (64, 1)
    split_logits: bool = True

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        width = self.heads * self.head_size
        for index in range(self.layers):
            source = self.param(
                f"attend_sender_{index}", nn.initializers.normal(0.3), (self.heads, self.head_size)
            )
            target = self.param(
                f"attend_receiver_{index}",
                nn.initializers.normal(0.3),
                (self.heads, self.head_size),
            )
            if self.split_logits:
                logits = {
                    "sender_logit_fn": lambda z, a=source: jnp.einsum("nhd,hd->nh", z, a),
                    "receiver_logit_fn": lambda z, a=target: jnp.einsum("nhd,hd->nh", z, a),
                }
            else:
                logits = {
                    "logit_fn": lambda sender_nodes, receiver_nodes, a=source, b=target: (
                        jnp.einsum("ehd,hd->eh", sender_nodes, a)
                        + jnp.einsum("ehd,hd->eh", receiver_nodes, b)
                    )
                }
            layer = attention.gat(
                nn.Dense(width, use_bias=False, name=f"project_{index}"),
                num_heads=self.heads,
                indices_are_sorted=True,
                **logits,
            )
            bias = self.param(f"bias_{index}", nn.initializers.normal(0.1), (width,))
            graph = graph._replace(nodes=layer(graph).nodes + bias)
            if index < self.layers - 1:
                graph = graph._replace(nodes=jax.nn.relu(graph.nodes))
        pooled = aggregate_nodes_to_globals(graph)
        return MLP(self.readout, name="readout")(pooled)


def _jraph_gat_forward(params, graph, heads=4, head_size=16, layers=3):
    """The same model with `jraph.GAT` layers, logits from concatenated sender and receiver."""
    p = params["params"]
    nodes = graph.nodes
    for index in range(layers):
        kernel = p[f"project_{index}"]["kernel"]
        attend = jnp.concatenate([p[f"attend_sender_{index}"], p[f"attend_receiver_{index}"]], -1)
        bias = p[f"bias_{index}"]

        def query_fn(x, kernel=kernel):
            return (x @ kernel).reshape(x.shape[0], heads, head_size)

        def logit_fn(sent, received, edges, attend=attend):
            del edges
            pair = jnp.concatenate([sent, received], axis=-1)
            return jax.nn.leaky_relu(jnp.sum(pair * attend, axis=-1, keepdims=True), 0.2)

        def update_fn(x, bias=bias):
            return x.reshape(x.shape[0], -1) + bias

        layer = jraph.GAT(query_fn, logit_fn, update_fn)
        nodes = layer(graph._replace(nodes=nodes)).nodes
        if index < layers - 1:
            nodes = jax.nn.relu(nodes)
    n_graph = graph.n_node.shape[0]
    graph_index = jnp.repeat(jnp.arange(n_graph), graph.n_node, total_repeat_length=nodes.shape[0])
    pooled = jraph.segment_sum(nodes, graph_index, n_graph)
    return _mlp_apply(dense_pairs(p, "readout/dense_0", "readout/dense_1"), pooled)


def _torch_gat(params, in_size, heads=4, head_size=16, layers=3):
    import torch
    from torch_geometric.nn import GATConv, global_add_pool

    p = params["params"]

    class TorchGAT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            for index in range(layers):
                conv = GATConv(
                    in_size if index == 0 else heads * head_size,
                    head_size,
                    heads=heads,
                    add_self_loops=False,
                )
                with torch.no_grad():
                    conv.lin.weight.copy_(to_torch(p[f"project_{index}"]["kernel"]).T)
                    conv.att_src.copy_(to_torch(p[f"attend_sender_{index}"])[None])
                    conv.att_dst.copy_(to_torch(p[f"attend_receiver_{index}"])[None])
                    conv.bias.copy_(to_torch(p[f"bias_{index}"]))
                self.convs.append(conv)
            self.readout = torch_mlp(dense_pairs(p, "readout/dense_0", "readout/dense_1"))

        def forward(self, nodes, edge_index, batch, n_graph):
            for index, conv in enumerate(self.convs):
                nodes = conv(nodes, edge_index)
                if index < layers - 1:
                    nodes = torch.relu(nodes)
            return self.readout(global_add_pool(nodes, batch, size=n_graph))

    return TorchGAT()


def make_gat(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W2: 3 GAT layers + sum readout + MLP on a batch of molecule-sized graphs; `ablations`
    adds gnkit with per-edge logits."""
    n_graph, features, layers = (4, 8, 1) if quick else (256, 32, 3)
    graph = molecule_graph(n_graph, features)
    targets = jnp.asarray(np.random.default_rng(1).normal(size=(n_graph, 1)), jnp.float32)
    model = GATModel(layers=layers)
    params = model.init(jax.random.PRNGKey(0), graph)
    batch = (graph, targets)

    def gnkit_forward(params, batch):
        return model.apply(params, batch[0])

    def jraph_forward(params, batch):
        return _jraph_gat_forward(params, batch[0], layers=layers)

    forwards = {"gnkit": gnkit_forward}
    if ablations:
        per_edge = GATModel(layers=layers, split_logits=False)
        forwards["gnkit per-edge logits"] = lambda params, batch: per_edge.apply(params, batch[0])
    forwards["jraph"] = jraph_forward
    contenders = {
        name: jax_contender(forward, _squared_error, params, batch)
        for name, forward in forwards.items()
    }
    if pyg:
        import torch

        edge_index = torch.stack([to_torch(graph.senders), to_torch(graph.receivers)]).long()
        graph_index = to_torch(node_graph_index(graph)).long()
        torch_targets = to_torch(targets)

        def build():
            return (
                _torch_gat(params, features, layers=layers),
                lambda out: ((out - torch_targets) ** 2).mean(),
                [to_torch(graph.nodes), edge_index, graph_index, n_graph],
            )

        contenders.update(torch_variants("pyg eager", build, torch_threads))
    return Workload(
        "W2 GAT",
        f"{n_graph} molecule graphs ({graph.nodes.shape[0]} nodes, {graph.senders.shape[0]} "
        f"edges), {layers} GAT layers 4 x 16, sum readout, MLP",
        contenders,
    )


# ----------------------------------------------------------------------------- W3: GCN


def large_graph(n_node: int, n_pair: int, features: int, seed: int = 0) -> GraphsTuple:
    """One graph with `n_node` nodes and `2 n_pair` edges (each pair both ways, skewed degrees:
    one end uniform, the other drawn towards low ids), receiver-sorted."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_node, n_pair)
    b = (n_node * rng.random(n_pair) ** 2).astype(np.int64)
    keep = a != b
    a, b = a[keep], b[keep]
    senders, receivers = np.concatenate([a, b]), np.concatenate([b, a])
    order = np.argsort(receivers, kind="stable")
    return GraphsTuple(
        nodes=jnp.asarray(rng.normal(size=(n_node, features)), jnp.float32),
        edges=None,
        receivers=jnp.asarray(receivers[order], jnp.int32),
        senders=jnp.asarray(senders[order], jnp.int32),
        globals=None,
        n_node=jnp.asarray([n_node], jnp.int32),
        n_edge=jnp.asarray([len(senders)], jnp.int32),
    )


class GCNModel(nn.Module):
    """Two GCN layers (hidden 128, ReLU), receiver-sorted fast path, neighbour sums chunked over
    the edges (gcn's default). The first layer propagates the input features and projects after
    (`project_first=False`, exact for its bias-free kernel): the inputs need no gradient, so its
    backward pass has no edge-sized work."""

    hidden: int = 128
    classes: int = 40
    sorted_receivers: bool = True
    aggregate_first: bool = True
    chunked_sum: bool = True

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        for index, width in enumerate((self.hidden, self.classes)):
            layer = convolutions.gcn(
                nn.Dense(width, use_bias=False, name=f"weight_{index}"),
                project_first=not (index == 0 and self.aggregate_first),
                aggregator=None if self.chunked_sum else "sum",
                indices_are_sorted=self.sorted_receivers,
            )
            bias = self.param(f"bias_{index}", nn.initializers.normal(0.1), (width,))
            nodes = layer(graph).nodes + bias
            graph = graph._replace(nodes=jax.nn.relu(nodes) if index == 0 else nodes)
        return graph.nodes


def _jraph_gcn_forward(params, graph):
    p = params["params"]
    nodes = graph.nodes
    for index in range(2):
        layer = jraph.GraphConvolution(
            lambda x, kernel=p[f"weight_{index}"]["kernel"]: x @ kernel, add_self_edges=True
        )
        nodes = layer(graph._replace(nodes=nodes)).nodes + p[f"bias_{index}"]
        if index == 0:
            nodes = jax.nn.relu(nodes)
    return nodes


def _torch_gcn(params):
    import torch
    from torch_geometric.nn import GCNConv

    p = params["params"]

    class TorchGCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            for index in range(2):
                kernel = p[f"weight_{index}"]["kernel"]
                conv = GCNConv(kernel.shape[0], kernel.shape[1])
                with torch.no_grad():
                    conv.lin.weight.copy_(to_torch(kernel).T)
                    conv.bias.copy_(to_torch(p[f"bias_{index}"]))
                self.convs.append(conv)

        def forward(self, nodes, edge_index):
            nodes = torch.relu(self.convs[0](nodes, edge_index))
            return self.convs[1](nodes, edge_index)

    return TorchGCN()


def make_gcn(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W3: a 2-layer GCN on one large graph, cross-entropy on every node."""
    n_node, n_pair, features = (500, 2_000, 16) if quick else (170_000, 600_000, 128)
    graph = large_graph(n_node, n_pair, features)
    labels = jnp.asarray(np.random.default_rng(1).integers(0, 40, n_node), jnp.int32)
    batch = (graph, labels)
    model = GCNModel()
    params = model.init(jax.random.PRNGKey(0), graph)
    variants = {"gnkit": model}
    if ablations:
        variants["gnkit unsorted"] = GCNModel(sorted_receivers=False)
        variants["gnkit project first"] = GCNModel(aggregate_first=False)
        variants["gnkit unchunked"] = GCNModel(chunked_sum=False)
    contenders = {}
    forwards = {
        name: (lambda params, batch, m=module: m.apply(params, batch[0]))
        for name, module in variants.items()
    }
    forwards["jraph"] = lambda params, batch: _jraph_gcn_forward(params, batch[0])
    for name, forward in forwards.items():
        contenders[name] = jax_contender(forward, cross_entropy, params, batch)
    if pyg:
        import torch

        edge_index = torch.stack([to_torch(graph.senders), to_torch(graph.receivers)]).long()
        torch_labels = to_torch(labels).long()

        def build():
            return (
                _torch_gcn(params),
                lambda out: torch.nn.functional.cross_entropy(out, torch_labels),
                [to_torch(graph.nodes), edge_index],
            )

        contenders.update(torch_variants("pyg eager", build, torch_threads))
    return Workload(
        "W3 GCN",
        f"one graph, {n_node} nodes, {graph.senders.shape[0]} edges, 2 GCN layers "
        f"{features} -> 128 -> 40",
        contenders,
    )


# ----------------------------------------------------------------------------- segment-sum probe


def make_segment_probe(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """Sorted segment sum of `[E, 128]` f32 rows into `[N, 128]`, and a NumPy copy of as many
    bytes (the machine's memory-copy rate), as contenders of one table.

    The copy writes into a buffer allocated once. XLA allocates a fresh output on every call, and
    on this CPU the first touch of each of its pages costs a page fault (about 21,000 per call for
    the `[170000, 128]` output, the same as for an elementwise op of that size), so the row
    "gnkit, output reused" adds into a donated buffer: the scatter kernel alone, like the copy.
    """
    del pyg, ablations, torch_threads
    n_row, n_segment, width = (20_000, 3_000, 128) if quick else (1_200_000, 170_000, 128)
    rng = np.random.default_rng(0)
    data = jnp.asarray(rng.normal(size=(n_row, width)), jnp.float32)
    ids = jnp.asarray(np.sort(rng.integers(0, n_segment, n_row)), jnp.int32)
    sorted_sum = jax.jit(lambda x, i: safe_segment_sum(x, i, n_segment, indices_are_sorted=True))
    unsorted_sum = jax.jit(lambda x, i: jraph.segment_sum(x, i, n_segment))
    add_into = jax.jit(
        lambda x, i, out: out.at[i].add(x, indices_are_sorted=True), donate_argnums=2
    )
    reused = [jnp.zeros((n_segment, width), jnp.float32)]

    def add_into_reused():
        reused[0] = add_into(data, ids, reused[0])
        return reused[0]

    bytes_moved = (n_row + n_segment) * width * 4 + n_row * 4
    source = np.asarray(rng.normal(size=bytes_moved // 8), np.float32)
    target = np.empty_like(source)

    def contender(fn):
        start = time.perf_counter()
        jax.block_until_ready(fn(data, ids))
        return Contender(
            step=lambda: fn(data, ids),
            forward=lambda: np.asarray(fn(data, ids)),
            compile_s=time.perf_counter() - start,
        )

    copy = Contender(step=lambda: np.copyto(target, source), forward=None)
    return Workload(
        "segment-sum probe",
        f"sum of {n_row} x {width} f32 rows into {n_segment} sorted segments; "
        f"{bytes_moved / 1e6:.0f} MB moved (memcpy row: the same bytes read + written)",
        {
            "gnkit": contender(sorted_sum),
            "gnkit, output reused": Contender(
                step=add_into_reused,
                forward=lambda: np.asarray(
                    add_into(data, ids, jnp.zeros((n_segment, width), jnp.float32))
                ),
            ),
            "jraph": contender(unsorted_sum),
            "memcpy": copy,
        },
        bytes_moved=bytes_moved,
    )


class WorkloadTable(MutableMapping):
    """The workload makers by descriptive name (`graph-network`, `gat`, ...), in suite order.

    The short names of earlier runs and docs (`w1`, `w1x8`, `w2` ... `w5`) are aliases: `in`
    and `[]` accept them, iteration lists only the descriptive names.
    """

    def __init__(self, makers: dict[str, Callable[..., Workload]], aliases: dict[str, str]):
        self._makers, self.aliases = dict(makers), aliases

    def __getitem__(self, key: str) -> Callable[..., Workload]:
        return self._makers[self.aliases.get(key, key)]

    def __setitem__(self, key: str, maker: Callable[..., Workload]) -> None:
        self._makers[self.aliases.get(key, key)] = maker

    def __delitem__(self, key: str) -> None:
        del self._makers[self.aliases.get(key, key)]

    def __contains__(self, key: object) -> bool:
        return key in self._makers or key in self.aliases

    def __iter__(self):
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


WORKLOADS = WorkloadTable(
    {
        "graph-network": make_graph_network,
        "recurrent-graph-network": make_recurrent_graph_network,
        "gat": make_gat,
        "gcn-large-graph": make_gcn,
        "relation-network": relational_workloads.make_relation_network,
        "sudoku-rrn": relational_workloads.make_sudoku_rrn,
        "segment-sum-probe": make_segment_probe,
    },
    aliases={
        "w1": "graph-network",
        "w1x8": "recurrent-graph-network",
        "w2": "gat",
        "w3": "gcn-large-graph",
        "w4": "relation-network",
        "w5": "sudoku-rrn",
        "probe": "segment-sum-probe",
    },
)
