"""Typed graphs under the data-parallel strategy: per-device padded typed batches, one step on 8
forced CPU devices equal to one step on the union of the batches on one device (run in a fresh
interpreter, as XLA_FLAGS must be set before JAX starts); per-device batches on the host."""

import json

import jax
import numpy as np
from _forced_devices import run_with_devices
from _typed_graphs import random_graphs

from gnkit import typed_graph as tg

STEP_ON_8_DEVICES = r"""
import json, sys
sys.path.insert(0, "tests")
import jax, jax.numpy as jnp, numpy as np, optax
from _typed_graphs import random_graphs
from gnkit import nn as gnn, parallel, typed_graph as tg

assert jax.device_count() == 8
graphs = random_graphs(11, 21)
module = gnn.TypedRGCN(4)
optimizer = optax.sgd(0.1)

def real_papers(graph):
    return tg.node_mask(graph, "paper")

def loss_fn(params, graph):
    out = module.apply({"params": params}, graph).nodes["paper"].features
    mask = real_papers(graph)
    squared = jnp.where(mask[:, None], (out - 1.0) ** 2, 0.0)
    return jnp.sum(squared) / jnp.maximum(jnp.sum(mask), 1)

def weight_fn(graph):
    return jnp.sum(real_papers(graph)).astype(jnp.float32)

union = tg.batch(graphs)
union = tg.pad_to_budget(union, tg.BucketPolicy().round(union))
params = module.init(jax.random.key(0), union)["params"]
reference_loss, grads = jax.value_and_grad(loss_fn)(params, union)
updates, _ = optimizer.update(grads, optimizer.init(params), params)
reference = optax.apply_updates(params, updates)

strategy = parallel.data_parallel("mesh")
batches = tg.device_batches(graphs, 8, tg.BucketPolicy(min_nodes=8, min_edges=8))
shapes = {str(jax.tree_util.tree_map(np.shape, b)) for b in batches}
step = strategy.train_step(loss_fn, optimizer, weight_fn=weight_fn)
state = strategy.replicate((params, optimizer.init(params)))
new_params, _, metrics = step(*state, strategy.shard_device_batches(batches))
difference = jax.tree_util.tree_map(lambda a, b: float(jnp.max(jnp.abs(a - b))),
                                    strategy.host_copy(new_params), reference)
moved = jax.tree_util.tree_map(lambda a, b: float(jnp.max(jnp.abs(a - b))), reference, params)
print(json.dumps({"loss": float(metrics["loss"]), "reference_loss": float(reference_loss),
                  "max_difference": max(jax.tree_util.tree_leaves(difference)),
                  "max_moved": max(jax.tree_util.tree_leaves(moved)), "shapes": len(shapes)}))
"""


def test_one_step_on_8_devices_equals_one_step_on_the_union():
    result = json.loads(run_with_devices(STEP_ON_8_DEVICES).strip().splitlines()[-1])
    assert result["shapes"] == 1
    assert abs(result["loss"] - result["reference_loss"]) < 1e-5 * abs(result["reference_loss"])
    assert result["max_moved"] > 1e-3  # the step changes the parameters
    assert result["max_difference"] < 1e-5


def test_device_batches_share_one_budget_and_keep_every_graph():
    graphs = random_graphs(12, 11)
    batches = tg.device_batches(graphs, 4)
    assert len({str(jax.tree_util.tree_map(np.shape, b)) for b in batches}) == 1
    recovered = [g for b in batches for g in tg.unbatch(tg.unpad(b))]
    assert len(recovered) == 11
    for original, back in zip(graphs, recovered, strict=True):
        for name in original.nodes:
            np.testing.assert_array_equal(back.nodes[name].features, original.nodes[name].features)
        for key in original.edges:
            np.testing.assert_array_equal(back.edges[key].senders, original.edges[key].senders)
    # The runs are consecutive and near-equal: 3, 3, 3, 2 graphs.
    assert [int(np.sum(tg.graph_mask(b))) for b in batches] == [3, 3, 3, 2]
    budget = tg.Budget(5, {"paper": 40, "author": 30}, {k: 40 for k in graphs[0].edges})
    assert all(b.num_graphs == 5 for b in tg.device_batches(graphs, 4, budget=budget))
