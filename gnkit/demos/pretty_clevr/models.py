"""Pretty-CLEVR's three models, each answering with one of 16 symbols.

Every object is `[position, one-hot colour, one-hot marker]`; the question is the one-hot anchor
symbol and the one-hot number of jumps, and each object is also told whether it is the anchor
(`anchor_indicator`: its colour or marker is the one named), which the paper's models had to learn
to compute themselves.

- `rrn`: `nn.RecurrentRelationalNetwork` on the fully connected 8-object graph of a scene (edge
  feature: the distance of the two objects), the question embedded into every node; at every
  step the node outputs are summed over the scene and an MLP reads the answer out; the loss is
  the mean over the steps. Trained with `steps` steps (8) and evaluated after each step 1..8.
- `rn`: `nn.RelationNetwork`, one relational step: `g` over the 64 ordered object pairs with
  their distance (the RRN's edge feature) and the question, summed, then `f` (dense layout).
- `mlp`: an MLP over the whole object table (objects in marker order: colours, anchor flags,
  positions, all pairwise distances) and the question.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from gnkit.demos.pretty_clevr.config import PrettyClevrConfig
from gnkit.graph import GraphsTuple
from gnkit.nn import MLP, RecurrentRelationalNetwork, RelationNetwork
from gnkit.tasks import pretty_clevr as task


def object_features(positions: jax.Array, colors: jax.Array, markers: jax.Array) -> jax.Array:
    """`[position (2), one-hot colour (8), one-hot marker (8)]` per object: `[B, 8, 18]` from
    positions `[B, 8, 2]`, colours and markers `[B, 8]`. Jittable."""
    return jnp.concatenate(
        [
            positions,
            jax.nn.one_hot(colors, task.NUM_OBJECTS, dtype=positions.dtype),
            jax.nn.one_hot(markers, task.NUM_OBJECTS, dtype=positions.dtype),
        ],
        axis=-1,
    )


def question_features(anchor_is_color: jax.Array, anchor: jax.Array, jumps: jax.Array):
    """`[one-hot anchor symbol (16: colours, then markers), one-hot jumps (8)]`: `[B, 24]`.
    Jittable."""
    symbol = jnp.where(anchor_is_color, anchor, task.NUM_OBJECTS + anchor)
    return jnp.concatenate(
        [jax.nn.one_hot(symbol, task.NUM_ANSWERS), jax.nn.one_hot(jumps, task.NUM_JUMPS)], axis=-1
    )


def anchor_indicator(batch: dict[str, jax.Array]) -> jax.Array:
    """1.0 for the object the question names (its colour, or marker, is the anchor), else 0.0:
    `[B, 8]`. Jittable."""
    own = jnp.where(batch["anchor_is_color"][:, None], batch["colors"], batch["markers"])
    return (own == batch["anchor"][:, None]).astype(batch["positions"].dtype)


def scene_edges(num_scenes: int) -> tuple[np.ndarray, np.ndarray]:
    """Senders and receivers of `num_scenes` fully connected 8-object graphs without self-edges,
    sorted by receiver (7 each): int32 `[num_scenes * 56]` each. Host."""
    receivers, senders = np.nonzero(~np.eye(task.NUM_OBJECTS, dtype=bool))
    offsets = np.arange(num_scenes)[:, None] * task.NUM_OBJECTS
    return (
        (senders + offsets).reshape(-1).astype(np.int32),
        (receivers + offsets).reshape(-1).astype(np.int32),
    )


class PrettyRRN(nn.Module):
    """The RRN of the demo. Called with a batch (see `make_batch`) and a static `num_steps`;
    returns answer logits at every step, `[num_steps, B, 16]`. Jittable."""

    hidden: int
    message_layers: int = 3

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int) -> jax.Array:
        objects = object_features(batch["positions"], batch["colors"], batch["markers"])
        num_scenes = objects.shape[0]
        question = question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"])
        question = jnp.broadcast_to(
            question[:, None], (num_scenes, task.NUM_OBJECTS, question.shape[-1])
        )
        nodes = jnp.concatenate([objects, question, anchor_indicator(batch)[..., None]], -1)
        nodes = nodes.reshape(num_scenes * task.NUM_OBJECTS, -1)
        senders, receivers = scene_edges(num_scenes)
        positions = batch["positions"].reshape(-1, 2)
        distances = jnp.linalg.norm(positions[senders] - positions[receivers], axis=-1)
        graph = GraphsTuple(
            nodes=nodes,
            edges=distances[:, None],
            receivers=receivers,
            senders=senders,
            globals=None,
            n_node=np.full(num_scenes, task.NUM_OBJECTS, np.int32),
            n_edge=np.full(num_scenes, task.NUM_OBJECTS * (task.NUM_OBJECTS - 1), np.int32),
        )
        width = self.hidden
        node_outputs = RecurrentRelationalNetwork(
            encoder_features=(width, width),
            message_features=(width,) * self.message_layers,
            update_features=(width,),
            readout_features=(width,),
            receivers_sorted=True,
            fixed_degree=task.NUM_OBJECTS - 1,
            name="rrn",
        )(graph, num_steps)
        per_scene = node_outputs.reshape(num_steps, num_scenes, task.NUM_OBJECTS, width).sum(2)
        return MLP((width, task.NUM_ANSWERS), name="answer")(per_scene)


def pair_distances(positions: jax.Array) -> jax.Array:
    """The distance of every two objects, `[B, 8, 8, 1]`, from positions `[B, 8, 2]`. Jittable."""
    offsets = positions[:, :, None] - positions[:, None]
    return jnp.linalg.norm(offsets, axis=-1, keepdims=True)


class PrettyRN(nn.Module):
    """The relation network of the demo: logits `[1, B, 16]` (one step). Its `g` sees each pair's
    distance, as the RRN's messages do; `g` and `f` are twice `hidden` wide (at width 64 the RN
    stayed at chance beyond 0 jumps). Jittable."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int = 1) -> jax.Array:
        objects = object_features(batch["positions"], batch["colors"], batch["markers"])
        objects = jnp.concatenate([objects, anchor_indicator(batch)[..., None]], -1)
        question = question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"])
        width = 2 * self.hidden
        network = RelationNetwork(
            pair_features=(width,) * 4,
            output_features=(width, width, task.NUM_ANSWERS),
            use_edges=True,
            name="rn",
        )
        pairs = pair_distances(batch["positions"])
        return network.dense(objects, question, pairs=pairs)[None]


class PrettyMLP(nn.Module):
    """The MLP of the demo over the object table in marker order: logits `[1, B, 16]`.
    Jittable."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int = 1) -> jax.Array:
        order = jnp.argsort(batch["markers"], axis=1)
        positions = jnp.take_along_axis(batch["positions"], order[..., None], axis=1)
        colors = jnp.take_along_axis(batch["colors"], order, axis=1)
        is_anchor = jnp.take_along_axis(anchor_indicator(batch), order, axis=1)
        distances = pair_distances(positions)
        num_scenes = positions.shape[0]
        table = jnp.concatenate(
            [
                jax.nn.one_hot(colors, task.NUM_OBJECTS).reshape(num_scenes, -1),
                is_anchor,
                positions.reshape(num_scenes, -1),
                distances.reshape(num_scenes, -1),
                question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"]),
            ],
            axis=-1,
        )
        return MLP((self.hidden * 2,) * 4 + (task.NUM_ANSWERS,), name="mlp")(table)[None]


def build_model(name: str, config: PrettyClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rrn`, `rn` or `mlp`)."""
    if name == "rrn":
        return PrettyRRN(hidden=config.hidden, message_layers=config.message_layers)
    models = {"rn": PrettyRN, "mlp": PrettyMLP}
    return models[name](hidden=config.hidden)


def model_steps(name: str, config: PrettyClevrConfig) -> int:
    """The steps model `name` runs: `config.steps` for the RRN, 1 for the others."""
    return config.steps if name == "rrn" else 1
