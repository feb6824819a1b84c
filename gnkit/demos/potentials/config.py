"""The potentials demo's typed config and its presets."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from gnkit.experiments import setting

ModelName = Literal["schnet", "painn", "nequip", "mace"]
#: Frames of the shipped aspirin training file (train + validation).
ASPIRIN_TRAIN_FRAMES = 1200
#: The seed `make_emt_dataset` draws the EMT structures with: one fixed data set for every run.
EMT_SEED = 0


@dataclasses.dataclass(frozen=True)
class PotentialsConfig:
    """Data, models and training of one run (`--set KEY=VALUE` sets a field).

    `data=aspirin`: the shipped rMD17 aspirin frames; `n_validation` of the 1,200 training
    frames (drawn with `seed`) validate, the rest train, and the 1,800 test frames test
    (`test_frames` > 0: that many, evenly spaced). `data=emt`: `make_emt_dataset(sum(emt_sizes),
    EMT_SEED)` (fcc Cu / Al cells labelled by ASE's EMT, cached in the run directory); the
    first `emt_sizes[0] + emt_sizes[1]` structures are split into train and validation with
    `seed`, the last `emt_sizes[2]` are held out for test; stress enters the loss.

    Every model of `model` trains in turn on the same batches (`--model mace,schnet`). The loss
    is `gnkit.atoms.potential.loss` (mean squared errors of energy per atom, forces and, on
    EMT, stress) with `energy_weight`, `forces_weight`, `stress_weight`. Each species' E0 comes
    from least squares on the training structures, and the model's outputs are scaled by the
    RMS training force and shifted by the mean per-atom energy left after the E0s
    (`gnkit.atoms.potential.ScaleShift.fit`). Adam with a warm-up and cosine decay
    (`gnkit.experiments.runner.warmup_cosine_adam`) over `epochs` epochs of
    `ceil(train / batch_size)` updates peaking at `learning_rate` (SchNet and PaiNN: at
    `schnet_learning_rate` and `painn_learning_rate`, as both diverged at 0.01 on aspirin where
    MACE trained), the gradient norm clipped at `clip_norm`. Validation, test and MD use the
    exponential moving average of the variables (`ema_decay`, as MACE's `--ema_decay`);
    validation every `eval_every_epochs` epochs picks the state tested (the lowest weighted
    validation loss).
    """

    data: Literal["aspirin", "emt"] = setting("aspirin", help="rMD17 aspirin or the EMT metal")
    model: tuple[ModelName, ...] = setting(
        ("mace",), help="the models to train, in turn: schnet, painn, nequip, mace"
    )
    cutoff: float = setting(5.0, minimum=0.5, help="the neighbour-list cutoff (Å)")
    n_validation: int = setting(250, minimum=1, help="aspirin frames of the 1,200 validating")
    max_train: int = setting(0, minimum=0, help="use only the first N training frames (0: all)")
    test_frames: int = setting(0, minimum=0, help="test on N evenly spaced frames (0: all)")
    emt_sizes: tuple[int, int, int] = setting(
        (600, 100, 200), minimum=1, help="EMT structures for train, validation, test"
    )
    schnet_features: int = setting(128, minimum=2)
    schnet_interactions: int = setting(3, minimum=1)
    painn_features: int = setting(128, minimum=2)
    painn_interactions: int = setting(3, minimum=1)
    nequip_features: int = setting(32, minimum=1, help="multiplicity of each NequIP irrep")
    nequip_layers: int = setting(4, minimum=1)
    nequip_max_l: int = setting(1, minimum=1)
    mace_features: int = setting(128, minimum=1, help="MACE channels (Cx0e + Cx1o hidden)")
    mace_max_l: int = setting(3, minimum=1, help="MACE's spherical harmonics degree")
    mace_correlation: int = setting(3, minimum=1, help="MACE's body order minus one")
    mace_interactions: int = setting(2, minimum=1)
    energy_weight: float = setting(1000.0, minimum=0.0, help="weight of the energy-per-atom MSE")
    forces_weight: float = setting(1000.0, minimum=0.0, help="weight of the forces MSE")
    stress_weight: float = setting(10000.0, minimum=0.0, help="weight of the stress MSE (emt)")
    batch_size: int = setting(5, minimum=1, help="structures per update")
    epochs: int = setting(100, minimum=1)
    learning_rate: float = setting(
        5e-3, minimum=0.0, help="peak learning rate (not SchNet's or PaiNN's)"
    )
    schnet_learning_rate: float = setting(
        1e-3, minimum=0.0, help="SchNet's peak learning rate (0: learning_rate)"
    )
    painn_learning_rate: float = setting(
        1e-3, minimum=0.0, help="PaiNN's peak learning rate (0: learning_rate)"
    )
    clip_norm: float = setting(10.0, minimum=0.0, help="gradient global-norm clip")
    ema_decay: float = setting(
        0.99, minimum=0.0, help="decay of the variables' moving average tested (0: none)"
    )
    eval_every_epochs: int = setting(5, minimum=1)
    eval_batch_size: int = setting(25, minimum=1, help="structures per prediction call")
    seed: int = 0

    def validate(self) -> None:
        if len(set(self.model)) != len(self.model) or not self.model:
            raise ValueError("model must name each model at most once")
        if self.data == "aspirin" and self.n_validation >= ASPIRIN_TRAIN_FRAMES:
            raise ValueError(f"n_validation must be below {ASPIRIN_TRAIN_FRAMES}")
        if self.energy_weight + self.forces_weight <= 0:
            raise ValueError("energy_weight or forces_weight must be positive")
        if not self.ema_decay < 1:
            raise ValueError(f"ema_decay must be below 1, not {self.ema_decay}")

    def for_model(self, name: str) -> PotentialsConfig:
        """The config model `name` trains under: SchNet's and PaiNN's learning rates are their
        own."""
        own = {"schnet": self.schnet_learning_rate, "painn": self.painn_learning_rate}
        if own.get(name):
            return dataclasses.replace(self, learning_rate=own[name])
        return self

    @property
    def models(self) -> tuple[str, ...]:
        """The runner's models: those of `model`, in order."""
        return tuple(self.model)

    @property
    def train_size(self) -> int:
        """Training structures: the aspirin or EMT training split, cut to `max_train`."""
        if self.data == "aspirin":
            size = ASPIRIN_TRAIN_FRAMES - self.n_validation
        else:
            size = self.emt_sizes[0]
        return min(size, self.max_train) if self.max_train else size

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_size / self.batch_size)

    @property
    def updates(self) -> int:
        return self.epochs * self.steps_per_epoch

    @property
    def eval_every_updates(self) -> int:
        return self.eval_every_epochs * self.steps_per_epoch

    @property
    def weights(self) -> dict[str, float]:
        """The loss weights: energy and forces, and stress on EMT."""
        weights = {"energy": self.energy_weight, "forces": self.forces_weight}
        if self.data == "emt":
            weights["stress"] = self.stress_weight
        return weights


_SMALL = dict(
    schnet_features=64,
    painn_features=64,
    nequip_features=16,
    nequip_layers=3,
    mace_features=32,
    mace_max_l=2,
    mace_correlation=2,
)

CONFIGS = {
    "default": PotentialsConfig(
        mace_features=64, mace_max_l=2, epochs=150, learning_rate=1e-2, eval_every_epochs=5
    ),
    "quick": PotentialsConfig(
        **_SMALL, max_train=200, n_validation=100, test_frames=300, emt_sizes=(100, 25, 50),
        epochs=10, learning_rate=1e-2, eval_every_epochs=2,
        # 400 updates: SchNet stays stable at 0.01 (192 meV/Å test force MAE against 308 at 0.001).
        schnet_learning_rate=1e-2,
    ),
    # A long run's weights: energy 27 against forces' 1000, the energy offset learnt over epochs.
    "paper": PotentialsConfig(
        energy_weight=27.0, epochs=1000, learning_rate=1e-2, eval_every_epochs=10
    ),
    "tiny": PotentialsConfig(
        model=("schnet", "mace"), schnet_features=8, schnet_interactions=1, painn_features=8,
        painn_interactions=1, nequip_features=4, nequip_layers=1, mace_features=4,
        mace_max_l=1, mace_correlation=2, mace_interactions=1, n_validation=10, max_train=10,
        test_frames=10, emt_sizes=(8, 4, 4), epochs=2, batch_size=5, eval_every_epochs=1,
        eval_batch_size=5,
    ),
}

PRESET_NOTES = {
    "default": "MACE 64x0e + 64x1o, l = 2, on all 950 training frames for 150 epochs, batch 5 "
    "(about 0.1 CPU-s an update on one core, validation included: about 46 CPU-minutes on one "
    "core, e.g. `taskset -c 0`; two cores finish sooner but spend more CPU)",
    "quick": "a first look in a few CPU-minutes: small models, 200 training frames (EMT: 100), "
    "10 epochs, 300 test frames (EMT: 50)",
    "paper": "the MACE paper's sizes (128x0e + 128x1o, l = 3, correlation 3, batch 5, lr 0.01, "
    "energy / force weights 27 / 1000) for 1,000 epochs, for an accelerator",
    "tiny": "SchNet and MACE of a few channels on 10 frames for 2 epochs, for tests",
}
