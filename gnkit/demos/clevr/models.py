"""CLEVR's models: a question LSTM, then a relation network over the objects or an MLP.

- `rn`: `nn.RelationNetwork` over every ordered pair of the scene's objects, conditioned on the
  question (dense layout, padding objects masked), then `f` to the answer logits;
- `mlp`: the non-relational baseline, an MLP over the concatenated, zero-padded object table
  (objects in scene order), the object mask and the question vector.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit._varying import varying_like
from gnkit.demos.clevr.config import ClevrConfig
from gnkit.nn import MLP, RelationNetwork
from gnkit.tasks.clevr import vocab


class QuestionEncoder(nn.Module):
    """Word ids `[B, L]` (0-padded) and lengths `[B]` -> the LSTM's last state `[B, lstm]`."""

    embedding: int
    lstm: int

    @nn.compact
    def __call__(self, words: jax.Array, length: jax.Array) -> jax.Array:
        embedded = nn.Embed(len(vocab.words()), self.embedding, name="embed")(words)
        cell = nn.OptimizedLSTMCell(self.lstm, name="cell")
        carry = cell.initialize_carry(jax.random.key(0), embedded[:, 0].shape)
        rnn = nn.RNN(cell, return_carry=True, name="lstm")
        (_, hidden), _ = rnn(
            embedded, initial_carry=varying_like(carry, embedded), seq_lengths=length
        )
        return hidden


class ClevrRN(nn.Module):
    """The relation network: logits `[B, 28]` from a batch (`objects` `[B, 10, 18]`,
    `object_mask` `[B, 10]`, `words` `[B, L]`, `length` `[B]`). Jittable."""

    config: ClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array]) -> jax.Array:
        config = self.config
        question = QuestionEncoder(config.embedding, config.lstm, name="question")(
            batch["words"], batch["length"]
        )
        network = RelationNetwork(
            pair_features=(config.pair_width,) * 4,
            output_features=(config.output_width, config.output_width, len(vocab.answers())),
            name="rn",
        )
        return network.dense(batch["objects"], question, batch["object_mask"])


class ClevrMLP(nn.Module):
    """The non-relational baseline: an MLP over the padded object table, its mask and the
    question vector; logits `[B, 28]`. Jittable."""

    config: ClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array]) -> jax.Array:
        config = self.config
        question = QuestionEncoder(config.embedding, config.lstm, name="question")(
            batch["words"], batch["length"]
        )
        objects = batch["objects"]
        mask = batch["object_mask"]
        table = (objects * mask[..., None]).reshape(objects.shape[0], -1)
        inputs = jnp.concatenate([table, mask.astype(objects.dtype), question], axis=-1)
        widths = (config.mlp_width,) * 4 + (len(vocab.answers()),)
        return MLP(widths, name="mlp")(inputs)


def build_model(name: str, config: ClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rn` or `mlp`)."""
    return {"rn": ClevrRN, "mlp": ClevrMLP}[name](config=config)
