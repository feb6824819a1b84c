"""The WordNet demo's config and presets: data, models and training of one run. Host."""

from __future__ import annotations

import dataclasses

from gnkit.experiments import setting

CLASSIFIERS: tuple[str, ...] = ("sage", "gcn", "rgcn", "mlp")
NO_TAXONOMY = "_no_taxonomy"
LINK = "link"
MODEL_NAMES: tuple[str, ...] = (
    "sage", "gcn", "rgcn", "mlp", "sage_no_taxonomy", "gcn_no_taxonomy", "rgcn_no_taxonomy",
    LINK,
)
# R-GCN costs about three GCN updates per update (an R-GCN weight per edge set): the default
# trains it on every pointer only.
DEFAULT_MODELS = tuple(name for name in MODEL_NAMES if name != "rgcn_no_taxonomy")


def family(name: str) -> str:
    """The architecture of model `name`: `'sage_no_taxonomy'` -> `'sage'`."""
    return name.removesuffix(NO_TAXONOMY)


def variant(name: str) -> str:
    """The graph model `name` trains on: `'no_taxonomy'` (no `@ @i ~ ~i` pointers) or
    `'all_pointers'`."""
    return "no_taxonomy" if name.endswith(NO_TAXONOMY) else "all_pointers"


@dataclasses.dataclass(frozen=True)
class WordNetConfig:
    """One run: lexicographer-class prediction per model, and link prediction (`link`).

    `models` names classifiers (`sage`, `gcn`, `rgcn`, `mlp`) on every pointer, the same with
    `_no_taxonomy` on the graph without hypernym / hyponym pointers, and `link`, the hypernym
    predictor; each trains for `updates` updates in turn.
    """

    models: tuple[str, ...] = setting(DEFAULT_MODELS, help="models to train, in turn")
    feature_dim: int = setting(128, minimum=1, help="hashed gloss features (divides 4096)")
    hidden: int = setting(64, minimum=1, help="hidden width of every model")
    fanouts: tuple[int, ...] = setting((10, 5), minimum=1, help="GraphSAGE's neighbours per hop")
    batch_size: int = setting(512, minimum=1, help="GraphSAGE's seed synsets per update")
    updates: int = setting(400, minimum=1, help="Adam steps per model")
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam, warm-up then cosine decay")
    eval_every_updates: int = setting(100, minimum=1)
    propagation_steps: int = setting(20, minimum=1, help="label propagation iterations")
    propagation_alpha: float = setting(0.9, minimum=0.0, help="label propagation's alpha")
    link_fanouts: tuple[int, ...] = setting((5, 5), minimum=1)
    link_batch_size: int = setting(256, minimum=1, help="positive hypernym edges per update")
    link_negatives: int = setting(8, minimum=1, help="uniform negatives per positive")
    link_held_out: float = setting(0.05, minimum=0.0, help="hypernym edges held out per split")
    link_valid_queries: int = setting(1000, minimum=1, help="validation edges ranked per eval")
    subset: int = setting(0, minimum=0, help="keep this many random synsets (0: all)")
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models) or (
            set(self.models) - set(MODEL_NAMES)
        ):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once; got "
                             f"{list(self.models)}")
        if 4096 % self.feature_dim:
            raise ValueError(f"feature_dim must divide 4096; got {self.feature_dim}")
        if not 0.0 < self.link_held_out < 0.5:
            raise ValueError(f"link_held_out must lie in (0, 0.5); got {self.link_held_out}")


CONFIGS = {
    "default": WordNetConfig(),
    "quick": WordNetConfig(models=("sage", "gcn", "rgcn", "mlp", LINK), updates=100,
                           hidden=32, eval_every_updates=50),
    "tiny": WordNetConfig(
        models=MODEL_NAMES, feature_dim=32, hidden=8, fanouts=(3, 2), batch_size=64, updates=4,
        eval_every_updates=2, propagation_steps=3, link_fanouts=(2,), link_batch_size=32,
        link_negatives=2, link_held_out=0.1, link_valid_queries=20, subset=1500,
    ),
}

PRESET_NOTES = {
    "default": "GraphSAGE and GCN on both graphs, R-GCN and the MLP on every pointer, and the "
    "hypernym predictor: 400 updates each, hidden 64",
    "quick": "a first look on every pointer: 100 updates each, hidden 32",
    "tiny": "1,500 random synsets and a few updates, for tests",
}
