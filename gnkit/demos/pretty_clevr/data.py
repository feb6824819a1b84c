"""Pretty-CLEVR's data: the three splits from the seed, model inputs and curriculum batches.

Training draws questions uniformly with a curriculum: the most jumps asked rises from 0 to 7 over
the first `curriculum` fraction of the updates (`max_jumps`); without it none of the three models
left chance level within a few thousand updates here (one-hot pointers are slow to learn). Host.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gnkit.demos.pretty_clevr.config import PrettyClevrConfig
from gnkit.tasks import pretty_clevr as task

QUESTION_KEYS = ("anchor_is_color", "anchor", "jumps", "answer")


def make_datasets(config: PrettyClevrConfig, run_dir=None, progress: bool = True) -> dict:
    """Train, validation and test scenes with their questions, from `config.seed` (generated
    afresh: nothing is cached in `run_dir`). Host."""
    del run_dir, progress
    sizes = {"train": config.train_scenes, "valid": config.valid_scenes, "test": config.test_scenes}
    return {
        split: task.generate(np.random.default_rng([config.seed, index]), sizes[split])
        for index, split in enumerate(sizes)
    }


def question_batch(data: dict[str, np.ndarray], questions: np.ndarray, positions=None):
    """The model input of the given question indices `[B]`: positions `[B, 8, 2]` (the scene's,
    or `positions` if given), colours and markers `[B, 8]`, and the question's fields `[B]`."""
    scene = data["scene"][questions]
    return {
        "positions": data["positions"][scene] if positions is None else positions,
        "colors": data["colors"][scene].astype(np.int32),
        "markers": data["markers"][scene].astype(np.int32),
        **{key: data[key][questions].astype(np.int32) for key in QUESTION_KEYS},
    }


def max_jumps(config: PrettyClevrConfig, step: int) -> int:
    """The most jumps a training question asks at update `step`: rises linearly from 0 to 7 over
    the first `curriculum` fraction of the updates (always 7 with `curriculum=0`)."""
    ramp = config.curriculum * config.updates
    if step >= ramp:
        return task.NUM_JUMPS - 1
    return int(task.NUM_JUMPS * step / ramp)


def make_batch(config: PrettyClevrConfig, datasets: dict[str, dict]) -> Callable[[int], dict]:
    """`step -> batch`: `batch_size` questions drawn uniformly among those asking at most
    `max_jumps(config, step)` jumps, positions augmented (random scale and rotation) unless
    `config.augment` is off. A pure function of the step, so a resumed run sees the same batches.
    Host."""
    train = datasets["train"]
    num_scenes = len(train["positions"])

    def batch(step: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([config.seed, 1_000, step])
        size = config.batch_size
        questions = task.question_index(
            rng.integers(0, num_scenes, size),
            rng.integers(0, task.NUM_OBJECTS, size),
            rng.integers(0, max_jumps(config, step) + 1, size),
            rng.integers(0, 2, size).astype(bool),
        )
        positions = train["positions"][train["scene"][questions]]
        if config.augment:
            positions = task.augment(rng, positions)
        return question_batch(train, questions, positions)

    return batch


def subset(data: dict[str, np.ndarray], num_scenes: int) -> dict[str, np.ndarray]:
    """The first `num_scenes` scenes of `data` and their questions. Host."""
    keep = data["scene"] < num_scenes
    scenes = {key: data[key][:num_scenes] for key in ("positions", "colors", "markers")}
    return {**scenes, "scene": data["scene"][keep], **{k: data[k][keep] for k in QUESTION_KEYS}}
