"""How Sort-of-CLEVR's models learn and answer: loss, optimiser, batch-norm calibration,
validation. Jittable pieces inside host drivers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.sort_of_clevr.config import SortOfClevrConfig
from gnkit.demos.sort_of_clevr.data import image_batch, make_batch
from gnkit.demos.sort_of_clevr.models import build_model
from gnkit.experiments import runner
from gnkit.tasks import sort_of_clevr as task

CALIBRATION_IMAGES = 200


def loss_fn(model: nn.Module):
    """`(params, batch) -> (loss, metrics)`: mean cross-entropy (nats) over every question of the
    batch; accuracy on its relational and non-relational questions. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch, train=True, mutable=["batch_stats"])[0]
        answers = batch["answer"]
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels(logits, answers)
        correct = (jnp.argmax(logits, axis=-1) == answers).astype(jnp.float32)
        relational = batch["relational"].astype(jnp.float32)
        metrics = {
            "relational": jnp.sum(correct * relational) / jnp.maximum(jnp.sum(relational), 1),
            "non_relational": jnp.sum(correct * (1 - relational))
            / jnp.maximum(jnp.sum(1 - relational), 1),
        }
        return jnp.mean(cross_entropy), metrics

    return loss


def loss(name: str, config: SortOfClevrConfig, data=None):
    """Model `name`'s `loss_fn` (`data` is not needed)."""
    return loss_fn(build_model(name, config))


def optimizer(config: SortOfClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


def init(name: str, config: SortOfClevrConfig, datasets: dict[str, dict]):
    """Model `name`'s initial parameters (and batch-norm statistics) from `config.seed`."""
    model = build_model(name, config)
    return model.init(jax.random.key(config.seed), make_batch(config, datasets)(0))


@functools.cache
def answer_fn(name: str, config: SortOfClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answers` int `[B, 20]` of model `name`; one per model and
    config in a process, so evaluation compiles once."""
    model = build_model(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch), -1))


def calibrated(name: str, config: SortOfClevrConfig, params, train: dict[str, np.ndarray]):
    """`params` with the batch-norm statistics (`batch_stats`) of the first `CALIBRATION_IMAGES`
    training images, each with its first non-relational and first relational question, for
    answering in test mode. (The training step normalises by each batch's own statistics and
    keeps none.) Host driver.

    Args:
      name: the model's name.
      config: the run's config.
      params: its variables (`params` and `batch_stats`).
      train: the training split.

    Returns:
      The variables with `batch_stats` replaced.
    """
    images = np.arange(min(CALIBRATION_IMAGES, len(train["images"])))
    batch = {
        key: value[:, :: task.QUESTIONS_PER_KIND] if value.ndim == 2 else value
        for key, value in image_batch(train, images).items()
    }
    model = build_model(name, config)
    _, updated = model.apply(params, batch, train=True, mutable=["batch_stats"])
    return {**params, "batch_stats": updated["batch_stats"]}


def predict(answers_of: Callable, params, data: dict[str, np.ndarray], chunk: int = 50):
    """The answers to every question of `data`, int `[I, 20]`, from `answers_of = answer_fn(...)`.
    Host driver.

    Args:
      answers_of: the jitted `(params, batch) -> answers` of `answer_fn`.
      params: the model's variables (batch norm calibrated).
      data: a split.
      chunk: images per call.

    Returns:
      int `[I, 20]`.
    """
    select = functools.partial(image_batch, data)
    return runner.predict_in_chunks(answers_of, params, select, len(data["images"]), chunk)


def answers(name: str, config: SortOfClevrConfig, params, datasets, split: str) -> np.ndarray:
    """Model `name`'s answers to every question of `split`, `[I, 20]`, in test mode (batch norm
    calibrated on training images). Host driver.

    Args:
      name: the model's name.
      config: the run's config.
      params: its trained variables.
      datasets: every split.
      split: `valid` or `test`.

    Returns:
      int `[I, 20]`.
    """
    params = calibrated(name, config, params, datasets["train"])
    return predict(answer_fn(name, config), params, datasets[split])


def make_evaluate(name: str, config: SortOfClevrConfig, datasets: dict[str, dict]):
    """`params -> metrics` for `fit`: validation accuracy on relational and non-relational
    questions, and their mean (`score`)."""
    valid = datasets["valid"]

    def evaluate(params):
        correct = answers(name, config, params, datasets, "valid") == valid["answer"]
        accuracy = task.accuracy_by_kind(correct, valid["relational"])
        return {"score": float(correct.mean()), **accuracy}

    return evaluate
