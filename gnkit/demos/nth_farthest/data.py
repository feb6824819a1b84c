"""N-th farthest's data: fresh training sequences per update, with a curriculum on `n`, and one
fixed held-out test set. Host.

Training questions first ask only `n = 0` (the farthest), then one rank nearer per stage
(`curriculum_choices`), until every `n` is asked; the test set always asks every `n`.
"""

from __future__ import annotations

import numpy as np

from gnkit.demos.nth_farthest.config import TEST_SEED, NthFarthestConfig
from gnkit.tasks import nth_farthest as task


def curriculum_choices(config: NthFarthestConfig, update: int) -> list[int] | None:
    """The values of `n` that training questions at `update` ask, or None for all of them.

    With `curriculum_updates = U > 0` and `K` objects, stage `s = update // U` asks
    `n in {0, ..., s}`: only the farthest at first, one rank nearer per stage, until every `n`
    is asked, from update `U * (K - 1)` on. Host."""
    stages = config.num_objects - 1
    if config.curriculum_updates == 0 or update >= config.curriculum_updates * stages:
        return None
    return list(range(update // config.curriculum_updates + 1))


def make_batch(config: NthFarthestConfig, test=None):
    """`update -> (inputs [B, K, F + 3K], targets [B])`: fresh sequences, a pure function of
    the seed and the update, so a resumed run sees the same data; the questions follow
    `curriculum_choices`; `test` (the held-out set) is not used. Host."""
    del test

    def batch(update: int) -> tuple[np.ndarray, np.ndarray]:
        return task.sample(
            np.random.default_rng([config.seed, update]),
            config.batch_size,
            config.num_objects,
            config.num_features,
            n_choices=curriculum_choices(config, update),
        )

    return batch


def held_out_test_set(config: NthFarthestConfig, run_dir=None, progress: bool = True):
    """The fixed held-out test set: `test_size` sequences from `TEST_SEED`, whatever the run's
    seed: `(inputs [test_size, K, F + 3K], targets [test_size])`. Host."""
    del run_dir, progress
    return task.held_out_set(TEST_SEED, config.test_size, config.num_objects, config.num_features)
