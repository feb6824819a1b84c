"""Pretty-CLEVR's config and presets. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

ModelName = Literal["rrn", "rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rrn", "rn", "mlp")
# Palm et al. (2018), Figure 2b, read off the plot: accuracy for 0..7 jumps.
PAPER = {
    "rrn (4 steps)": (1.00, 1.00, 0.99, 0.98, 0.94, 0.86, 0.84, 0.84),
    "rn": (1.00, 0.97, 0.54, 0.34, 0.34, 0.32, 0.27, 0.52),
}


@dataclasses.dataclass(frozen=True)
class PrettyClevrConfig:
    """Data, models and training of one run; every model in `models` gets the same budget."""

    models: tuple[ModelName, ...] = setting(("mlp", "rn", "rrn"), help="models to train, in turn")
    updates: int = setting(8_000, minimum=1, help="optimiser steps per model")
    steps: int = setting(8, minimum=1, help="RRN message-passing steps in training")
    batch_size: int = setting(128, minimum=1, help="questions per update")
    hidden: int = setting(64, minimum=1, help="width of every layer")
    message_layers: int = setting(
        3, minimum=1, help="layers of the RRN message MLP (the last is linear)"
    )
    learning_rate: float = setting(1e-3, minimum=0.0, help="Adam, cosine decay to 5%")
    train_scenes: int = setting(100_000, minimum=1)
    valid_scenes: int = setting(1_000, minimum=1)
    test_scenes: int = setting(1_000, minimum=1)
    monitor_scenes: int = setting(100, minimum=1, help="validation scenes used during training")
    eval_every_updates: int = setting(1_000, minimum=1)
    curriculum: float = setting(
        0.5, minimum=0.0, help="fraction of updates over which the jumps asked rise from 0 to 7"
    )
    augment: bool = True
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if self.monitor_scenes > self.valid_scenes:
            raise ValueError("monitor_scenes must be <= valid_scenes")


# paper: the reference code's sizes and optimiser (hidden 128, message MLP of 4 layers, Adam
# 1e-4, batch 512; it unrolls 8 steps, this preset trains 4, the step count of the paper's
# comparison row), no curriculum; the paper gives no update count, 1,000,000 is a guess at its
# scale (an accelerator's).
CONFIGS = {
    "default": PrettyClevrConfig(),
    "quick": PrettyClevrConfig(updates=2_000, train_scenes=20_000, eval_every_updates=500),
    "paper": PrettyClevrConfig(
        updates=1_000_000,
        batch_size=512,
        steps=4,
        hidden=128,
        message_layers=4,
        learning_rate=1e-4,
        curriculum=0.0,
    ),
    "tiny": PrettyClevrConfig(
        updates=6,
        steps=3,
        batch_size=16,
        hidden=16,
        train_scenes=40,
        valid_scenes=4,
        test_scenes=4,
        monitor_scenes=2,
        eval_every_updates=3,
    ),
}


PRESET_NOTES = {
    "default": "the measured CPU recipe: 8,000 updates per model with a curriculum on the jumps",
    "quick": "a first look: 2,000 updates per model on 20,000 scenes",
    "paper": "the reference code's sizes and optimiser, for an accelerator",
    "tiny": "a few updates on a few scenes, for tests",
}
