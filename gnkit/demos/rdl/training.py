"""How the relational GNN learns and predicts: initialisation, loss, optimiser, validation.
Jittable pieces inside host drivers."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.rdl.config import RDLConfig
from gnkit.demos.rdl.data import RDLData, eval_batches, make_batch
from gnkit.demos.rdl.models import RelationalGNN
from gnkit.experiments import runner
from gnkit.rdl import task_metrics


def build_model(config: RDLConfig, data: RDLData) -> RelationalGNN:
    """The GNN for `data`'s tables and sampled edge sets."""
    categories = tuple((name, tuple(sizes)) for name, sizes in data.database.categories.items())
    return RelationalGNN(config.hidden, config.layers, categories, tuple(data.edge_sets),
                         config.batch_size)


def target_scale(data: RDLData) -> tuple[float, float]:
    """`(shift, scale)`: a regression's predictions are `shift + scale * head`, with the training
    labels' median and their mean absolute deviation from it, so the head learns labels of
    about unit size; `(0, 1)` (the logits themselves) for a binary task."""
    if data.task.kind == "binary":
        return 0.0, 1.0
    labels = data.tables["train"].label.astype(np.float64)
    median = float(np.median(labels))
    return median, float(max(np.mean(np.abs(labels - median)), 1e-6))


def init(name: str, config: RDLConfig, data: RDLData):
    """Replicate `name`'s (`gnn<k>`) initial parameters, from `config.seed + k`."""
    batch = make_batch(name, config, data)(0)
    key = jax.random.key(config.replicate_seed(name))
    return build_model(config, data).init(key, batch["graph"], batch["roots"])


def loss(name: str, config: RDLConfig, data: RDLData):
    """`(params, batch) -> (loss, metrics)`: binary cross-entropy of the seed slots' logits
    (binary tasks) or the absolute error of their values (regression, the head scaled by
    `target_scale`), masked to real seeds. Jittable."""
    model = build_model(config, data)
    binary = data.task.kind == "binary"
    shift, scale = target_scale(data)

    def loss_fn(params, batch):
        scores = shift + scale * model.apply(params, batch["graph"], batch["roots"])
        labels, mask = batch["labels"], batch["mask"].astype(jnp.float32)
        if binary:
            errors = optax.sigmoid_binary_cross_entropy(scores, labels)
        else:
            errors = jnp.abs(scores - labels)
        value = jnp.sum(errors * mask) / jnp.maximum(jnp.sum(mask), 1.0)
        return value, {}

    return loss_fn


def optimizer(config: RDLConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


@functools.cache
def _predict(model: RelationalGNN):
    return jax.jit(lambda params, graph, roots: model.apply(params, graph, roots))


def predictions(config: RDLConfig, data: RDLData, params, batches: list[dict]) -> np.ndarray:
    """The model's predictions (probabilities, or values) for every real seed of `batches`, in
    order. Host driver.

    Args:
      config: the run's config.
      data: the `RDLData`.
      params: the model's parameters.
      batches: model batches (`eval_batches`).

    Returns:
      `[n]`, one prediction per real seed.
    """
    predict = _predict(build_model(config, data))
    outputs = []
    for batch in batches:
        scores = np.asarray(predict(params, batch["graph"], batch["roots"]))[batch["mask"]]
        outputs.append(scores)
    shift, scale = target_scale(data)
    scores = shift + scale * np.concatenate(outputs)
    return 1 / (1 + np.exp(-scores)) if data.task.kind == "binary" else scores


def score(kind: str, metrics: dict) -> float:
    """The validation score that picks the best state: AUROC, or minus the MAE."""
    return metrics["auroc"] if kind == "binary" else -metrics["mae"]


def make_evaluate(name: str, config: RDLConfig, data: RDLData):
    """`params -> metrics` for `fit`: the validation metrics and their `score`."""
    batches = eval_batches(config, data, "valid")
    labels = data.tables["valid"].label

    def evaluate(params):
        metrics = task_metrics(data.task.kind, labels, predictions(config, data, params, batches))
        return {"score": score(data.task.kind, metrics), **metrics}

    return evaluate
