"""The config every graph_nets demo shares, and its tiny preset for tests. Host."""

from __future__ import annotations

import dataclasses
from typing import Literal

from gnkit.experiments import setting


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """Model, data and optimiser settings of one demo run.

    `updates` optimiser steps on batches of `batch_size` graphs of `train_sizes` (min, max) nodes,
    list elements or masses; `steps` message-passing (processing) steps in training,
    `eval_steps` in evaluation. `test_sizes` are the size ranges reported at the end,
    `eval_graphs` graphs each; every `eval_every_updates` updates the model is evaluated on
    `monitor_graphs` graphs of training size (the best is kept for the reports).
    The optimiser is Adam at `learning_rate`, decayed to zero by `updates` when
    `learning_rate_schedule` is 'cosine', after clipping the gradient's global norm to
    `clip_gradient_norm` (None: no clipping). Training batches are padded up a `BucketPolicy`
    ladder of ratio `bucket_growth` (larger: fewer shapes to compile, more padding).
    `quick_compile` turns XLA's backend optimisation off: about half the compile time and slower
    steps, the better trade for runs of a few updates (tests, quick notebooks); `pmap` takes no
    compiler options, so it needs `quick_compile=False`.
    """

    updates: int = setting(5000, minimum=1, help="optimiser steps")
    batch_size: int = setting(32, minimum=1)
    latent_size: int = setting(16, minimum=1)
    num_layers: int = setting(2, minimum=1)
    layer_norm: bool = True
    learning_rate: float = setting(1e-3, minimum=0)
    learning_rate_schedule: Literal["constant", "cosine"] = "constant"
    clip_gradient_norm: float | None = None
    steps: int = setting(10, minimum=1, help="message-passing steps in training")
    eval_steps: int = setting(10, minimum=1, help="message-passing steps in evaluation")
    train_sizes: tuple[int, int] = setting((8, 16), minimum=1)
    test_sizes: tuple[tuple[int, int], ...] = setting(((8, 16), (16, 32)), minimum=1)
    eval_graphs: int = setting(1000, minimum=1)
    eval_batch_size: int = setting(100, minimum=1)
    monitor_graphs: int = setting(200, minimum=1)
    eval_every_updates: int = setting(500, minimum=1)
    factorised: bool = True
    bucket_growth: float = setting(1.2, minimum=1)
    quick_compile: bool = False
    seed: int = 0

    def validate(self) -> None:
        """Size ranges are (min, max) with min <= max; a clipping norm is positive."""
        for low, high in (self.train_sizes, *self.test_sizes):
            if low > high:
                raise ValueError(f"size range ({low}, {high}): expected min <= max")
        if self.clip_gradient_norm is not None and self.clip_gradient_norm <= 0:
            raise ValueError("clip_gradient_norm must be > 0 (or None)")


def tiny_config(size: int, **overrides) -> DemoConfig:
    """A config for tests and smoke runs: 40 updates on graphs of `size` (training and the one
    test range), latent 8, 2 processing steps, a fast compile; `overrides` replace any field.
    Monitoring and test batches share one padded shape, so prediction compiles once."""
    settings = dict(
        updates=40,
        batch_size=8,
        latent_size=8,
        steps=2,
        eval_steps=2,
        train_sizes=(size, size),
        test_sizes=((size, size),),
        eval_graphs=16,
        eval_batch_size=8,
        monitor_graphs=8,
        eval_every_updates=20,
        quick_compile=True,
    )
    return DemoConfig(**{**settings, **overrides})
