"""How N-th farthest's models learn: the paper's loss, Adam with a decay once every `n` is
asked, initialisation, test accuracy. Jittable pieces inside host drivers."""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.nth_farthest.config import NthFarthestConfig
from gnkit.demos.nth_farthest.models import build_model, dummy_inputs
from gnkit.experiments import runner


def loss_fn(model: nn.Module):
    """`(params, (inputs, targets)) -> (loss, metrics)`: cross-entropy of the final step's
    logits (the paper's loss), and accuracy. Jittable."""

    def loss(params, batch):
        inputs, targets = batch
        logits = model.apply(params, inputs)
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == targets)
        return jnp.mean(cross_entropy), {"accuracy": accuracy}

    return loss


def loss(name: str, config: NthFarthestConfig, data=None):
    """Model `name`'s `loss_fn` (`data` is not needed)."""
    return loss_fn(build_model(name, config))


def decay_start(config: NthFarthestConfig) -> int:
    """The update from which every `n` is asked (`curriculum_updates * (K - 1)`, 0 without a
    curriculum): the learning rate is constant before it and decays after it."""
    return config.curriculum_updates * (config.num_objects - 1)


def learning_rate_schedule(config: NthFarthestConfig) -> optax.Schedule:
    """`update -> learning rate`: `learning_rate` until `decay_start`, then a cosine decay to
    `final_learning_rate_fraction * learning_rate` at `updates` (constant after it)."""
    start = min(decay_start(config), config.updates)
    decay = optax.cosine_decay_schedule(
        config.learning_rate,
        decay_steps=max(1, config.updates - start),
        alpha=config.final_learning_rate_fraction,
    )
    constant = optax.constant_schedule(config.learning_rate)
    return optax.join_schedules([constant, decay], boundaries=[start])


def optimizer(config: NthFarthestConfig) -> optax.GradientTransformation:
    """Adam at `learning_rate_schedule` (a plain constant when `final_learning_rate_fraction`
    is 1), gradient global norm clipped at `clip_norm`."""
    clip = optax.clip_by_global_norm(config.clip_norm)
    if config.final_learning_rate_fraction == 1.0:
        return optax.chain(clip, optax.adam(config.learning_rate))
    return optax.chain(clip, optax.adam(learning_rate_schedule(config)))


@functools.partial(jax.jit, static_argnums=0)
def _answers(model: nn.Module, params, inputs: jax.Array) -> jax.Array:
    return jnp.argmax(model.apply(params, inputs), axis=-1)


def accuracy(model: nn.Module, params, data: tuple[np.ndarray, np.ndarray], chunk: int = 1000):
    """Fraction of `data`'s sequences answered right. Host driver.

    Args:
      model: the Flax module.
      params: its parameters.
      data: `(inputs [S, K, F + 3K], targets [S])`.
      chunk: sequences per call.

    Returns:
      The fraction answered right.
    """
    inputs, targets = data
    answer = functools.partial(_answers, model)
    answers = runner.predict_in_chunks(answer, params, inputs.__getitem__, len(targets), chunk)
    return int(np.sum(answers == targets)) / len(targets)


def init(name: str, config: NthFarthestConfig, test=None):
    """Model `name`'s initial parameters from `config.seed`."""
    del test
    return build_model(name, config).init(jax.random.key(config.seed), dummy_inputs(config))


def make_evaluate(name: str, config: NthFarthestConfig, test):
    """`params -> {"score": test accuracy}` for `fit`: the held-out test set's accuracy during
    training is the learning curve this demo reports."""
    model = build_model(name, config)
    return lambda params: {"score": accuracy(model, params, test)}
