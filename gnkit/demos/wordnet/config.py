"""The WordNet demo's config and presets: data, models and training of one run. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

ModelName = Literal["sage", "gcn", "mlp", "label_propagation"]
MODEL_NAMES: tuple[str, ...] = ("sage", "gcn", "mlp", "label_propagation")
VariantName = Literal["all_pointers", "no_taxonomy"]
VARIANT_NAMES: tuple[str, ...] = ("all_pointers", "no_taxonomy")


@dataclasses.dataclass(frozen=True)
class WordNetConfig:
    """One run: lexicographer-class prediction per model and variant, then link prediction."""

    models: tuple[ModelName, ...] = setting(MODEL_NAMES, help="models to train, in turn")
    variants: tuple[VariantName, ...] = setting(
        VARIANT_NAMES, help="graphs: every pointer, or none of hypernym / hyponym (@ @i ~ ~i)"
    )
    feature_dim: int = setting(128, minimum=1, help="hashed gloss features (divides 4096)")
    hidden: int = setting(64, minimum=1, help="hidden width of every model")
    fanouts: tuple[int, ...] = setting((10, 5), minimum=1, help="GraphSAGE's neighbours per hop")
    batch_size: int = setting(512, minimum=1, help="seed nodes per mini-batch")
    epochs: int = setting(2, minimum=1, help="GraphSAGE epochs over the training synsets")
    full_batch_updates: int = setting(400, minimum=1, help="GCN and MLP full-batch updates")
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam")
    propagation_steps: int = setting(20, minimum=1, help="label propagation iterations")
    propagation_alpha: float = setting(0.9, minimum=0.0, help="label propagation's alpha")
    link_epochs: int = setting(1, minimum=0, help="link-prediction epochs (0: no link task)")
    link_fanouts: tuple[int, ...] = setting((5, 5), minimum=1)
    link_batch_size: int = setting(256, minimum=1, help="positive hypernym edges per batch")
    link_held_out: float = setting(0.05, minimum=0.0, help="hypernym edges held out per split")
    prefetch_workers: int = setting(1, minimum=1, help="sampling threads")
    subset: int = setting(0, minimum=0, help="keep this many random synsets (0: all)")
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if not self.variants or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must name each of {VARIANT_NAMES} at most once")
        if 4096 % self.feature_dim:
            raise ValueError(f"feature_dim must divide 4096; got {self.feature_dim}")
        if not 0.0 < self.link_held_out < 0.5:
            raise ValueError(f"link_held_out must lie in (0, 0.5); got {self.link_held_out}")


CONFIGS = {
    "default": WordNetConfig(),
    "quick": WordNetConfig(epochs=1, full_batch_updates=30, hidden=32, variants=("all_pointers",)),
    "tiny": WordNetConfig(
        feature_dim=32, hidden=8, fanouts=(3, 2), batch_size=64, epochs=1,
        full_batch_updates=3, propagation_steps=3, link_epochs=1, link_fanouts=(2,),
        link_batch_size=32, link_held_out=0.1, subset=1500,
    ),
}

PRESET_NOTES = {
    "default": "every model on both graphs: GraphSAGE 2 epochs, GCN / MLP 400 full-batch "
    "updates, hidden 64, link prediction 1 epoch",
    "quick": "a first look on every pointer: one epoch, 30 full-batch updates, hidden 32",
    "tiny": "1,500 random synsets and a few updates, for tests",
}
