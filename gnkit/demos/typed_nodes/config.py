"""The typed-nodes demo's config and presets: the graph, the models and their training. Host."""

from __future__ import annotations

import dataclasses

from gnkit.experiments import setting

FAMILIES: tuple[str, ...] = ("rgcn", "hetero_sage", "gcn", "mlp")


def family(name: str) -> str:
    """The model family of replicate `name` (`'rgcn2'` -> `'rgcn'`)."""
    return name.rstrip("0123456789")


def replicate(name: str) -> int:
    """The replicate number of `name` (`'rgcn2'` -> 2), added to `seed` for its initialisation."""
    return int(name[len(family(name)):])


def replicates(count: int) -> tuple[str, ...]:
    """`count` replicates of every family, family by family: `('rgcn0', 'rgcn1', ...)`."""
    return tuple(f"{name}{index}" for name in FAMILIES for index in range(count))


@dataclasses.dataclass(frozen=True)
class TypedNodesConfig:
    """One run: each model of `models` trained full-batch on the UMLS typed graph.

    `models` names replicates of the four families (`rgcn0`, `hetero_sage1`, `gcn0`, `mlp2`,
    ...): the digit is added to `seed` for the replicate's initialisation; every replicate
    sees the same graph and the same node split (drawn from `seed`).
    """

    models: tuple[str, ...] = setting(replicates(3), help="model replicates, trained in turn")
    edge_sets: int = setting(
        12, minimum=0, help="largest relation edge sets kept, each with its inverse (0: all)"
    )
    hidden: int = setting(16, minimum=1, help="width of both layers of every model")
    updates: int = setting(200, minimum=1, help="full-batch Adam steps per model")
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam, warm-up then cosine decay")
    eval_every_updates: int = setting(20, minimum=1)
    seed: int = 0

    def validate(self) -> None:
        bad = [name for name in self.models
               if family(name) not in FAMILIES or not name[len(family(name)):].isdigit()]
        if bad or not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must be distinct replicates of {FAMILIES} (rgcn0, gcn1, "
                             f"...); got {list(self.models)}")


CONFIGS = {
    "default": TypedNodesConfig(),
    "quick": TypedNodesConfig(models=replicates(1), updates=100),
    "tiny": TypedNodesConfig(models=replicates(1), edge_sets=4, hidden=4, updates=4,
                             eval_every_updates=2),
}

PRESET_NOTES = {
    "default": "three replicates of each model, 200 full-batch updates on the 12 largest "
    "relations and their inverses (a few CPU-minutes)",
    "quick": "a first look: one replicate of each model, 100 updates",
    "tiny": "four relations, width 4 and a few updates, for tests",
}
