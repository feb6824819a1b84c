"""CLEVR's data: generated splits cached in the run directory (or read from a folder or
CLEVR's release), encoded as arrays, and training batches. Host.

Scenes and questions are generated with CLEVR's templates (`gnkit clevr generate`), cached in
the run directory as CLEVR's JSON files (`data/<split>/scenes.json`, `questions.json`), or read
from `--set data=DIR` (that layout, or CLEVR's release, `DIR/scenes/CLEVR_<split>_scenes.json`:
the release's `val` is the test split there, and the last `valid_scenes` training scenes
validate). Train, validation and test scenes are disjoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gnkit import experiments
from gnkit.demos.clevr.config import SPLITS, ClevrConfig
from gnkit.tasks import clevr as task


def _split_sizes(config: ClevrConfig) -> dict[str, int]:
    return {"train": config.train_scenes, "val": config.valid_scenes, "test": config.test_scenes}


def read_split(scenes_path: Path, questions_path: Path, flag: str | None = None):
    """`(scenes, questions)` from CLEVR's JSON files; an unreadable one is a `UsageError`
    naming it (and `flag`)."""
    with experiments.reading_file(scenes_path, "CLEVR scenes (JSON)", flag):
        scenes = task.read_scenes(scenes_path)
    with experiments.reading_file(questions_path, "CLEVR questions (JSON)", flag):
        return scenes, task.read_questions(questions_path)


def cached_split(folder: Path, split: str, num_scenes: int, seed: int, progress: bool = True):
    """Scenes and questions of a generated split in `folder/<split>` (made on first use, seed
    `seed`, scene indices disjoint across splits). Host.

    Args:
      folder: the data folder (`run_dir/data`).
      split: `train`, `val` or `test`.
      num_scenes: scenes to generate when the split is not there yet.
      seed: the generator's seed.
      progress: print what is generated.

    Returns:
      `(scenes, questions)` in CLEVR's JSON structures.
    """
    scenes_path, questions_path = task.split_files(folder, split)
    if not questions_path.exists():
        if progress:
            print(f"generating {num_scenes} {split} scenes and their questions", flush=True)
        start = time.perf_counter()
        scenes, questions = task.generate(num_scenes, seed=seed, split=split)
        task.write_split(folder / split, scenes, questions, split)
        if progress:
            seconds = time.perf_counter() - start
            print(f"  {len(questions)} questions in {seconds:.0f} s", flush=True)
        return scenes, questions
    return read_split(scenes_path, questions_path)


def _released_splits(folder: Path, config: ClevrConfig):
    """CLEVR's release: train minus its last `valid_scenes` scenes, those, and `val` as test."""
    loaded = {}
    for split in ("train", "val"):
        scenes_path, questions_path = task.split_files(folder, split)
        loaded[split] = read_split(scenes_path, questions_path, "--set data")
    scenes, questions = loaded["train"]
    cut = len(scenes) - config.valid_scenes
    held_out = {scene["image_index"] for scene in scenes[cut:]}
    return {
        "train": (scenes[:cut], [q for q in questions if q["image_index"] not in held_out]),
        "val": (scenes[cut:], [q for q in questions if q["image_index"] in held_out]),
        "test": loaded["val"],
    }


def load_splits(config: ClevrConfig, run_dir: experiments.RunDir | None, progress: bool = True):
    """`{split: (scenes, questions)}` for train / val / test: from `config.data`, else generated
    into (or read back from) `run_dir/data`. Host."""
    if config.data:
        folder = Path(config.data)
        if (folder / "scenes" / "CLEVR_train_scenes.json").exists():
            return _released_splits(folder, config)
        splits = {}
        for split in SPLITS:
            scenes_path, questions_path = task.split_files(folder, split)
            splits[split] = read_split(scenes_path, questions_path, "--set data")
        return splits
    if run_dir is None:
        raise experiments.UsageError("generated data needs a run directory")
    folder = run_dir.path / "data"
    sizes = _split_sizes(config)
    return {
        split: cached_split(folder, split, sizes[split], config.seed * 1_000 + index, progress)
        for index, split in enumerate(SPLITS)
    }


def encode_splits(splits) -> dict[str, dict[str, np.ndarray]]:
    """`task.encode` of every split. Host."""
    return {split: task.encode(scenes, questions) for split, (scenes, questions) in splits.items()}


def question_batch(data: dict[str, np.ndarray], questions: np.ndarray) -> dict[str, np.ndarray]:
    """The model input of the given question indices `[B]`: their scene's `objects`
    `[B, 10, 18]` and `object_mask` `[B, 10]`, `words` `[B, L]`, `length` and `answer` `[B]`."""
    scene = data["scene"][questions]
    return {
        "objects": data["objects"][scene],
        "object_mask": data["object_mask"][scene],
        "words": data["words"][questions],
        "length": data["length"][questions],
        "answer": data["answer"][questions],
    }


def make_batch(config: ClevrConfig, data: dict[str, dict]) -> Callable[[int], dict]:
    """`step -> batch` of `batch_size` training questions drawn uniformly; a pure function of
    the step, so a resumed run sees the same batches. Host."""
    train = data["train"]
    num_questions = len(train["answer"])

    def batch(step: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([config.seed, 1_000, step])
        return question_batch(train, rng.integers(0, num_questions, config.batch_size))

    return batch


def load_data(config: ClevrConfig, run_dir: experiments.RunDir, progress: bool = True):
    """Every split of `load_splits`, encoded (`task.encode`): `{split: arrays}`. Host."""
    return encode_splits(load_splits(config, run_dir, progress))
