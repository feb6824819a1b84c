"""Training and testing of the WordNet demo's models; each returns its row of the results.

GraphSAGE trains on neighbour samples (`gnkit.sampling.NeighborSampler`, prefetched on
threads) and is tested on the whole graph with every neighbour; GCN and the MLP train
full-batch; label propagation has no parameters. Every model is tested on the same held-out
synsets. Epoch time is one pass over the training synsets (one update for the full-batch
models); memory is XLA's count for the compiled update (arguments, outputs and temporaries).
Host loop around jitted steps.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.wordnet import models
from gnkit.graph import GraphsTuple
from gnkit.sampling import LinkNeighborSampler, NeighborSampler, prefetch
from gnkit.tasks import wordnet as task


def step_memory_mb(jitted, *args) -> float:
    """MiB that XLA reserves for one call of `jitted(*args)`: arguments, outputs, temporaries."""
    stats = jitted.lower(*args).compile().memory_analysis()
    total = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    return total / 2**20


def _accuracies(logits, data) -> dict[str, float]:
    predicted = np.asarray(jnp.argmax(logits, axis=-1))
    return {split: float(np.mean(predicted[ids] == data.labels[ids]))
            for split, ids in (("valid", data.valid), ("test", data.test))}


def _masked_cross_entropy(logits, labels, mask):
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, labels)
    return jnp.sum(losses * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def train_sage(config, data, graph: GraphsTuple, should_stop=lambda: False) -> dict:
    """GraphSAGE on neighbour samples of the training synsets; tested on the whole graph.

    Args:
      config: the run's config (`hidden`, `fanouts`, `batch_size`, `epochs`, ...).
      data: what `load_data` returned.
      graph: one of `data.graphs`.
      should_stop: called after every step; True ends the epoch early.

    Returns:
      Valid and test accuracy, the median epoch time, the step's memory (MiB), the sampler's
      mean wait fraction, steps per epoch, the final loss and the per-epoch history.
    """
    model = models.SAGE(config.hidden, task.NUM_CLASSES)
    sampler = NeighborSampler(graph, config.fanouts, config.batch_size, seeds=data.train,
                              seed=config.seed)
    labels = jnp.asarray(data.labels)
    params = model.init(jax.random.PRNGKey(config.seed), sampler.empty().graph)
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)
    n_seed = config.batch_size

    @jax.jit
    def step(params, opt_state, sample):
        seed_labels = labels[jnp.maximum(sample.global_id[:n_seed], 0)]

        def loss_fn(params):
            logits = model.apply(params, sample.graph)[:n_seed]
            return _masked_cross_entropy(logits, seed_labels, sample.seed_mask)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    memory = step_memory_mb(step, params, opt_state, sampler.empty())
    history = []
    for epoch in range(config.epochs):
        batches = prefetch(sampler, epoch, num_workers=config.prefetch_workers)
        start, losses = time.perf_counter(), []
        for sample in batches:
            params, opt_state, loss = step(params, opt_state, sample)
            losses.append(float(loss))
            if should_stop():
                break
        history.append({"step": epoch + 1, "loss": float(np.mean(losses)),
                        "epoch_seconds": time.perf_counter() - start,
                        "sampler_wait_fraction": batches.wait_fraction})
    logits = jax.jit(model.apply)(params, graph)
    return {**_accuracies(logits, data),
            "epoch_seconds": float(np.median([row["epoch_seconds"] for row in history])),
            "step_memory_mib": memory,
            "sampler_wait_fraction": float(np.mean([r["sampler_wait_fraction"] for r in history])),
            "steps_per_epoch": len(sampler), "final_loss": float(loss), "epochs": history}


def train_full_batch(config, data, graph: GraphsTuple, name: str, should_stop=lambda: False):
    """GCN ('gcn') or the gloss MLP ('mlp'), full-batch Adam on the training synsets.

    Args:
      config: the run's config (`hidden`, `learning_rate`, `full_batch_updates`, ...).
      data: what `load_data` returned.
      graph: one of `data.graphs`.
      name: `"gcn"` or `"mlp"`.
      should_stop: called after every update but the first; True stops training.

    Returns:
      Valid and test accuracy, the mean time of one update (`epoch_seconds`, the first, which
      compiles, not counted), the step's memory (MiB) and the final loss.
    """
    model = models.classifier(name, config.hidden, task.NUM_CLASSES)
    labels = jnp.asarray(data.labels)
    mask = jnp.zeros(labels.shape[0]).at[data.train].set(1.0)
    graph = jax.device_put(graph)
    params = model.init(jax.random.PRNGKey(config.seed), graph)
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)

    # Labels and mask are arguments, not constants: XLA would try to fold the loss's gradient
    # scatter over a constant [N] index at compile time.
    @jax.jit
    def step(params, opt_state, graph, labels, mask):
        def loss_fn(params):
            return _masked_cross_entropy(model.apply(params, graph), labels, mask)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    memory = step_memory_mb(step, params, opt_state, graph, labels, mask)
    params, opt_state, loss = step(params, opt_state, graph, labels, mask)  # compiles
    loss.block_until_ready()
    start = time.perf_counter()
    for _ in range(config.full_batch_updates - 1):
        params, opt_state, loss = step(params, opt_state, graph, labels, mask)
        if should_stop():
            break
    loss.block_until_ready()
    seconds = (time.perf_counter() - start) / max(config.full_batch_updates - 1, 1)
    logits = jax.jit(model.apply)(params, graph)
    return {**_accuracies(logits, data), "epoch_seconds": seconds, "step_memory_mib": memory,
            "final_loss": float(loss)}


def run_label_propagation(config, data, graph: GraphsTuple) -> dict:
    """Label propagation from the training labels; its time is one whole propagation."""
    seed_labels = np.zeros((data.labels.shape[0], task.NUM_CLASSES), np.float32)
    seed_labels[data.train, data.labels[data.train]] = 1.0
    propagate = jax.jit(models.label_propagation, static_argnums=(2, 3))
    arguments = (graph._replace(nodes=None), jnp.asarray(seed_labels),
                 config.propagation_steps, config.propagation_alpha)
    propagate(*arguments).block_until_ready()
    start = time.perf_counter()
    scores = propagate(*arguments).block_until_ready()
    seconds = time.perf_counter() - start
    return {**_accuracies(scores, data), "epoch_seconds": seconds,
            "step_memory_mib": step_memory_mb(propagate, *arguments)}


def ranking_metrics(embeddings, sources, targets, known) -> dict[str, float]:
    """Filtered ranks of each `targets[i]` among all nodes for `sources[i]` (dot products).

    Args:
      embeddings: `[N, D]`, one row per node.
      sources: int `[P]`, the query nodes.
      targets: int `[P]`, the node to rank for each source.
      known: `{source: [(source, target), ...]}`, every known pair (every hypernym pointer);
        a source's other known targets are left out of its ranking.

    Returns:
      `{"mrr", "hits_at_10"}`, over the `P` queries.
    """
    embeddings = jnp.asarray(embeddings)
    ranks = []
    for start in range(0, sources.size, 512):
        rows = sources[start : start + 512]
        scores = np.array(embeddings[rows] @ embeddings.T)
        for row, (source, target) in enumerate(zip(rows, targets[start : start + 512],
                                                   strict=True)):
            others = [t for s, t in known.get(source, ()) if t != target]
            scores[row, others] = -np.inf
            ranks.append(1 + int(np.sum(scores[row] > scores[row, target])))
    ranks = np.asarray(ranks)
    return {"mrr": float(np.mean(1.0 / ranks)), "hits_at_10": float(np.mean(ranks <= 10))}


def train_link(config, data, should_stop=lambda: False) -> dict:
    """Link prediction of held-out hypernym pointers: a GraphSAGE encoder trained with the link
    sampler on the kept hypernyms (one uniform negative each), beside gloss cosine similarity."""
    wordnet = data.wordnet
    kept, _, test = task.hypernym_split(wordnet, config.seed, config.link_held_out)
    graph = task.to_graph(wordnet, data.features, kept)
    hypernym = task.POINTERS.index("@")
    sampler = LinkNeighborSampler(graph, config.link_fanouts, config.link_batch_size,
                                  edges=np.flatnonzero(np.asarray(graph.edges) == hypernym),
                                  seed=config.seed)
    model = models.SAGE(config.hidden, config.hidden)
    params = model.init(jax.random.PRNGKey(config.seed), sampler.empty().subgraph.graph)
    optimizer = optax.adam(config.learning_rate)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, sample):
        def loss_fn(params):
            logits = models.pair_scores(model.apply(params, sample.subgraph.graph), sample.pairs)
            losses = optax.sigmoid_binary_cross_entropy(logits, sample.labels)
            return jnp.sum(losses * sample.pair_mask) / jnp.maximum(jnp.sum(sample.pair_mask), 1)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    memory = step_memory_mb(step, params, opt_state, sampler.empty())
    epoch_seconds = []
    for epoch in range(config.link_epochs):
        start = time.perf_counter()
        for sample in prefetch(sampler, epoch, num_workers=config.prefetch_workers):
            params, opt_state, loss = step(params, opt_state, sample)
            loss.block_until_ready()
            if should_stop():
                break
        epoch_seconds.append(time.perf_counter() - start)
    is_hypernym = wordnet.pointer == hypernym
    known = {}
    for source, target in zip(wordnet.senders[is_hypernym], wordnet.receivers[is_hypernym],
                              strict=True):
        known.setdefault(int(source), []).append((int(source), int(target)))
    sources, targets = wordnet.senders[test], wordnet.receivers[test]
    embeddings = jax.jit(model.apply)(params, graph)
    return {
        "sage": {**ranking_metrics(embeddings, sources, targets, known),
                 "epoch_seconds": float(np.median(epoch_seconds)), "step_memory_mib": memory},
        "gloss_cosine": ranking_metrics(data.features, sources, targets, known),
        "test_edges": int(test.sum()),
    }
