"""Sort-of-CLEVR's data: three splits cached in the run directory, and training batches. Host."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gnkit import experiments
from gnkit.demos.sort_of_clevr.config import SortOfClevrConfig
from gnkit.tasks import sort_of_clevr as task

SPLITS = ("train", "valid", "test")
QUESTION_KEYS = ("color", "relational", "kind", "answer")


def load_datasets(
    config: SortOfClevrConfig, run_dir: experiments.RunDir, progress: bool = True
) -> dict[str, dict]:
    """Train, validation and test images with their questions, from `config.seed`; generated
    once and cached in the run directory (`data_<split>.npz`). Host."""
    del progress
    sizes = {"train": config.train_images, "valid": config.valid_images, "test": config.test_images}
    datasets = {}
    for index, split in enumerate(SPLITS):
        seed = int(np.random.SeedSequence([config.seed, index]).generate_state(1)[0])
        path = run_dir.file(f"data_{split}.npz")
        with experiments.reading_file(path, "a cached Sort-of-CLEVR data set (delete it)"):
            datasets[split] = task.load_or_generate(path, seed, sizes[split])
    return datasets


def image_batch(data: dict[str, np.ndarray], images: np.ndarray) -> dict[str, np.ndarray]:
    """The model input of the given image indices `[B]`: `images` uint8 `[B, 75, 75, 3]` and
    the questions' `color`, `relational`, `kind`, `answer`, int32 `[B, 20]`. Host."""
    questions = {key: data[key][images].astype(np.int32) for key in QUESTION_KEYS}
    return {"images": data["images"][images], **questions}


def make_batch(config: SortOfClevrConfig, datasets: dict[str, dict]) -> Callable[[int], dict]:
    """`step -> batch` of `images_per_batch` training images: epochs of the training set, each in
    its own random order, with `questions_per_image` of each image's 20 questions drawn at
    random. A pure function of the step, so a resumed run sees the same batches. Host."""
    train = datasets["train"]
    num_images, size = len(train["images"]), config.images_per_batch
    per_image = config.questions_per_image

    def batch(step: int) -> dict[str, np.ndarray]:
        positions = np.arange(step * size, (step + 1) * size)
        epochs, offsets = np.divmod(positions, num_images)
        orders = {
            epoch: np.random.default_rng([config.seed, 1_000, epoch]).permutation(num_images)
            for epoch in np.unique(epochs)
        }
        images = np.array([orders[e][o] for e, o in zip(epochs, offsets, strict=True)])
        full = image_batch(train, images)
        if per_image == task.QUESTIONS_PER_IMAGE:
            return full
        rng = np.random.default_rng([config.seed, 2_000, step])
        chosen = np.argsort(rng.random((size, task.QUESTIONS_PER_IMAGE)), axis=1)[:, :per_image]
        questions = {key: np.take_along_axis(full[key], chosen, 1) for key in QUESTION_KEYS}
        return {"images": full["images"], **questions}

    return batch
