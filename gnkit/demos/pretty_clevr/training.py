"""How Pretty-CLEVR's models learn and answer: loss, optimiser, initialisation, validation.
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

from gnkit.demos.pretty_clevr.config import PrettyClevrConfig
from gnkit.demos.pretty_clevr.data import make_batch, question_batch, subset
from gnkit.demos.pretty_clevr.models import build_model, model_steps
from gnkit.experiments import runner
from gnkit.tasks import pretty_clevr as task


def loss_fn(model: nn.Module, num_steps: int):
    """`(params, batch) -> (loss, metrics)`: cross-entropy in bits, averaged over the steps;
    accuracy of the last step. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch, num_steps)
        answers = batch["answer"]
        per_step = optax.softmax_cross_entropy_with_integer_labels(logits, answers[None])
        accuracy = jnp.mean(jnp.argmax(logits[-1], axis=-1) == answers)
        return jnp.mean(per_step) / jnp.log(2.0), {"accuracy": accuracy}

    return loss


def loss(name: str, config: PrettyClevrConfig, data=None):
    """Model `name`'s `loss_fn` over its steps (`data` is not needed)."""
    return loss_fn(build_model(name, config), model_steps(name, config))


def optimizer(config: PrettyClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


def init(name: str, config: PrettyClevrConfig, datasets: dict[str, dict]):
    """Model `name`'s initial parameters from `config.seed`."""
    model, num_steps = build_model(name, config), model_steps(name, config)
    example = make_batch(config, datasets)(0)
    return model.init(jax.random.key(config.seed), example, num_steps)


@functools.cache
def answer_fn(name: str, config: PrettyClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answers after each step`, int `[num_steps, B]`, of model
    `name`; one per model and config in a process, so evaluation compiles once."""
    model, num_steps = build_model(name, config), model_steps(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch, num_steps), -1))


def predict(answers_of: Callable, params, data: dict[str, np.ndarray], chunk: int = 1024):
    """The answers of every question of `data` after each step: int `[num_steps, Q]`, from
    `answers_of = answer_fn(...)`. Host driver.

    Args:
      answers_of: the jitted `(params, batch) -> answers [steps, B]` of `answer_fn`.
      params: the model's parameters.
      data: a split.
      chunk: questions per call.

    Returns:
      int `[num_steps, Q]`.
    """
    select = functools.partial(question_batch, data)
    return runner.predict_in_chunks(answers_of, params, select, len(data["scene"]), chunk, axis=1)


def accuracy_table(predictions: np.ndarray, data: dict[str, np.ndarray]) -> np.ndarray:
    """Accuracy per step and number of jumps, `[num_steps, 8]`, from `predict`'s output. Host."""
    return task.accuracy_by_jumps(predictions == data["answer"], data["jumps"])


def make_evaluate(name: str, config: PrettyClevrConfig, datasets: dict[str, dict]):
    """`params -> metrics` for `fit`: accuracy on the first `monitor_scenes` validation scenes
    at the last step (`score`) and per number of jumps."""
    answers_of = answer_fn(name, config)
    monitor = subset(datasets["valid"], config.monitor_scenes)

    def evaluate(params):
        table = accuracy_table(predict(answers_of, params, monitor), monitor)
        return {"score": float(np.nanmean(table[-1])), "accuracy_by_jumps": table[-1].round(4)}

    return evaluate
