"""Attribute-renaming augmentation: the same question about a recoloured (reshaped, ...) scene.

CLEVR's programs treat the values of each attribute alike, so renaming them consistently -- in
the scene's object table, in the question's words and in the answer -- gives another question
whose answer is still right: "What color is the large cube?" about a scene whose large cube is
red becomes "What color is the small cylinder?" about the same scene with every large object made
small, every cube a cylinder and every red object blue, answer `blue`. Training on renamed copies
takes away the shortcuts a small data set offers (remembering which answers a question's words
went with) and leaves the model only the object table to answer from. Host (NumPy), applied to
a batch of the arrays of `encode`.

>>> from gnkit.tasks.clevr import encode, generate
>>> scenes, questions = generate(1, seed=0)
>>> data = encode(scenes, questions)
>>> batch = {"objects": data["objects"][data["scene"]], "words": data["words"],
...          "answer": data["answer"]}
>>> renamed = Renaming().apply(batch, np.random.default_rng(0))
>>> renamed["words"].shape == data["words"].shape
True
"""

from __future__ import annotations

import numpy as np

from gnkit.tasks.clevr import vocab
from gnkit.tasks.clevr.files import TABLE_ATTRIBUTES, attribute_columns


class Renaming:
    """Random per-question permutations of each attribute's values, applied to a batch.

    For each attribute, `apply` draws a permutation per question and maps the object table's
    one-hot columns, every word naming a value (all its synonyms, singular and plural, become the
    new value's own word) and an answer naming a value. Words and answers that name no value
    (counts, yes / no, relations, "thing") are kept.
    """

    def __init__(self, attributes: tuple[str, ...] = TABLE_ATTRIBUTES):
        self.attributes = attributes
        word_ids = {word: i for i, word in enumerate(vocab.words())}
        answer_ids = {answer: i for i, answer in enumerate(vocab.answers())}
        self._columns = attribute_columns()
        self._words, self._answers = {}, {}
        for name in TABLE_ATTRIBUTES:
            names = vocab.values(name)
            # Per value: the ids of the words naming it (every synonym, singular and plural) and
            # the ids of its own word, singular and plural (how a value renamed to it is written).
            naming = [vocab.synonyms().get(value, [value]) for value in names]
            self._words[name] = (
                [np.array([word_ids[w] for w in forms]) for forms in naming],
                [np.array([word_ids[w + "s"] for w in forms]) for forms in naming],
                np.array([word_ids[value] for value in names]),
                np.array([word_ids[value + "s"] for value in names]),
            )
            self._answers[name] = np.array([answer_ids[value] for value in names])

    def apply(self, batch: dict[str, np.ndarray], rng: np.random.Generator) -> dict:
        """A renamed copy of `batch` (`objects` `[B, n, F]`, `words` `[B, L]`, `answer` `[B]`;
        other keys copied as they are), one draw per question."""
        size = len(batch["answer"])
        objects = batch["objects"].copy()
        word_map = np.tile(np.arange(len(vocab.words())), (size, 1))
        answer_map = np.tile(np.arange(len(vocab.answers())), (size, 1))
        rows = np.arange(size)[:, None]
        for name in self.attributes:
            columns = self._columns[name]
            permutation = rng.permuted(np.tile(np.arange(len(columns)), (size, 1)), axis=1)
            inverse = np.argsort(permutation, axis=1)
            objects[..., columns] = np.take_along_axis(
                batch["objects"][..., columns], inverse[:, None, :], axis=2
            )
            singular, plural, own_singular, own_plural = self._words[name]
            for value in range(len(columns)):
                word_map[rows, singular[value][None, :]] = own_singular[permutation[:, value], None]
                word_map[rows, plural[value][None, :]] = own_plural[permutation[:, value], None]
            answer_map[rows, self._answers[name][None, :]] = self._answers[name][permutation]
        return {
            **batch,
            "objects": objects,
            "words": np.take_along_axis(word_map, batch["words"], axis=1),
            "answer": answer_map[np.arange(size), batch["answer"]],
        }
