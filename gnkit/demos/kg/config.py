"""The knowledge-graph demo's config and presets. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit import kg as kgraph
from gnkit.experiments import setting

ModelName = Literal["transe", "transe_l2", "distmult", "complex", "rotate", "rotate_l2"]
MODEL_NAMES: tuple[str, ...] = tuple(kgraph.SCORERS)


@dataclasses.dataclass(frozen=True)
class KGConfig:
    """Embedding size, recipe, optimiser and evaluation of every (graph, model) of a run."""

    dim: int = setting(100, minimum=1, help="embedding size (complex coordinates: ComplEx, RotatE)")
    training: Literal["1-n", "negatives"] = setting("1-n", help="1-N cross-entropy or negatives")
    loss: Literal["self_adversarial", "margin"] = setting(
        "self_adversarial", help="loss of the negatives recipe"
    )
    num_negatives: int = setting(64, minimum=1, help="corruptions per positive (negatives)")
    negative_sides: Literal["per-negative", "per-triple"] = setting(
        "per-negative", help="side of each corruption drawn per corruption or per triple"
    )
    margin: float = setting(6.0, help="margin of either negatives loss")
    adversarial_temperature: float = setting(1.0, minimum=0.0, help="0: uniform weights")
    regularizer: Literal["n3", "l2", "none"] = setting("n3", help="penalty on the embeddings")
    regularization: float = setting(0.01, minimum=0.0, help="weight of the penalty")
    penalized: Literal["multiplicative", "all"] = setting(
        "multiplicative", help="models the penalty applies to: DistMult and ComplEx, or all"
    )
    label_smoothing: float = setting(0.0, minimum=0.0, help="1-N recipe only")
    init: Literal["xavier_uniform", "normal", "uniform"] = setting("normal")
    init_scale: float = setting(0.1, minimum=0.0, help="std (normal) or half-width (uniform)")
    encoder: Literal["none", "rgcn"] = setting("none", help="R-GCN over the training graph")
    encoder_layers: int = setting(1, minimum=1)
    encoder_bases: int = setting(4, minimum=1, help="basis decomposition of the R-GCN weights")
    batch_size: int = setting(256, minimum=1)
    epochs: int = setting(100, minimum=1)
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam, constant")
    eval_every_epochs: int = setting(10, minimum=1)
    eval_chunk: int = setting(256, minimum=1, help="test triples ranked per step")
    seed: int = 0


CONFIGS = {
    "default": KGConfig(),
    "negatives": KGConfig(
        training="negatives",
        num_negatives=32,
        margin=6.0,
        regularizer="none",
        regularization=0.0,
        init="xavier_uniform",
        learning_rate=0.005,
    ),
    "quick": KGConfig(dim=16, epochs=6, eval_every_epochs=3, batch_size=512),
}

# Filtered test MRR / Hits@10 of ConvE (Dettmers et al. 2018) on the same splits, as listed in
# the README of the paper's repository (TimDettmers/ConvE): a strong published reference.
PUBLISHED = {
    "kinships": {"model": "ConvE", "mrr": 0.83, "hits@10": 0.98},
    "umls": {"model": "ConvE", "mrr": 0.94, "hits@10": 0.99},
    "nations": {"model": "ConvE", "mrr": 0.82, "hits@10": 1.00},
}

PRESET_NOTES = {
    "default": "the 1-N recipe, 100 epochs: a few CPU-minutes per graph and model",
    "negatives": "RotatE's recipe: uniform negatives and the self-adversarial loss",
    "quick": "a first look and the tests: 16-wide embeddings for 6 epochs (seconds)",
}
