"""Sort-of-CLEVR from pixels: a CNN + relation network vs a CNN + MLP (Santoro et al., 2017).

Images and questions from `gnkit.tasks.sort_of_clevr` (6 objects, 10 relational and 10
non-relational questions per image). Both models share the image encoder: 3x3 convolutions with
the strides of `conv_strides`, `conv_channels` channels, instance normalisation (when
`normalize_cnn`) or batch normalisation (when `batch_norm`) and ReLU, which turn a 75x75 image
into a small feature map (4x4 for strides 2, 2, 2, 3; 5x5 for four of 2). With
`colour_channels` (a departure from the paper's CNN), a second path beside the strided stack
keeps each cell's colours apart: a 1x1 convolution of the pixels (normalised as the stack, ReLU),
max-pooled over each cell of the map and appended to the cell's features. Each image is encoded
once and `questions_per_image` of its 20 questions (drawn at random each update) are answered
from the same map. With `balance_question` the question vector (one-hot colour, relational flag,
type) is multiplied by the square root of the number of image features that enter the same layer
(the RN's object features; the MLP's whole map), so that at initialisation it moves that layer as
much as the image does.

- `rn`: the cells of the map, each tagged with its `(x, y)` coordinates in [-1, 1], are the
  objects of a relation network: `g` over all ordered cell pairs with the question vector, summed
  (`nn.RelationNetwork.dense`) or averaged (`pair_reduction="mean"`, `CellRelationNetwork`; with
  `"mean_max"`, the mean beside the maximum over the pairs), then `f` to the 10 answers. With
  `pair_geometry` (a departure from the paper's RN), `g` also sees each pair's offset and
  distance, `(x_s - x_r, y_s - y_r, |s - r|)`, in its first layer. With
  `pooled_batch_norm` (also a departure), the pooled pair features are batch-normalised before
  `f`, so that differences between questions and images, small against the pooled mean, reach `f`
  at unit scale.
- `mlp`: the flattened map and the question through an MLP (the paper's CNN+MLP baseline).

`gnkit sort-of-clevr train` generates the data set (cached in the run directory as
`data_<split>.npz`), trains each model of `models` in turn (resumable), keeps the state with the
best validation accuracy, and tests it: accuracy on the relational and non-relational test
questions, a figure of validation curves and test accuracy (`accuracy.png`), and a grid of test
images with a question, its answer and each model's prediction (`examples.png`). `eval` tests a
finished run again. Host driver around jitted steps.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments, parallel
from gnkit import train as training
from gnkit.experiments import setting
from gnkit.nn import MLP, RelationNetwork
from gnkit.tasks import sort_of_clevr as task

ModelName = Literal["rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rn", "mlp")
SPLITS = ("train", "valid", "test")
_QUESTION_KEYS = ("color", "relational", "kind", "answer")
# Santoro et al. (2017), section 5.3: the CNN+RN above 94% on both kinds of question; the
# CNN+MLP as good on non-relational ones, 63% on relational ones.
PAPER = {
    "rn": {"relational": 0.94, "non_relational": 0.94},
    "mlp": {"relational": 0.63, "non_relational": 0.94},
}


@dataclasses.dataclass(frozen=True)
class SortOfClevrConfig:
    """Data, models and training of one run; every model in `models` gets the same budget."""

    models: tuple[ModelName, ...] = setting(("rn", "mlp"), help="models to train, in turn")
    updates: int = setting(12_000, minimum=1, help="optimiser steps per model")
    images_per_batch: int = setting(32, minimum=1, help="images per update")
    questions_per_image: int = setting(
        2, minimum=1, help="questions of each image per update (at most 20), drawn at random"
    )
    conv_strides: tuple[int, ...] = setting(
        (2, 2, 2, 2), minimum=1, help="strides of the encoder's 3x3 convolutions, one a layer"
    )
    conv_channels: int = setting(24, minimum=1)
    colour_channels: int = setting(
        32, minimum=0, help="per-pixel 1x1-convolution channels max-pooled per cell (0: none)"
    )
    colour_centroids: bool = setting(
        False, help="colour path: each channel's centroid within the cell, beside its maximum"
    )
    normalize_cnn: bool = setting(False, help="instance normalisation after each convolution")
    batch_norm: bool = setting(
        True, help="batch normalisation after each convolution (replaces normalize_cnn)"
    )
    balance_question: bool = setting(
        False, help="scale the question by sqrt(image features entering the same layer)"
    )
    pair_features: tuple[int, ...] = setting((64, 64, 64), minimum=1, help="RN's g")
    pair_reduction: Literal["sum", "mean", "mean_max"] = setting(
        "mean", help="RN: pool g over the pairs (mean_max: the mean and the maximum side by side)"
    )
    pair_geometry: bool = setting(
        True, help="RN: g also sees each cell pair's offset and distance (not in the paper)"
    )
    pooled_batch_norm: bool = setting(
        True,
        help="RN: batch normalisation of the pooled pair features before f (not in the paper)",
    )
    output_features: tuple[int, ...] = setting(
        (256, 256), minimum=1, help="RN's f before the answer layer"
    )
    mlp_features: tuple[int, ...] = setting(
        (256, 256, 256), minimum=1, help="CNN+MLP hidden layers"
    )
    learning_rate: float = setting(1e-3, minimum=0.0, help="Adam, cosine decay to 5%")
    train_images: int = setting(9_800, minimum=1)
    valid_images: int = setting(200, minimum=1, help="for choosing the best checkpoint")
    test_images: int = setting(200, minimum=1)
    eval_every_updates: int = setting(1_000, minimum=1)
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if not self.pair_features:
            raise ValueError("pair_features must have at least one layer")
        if self.questions_per_image > task.QUESTIONS_PER_IMAGE:
            raise ValueError(f"questions_per_image must be at most {task.QUESTIONS_PER_IMAGE}")


CONFIGS = {
    "default": SortOfClevrConfig(),
    # The paper's CNN and RN (no colour path; g of four 256-wide layers summed over the pairs,
    # no pair geometry, no pooled batch norm; f of 256, 256) with the reference code's batch of
    # 64 (image, question) pairs and Adam 1e-4; the update count (about 65 epochs) is a guess
    # at an accelerator's budget, the paper gives none.
    "paper": SortOfClevrConfig(
        updates=200_000,
        images_per_batch=64,
        questions_per_image=1,
        pair_features=(256,) * 4,
        pair_reduction="sum",
        pair_geometry=False,
        pooled_batch_norm=False,
        colour_channels=0,
        learning_rate=1e-4,
    ),
    "tiny": SortOfClevrConfig(
        updates=6,
        images_per_batch=2,
        questions_per_image=20,
        conv_channels=8,
        pair_features=(16, 16),
        output_features=(16,),
        mlp_features=(16,),
        train_images=12,
        valid_images=4,
        test_images=4,
        eval_every_updates=3,
    ),
}


def question_features(color: jax.Array, relational: jax.Array, kind: jax.Array) -> jax.Array:
    """The question vectors `[..., 11]` (one-hot colour, relational flag, type) of integer
    arrays of one shape; the same encoding as `task.question_vectors`. Jittable."""
    return jnp.concatenate(
        [
            jax.nn.one_hot(color, task.NUM_OBJECTS),
            jax.nn.one_hot(jnp.asarray(relational, jnp.int32), 2),
            jax.nn.one_hot(kind, 3),
        ],
        axis=-1,
    )


class ImageEncoder(nn.Module):
    """3x3 convolutions with the given `strides`, each followed (when `normalize`) by instance
    normalisation (each channel of each image to mean 0, variance 1 over the map, with a learnt
    scale and offset; it needs no batch statistics) and ReLU: uint8 images `[B, 75, 75, 3]` to a
    feature map `[B, h, w, channels]` (4x4 for strides 2, 2, 2, 3). The pixels enter as ink,
    `1 - value / 255`, so the white background is 0.

    With `batch_norm` each convolution is followed by batch normalisation instead: with
    `train`, each channel is normalised by its mean and variance over the batch's images and
    cells; otherwise by the `batch_stats` collection, which `calibrated` sets to the statistics
    of a fixed batch of training images (momentum 0: one train-mode pass stores that batch's
    statistics).

    With `colour_channels` > 0, the map `[B, h, w, channels]` gets `colour_channels` more
    features per cell: a 1x1 convolution of the pixels, normalised as the stack and through
    ReLU, then its maximum over each cell's window of `ceil(75 / h)` x `ceil(75 / w)` pixels.
    A per-pixel colour detector keeps its colour in its own channel up to the cell, where the
    strided 3x3 stack mixes neighbouring colours from its first layer. With `colour_centroids`
    each cell also gets, per colour channel, where in the cell that channel's activation lies
    (`cell_centroids`: `2 * colour_channels` more features), the position within the cell that
    the maximum drops. Jittable."""

    strides: tuple[int, ...]
    channels: int
    normalize: bool = True
    batch_norm: bool = False
    colour_channels: int = 0
    colour_centroids: bool = False

    def _normalized(self, hidden: jax.Array, train: bool) -> jax.Array:
        if self.batch_norm:
            hidden = nn.BatchNorm(use_running_average=not train, momentum=0.0)(hidden)
        elif self.normalize:
            hidden = nn.GroupNorm(num_groups=None, group_size=1)(hidden)
        return nn.relu(hidden)

    @nn.compact
    def __call__(self, images: jax.Array, train: bool = False) -> jax.Array:
        ink = 1.0 - images.astype(jnp.float32) / 255.0
        hidden = ink
        for stride in self.strides:
            hidden = nn.Conv(self.channels, (3, 3), strides=stride, padding="SAME")(hidden)
            hidden = self._normalized(hidden, train)
        if not self.colour_channels:
            return hidden
        colours = self._normalized(nn.Conv(self.colour_channels, (1, 1))(ink), train)
        sizes = zip(ink.shape[1:3], hidden.shape[1:3], strict=True)
        window = tuple(-(-size // cells) for size, cells in sizes)
        pooled = cell_windows(colours, window).max(axis=(2, 4))
        if pooled.shape[1:3] != hidden.shape[1:3]:
            raise ValueError(
                f"the colour path's {pooled.shape[1:3]} cells do not match the"
                f" {hidden.shape[1:3]} map of conv_strides {self.strides}"
            )
        if not self.colour_centroids:
            return jnp.concatenate([hidden, pooled], axis=-1)
        centroids = cell_centroids(colours, window)
        return jnp.concatenate([hidden, pooled, centroids], axis=-1)


def cell_windows(values: jax.Array, window: tuple[int, int]) -> jax.Array:
    """`values` `[B, H, W, K]` cut into cells of `window` pixels tiling them from the top-left
    pixel: `[B, h, window[0], w, window[1], K]`, the last row and column of cells completed with
    zeros. Reduce axes 2 and 4 to pool each cell. Jittable."""
    batch, height, width, channels = values.shape
    rows, columns = -height % window[0], -width % window[1]
    padded = jnp.pad(values, ((0, 0), (0, rows), (0, columns), (0, 0)))
    return padded.reshape(
        batch,
        (height + rows) // window[0],
        window[0],
        (width + columns) // window[1],
        window[1],
        channels,
    )


def cell_centroids(weights: jax.Array, window: tuple[int, int]) -> jax.Array:
    """Where each channel's non-negative `weights` `[B, H, W, K]` lie within each cell of
    `window` pixels: `[B, h, w, 2K]`, the x then the y offsets of each channel's weighted mean
    pixel from the cell's centre, in half-cell widths (in [-1, 1]; 0 where the channel is zero
    over the cell). Cells tile the image from its top-left pixel; the last row and column may
    be partial. Jittable."""
    _, height, width, _ = weights.shape

    def offsets(size: int, cell: int) -> jax.Array:
        within = jnp.arange(size) % cell
        return (2.0 * within + 1.0) / cell - 1.0

    def cell_sum(values: jax.Array) -> jax.Array:
        return cell_windows(values, window).sum(axis=(2, 4))

    x = offsets(width, window[1])[None, None, :, None]
    y = offsets(height, window[0])[None, :, None, None]
    mass = cell_sum(weights)
    safe = jnp.where(mass > 0, mass, 1.0)
    centroid_x = cell_sum(weights * x) / safe
    centroid_y = cell_sum(weights * y) / safe
    return jnp.concatenate([centroid_x, centroid_y], axis=-1)


def image_encoder(config: SortOfClevrConfig) -> ImageEncoder:
    """The shared image encoder of both models, named `cnn`, as `config` sets it up; call it
    inside a compact module."""
    return ImageEncoder(
        tuple(config.conv_strides),
        config.conv_channels,
        config.normalize_cnn,
        config.batch_norm,
        config.colour_channels,
        config.colour_centroids,
        name="cnn",
    )


def cells_as_objects(feature_map: jax.Array) -> jax.Array:
    """The cells of a feature map `[B, h, w, C]` as objects `[B, h * w, C + 2]`, row-major, each
    with its column and row coordinates in [-1, 1] appended. Jittable."""
    batch, height, width, channels = feature_map.shape
    rows, columns = jnp.meshgrid(
        jnp.linspace(-1.0, 1.0, height), jnp.linspace(-1.0, 1.0, width), indexing="ij"
    )
    coordinates = jnp.broadcast_to(jnp.stack([columns, rows], -1), (batch, height, width, 2))
    objects = jnp.concatenate([feature_map, coordinates.astype(feature_map.dtype)], axis=-1)
    return objects.reshape(batch, height * width, channels + 2)


def pair_geometry(coordinates: jax.Array) -> jax.Array:
    """For the cells at `coordinates` `[n, 2]`, each ordered pair's offset and distance
    `[n, n, 3]`: `(x_s - x_r, y_s - y_r, |s - r|)` for receiver `r` and sender `s`. Jittable."""
    offsets = coordinates[None, :, :] - coordinates[:, None, :]
    distances = jnp.sqrt(jnp.sum(offsets**2, axis=-1, keepdims=True))
    return jnp.concatenate([offsets, distances], axis=-1)


class CellRelationNetwork(nn.Module):
    """A relation network over the objects of each image for each of its questions:
    `f(reduce_{i,j} g(o_i, o_j, q))` over all ordered pairs `(i, j)`, `i = j` included, with
    `reduce` the mean (or the sum) over the `n^2` pairs; with `"mean_max"`, each feature's mean
    and maximum over the pairs side by side (`2 * pair_features[-1]` features). Objects
    `[B, n, F]`, questions `[B, Q, D]`; returns `[B, Q, output_features[-1]]`.

    The first layer of `g` is factorised as in `nn.RelationNetwork` (`A o_i + B o_j + C q + b`),
    and the object projections are shared by the questions of an image. It is `nn.RelationNetwork`
    (whose sum is unscaled) but for the mean: with the sum, the input of `f` grows with the
    `n^2` pairs. With `pooled_batch_norm`, the pooled features go through batch normalisation
    (named `pooled_norm`) before `f`: the batch's statistics when `train`, else `batch_stats`.
    Jittable."""

    pair_features: tuple[int, ...]
    output_features: tuple[int, ...]
    reduction: Literal["mean", "sum", "mean_max"] = "mean"
    geometry: bool = False
    pooled_batch_norm: bool = False

    @nn.compact
    def __call__(self, objects: jax.Array, questions: jax.Array, train: bool = False) -> jax.Array:
        first = self.pair_features[0]
        receiver = nn.Dense(first, use_bias=False, name="pair_0_receiver")(objects)
        sender = nn.Dense(first, use_bias=False, name="pair_0_sender")(objects)
        question = nn.Dense(first, name="pair_0_question")(questions)
        pairs = receiver[:, :, None, :] + sender[:, None, :, :]
        if self.geometry:
            geometry = pair_geometry(objects[0, :, -2:])
            pairs = pairs + nn.Dense(first, use_bias=False, name="pair_0_geometry")(geometry)
        hidden = nn.relu(pairs[:, None] + question[:, :, None, None, :])
        for index, width in enumerate(self.pair_features[1:], start=1):
            hidden = nn.relu(nn.Dense(width, name=f"pair_{index}")(hidden))
        pooled = hidden.sum(axis=(2, 3))
        if self.reduction != "sum":
            pooled = pooled / (objects.shape[1] ** 2)
        if self.reduction == "mean_max":
            pooled = jnp.concatenate([pooled, hidden.max(axis=(2, 3))], axis=-1)
        if self.pooled_batch_norm:
            norm = nn.BatchNorm(use_running_average=not train, momentum=0.0, name="pooled_norm")
            pooled = norm(pooled)
        return MLP(self.output_features, name="output")(pooled)


class CnnRelationNetwork(nn.Module):
    """CNN + RN: answer logits `[B, Q, 10]` for a batch of images `[B, 75, 75, 3]` and their
    questions `[B, Q]` (see `make_batch`). Jittable."""

    config: SortOfClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], train: bool = False) -> jax.Array:
        config = self.config
        feature_map = image_encoder(config)(batch["images"], train)
        objects = cells_as_objects(feature_map)
        questions = question_features(batch["color"], batch["relational"], batch["kind"])
        if config.balance_question:
            questions = questions * np.sqrt(objects.shape[-1])
        features = (tuple(config.pair_features), (*config.output_features, task.NUM_ANSWERS))
        if config.pair_reduction != "sum" or config.pair_geometry or config.pooled_batch_norm:
            network = CellRelationNetwork(
                *features,
                config.pair_reduction,
                config.pair_geometry,
                config.pooled_batch_norm,
                name="rn",
            )
            return network(objects, questions, train)
        num_images, num_questions = questions.shape[:2]
        network = RelationNetwork(*features, name="rn")
        per_question = jnp.repeat(objects, num_questions, axis=0)
        logits = network.dense(per_question, questions.reshape(num_images * num_questions, -1))
        return logits.reshape(num_images, num_questions, task.NUM_ANSWERS)


class CnnMLP(nn.Module):
    """CNN + MLP: answer logits `[B, Q, 10]` from the flattened feature map and each question.
    Jittable."""

    config: SortOfClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], train: bool = False) -> jax.Array:
        config = self.config
        feature_map = image_encoder(config)(batch["images"], train)
        questions = question_features(batch["color"], batch["relational"], batch["kind"])
        num_images, num_questions = questions.shape[:2]
        flat = feature_map.reshape(num_images, 1, -1)
        if config.balance_question:
            questions = questions * np.sqrt(flat.shape[-1])
        flat = jnp.broadcast_to(flat, (num_images, num_questions, flat.shape[-1]))
        mlp = MLP((*config.mlp_features, task.NUM_ANSWERS), name="mlp")
        return mlp(jnp.concatenate([flat, questions], axis=-1))


def build_model(name: str, config: SortOfClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rn` or `mlp`)."""
    return {"rn": CnnRelationNetwork, "mlp": CnnMLP}[name](config)


def load_datasets(config: SortOfClevrConfig, run_dir: experiments.RunDir) -> dict[str, dict]:
    """Train, validation and test images with their questions, from `config.seed`; generated
    once and cached in the run directory (`data_<split>.npz`). Host."""
    sizes = {"train": config.train_images, "valid": config.valid_images, "test": config.test_images}
    datasets = {}
    for index, split in enumerate(SPLITS):
        seed = int(np.random.SeedSequence([config.seed, index]).generate_state(1)[0])
        path = run_dir.file(f"data_{split}.npz")
        with experiments.reading_file(path, "a cached Sort-of-CLEVR data set (delete it)"):
            datasets[split] = task.load_or_generate(path, seed, sizes[split])
    return datasets


def image_batch(data: dict[str, np.ndarray], images: np.ndarray) -> dict[str, np.ndarray]:
    """The model input of the given image indices `[B]`: `images` uint8 `[B, 75, 75, 3]` and
    the questions' `color`, `relational`, `kind`, `answer`, int32 `[B, 20]`. Host."""
    questions = {key: data[key][images].astype(np.int32) for key in _QUESTION_KEYS}
    return {"images": data["images"][images], **questions}


def make_batch(config: SortOfClevrConfig, train: dict[str, np.ndarray]) -> Callable[[int], dict]:
    """`step -> batch` of `images_per_batch` training images: epochs of the training set, each in
    its own random order. A pure function of the step, so a resumed run sees the same batches.
    Host."""
    num_images, size = len(train["images"]), config.images_per_batch
    per_image = config.questions_per_image

    def batch(step: int) -> dict[str, np.ndarray]:
        positions = np.arange(step * size, (step + 1) * size)
        epochs, offsets = np.divmod(positions, num_images)
        orders = {
            epoch: np.random.default_rng([config.seed, 1_000, epoch]).permutation(num_images)
            for epoch in np.unique(epochs)
        }
        images = np.array([orders[e][o] for e, o in zip(epochs, offsets, strict=True)])
        full = image_batch(train, images)
        if per_image == task.QUESTIONS_PER_IMAGE:
            return full
        rng = np.random.default_rng([config.seed, 2_000, step])
        chosen = np.argsort(rng.random((size, task.QUESTIONS_PER_IMAGE)), axis=1)[:, :per_image]
        questions = {key: np.take_along_axis(full[key], chosen, 1) for key in _QUESTION_KEYS}
        return {"images": full["images"], **questions}

    return batch


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


def optimizer(config: SortOfClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    warmup = max(1, min(500, config.updates // 10))
    decay_steps = max(config.updates, warmup + 1)
    peak, end = config.learning_rate, config.learning_rate / 20
    schedule = optax.warmup_cosine_decay_schedule(0.0, peak, warmup, decay_steps, end)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


@functools.cache
def answer_fn(name: str, config: SortOfClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answers` int `[B, 20]` of model `name`; one per model and
    config in a process, so evaluation compiles once."""
    model = build_model(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch), -1))


CALIBRATION_IMAGES = 200


def uses_batch_norm(name: str, config: SortOfClevrConfig) -> bool:
    """Whether model `name` has batch-norm layers: in its CNN, or (the RN) on the pooled pairs."""
    return config.batch_norm or (name == "rn" and config.pooled_batch_norm)


def calibrated(name: str, config: SortOfClevrConfig, params, train: dict[str, np.ndarray]):
    """`params` with the batch-norm statistics (`batch_stats`) of the first `CALIBRATION_IMAGES`
    training images, each with its first non-relational and first relational question, for
    answering in test mode; unchanged without batch norm. (The training step normalises by each
    batch's own statistics and keeps none.) Host driver."""
    if not uses_batch_norm(name, config):
        return params
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
    Host driver; the last chunk is padded to `chunk` images so one compiled shape serves all."""
    num_images = len(data["images"])
    chunk = min(chunk, num_images)
    outputs = []
    for start in range(0, num_images, chunk):
        images = np.arange(start, start + chunk) % num_images
        answers = np.asarray(answers_of(params, image_batch(data, images)))
        outputs.append(answers[: min(chunk, num_images - start)])
    return np.concatenate(outputs)


def make_evaluate(name: str, config: SortOfClevrConfig, datasets: dict[str, dict]):
    """`params -> metrics` for `fit`: validation accuracy on relational and non-relational
    questions, and their mean (`score`)."""
    answers_of = answer_fn(name, config)
    valid = datasets["valid"]

    def evaluate(params):
        params = calibrated(name, config, params, datasets["train"])
        correct = predict(answers_of, params, valid) == valid["answer"]
        accuracy = task.accuracy_by_kind(correct, valid["relational"])
        return {"score": float(correct.mean()), **accuracy}

    return evaluate


def _init_state(model: nn.Module, config: SortOfClevrConfig, example: dict):
    params = model.init(jax.random.key(config.seed), example)
    return training.TrainingState(params=params, opt_state=optimizer(config).init(params))


def train_model(
    name: str,
    config: SortOfClevrConfig,
    datasets: dict[str, dict[str, np.ndarray]],
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> training.TrainingState:
    """Train model `name` in `run_dir/checkpoints/<name>` (resuming), with its metrics in
    `run_dir/metrics_<name>.jsonl`. Raises `training.TrainingStopped` after a stop request."""
    model = build_model(name, config)
    batches = make_batch(config, datasets["train"])
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(_init_state(model, config, batches(0)), checkpoints)
    strategy = parallel.data_parallel(options.parallel)
    step = strategy.train_step(loss_fn(model), optimizer(config), has_aux=True)
    if options.progress:
        print(f"{name}: training from update {int(state.step)} of {config.updates}", flush=True)
    return training.fit(
        state,
        step,
        lambda index: strategy.shard(batches(index)),
        config.updates,
        examples_per_step=config.images_per_batch * config.questions_per_image,
        evaluate=make_evaluate(name, config, datasets),
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=max(1, min(100, config.eval_every_updates)),
        progress=options.progress,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def load_trained(name: str, config: SortOfClevrConfig, run_dir: experiments.RunDir, datasets):
    """The best validated state of model `name` in `run_dir` (else its latest checkpoint)."""
    model = build_model(name, config)
    template = _init_state(model, config, image_batch(datasets["test"], np.arange(1)))
    return experiments.load_model_state(run_dir, name, template)


def validation_curves(run_dir: experiments.RunDir, name: str) -> dict[str, list[float]]:
    """The `eval` records of model `name`'s metrics file as lists: `step`, `relational`,
    `non_relational` (empty lists if there is none)."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    evals = [record for record in records if record["kind"] == "eval"]
    return {
        key: [record[key] for record in evals] for key in ("step", "relational", "non_relational")
    }


def evaluate_models(config, run_dir, options, states: dict[str, training.TrainingState], datasets):
    """Test accuracy per model on relational and non-relational questions; table, figures."""
    test = datasets["test"]
    minority = task.against_the_majority(
        test["shapes"], test["color"], test["relational"], test["kind"], test["answer"]
    )
    results: dict[str, Any] = {
        "test_questions": int(test["answer"].size),
        "against_the_majority_questions": int(minority.sum()),
        "models": {},
    }
    predictions = {}
    for name, state in states.items():
        params = calibrated(name, config, state.params, datasets["train"])
        predictions[name] = predict(answer_fn(name, config), params, test)
        correct = predictions[name] == test["answer"]
        accuracy = task.accuracy_by_kind(correct, test["relational"])
        by_type = task.accuracy_by_type(correct, test["relational"], test["kind"])
        questions = int(state.step) * config.images_per_batch * config.questions_per_image
        cpu_seconds = float(state.cpu_seconds)
        results["models"][name] = {
            **{key: round(value, 4) for key, value in accuracy.items()},
            "updates": int(state.step),
            "cpu_minutes": round(cpu_seconds / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
            "questions_per_cpu_second": round(questions / max(cpu_seconds, 1e-9), 1),
            "by_type": {key: round(value, 4) for key, value in by_type.items()},
            "against_the_majority": round(float(correct[minority].mean()), 4),
        }
    results["paper"] = PAPER
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        curves = {name: validation_curves(run_dir, name) for name in states}
        figures["accuracy"] = str(plot_accuracy(results, curves, accuracy_path))
    examples_path = options.plot_path(run_dir, "examples.png", main=False)
    if examples_path is not None:
        figures["examples"] = str(plot_examples(test, predictions, examples_path))
    results["figures"] = figures
    return results


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy on relational and non-relational questions, one row per model, then per
    question type, then the paper's figures for the same models. Host."""
    lines = [
        f"test accuracy ({results['test_questions']} questions)",
        f"{'model':<14}{'relational':>12}{'non-rel.':>10}{'updates':>9}{'CPU min':>9}"
        f"{'q/CPU-s':>9}",
    ]
    for name, entry in results["models"].items():
        lines.append(
            f"{'CNN+' + name.upper():<14}{entry['relational']:>12.3f}"
            f"{entry['non_relational']:>10.3f}{entry['updates']:>9}{entry['cpu_minutes']:>9.1f}"
            f"{entry['questions_per_cpu_second']:>9.0f}"
        )
    types = list(task.NON_RELATIONAL_TYPES + task.RELATIONAL_TYPES)
    lines.append("by question type: " + ", ".join(types))
    for name, entry in results["models"].items():
        values = " ".join(f"{entry['by_type'].get(key, float('nan')):.3f}" for key in types)
        lines.append(f"{'CNN+' + name.upper():<14}{values}")
    lines.append(
        "closest / farthest whose answer is the minority shape of the other objects"
        f" ({results['against_the_majority_questions']} questions):"
    )
    for name, entry in results["models"].items():
        lines.append(f"{'CNN+' + name.upper():<14}{entry['against_the_majority']:>12.3f}")
    for name in results["models"]:
        entry = results["paper"][name]
        lines.append(
            f"{'paper CNN+' + name.upper():<14}{entry['relational']:>12.2f}"
            f"{entry['non_relational']:>10.2f}"
        )
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], curves: dict[str, dict], path: Path) -> Path:
    """Validation accuracy (relational solid, non-relational dashed) against updates, and the
    test accuracy of each model beside the paper's."""
    plt = experiments.pyplot()
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(9.6, 3.8), layout="constrained", width_ratios=(1.6, 1)
    )
    colors = {"rn": "tab:blue", "mlp": "tab:gray"}
    for name, curve in curves.items():
        label = f"CNN+{name.upper()}"
        for kind, style in (("relational", "-"), ("non_relational", "--")):
            left.plot(
                curve["step"],
                curve[kind],
                style,
                color=colors[name],
                label=f"{label}, {kind.replace('_', '-')}",
            )
    left.set_xlabel("updates")
    left.set_ylabel("validation accuracy")
    left.set_ylim(0, 1.02)
    left.legend(fontsize=7, loc="lower right")
    names = list(results["models"])
    kinds = ("relational", "non_relational")
    for offset, kind in enumerate(kinds):
        places = np.arange(len(names)) + (offset - 0.5) * 0.38
        values = [results["models"][name][kind] for name in names]
        bars = right.bar(
            places,
            values,
            0.36,
            color=("tab:blue", "tab:orange")[offset],
            label=kind.replace("_", "-"),
        )
        right.bar_label(bars, fmt="%.2f", fontsize=7)
        paper = [results["paper"][name][kind] for name in names]
        right.scatter(
            places,
            paper,
            marker="_",
            s=300,
            color="black",
            zorder=3,
            label="paper" if offset == 0 else None,
        )
    right.set_xticks(np.arange(len(names)), [f"CNN+{name.upper()}" for name in names])
    right.set_ylabel("test accuracy")
    right.set_ylim(0, 1.1)
    right.legend(fontsize=7, loc="lower left")
    figure.suptitle("Sort-of-CLEVR from pixels")
    return experiments.save_figure(figure, path)


def plot_examples(data, predictions: dict[str, np.ndarray], path: Path, num_images: int = 8):
    """The first `num_images` test images, each with one question (relational and
    non-relational in turn), its answer and each model's prediction."""
    plt = experiments.pyplot()
    columns = 4
    rows = -(-num_images // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(2.4 * columns, 3.0 * rows), layout="constrained", squeeze=False
    )
    for image, ax in enumerate(axes.ravel()):
        if image >= min(num_images, len(data["images"])):
            ax.axis("off")
            continue
        ax.set_xticks([])
        ax.set_yticks([])
        question = task.QUESTIONS_PER_KIND * (image % 2)
        ax.imshow(data["images"][image])
        color, relational, kind = (
            int(data[key][image, question]) for key in ("color", "relational", "kind")
        )
        lines = [
            task.describe_question(color, bool(relational), kind),
            f"answer: {task.ANSWER_NAMES[int(data['answer'][image, question])]}",
        ]
        for name, answers in predictions.items():
            said = task.ANSWER_NAMES[int(answers[image, question])]
            lines.append(f"CNN+{name.upper()}: {said}")
        ax.set_title("\n".join(lines), fontsize=7)
    return experiments.save_figure(figure, path)


def train(config: SortOfClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: each model of `config.models` in turn (resuming), then the test table
    and figures of each model's best validated state. Returns the results (also `train.json`);
    a stop request ends it with `training.TrainingStopped` once the model in training is saved."""
    datasets = load_datasets(config, run_dir)
    for name in config.models:
        train_model(name, config, datasets, run_dir, options)
    states = {name: load_trained(name, config, run_dir, datasets) for name in config.models}
    return evaluate_models(config, run_dir, options, states, datasets)


def evaluate(config: SortOfClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: the test table and figures of a finished run's models (best validated
    states)."""
    datasets = load_datasets(config, run_dir)
    states = {name: load_trained(name, config, run_dir, datasets) for name in config.models}
    return evaluate_models(config, run_dir, options, states, datasets)


DEMO = experiments.Demo(
    "sort-of-clevr",
    "Sort-of-CLEVR from pixels: CNN+RN vs CNN+MLP on relational and non-relational questions.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train each model (resumes from --run-dir), then test"),
        experiments.Verb("eval", evaluate, "test the models of a finished run", run_dir="existing"),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit sort-of-clevr train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


if __name__ == "__main__":
    sys.exit(main())
