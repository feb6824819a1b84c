"""Helper for tests/test_parallel_edge_models.py: GCN, GIN and GAT models edge-sharded over 8 forced
CPU devices against the same models unsharded.

`python tests/_edge_models_worker.py OUT.json` (the caller sets
`XLA_FLAGS=--xla_force_host_platform_device_count=8`) writes, per model, the largest differences of
the outputs and of the parameter gradients, and the errors raised for self-edges added per shard.
"""

from __future__ import annotations

import json
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from gnkit import attention, parallel
from gnkit.batching import pad_with_graphs
from gnkit.graph import GraphsTuple
from gnkit.nn.layers import GAT, GCN, GIN, GATv2
from gnkit.segment import safe_segment_softmax

N_REAL = 40  # real nodes; nodes 30..39 have no incoming edge
N_EDGE = 150
FEATURES = 5
HEADS, HEAD_SIZE = 2, 4
_RNG = np.random.default_rng(0)
_NODES = _RNG.normal(size=(N_REAL, FEATURES)).astype(np.float32)
# Skewed in-degrees: receivers drawn towards low ids, only among nodes 0..29.
_RECEIVERS = (30 * _RNG.random(N_EDGE) ** 3).astype(np.int32)
_SENDERS = _RNG.integers(0, N_REAL, N_EDGE).astype(np.int32)
LOSS_WEIGHTS = jnp.asarray(_RNG.normal(size=(N_REAL, 16)), jnp.float32)


def skewed_graph(self_edges: bool = False) -> GraphsTuple:
    """One receiver-sorted graph of `N_REAL` nodes, padded to 41 nodes and a multiple of 8 edges
    (at least one padding edge); `self_edges` appends one self-edge per real node first."""
    senders, receivers = _SENDERS, _RECEIVERS
    if self_edges:
        not_loop = senders != receivers
        senders, receivers = senders[not_loop], receivers[not_loop]
        every_node = np.arange(N_REAL, dtype=np.int32)
        senders = np.concatenate([senders, every_node])
        receivers = np.concatenate([receivers, every_node])
    order = np.argsort(receivers, kind="stable")
    graph = GraphsTuple(
        nodes=_NODES,
        edges=None,
        receivers=receivers[order],
        senders=senders[order],
        globals=None,
        n_node=np.array([N_REAL], np.int32),
        n_edge=np.array([len(senders)], np.int32),
    )
    return pad_with_graphs(graph, N_REAL + 1, 8 * (len(senders) // 8 + 1), 2)


def loss(out: jax.Array) -> jax.Array:
    """A scalar from the real nodes' outputs `[N_REAL, F]`, F <= 16."""
    return jnp.sum(jnp.sin(out) * LOSS_WEIGHTS[:, : out.shape[1]])


def _max_difference(a, b) -> float:
    return max(
        float(jnp.max(jnp.abs(x - y)))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def _scale(tree) -> float:
    return max(float(jnp.max(jnp.abs(x))) for x in jax.tree.leaves(tree))


def compare(mesh, params, plain_fn, plain_graph, sharded_fn, sharded_graph) -> dict:
    """Real-node outputs and `loss` gradients of `plain_fn` on `plain_graph` (one device) and of
    `sharded_fn` under `edge_sharded` on `sharded_graph` split over `mesh`."""
    sharded = parallel.edge_sharded(sharded_fn, mesh, P())

    def outputs_and_grads(fn, graph):
        def objective(p, g):
            out = fn(p, g)[:N_REAL]
            return loss(out), out

        return jax.jit(jax.grad(objective, has_aux=True))(params, graph)

    grads, out = outputs_and_grads(plain_fn, jax.device_put(plain_graph))
    grads_sharded, out_sharded = outputs_and_grads(
        sharded, parallel.shard_edges(sharded_graph, mesh)
    )
    return {
        "output_difference": _max_difference(out, out_sharded),
        "output_scale": _scale(out),
        "gradient_difference": _max_difference(grads, grads_sharded),
        "gradient_scale": _scale(grads),
        "smallest_gradient": min(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(grads)),
    }


class TwoLayerGCN(nn.Module):
    """GCN 5 -> 16 (ReLU) -> 3, symmetric normalisation and self-edges. By nn.GCN's width rule
    the first layer sums before projecting and the second projects first."""

    aggregator: object = "sum"

    @nn.compact
    def __call__(self, graph):
        graph = GCN(16, aggregator=self.aggregator, indices_are_sorted=True)(graph)
        graph = graph._replace(nodes=jax.nn.relu(graph.nodes))
        return GCN(3, aggregator=self.aggregator, indices_are_sorted=True)(graph).nodes


class TwoLayerGIN(nn.Module):
    aggregator: object = "sum"

    @nn.compact
    def __call__(self, graph):
        graph = GIN((8, 8), epsilon=0.1, learn_epsilon=True, aggregator=self.aggregator)(graph)
        return GIN((3,), aggregator=self.aggregator)(graph).nodes


def gat_on_blocks(params, graph, sharded: bool):
    """`gnkit.attention.gat`, 2 heads, split logits. Unsharded it adds the self-edges itself;
    sharded, the graph carries them."""
    return attention.gat(
        lambda x: x @ params["project"],
        sender_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, params["sender"]),
        receiver_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, params["receiver"]),
        num_heads=HEADS,
        add_self_edges=not sharded,
        softmax=parallel.sharded_softmax() if sharded else safe_segment_softmax,
        aggregator=parallel.sharded_aggregator("sum") if sharded else "sum",
        indices_are_sorted=sharded,
    )(graph).nodes


def _flax_pair(module_type, **options):
    """(params, plain function, sharded function) for a flax model taking an aggregator."""
    plain = module_type(**options)
    sharded_options = {"aggregator": parallel.sharded_aggregator("sum")}
    if module_type in (GAT, GATv2):
        sharded_options["softmax"] = parallel.sharded_softmax()
    sharded = module_type(**options, **sharded_options)
    params = plain.init(jax.random.PRNGKey(1), jax.device_put(skewed_graph()))

    def nodes(module):
        def apply(p, g):
            out = module.apply(p, g)
            return out.nodes if isinstance(out, GraphsTuple) else out

        return apply

    return params, nodes(plain), nodes(sharded)


def _error(mesh, fn, params, graph) -> str | None:
    try:
        jax.eval_shape(
            parallel.edge_sharded(fn, mesh, P()), params, parallel.shard_edges(graph, mesh)
        )
    except ValueError as error:
        return str(error)
    return None


def main(out_path: str) -> None:
    mesh = parallel.make_mesh(parallel.EDGE_AXIS)
    graph, with_self_edges = skewed_graph(), skewed_graph(self_edges=True)
    results = {"device_count": jax.device_count()}

    for name, module_type, options, model_graph in (
        ("gcn", TwoLayerGCN, {}, graph),
        ("gin", TwoLayerGIN, {}, graph),
        (
            "gat_module",
            GAT,
            {
                "features": HEAD_SIZE,
                "num_heads": HEADS,
                "add_self_edges": False,
                "combine_heads": "mean",
            },
            with_self_edges,
        ),
        (
            "gatv2_module",
            GATv2,
            {"features": HEAD_SIZE, "num_heads": HEADS, "add_self_edges": False},
            with_self_edges,
        ),
    ):
        params, plain, sharded = _flax_pair(module_type, **options)
        results[name] = compare(mesh, params, plain, model_graph, sharded, model_graph)

    rng = np.random.default_rng(2)
    gat_params = {
        "project": rng.normal(size=(FEATURES, HEADS * HEAD_SIZE)).astype(np.float32),
        "sender": rng.normal(size=(HEADS, HEAD_SIZE)).astype(np.float32),
        "receiver": rng.normal(size=(HEADS, HEAD_SIZE)).astype(np.float32),
    }
    results["gat_blocks"] = compare(
        mesh,
        gat_params,
        lambda p, g: gat_on_blocks(p, g, sharded=False),
        graph,
        lambda p, g: gat_on_blocks(p, g, sharded=True),
        with_self_edges,
    )

    def gat_adding_self_edges(p, g):
        return attention.gat(
            lambda x: x @ p["project"],
            lambda sender_nodes, receiver_nodes: jnp.sum(sender_nodes + receiver_nodes, -1),
            num_heads=HEADS,
            add_self_edges=True,
            softmax=parallel.sharded_softmax(),
            aggregator=parallel.sharded_aggregator("sum"),
        )(g).nodes

    results["gat_self_edge_error"] = _error(mesh, gat_adding_self_edges, gat_params, graph)
    params, _, gatv2 = _flax_pair(GATv2, features=HEAD_SIZE, num_heads=HEADS)
    results["gatv2_self_edge_error"] = _error(mesh, gatv2, params, graph)
    with open(out_path, "w") as file:
        json.dump(results, file, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
