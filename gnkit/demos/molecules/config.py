"""The molecules demo's typed config and its presets."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

SHIPPED_DATA = ("esol", "freesolv", "lipophilicity")
ModelName = Literal["dmpnn", "gine", "gcn", "gat", "gps"]
# Width of the encoded positional encoding inside the GPS model's `gps_hidden_size` channels.
POSITIONAL_WIDTH = 16


@dataclasses.dataclass(frozen=True)
class MoleculesConfig:
    """Data, split, model and training of one run (`--set KEY=VALUE` sets a field).

    Replicate `i` of `seeds` uses seed `seed + i` for its split and its initial weights (as
    chemprop's `--data-seed` counts up over `--num-replicates`). Sizes and the learning-rate
    schedule are chemprop v2's defaults: message width 300, depth 3, one FFN layer of 300,
    batch 64, 50 epochs, Adam with a linear warm-up from `init_lr` to `max_lr` over
    `warmup_epochs`, then an exponential decay to `final_lr`; targets standardised on the
    training rows; the state with the lowest validation RMSE (classification: the highest
    mean validation AUROC) is tested. `data` is a shipped set or one's own CSV
    (`smiles_column`, `target_columns`, one task per column, empty cells missing labels
    masked in the loss and metrics; `task` inferred from the labels unless set; rows RDKit
    rejects skipped with a report, or refused with `invalid_smiles=raise`). gnkit's recipe adds
    each molecule's RDKit 2-D descriptors (`descriptors`), each mapped through its empirical
    distribution over the training molecules to [0, 1], beside the pooled atom encodings
    before the FFN (the `chemprop` preset leaves them out: chemprop's default model).

    `model=gps` is a GPS graph transformer (`gnkit.nn.GPS`: GINE local layers and attention
    within each molecule, layer norm, no dropout) of `gps_layers` layers of `gps_hidden_size`
    channels and `gps_heads` heads, with each atom's `positional` encoding (random-walk return
    probabilities over `rwse_steps` steps, or `lappe_vectors` Laplacian eigenvectors with
    random signs in training) encoded to `POSITIONAL_WIDTH` of those channels.
    """

    data: str = setting("esol", help="a shipped set (esol, freesolv, lipophilicity) or a .csv")
    smiles_column: str = setting("smiles", help="the CSV's SMILES column (data=PATH.csv)")
    target_columns: str = setting(
        "", help="the CSV's target columns, comma-separated (empty: every other column)"
    )
    task: Literal["auto", "regression", "classification"] = setting(
        "auto", help="auto: classification when every label is 0 or 1, else regression"
    )
    invalid_smiles: Literal["skip", "raise"] = setting(
        "skip", help="a CSV row RDKit rejects: skip it (each is reported) or stop there"
    )
    split: Literal["random", "scaffold"] = "random"
    splits_file: str = setting("", help="a chemprop splits file to use instead of `split`")
    sizes: tuple[float, float, float] = (0.8, 0.1, 0.1)
    model: ModelName = "dmpnn"
    features: Literal["chemprop", "ogb"] = setting(
        "chemprop", help="atom and bond features (ogb: integer features, embedded)"
    )
    hidden_size: int = setting(300, minimum=1, help="message width")
    depth: int = setting(3, minimum=1, help="message-passing depth (chemprop's count)")
    ffn_hidden_size: int = setting(300, minimum=1)
    ffn_layers: int = setting(1, minimum=1, help="hidden FFN layers before the output")
    descriptors: bool = setting(
        True, help="RDKit 2-D descriptors beside the pooled atoms (chemprop's default: none)"
    )
    readout: Literal["norm", "mean", "sum"] = setting(
        "norm", help="atom pooling (norm: sum / 100, chemprop's default)"
    )
    batch_size: int = setting(64, minimum=1)
    epochs: int = setting(50, minimum=1)
    warmup_epochs: int = setting(2, minimum=0)
    init_lr: float = setting(1e-4, minimum=0.0)
    max_lr: float = setting(1e-3, minimum=0.0)
    final_lr: float = setting(1e-4, minimum=0.0)
    gps_hidden_size: int = setting(128, minimum=1, help="GPS channels (model=gps)")
    gps_layers: int = setting(4, minimum=1, help="GPS layers (model=gps)")
    gps_heads: int = setting(4, minimum=1, help="GPS attention heads (model=gps)")
    positional: Literal["rwse", "lappe"] = setting(
        "rwse", help="GPS positional encoding: random-walk or Laplacian eigenvectors"
    )
    rwse_steps: int = setting(16, minimum=1, help="random-walk steps of positional=rwse")
    lappe_vectors: int = setting(8, minimum=1, help="eigenvectors of positional=lappe")
    seeds: int = setting(5, minimum=1, help="replicates: seeds seed .. seed + seeds - 1")
    max_molecules: int = setting(0, minimum=0, help="use only the first N rows (0: all)")
    seed: int = 0

    def validate(self) -> None:
        if self.data not in SHIPPED_DATA and not self.data.lower().endswith(".csv"):
            raise ValueError(
                f"data must be one of {', '.join(SHIPPED_DATA)} or a path to a .csv file, "
                f"got {self.data!r}"
            )
        if self.data in SHIPPED_DATA and self.task == "classification":
            raise ValueError(f"data={self.data} is a regression set: leave task=auto")
        if abs(sum(self.sizes) - 1.0) > 1e-9 or min(self.sizes) <= 0:
            raise ValueError(f"sizes must be three positive fractions summing to 1: {self.sizes}")
        if self.epochs <= self.warmup_epochs:
            raise ValueError("epochs must be more than warmup_epochs")
        if self.model == "dmpnn" and self.features != "chemprop":
            raise ValueError("model=dmpnn reads float features: use features=chemprop")
        if self.gps_hidden_size % self.gps_heads:
            raise ValueError(
                f"gps_hidden_size={self.gps_hidden_size} must be divisible by "
                f"gps_heads={self.gps_heads}"
            )
        if self.gps_hidden_size <= POSITIONAL_WIDTH:
            raise ValueError(f"gps_hidden_size must exceed {POSITIONAL_WIDTH} (the encodings')")

    @property
    def replicate_seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.seeds))

    @property
    def models(self) -> tuple[str, ...]:
        """The replicates as the runner's models: `seed<s>` for each replicate seed `s`."""
        return tuple(f"seed{seed}" for seed in self.replicate_seeds)

    @staticmethod
    def replicate_seed(name: str) -> int:
        """The seed of replicate `name` (`seed<s>`): `s`, its split's and initial weights'."""
        return int(name.removeprefix("seed"))


CONFIGS = {
    # 100 epochs (chemprop's schedule stretched over them): on ESOL's random splits of seeds 0
    # and 1 the validation RMSE was lower than at 50 epochs.
    "default": MoleculesConfig(epochs=100),
    "chemprop": MoleculesConfig(descriptors=False),
    "quick": MoleculesConfig(seeds=2, epochs=20),
    "tiny": MoleculesConfig(
        hidden_size=16,
        ffn_hidden_size=16,
        batch_size=16,
        epochs=3,
        warmup_epochs=1,
        seeds=2,
        max_molecules=80,
    ),
}

PRESET_NOTES = {
    "default": "gnkit's recipe: chemprop's model with RDKit descriptors, 100 epochs, 5 replicates",
    "chemprop": "chemprop v2's default model and schedule (50 epochs, no descriptors), 5 "
    "replicates",
    "quick": "a first look in a few CPU-minutes: 2 replicates of 20 epochs",
    "tiny": "2 replicates of 3 epochs of a tiny model on 80 molecules, for tests",
}
