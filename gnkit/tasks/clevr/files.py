"""CLEVR's JSON files and the arrays the models read.

`scenes.json` is `{"info": {...}, "scenes": [scene, ...]}` and `questions.json` is `{"info":
{...}, "questions": [question, ...]}`, as CLEVR's released `CLEVR_<split>_scenes.json` and
`CLEVR_<split>_questions.json`: `load_split` reads either (released answers are strings; a
generator's booleans and integers are read as `yes` / `no` and digits), so a model trains on the
real download unchanged. `encode` turns scenes and questions into padded arrays: the
state-description table `[S, 10, 18]` (3-D position, then one-hot colour, shape, material, size),
its mask, question word ids `[Q, L]`, answer ids and family ids. Host (NumPy).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from gnkit.tasks.clevr import scenes as scene_module
from gnkit.tasks.clevr import vocab
from gnkit.tasks.clevr.questions import QuestionGenerator

TABLE_ATTRIBUTES = ("color", "shape", "material", "size")
"""The one-hot attribute blocks of an object's state description, in column order."""


def attribute_columns() -> dict[str, np.ndarray]:
    """Per attribute of `TABLE_ATTRIBUTES`, the state-description columns of its values (in
    `vocab.values` order), after the 3 position columns."""
    columns, start = {}, 3
    for name in TABLE_ATTRIBUTES:
        count = len(vocab.values(name))
        columns[name] = start + np.arange(count)
        start += count
    return columns


OBJECT_FEATURES = 3 + sum(len(vocab.values(name)) for name in TABLE_ATTRIBUTES)
"""Width of one object's state description: 3-D position and four one-hot attributes (18)."""


def generate(num_scenes: int, seed: int = 0, split: str = "new", first_index: int = 0):
    """Random scenes and their questions in CLEVR's released format. Host.

    Args:
      num_scenes: scenes to draw.
      seed: with `split`, seeds the generator; the same pair gives the same scenes and questions.
      split: the split's name, stored in each scene (and in its image file name).
      first_index: the `image_index` of the first scene (to continue a split).

    Returns:
      `(scenes, questions)`, lists of dicts in the released format, questions numbered from 0.
    """
    rng = random.Random(f"clevr-{seed}-{split}")
    generator = QuestionGenerator(rng)
    scenes, questions = [], []
    for index in range(first_index, first_index + num_scenes):
        scene = scene_module.random_scene(rng, index, split)
        scenes.append(scene)
        for question in generator.questions(scene):
            question["question_index"] = len(questions)
            questions.append(question)
    return scenes, questions


def write_split(folder: str | Path, scenes: list[dict], questions: list[dict], split: str) -> None:
    """Write `folder/scenes.json` and `folder/questions.json` (CLEVR's formats).

    Args:
      folder: the directory to write into (created if missing).
      scenes: the scene dicts, as `generate` returns them.
      questions: the question dicts.
      split: the split's name, stored in both files' `info`.

    Returns:
      None. Each file is written to a temporary name and then renamed, so a reader never sees a
      half-written file.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    info = {"split": split, "version": "1.0", "generator": "gnkit.tasks.clevr"}
    for name, key, items in (("scenes", "scenes", scenes), ("questions", "questions", questions)):
        temporary = folder / f".{name}.json.tmp"
        temporary.write_text(json.dumps({"info": info, key: items}))
        temporary.replace(folder / f"{name}.json")


def _normalised(question: dict[str, Any]) -> dict[str, Any]:
    answer = question.get("answer")
    if answer is not None:
        question["answer"] = vocab.answer_text(answer)
    return question


def read_scenes(path: str | Path) -> list[dict[str, Any]]:
    """The scenes of a `scenes.json` file (the released or a generated one)."""
    return json.loads(Path(path).read_text())["scenes"]


def read_questions(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a `questions.json` file, answers as the released files write them."""
    return [_normalised(question) for question in json.loads(Path(path).read_text())["questions"]]


def split_files(folder: str | Path, split: str) -> tuple[Path, Path]:
    """The scene and question files of `split` in `folder`: `folder/<split>/scenes.json` and
    `questions.json` (as `gnkit clevr generate` writes them), or CLEVR's release layout
    `folder/scenes/CLEVR_<split>_scenes.json` and
    `folder/questions/CLEVR_<split>_questions.json`."""
    folder = Path(folder)
    released = (folder / "scenes" / f"CLEVR_{split}_scenes.json",
                folder / "questions" / f"CLEVR_{split}_questions.json")
    if released[0].exists():
        return released
    return folder / split / "scenes.json", folder / split / "questions.json"


def object_table(scenes: list[dict[str, Any]], max_objects: int = scene_module.MAX_OBJECTS):
    """State descriptions `[S, max_objects, 18]` float32 (zeros for absent objects) and the mask
    of real objects `[S, max_objects]` bool."""
    table = np.zeros((len(scenes), max_objects, OBJECT_FEATURES), np.float32)
    mask = np.zeros((len(scenes), max_objects), bool)
    offsets = {
        name: dict(zip(vocab.values(name), columns.tolist(), strict=True))
        for name, columns in attribute_columns().items()
    }
    for s, scene in enumerate(scenes):
        for o, obj in enumerate(scene["objects"][:max_objects]):
            table[s, o, :3] = obj["3d_coords"]
            for name, columns in offsets.items():
                table[s, o, columns[obj[name]]] = 1.0
            mask[s, o] = True
    return table, mask


def encode(scenes: list[dict], questions: list[dict], max_words: int = 48) -> dict[str, np.ndarray]:
    """The arrays of one split: `objects` `[S, 10, 18]`, `object_mask` `[S, 10]`, and per
    question `scene` (row of `objects`) `[Q]`, `words` `[Q, max_words]` (ids in `vocab.words()`,
    0-padded, longer questions cut), `length` `[Q]`, `answer` `[Q]` (index in `vocab.answers()`)
    and `family` `[Q]` (index in `vocab.FAMILIES`)."""
    objects, object_mask = object_table(scenes)
    row_of = {scene["image_index"]: row for row, scene in enumerate(scenes)}
    word_ids = {word: i for i, word in enumerate(vocab.words())}
    answer_ids = {answer: i for i, answer in enumerate(vocab.answers())}
    family_ids = {name: i for i, name in enumerate(vocab.FAMILIES)}
    words = np.zeros((len(questions), max_words), np.int32)
    length = np.zeros(len(questions), np.int32)
    for q, question in enumerate(questions):
        unknown = word_ids[vocab.UNKNOWN]
        ids = [word_ids.get(word, unknown) for word in vocab.tokenize(question["question"])]
        ids = ids[:max_words]
        words[q, : len(ids)] = ids
        length[q] = len(ids)
    return {
        "objects": objects,
        "object_mask": object_mask,
        "scene": np.array([row_of[question["image_index"]] for question in questions], np.int32),
        "words": words,
        "length": length,
        "answer": np.array([answer_ids[question["answer"]] for question in questions], np.int32),
        "family": np.array(
            [family_ids[vocab.family(question["program"])] for question in questions], np.int32
        ),
    }
