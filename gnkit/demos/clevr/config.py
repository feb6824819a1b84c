"""CLEVR's config and presets. Host."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from gnkit.experiments import setting

ModelName = Literal["rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rn", "mlp")
SPLITS = ("train", "val", "test")
# Santoro et al. (2017): CLEVR from state descriptions, RN test accuracy (no per-family numbers).
PAPER = {
    "rn (state descriptions)": {"overall": 0.964},
}


@dataclasses.dataclass(frozen=True)
class ClevrConfig:
    """Data, models and training of one run; every model in `models` gets the same budget."""

    models: tuple[ModelName, ...] = setting(("rn", "mlp"), help="models to train, in turn")
    updates: int = setting(6_000, minimum=1, help="optimiser steps per model")
    batch_size: int = setting(64, minimum=1, help="questions per update")
    pair_width: int = setting(128, minimum=1, help="width of the RN's 4 pair (g) layers")
    output_width: int = setting(128, minimum=1, help="width of the 2 hidden layers of f")
    mlp_width: int = setting(256, minimum=1, help="width of the baseline's 4 hidden layers")
    embedding: int = setting(32, minimum=1, help="word embedding size")
    lstm: int = setting(128, minimum=1, help="question LSTM units")
    learning_rate: float = setting(1e-3, minimum=0.0, help="Adam, warm-up then cosine decay")
    train_scenes: int = setting(6_000, minimum=1)
    valid_scenes: int = setting(300, minimum=1)
    test_scenes: int = setting(1_000, minimum=1)
    eval_every_updates: int = setting(1_000, minimum=1)
    data: str = setting("", help="a data folder (generated or CLEVR's release); '' generates")
    seed: int = 0

    # Options measured as no gain and removed, with the value at which they changed nothing:
    # runs saved with them at that value still load.
    RETIRED_SETTINGS: ClassVar[dict] = {
        "rename_attributes": False,
        "position_scale": 1.0,
        "normalize_pair_sum": False,
    }

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")


# paper: the RN paper's state-description model (g: 4 x 512, f: 512, 1024, answers; LSTM 128,
# embeddings 32, Adam 2.5e-4, batch 64) on CLEVR's 70,000 training scenes, for an accelerator.
CONFIGS = {
    "default": ClevrConfig(),
    "quick": ClevrConfig(updates=1_500, train_scenes=2_000, eval_every_updates=500),
    "paper": ClevrConfig(
        updates=500_000,
        pair_width=512,
        output_width=1024,
        learning_rate=2.5e-4,
        train_scenes=70_000,
        valid_scenes=1_000,
        test_scenes=15_000,
        eval_every_updates=10_000,
    ),
    "tiny": ClevrConfig(
        updates=6,
        batch_size=8,
        pair_width=16,
        output_width=16,
        mlp_width=16,
        embedding=8,
        lstm=16,
        train_scenes=12,
        valid_scenes=3,
        test_scenes=3,
        eval_every_updates=3,
    ),
}

PRESET_NOTES = {
    "default": "the best measured CPU recipe at its budget: 6,000 updates per model on 6,000"
    " generated scenes (RN 5.9, MLP 3.0 CPU-minutes)",
    "quick": "a first look: 1,500 updates per model on 2,000 generated scenes",
    "paper": "the RN paper's state-description model on CLEVR's 70,000 training scenes, for an"
    " accelerator",
    "tiny": "a few updates on a few scenes, for tests",
}
