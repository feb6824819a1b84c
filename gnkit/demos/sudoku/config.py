"""The Sudoku RRN's typed config, its presets, the optimiser and a fresh training state."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import train as training
from gnkit.demos.sudoku.models import SudokuRRN
from gnkit.experiments import setting
from gnkit.tasks import sudoku


@dataclasses.dataclass(frozen=True)
class SudokuConfig:
    """Model, data and optimiser settings of one training run (`--set KEY=VALUE` sets a field).

    `steps` are the message-passing steps in training, `eval_steps` those at validation;
    `updates` the optimiser steps (the cosine schedule and the curriculum span them). `remat` is
    False, True / 'step' or 'block', as in `RecurrentRelationalNetwork`. `precision` 'bf16' runs
    the loop's matmuls in bf16 (parameters and sums stay f32). `data` 'device' makes each batch
    inside the jitted step from the pool on the device (`sudoku.device_puzzles`), 'host' with
    NumPy; `symmetries` (device data only) also moves each puzzle by a random symmetry of the grid.
    """

    hidden_size: int = setting(96, minimum=1)
    embed_size: int = setting(16, minimum=1)
    encoder_layers: int = setting(3, minimum=1)
    message_layers: int = setting(3, minimum=1)
    update_layers: int = setting(3, minimum=1)
    cell: Literal["lstm", "gru", "mlp"] = "lstm"
    steps: int = setting(32, minimum=1, help="message-passing steps in training")
    eval_steps: int = setting(64, minimum=1, help="message-passing steps at validation")
    batch_size: int = setting(64, minimum=1, help="puzzles per update")
    learning_rate: float = setting(2e-4, minimum=0.0)
    warmup_updates: int = setting(0, minimum=0)
    cosine_decay: bool = False
    l2: float = setting(1e-4, minimum=0.0, help="on the MLP kernels")
    updates: int = setting(300_000, minimum=1, help="optimiser steps")
    curriculum_start_givens: int = setting(17, help="fewest givens at the start, 17-34")
    curriculum_fraction: float = setting(
        0.0, minimum=0.0, help="fraction of updates over which the fewest givens fall to 17"
    )
    remat: bool | Literal["step", "block"] = False
    precision: Literal["f32", "bf16"] = "f32"
    data: Literal["host", "device"] = "host"
    symmetries: bool = False
    seed: int = 0

    def validate(self) -> None:
        if not sudoku.MIN_GIVENS <= self.curriculum_start_givens <= sudoku.MAX_GIVENS:
            raise ValueError(
                f"curriculum_start_givens must be in {sudoku.MIN_GIVENS}-{sudoku.MAX_GIVENS}"
            )
        if self.symmetries and self.data != "device":
            raise ValueError("symmetries=True needs data=device")

    def model(self) -> SudokuRRN:
        return SudokuRRN(
            hidden_size=self.hidden_size,
            embed_size=self.embed_size,
            encoder_layers=self.encoder_layers,
            message_layers=self.message_layers,
            update_layers=self.update_layers,
            cell=self.cell,
            remat=self.remat,
            dtype=jnp.bfloat16 if self.precision == "bf16" else None,
        )

    def min_givens(self, update):
        """The curriculum's fewest givens at `update` (an int, or a traced int array in `jit`):
        from `curriculum_start_givens` down to 17, linearly over `curriculum_fraction` of the
        updates, rounded half to even."""
        span = self.curriculum_fraction * self.updates
        start = self.curriculum_start_givens
        if span <= 0:
            return sudoku.MIN_GIVENS
        progress = jnp.minimum(jnp.asarray(update, jnp.float32) / span, 1.0)
        return jnp.round(start + progress * (sudoku.MIN_GIVENS - start)).astype(jnp.int32)

    def givens_range(self, update: int) -> np.ndarray:
        """Givens levels sampled at `update`: the curriculum lowers the minimum to 17 linearly."""
        span = self.curriculum_fraction * self.updates
        progress = 1.0 if span <= 0 else min(update / span, 1.0)
        start = self.curriculum_start_givens
        low = round(start + progress * (sudoku.MIN_GIVENS - start))
        return np.arange(low, sudoku.MAX_GIVENS + 1)


CONFIGS = {
    # Sample-efficient CPU recipe: a 2-layer message MLP (its per-edge cost is a ReLU only, thanks
    # to the factorised first layer and the linear layer after the sum), 16 steps in training and
    # 64 in evaluation, a 5x larger learning rate with warmup and cosine decay over the run, and a
    # curriculum from 30-34 givens down to 17-34 over the first 40% of updates. One CPU thread
    # trains it at ~28 puzzles/s against 5.6 for the paper config: 2,500 updates (80k puzzles)
    # take about 50 CPU-minutes.
    "default": SudokuConfig(
        hidden_size=96,
        message_layers=2,
        update_layers=2,
        encoder_layers=2,
        steps=16,
        batch_size=32,
        learning_rate=1e-3,
        warmup_updates=100,
        cosine_decay=True,
        updates=2_500,
        curriculum_start_givens=30,
        curriculum_fraction=0.4,
    ),
    # Palm et al. (2018): hidden 96, 3-layer MLPs, LSTM, 32 steps, batch 64, Adam 2e-4, L2 1e-4.
    "paper": SudokuConfig(),
    # The paper's model for one accelerator: batches made on the device (with grid symmetries),
    # bf16 matmuls, batch 1024 with the learning rate scaled by sqrt(1024 / 64) = 4 from the
    # paper's 2e-4, warmup and cosine decay. `train --budget-min` ends a run at a wall-clock limit
    # (checkpoint and validation included); `updates` sets the schedule's length.
    "gpu": SudokuConfig(
        batch_size=1024,
        learning_rate=8e-4,
        warmup_updates=200,
        cosine_decay=True,
        updates=20_000,
        precision="bf16",
        data="device",
        symmetries=True,
    ),
    # For tests and smoke runs.
    "tiny": SudokuConfig(
        hidden_size=16,
        embed_size=8,
        encoder_layers=1,
        message_layers=2,
        update_layers=1,
        steps=4,
        eval_steps=8,
        batch_size=8,
        learning_rate=3e-3,
        updates=20,
    ),
}
CONFIGS["quick"] = dataclasses.replace(CONFIGS["default"], updates=300)
CONFIGS = {name: CONFIGS[name] for name in ("default", "quick", "paper", "gpu", "tiny")}

PRESET_NOTES = {
    "default": "the measured CPU recipe: 2,500 updates of 32 puzzles (about 50 CPU-minutes)",
    "quick": "a first look: the default recipe with its schedule shortened to 300 updates",
    "paper": "Palm et al.'s model and optimiser (for an accelerator)",
    "gpu": "the paper's model on one accelerator: device-side batches, bf16, batch 1,024",
    "tiny": "a few updates of a tiny model, for tests",
}


def make_optimizer(config: SudokuConfig) -> optax.GradientTransformation:
    """Adam with L2 on the MLP kernels (added to the gradient, as an L2 loss term would)."""
    if config.cosine_decay:
        schedule = optax.warmup_cosine_decay_schedule(
            0.0,
            config.learning_rate,
            max(config.warmup_updates, 1),
            max(config.updates, config.warmup_updates + 1),
            end_value=config.learning_rate * 0.05,
        )
    elif config.warmup_updates:
        schedule = optax.linear_schedule(0.0, config.learning_rate, config.warmup_updates)
    else:
        schedule = config.learning_rate

    def kernels(params):
        def is_mlp_kernel(path, _):
            keys = [getattr(key, "key", None) for key in path]
            return keys[-1] == "kernel" and "lstm" not in keys and "gru" not in keys

        return jax.tree_util.tree_map_with_path(is_mlp_kernel, params)

    return optax.chain(optax.add_decayed_weights(config.l2, mask=kernels), optax.adam(schedule))


def init_state(config: SudokuConfig) -> training.TrainingState:
    """A fresh `TrainingState` for `config` (parameters from `config.seed`)."""
    quizzes = jnp.zeros((1, sudoku.NUM_CELLS), jnp.int32)
    params = config.model().init(jax.random.PRNGKey(config.seed), quizzes, 1)
    return training.TrainingState(params=params, opt_state=make_optimizer(config).init(params))
