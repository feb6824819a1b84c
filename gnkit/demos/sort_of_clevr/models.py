"""Sort-of-CLEVR's models: a shared CNN encoder, then a relation network over its cells or an MLP.

- `rn`: the cells of the feature map, each tagged with its `(x, y)` coordinates in [-1, 1], are
  the objects of a relation network: `g` over all ordered cell pairs with the question vector,
  summed (`nn.RelationNetwork.dense`) or averaged (`CellRelationNetwork`), then `f` to the 10
  answers. With `pair_geometry` (not in the paper) `g` also sees each pair's offset and
  distance; with `pooled_batch_norm` (not in the paper) the pooled pair features are
  batch-normalised before `f`.
- `mlp`: the flattened map and the question through an MLP (the paper's CNN+MLP baseline).
"""

from __future__ import annotations

from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.demos.sort_of_clevr.config import SortOfClevrConfig
from gnkit.nn import MLP, RelationNetwork
from gnkit.tasks import sort_of_clevr as task


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
    """3x3 convolutions with the given `strides`, each followed by batch normalisation and ReLU:
    uint8 images `[B, 75, 75, 3]` to a feature map `[B, h, w, channels]` (4x4 for strides 2, 2,
    2, 3; 5x5 for four of 2). The pixels enter as ink, `1 - value / 255`, so the white
    background is 0. With `train`, each channel is normalised by its mean and variance over the
    batch's images and cells; otherwise by the `batch_stats` collection, which `calibrated`
    sets to the statistics of a fixed batch of training images (momentum 0: one train-mode pass
    stores that batch's statistics).

    With `colour_channels` > 0 (not in the paper), the map gets `colour_channels` more features
    per cell: a 1x1 convolution of the pixels, normalised as the stack and through ReLU, then
    its maximum over each cell's window of `ceil(75 / h)` x `ceil(75 / w)` pixels. A per-pixel
    colour detector keeps its colour in its own channel up to the cell, where the strided 3x3
    stack mixes neighbouring colours from its first layer. Jittable."""

    strides: tuple[int, ...]
    channels: int
    colour_channels: int = 0

    def _normalized(self, hidden: jax.Array, train: bool) -> jax.Array:
        return nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.0)(hidden))

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
        return jnp.concatenate([hidden, pooled], axis=-1)


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


def image_encoder(config: SortOfClevrConfig) -> ImageEncoder:
    """The shared image encoder of both models, named `cnn`, as `config` sets it up; call it
    inside a compact module."""
    return ImageEncoder(
        tuple(config.conv_strides), config.conv_channels, config.colour_channels, name="cnn"
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
    `reduce` the mean (or the sum) over the `n^2` pairs. Objects `[B, n, F]`, questions
    `[B, Q, D]`; returns `[B, Q, output_features[-1]]`.

    The first layer of `g` is factorised as in `nn.RelationNetwork` (`A o_i + B o_j + C q + b`),
    and the object projections are shared by the questions of an image. It is `nn.RelationNetwork`
    (whose sum is unscaled) but for the mean: with the sum, the input of `f` grows with the
    `n^2` pairs. With `pooled_batch_norm`, the pooled features go through batch normalisation
    (named `pooled_norm`) before `f`: the batch's statistics when `train`, else `batch_stats`.
    Jittable.

    Attributes:
      pair_features: widths of `g`'s layers.
      output_features: widths of `f`'s layers (the last: the output).
      reduction: `mean` or `sum` over the pairs.
      geometry: whether `g`'s first layer sees each pair's offset and distance.
      pooled_batch_norm: batch normalisation of the pooled features before `f`.
    """

    pair_features: tuple[int, ...]
    output_features: tuple[int, ...]
    reduction: Literal["mean", "sum"] = "mean"
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
        if self.reduction == "mean":
            pooled = pooled / (objects.shape[1] ** 2)
        if self.pooled_batch_norm:
            norm = nn.BatchNorm(use_running_average=not train, momentum=0.0, name="pooled_norm")
            pooled = norm(pooled)
        return MLP(self.output_features, name="output")(pooled)


class CnnRelationNetwork(nn.Module):
    """CNN + RN: answer logits `[B, Q, 10]` for a batch of images `[B, 75, 75, 3]` and their
    questions `[B, Q]` (see `data.make_batch`). Jittable."""

    config: SortOfClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], train: bool = False) -> jax.Array:
        config = self.config
        feature_map = image_encoder(config)(batch["images"], train)
        objects = cells_as_objects(feature_map)
        questions = question_features(batch["color"], batch["relational"], batch["kind"])
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
        flat = jnp.broadcast_to(flat, (num_images, num_questions, flat.shape[-1]))
        mlp = MLP((*config.mlp_features, task.NUM_ANSWERS), name="mlp")
        return mlp(jnp.concatenate([flat, questions], axis=-1))


def build_model(name: str, config: SortOfClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rn` or `mlp`)."""
    return {"rn": CnnRelationNetwork, "mlp": CnnMLP}[name](config)
