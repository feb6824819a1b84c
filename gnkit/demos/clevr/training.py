"""How CLEVR's models learn and answer: loss, optimiser, initialisation, validation.
Jittable pieces inside host drivers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.clevr.config import ClevrConfig
from gnkit.demos.clevr.data import make_batch, question_batch
from gnkit.demos.clevr.models import build_model
from gnkit.experiments import runner
from gnkit.tasks.clevr import vocab


def loss_fn(model: nn.Module):
    """`(params, batch) -> (loss, metrics)`: cross-entropy in bits and accuracy. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch)
        answers = batch["answer"]
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels(logits, answers)
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == answers)
        return jnp.mean(cross_entropy) / jnp.log(2.0), {"accuracy": accuracy}

    return loss


def loss(name: str, config: ClevrConfig, data=None):
    """Model `name`'s `loss_fn` (`data` is not needed)."""
    return loss_fn(build_model(name, config))


def optimizer(config: ClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 5."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates, clip_norm=5.0)


def init(name: str, config: ClevrConfig, data: dict[str, dict]):
    """Model `name`'s initial parameters from `config.seed`."""
    return build_model(name, config).init(jax.random.key(config.seed), make_batch(config, data)(0))


@functools.cache
def answer_fn(name: str, config: ClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answer ids [B]` of model `name`, one per model and config
    in a process, so evaluation compiles once."""
    model = build_model(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch), -1))


def predict(answers_of: Callable, params, data: dict[str, np.ndarray], chunk: int = 500):
    """The answer id of every question of `data`, int `[Q]`. Host driver.

    Args:
      answers_of: the jitted `(params, batch) -> answer ids` of `answer_fn`.
      params: the model's parameters.
      data: an encoded split.
      chunk: questions per call.

    Returns:
      int `[Q]`.
    """
    select = functools.partial(question_batch, data)
    return runner.predict_in_chunks(answers_of, params, select, len(data["answer"]), chunk)


def accuracy_by_family(correct: np.ndarray, family: np.ndarray) -> dict[str, float]:
    """Accuracy overall and per question family (`vocab.FAMILIES`; NaN for a family without
    questions) from per-question correctness `[Q]` and family ids `[Q]`. Host."""
    table = {"overall": float(np.mean(correct)) if len(correct) else float("nan")}
    for index, name in enumerate(vocab.FAMILIES):
        chosen = correct[family == index]
        table[name] = float(np.mean(chosen)) if len(chosen) else float("nan")
    return table


def make_evaluate(name: str, config: ClevrConfig, data: dict[str, dict]):
    """`params -> metrics` for `fit`: validation accuracy (`score`) and per family."""
    answers_of = answer_fn(name, config)
    valid = data["val"]

    def evaluate(params):
        correct = predict(answers_of, params, valid) == valid["answer"]
        table = accuracy_by_family(correct, valid["family"])
        return {"score": table["overall"], **{k: round(v, 4) for k, v in table.items()}}

    return evaluate
