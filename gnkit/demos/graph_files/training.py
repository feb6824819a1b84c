"""How the graph-files demo's models learn and answer: the masked cross-entropy of the
training entities, the optimiser, initialisation, whole-graph answers and accuracies.
Jittable pieces inside host drivers."""

from __future__ import annotations

import functools

import jax
import numpy as np
import optax

from gnkit.demos.graph_files import models
from gnkit.demos.graph_files.config import GraphFilesConfig
from gnkit.demos.graph_files.data import Data
from gnkit.demos.wordnet.training import classifier_loss
from gnkit.experiments import runner


def build_model(name: str, config: GraphFilesConfig, data: Data):
    """The Flax module of model `name` for `data`'s task and classes."""
    return models.build_model(name, data.labelled.task, config.hidden, data.num_classes)


def loss(name: str, config: GraphFilesConfig, data: Data):
    """`(params, batch) -> (loss, {"accuracy"})`: the mean cross-entropy of the training
    entities (WordNet's masked classifier loss). Jittable."""
    return classifier_loss(build_model(name, config, data))


def optimizer(config: GraphFilesConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates)


def init(name: str, config: GraphFilesConfig, data: Data):
    """Model `name`'s initial parameters from `config.seed` (one compiled call, not an eager
    call per operation)."""
    return jax.jit(build_model(name, config, data).init)(jax.random.key(config.seed), data.graph)


@functools.cache
def _apply(name: str, config: GraphFilesConfig, task: str, classes: int):
    return jax.jit(models.build_model(name, task, config.hidden, classes).apply)


def logits(name: str, config: GraphFilesConfig, data: Data, params, graph=None) -> np.ndarray:
    """Model `name`'s logits `[M, classes]` on `data.graph` (or another `graph` of the same
    features)."""
    apply = _apply(name, config, data.labelled.task, data.num_classes)
    return np.asarray(apply(params, data.graph if graph is None else graph))


def accuracies(scores: np.ndarray, data: Data) -> dict[str, float]:
    """Accuracy of `argmax(scores)` `[M, C]` on the train, valid and test entities."""
    predicted = np.argmax(scores, axis=-1)
    labels = data.labelled.labels
    return {split: float(np.mean(predicted[rows] == labels[rows]))
            for split, rows in (("train", data.train), ("valid", data.valid),
                                ("test", data.test))}


def make_evaluate(name: str, config: GraphFilesConfig, data: Data):
    """`params -> {"score": validation accuracy}` for `fit`."""

    def evaluate(params):
        return {"score": accuracies(logits(name, config, data, params), data)["valid"]}

    return evaluate


def probabilities(scores: np.ndarray) -> np.ndarray:
    """The softmax of logits `[M, C]`, float64 (host NumPy)."""
    shifted = np.exp(np.asarray(scores, np.float64) - np.max(scores, axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)
