"""How the WordNet demo's models learn and answer: losses, the optimiser, initialisation,
validation, whole-graph answers and ranks, and the memory of one update. Jittable pieces
inside host drivers.

Classifiers minimise the cross-entropy of their batch's training synsets (the seed slots of
a GraphSAGE sample, or every training synset of the whole graph); they are validated and tested
on the whole graph with every neighbour. The link predictor minimises, per positive pair, the
cross-entropy of a softmax over the positive and its `link_negatives` uniform negatives
(which ranks the hypernym above random synsets, the task of the test), and is validated by the
filtered MRR of `link_valid_queries` held-out pairs.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.wordnet import models
from gnkit.demos.wordnet.config import LINK, WordNetConfig, family, variant
from gnkit.demos.wordnet.data import Data, full_batch, link_batch, link_sampler, make_batch
from gnkit.experiments import runner
from gnkit.tasks import wordnet as task


def build_model(name: str, config: WordNetConfig):
    """The Flax module of model `name`."""
    if name == LINK:
        return models.LinkPredictor(config.hidden)
    return models.classifier(family(name), config.hidden, task.NUM_CLASSES)


def classifier_loss(model):
    """`(params, batch) -> (loss, metrics)`: mean cross-entropy of the rows `batch['mask']`
    marks among the first `mask.shape[0]` outputs, and their accuracy. Jittable."""

    def loss_fn(params, batch):
        mask = batch["mask"]
        logits = model.apply(params, batch["graph"])[: mask.shape[0]]
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, batch["labels"])
        count = jnp.maximum(jnp.sum(mask), 1.0)
        correct = (jnp.argmax(logits, axis=-1) == batch["labels"]) * mask
        return jnp.sum(losses * mask) / count, {"accuracy": jnp.sum(correct) / count}

    return loss_fn


def link_loss(model, batch_size: int, negatives: int):
    """`(params, batch) -> (loss, metrics)`: per positive pair, the softmax cross-entropy of
    its score against its `negatives` negatives' (`LinkSample` order), averaged over the
    real positives; `positive_top` is the share of positives scored above all their
    negatives. Jittable."""

    def loss_fn(params, batch):
        scores = models.pair_scores(model.apply(params, batch["graph"]), batch["pairs"])
        logits = jnp.concatenate([scores[:batch_size, None],
                                  scores[batch_size:].reshape(batch_size, negatives)], axis=1)
        losses = optax.softmax_cross_entropy_with_integer_labels(
            logits, jnp.zeros(batch_size, jnp.int32))
        mask = batch["mask"][:batch_size]
        count = jnp.maximum(jnp.sum(mask), 1.0)
        top = (jnp.argmax(logits, axis=1) == 0) * mask
        return jnp.sum(losses * mask) / count, {"positive_top": jnp.sum(top) / count}

    return loss_fn


def loss(name: str, config: WordNetConfig, data: Data | None = None):
    """Model `name`'s loss function (`data` is not needed)."""
    model = build_model(name, config)
    if name == LINK:
        return link_loss(model, config.link_batch_size, config.link_negatives)
    return classifier_loss(model)


def optimizer(config: WordNetConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


def init(name: str, config: WordNetConfig, data: Data):
    """Model `name`'s initial parameters from `config.seed`, on the shapes of its batches."""
    if name == LINK:
        graph = link_batch(link_sampler(config, data).empty())["graph"]
    elif family(name) == "sage":
        graph = make_batch(name, config, data)(0)["graph"]
    else:
        graph = full_batch(name, data)["graph"]
    return jax.jit(build_model(name, config).init)(jax.random.key(config.seed), graph)


@functools.cache
def _apply(name: str, config: WordNetConfig):
    return jax.jit(build_model(name, config).apply)


def whole_graph_outputs(name: str, config: WordNetConfig, data: Data, params):
    """Model `name` on its whole graph with every neighbour: the logits `[N, 45]` of a
    classifier, or the link predictor's heads `(q, k, b)`."""
    if name == LINK:
        return _apply(name, config)(params, data.link.graph)
    graphs = data.typed if family(name) == "rgcn" else data.graphs
    return _apply(name, config)(params, graphs[variant(name)])


def accuracies(logits, data: Data) -> dict[str, float]:
    """Accuracy of `argmax(logits)` `[N, C]` on the valid and test synsets."""
    predicted = np.asarray(jnp.argmax(logits, axis=-1))
    return {split: float(np.mean(predicted[ids] == data.labels[ids]))
            for split, ids in (("valid", data.valid), ("test", data.test))}


def link_ranks(heads, pairs: np.ndarray, known) -> np.ndarray:
    """Filtered ranks `[P]` of each pair's hypernym among all synsets, by the link predictor's
    scores from its whole-graph heads `(q, k, b)`; `pairs` int `[2, P]`."""
    queries, keys, bias = (np.asarray(head) for head in heads)
    return task.filtered_ranks(lambda rows: queries[rows] @ keys.T + bias, pairs[0], pairs[1],
                               known)


def make_evaluate(name: str, config: WordNetConfig, data: Data):
    """`params -> metrics` for `fit`: the validation accuracy of a classifier, or the filtered
    MRR of the first `link_valid_queries` validation pairs (`score`)."""

    def evaluate(params):
        outputs = whole_graph_outputs(name, config, data, params)
        if name == LINK:
            pairs = data.link.valid[:, : config.link_valid_queries]
            metrics = task.ranking_metrics(link_ranks(outputs, pairs, data.link.known))
            return {"score": metrics["mrr"], **metrics}
        return {"score": accuracies(outputs, data)["valid"]}

    return evaluate


def step_memory_mib(name: str, config: WordNetConfig, data: Data, params) -> float:
    """MiB that XLA reserves for one update of model `name` (its loss's gradient and the Adam
    update, compiled for its batch shape): arguments, outputs and temporaries."""
    loss_fn, tx = loss(name, config), optimizer(config)

    def update(params, opt_state, batch):
        grads, _ = jax.grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    batch = make_batch(name, config, data)(0)
    stats = jax.jit(update).lower(params, tx.init(params), batch).compile().memory_analysis()
    total = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    return total / 2**20
