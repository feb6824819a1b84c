"""A Flax model written against jraph loads jraph-initialised parameters when built on gnkit.

The model creates its layers inside the update callbacks (`nn.compact`, automatic names
`Dense_0`, `Dense_1`, ...), as jraph's examples do, so the names depend on the order in which
each jraph model calls its callbacks. Every layer has a different output size, so a swapped call
order shows up as a `ScopeParamShapeError` or as different outputs.
"""

import importlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

jraph = pytest.importorskip("jraph")


def _concat(*features):
    return jnp.concatenate(jax.tree_util.tree_leaves(features), axis=-1)


class JraphStyleNet(nn.Module):
    """Several jraph models in a row; `library` is "jraph" or "gnkit" (`import gnkit as jraph`).

    Without input globals, `GraphMapFeatures` creates them from a learned row, calling
    `embed_global_fn` on None as jraph does.
    """

    library: str

    @nn.compact
    def __call__(self, graph):
        lib = importlib.import_module(self.library)
        n_graph = graph.n_node.shape[0]
        if graph.globals is None:
            learned = self.param("learned_globals", nn.initializers.normal(1.0), (1, 2))
            embed_globals = lambda _: jnp.broadcast_to(learned, (n_graph, 2))  # noqa: E731
        else:
            embed_globals = lambda globals_: nn.Dense(2)(globals_)  # noqa: E731
        graph = lib.GraphMapFeatures(
            embed_edge_fn=lambda edges: nn.Dense(5)(edges),
            embed_node_fn=lambda nodes: nn.Dense(6)(nodes),
            embed_global_fn=embed_globals,
        )(graph)
        graph = lib.GraphNetwork(
            update_edge_fn=lambda e, s, r, g: jax.nn.relu(nn.Dense(7)(_concat(e, s, r, g))),
            update_node_fn=lambda n, s, r, g: jax.nn.relu(nn.Dense(8)(_concat(n, s, r, g))),
            update_global_fn=lambda n, e, g: nn.Dense(9)(_concat(n, e, g)),
        )(graph)
        graph = lib.InteractionNetwork(
            update_edge_fn=lambda e, s, r: nn.Dense(4)(_concat(e, s, r)),
            update_node_fn=lambda n, r: nn.Dense(3)(_concat(n, r)),
        )(graph)
        graph = lib.GAT(
            attention_query_fn=lambda n: nn.Dense(6)(n).reshape(n.shape[0], 2, 3),
            attention_logit_fn=lambda s, r, e: nn.Dense(1)(_concat(s, r)),
        )(graph)
        graph = lib.GraphConvolution(update_node_fn=lambda n: nn.Dense(5)(n))(graph)
        graph = lib.DeepSets(
            update_node_fn=lambda n, g: nn.Dense(2)(_concat(n, g)),
            update_global_fn=lambda n: nn.Dense(11)(n),
        )(graph)
        return lib.RelationNetwork(
            update_edge_fn=lambda s, r: nn.Dense(12)(_concat(s, r)),
            update_global_fn=lambda e: nn.Dense(13)(e),
        )(graph)


def _graph(with_globals):
    rng = np.random.default_rng(0)
    return jraph.GraphsTuple(
        nodes=jnp.asarray(rng.normal(size=(6, 3)), jnp.float32),
        edges=jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
        senders=jnp.array([0, 1, 2, 3, 3]),
        receivers=jnp.array([1, 2, 0, 4, 5]),
        globals=jnp.asarray(rng.normal(size=(2, 3)), jnp.float32) if with_globals else None,
        n_node=jnp.array([3, 3]),
        n_edge=jnp.array([3, 2]),
    )


@pytest.mark.parametrize("with_globals", [True, False])
def test_jraph_checkpoint_loads_into_the_gnkit_model(with_globals):
    graph = _graph(with_globals)
    params = JraphStyleNet("jraph").init(jax.random.key(0), graph)
    assert "Dense_0" in params["params"]
    expected = jax.jit(JraphStyleNet("jraph").apply)(params, graph)
    got = jax.jit(JraphStyleNet("gnkit").apply)(params, graph)
    for field in ("nodes", "edges", "globals"):
        np.testing.assert_allclose(
            getattr(got, field), getattr(expected, field), rtol=1e-5, atol=1e-5, err_msg=field
        )
    same_init = JraphStyleNet("gnkit").init(jax.random.key(0), graph)
    assert jax.tree_util.tree_structure(same_init) == jax.tree_util.tree_structure(params)
    jax.tree_util.tree_map(np.testing.assert_array_equal, same_init, params)
