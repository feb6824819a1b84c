"""The relational-deep-learning demo's config and presets. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting

TaskName = Literal["player-churn", "player-allstar", "player-games", "all"]
ALL_TASKS = ("player-churn", "player-allstar", "player-games")


@dataclasses.dataclass(frozen=True)
class RDLConfig:
    """One task of the Lahman database: the GNN's replicates, its sampling and training.

    `models` names the GNN's replicates (`gnn0`, `gnn1`, ...: the digit is added to `seed` for
    each one's initialisation and batch order); the baselines are fitted in the report.
    """

    task: TaskName = setting("player-churn", help="the entity task, or all three")
    models: tuple[str, ...] = setting(("gnn0", "gnn1", "gnn2"), help="GNN replicates")
    hidden: int = setting(64, minimum=1, help="width of every table encoder and layer")
    layers: int = setting(3, minimum=1, help="typed GraphSAGE layers (and sampling hops)")
    fanout: int = setting(6, minimum=1, help="most recent rows per player and table sampled")
    batch_size: int = setting(128, minimum=1, help="seeds per update")
    updates: int = setting(1200, minimum=1, help="optimiser steps per replicate")
    learning_rate: float = setting(3e-3, minimum=0.0, help="Adam, warm-up then cosine decay")
    train_from: int = setting(2000, help="first training seed season (the last is 2018)")
    eval_every_updates: int = setting(200, minimum=1)
    eval_limit: int = setting(0, minimum=0, help="validation and test seeds used (0: all)")
    seed: int = 0

    def replicate_seed(self, name: str) -> int:
        """The seed of replicate `name` (`gnn<k>`): `seed + k`."""
        return self.seed + int(name[3:])

    def validate(self) -> None:
        bad = [name for name in self.models if not (name.startswith("gnn") and
                                                    name[3:].isdigit())]
        if bad or not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must be distinct replicates gnn0, gnn1, ...; got {bad}")
        if not 1871 <= self.train_from <= 2018:
            raise ValueError("train_from must be a season from 1871 to 2018")


CONFIGS = {
    "default": RDLConfig(),
    "quick": RDLConfig(models=("gnn0",), updates=200, train_from=2012, eval_every_updates=100),
    "tiny": RDLConfig(models=("gnn0",), hidden=8, layers=3, fanout=2, batch_size=16, updates=4,
                      train_from=2017, eval_every_updates=2, eval_limit=32),
}

PRESET_NOTES = {
    "default": "three GNN replicates of 1200 updates on seed seasons 2000-2018",
    "quick": "a first look: one replicate of 200 updates on seed seasons 2012-2018",
    "tiny": "a few updates of a tiny GNN, for tests",
}
