"""The demo's Flax model: `SudokuRRN`, cell embeddings into gnkit's recurrent relational network.

The graph, data and metrics are the task's (`gnkit.tasks.sudoku`); this module adds only the
parameters. Checkpoints and exported models hold this module's parameter tree
(`digit_embed`, `row_embed`, `col_embed`, `rrn`). Jittable.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.nn.rrn import RecurrentRelationalNetwork
from gnkit.tasks.sudoku import NUM_CELLS, batch_graph


class SudokuRRN(nn.Module):
    """The RRN Sudoku model: digit, row and column embeddings into a `RecurrentRelationalNetwork`.

    Each cell's input is the concatenation of three `embed_size`-d embeddings (digit 0-9, row,
    column). Call with int `quizzes [B, 81]` and a static `num_steps`; returns logits over the
    digits 1-9 at every step, `[num_steps, B, 81, 9]`. Jittable.

    Attributes:
      hidden_size: width of the RRN's MLP layers and state.
      embed_size: width of each of the digit, row and column embeddings.
      encoder_layers: layers of the RRN's input MLP.
      message_layers: layers of its message MLP.
      update_layers: layers of its update MLP.
      cell: the recurrent cell, as in `RecurrentRelationalNetwork` (`"lstm"`, `"gru"`, `"mlp"`).
      remat: rematerialisation of the steps, as in `RecurrentRelationalNetwork`.
      fixed_degree: sum messages with a reshape (every cell has 20 neighbours) instead of a
        scatter: same numbers, faster.
      dtype: the loop's matmul dtype (e.g. `jnp.bfloat16`); None: float32.
    """

    hidden_size: int = 96
    embed_size: int = 16
    encoder_layers: int = 3
    message_layers: int = 3
    update_layers: int = 3
    cell: str = "lstm"
    remat: bool | str = False
    fixed_degree: bool = True
    dtype: Any = None

    @nn.compact
    def __call__(self, quizzes: jax.Array, num_steps: int, scan: bool = True) -> jax.Array:
        batch = quizzes.shape[0]
        cells = jnp.arange(NUM_CELLS)
        digit = nn.Embed(10, self.embed_size, name="digit_embed")(quizzes.reshape(-1))
        row = nn.Embed(9, self.embed_size, name="row_embed")(cells // 9)
        col = nn.Embed(9, self.embed_size, name="col_embed")(cells % 9)
        position = jnp.tile(jnp.concatenate([row, col], axis=-1), (batch, 1))
        graph = batch_graph(batch)._replace(nodes=jnp.concatenate([digit, position], axis=-1))
        hidden = self.hidden_size
        rrn = RecurrentRelationalNetwork(
            encoder_features=(hidden,) * self.encoder_layers,
            message_features=(hidden,) * self.message_layers,
            update_features=(hidden,) * self.update_layers,
            readout_features=(9,),
            cell=self.cell,
            remat=self.remat,
            receivers_sorted=True,
            fixed_degree=20 if self.fixed_degree else None,
            dtype=self.dtype,
            name="rrn",
        )
        logits = rrn(graph, num_steps, scan=scan)
        return logits.reshape(num_steps, batch, NUM_CELLS, 9)
