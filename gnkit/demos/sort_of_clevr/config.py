"""Sort-of-CLEVR's config and presets: data, models and training of one run. Host."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from gnkit.experiments import setting
from gnkit.tasks import sort_of_clevr as task

ModelName = Literal["rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rn", "mlp")
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
    updates: int = setting(24_000, minimum=1, help="optimiser steps per model")
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
    pair_features: tuple[int, ...] = setting((128, 128, 128), minimum=1, help="RN's g")
    pair_reduction: Literal["sum", "mean"] = setting("mean", help="RN: pool g over the pairs")
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

    # Options measured as no gain and removed, with the value at which they changed nothing:
    # runs saved with them at that value still load.
    RETIRED_SETTINGS: ClassVar[dict] = {
        "colour_centroids": False,
        "normalize_cnn": False,
        "batch_norm": True,
        "balance_question": False,
    }

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if not self.pair_features:
            raise ValueError("pair_features must have at least one layer")
        if self.questions_per_image > task.QUESTIONS_PER_IMAGE:
            raise ValueError(f"questions_per_image must be at most {task.QUESTIONS_PER_IMAGE}")


CONFIGS = {
    "default": SortOfClevrConfig(),
    "quick": SortOfClevrConfig(updates=3_000, pair_features=(64, 64, 64)),
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

PRESET_NOTES = {
    "default": "the run that reaches the paper's RN accuracy on a CPU: g of 128 x 3 for 24,000"
    " updates per model (the RN alone took 100 CPU-minutes on 2 cores)",
    "quick": "a first look: 3,000 updates of a 64 x 3 g per model",
    "paper": "the paper's CNN and RN recipe, for an accelerator",
    "tiny": "a few updates on a few images, for tests",
}
