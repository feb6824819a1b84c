"""How the typed-nodes demo's models learn and answer: the masked loss, the optimiser, the
initialisation of each replicate, the logits and accuracy per split. Jittable pieces inside
host drivers."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.typed_nodes.config import TypedNodesConfig, family, replicate
from gnkit.demos.typed_nodes.data import Data, full_batch
from gnkit.demos.typed_nodes.models import build_model
from gnkit.experiments import runner


def loss_fn(model):
    """`(params, batch) -> (loss, metrics)`: mean cross-entropy over the training nodes
    (`batch['mask']`), and their accuracy. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, batch["labels"])
        mask = batch["mask"]
        count = jnp.maximum(jnp.sum(mask), 1.0)
        correct = (jnp.argmax(logits, axis=-1) == batch["labels"]) * mask
        return jnp.sum(losses * mask) / count, {"accuracy": jnp.sum(correct) / count}

    return loss


def loss(name: str, config: TypedNodesConfig, data: Data | None = None):
    """Model `name`'s `loss_fn` (`data` is not needed)."""
    return loss_fn(build_model(family(name), config.hidden))


def optimizer(config: TypedNodesConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


def init(name: str, config: TypedNodesConfig, data: Data):
    """Replicate `name`'s initial parameters, from `config.seed` plus its replicate number."""
    model = build_model(family(name), config.hidden)
    return model.init(jax.random.key(config.seed + replicate(name)), full_batch(data))


@functools.cache
def logits_fn(model_family: str, hidden: int) -> Callable:
    """The jitted `(params, batch) -> logits [N, 2]` of a family, one per process and width."""
    return jax.jit(build_model(model_family, hidden).apply)


def accuracies(name: str, config: TypedNodesConfig, data: Data, params) -> dict[str, float]:
    """Model `name`'s accuracy on the train, valid and test nodes. Host driver.

    Args:
      name: the model's name (its family picks the architecture).
      config: the run's config (`hidden`, the width).
      data: what `load_data` returned.
      params: the model's parameters.

    Returns:
      `{"train", "valid", "test": accuracy}`.
    """
    logits = logits_fn(family(name), config.hidden)(params, full_batch(data))
    correct = np.asarray(jnp.argmax(logits, axis=-1)) == data.labels
    return {split: float(np.mean(correct[mask])) for split, mask in data.splits.items()}


def make_evaluate(name: str, config: TypedNodesConfig, data: Data):
    """`params -> metrics` for `fit`: the validation accuracy (`score`)."""

    def evaluate(params):
        return {"score": accuracies(name, config, data, params)["valid"]}

    return evaluate
