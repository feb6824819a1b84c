"""CLEVR from state descriptions: scenes, CLEVR's functional programs and question templates.

A CLEVR-distributed benchmark made offline with CLEVR's own templates, program vocabulary,
synonyms and object properties (`gnkit/data/clevr`, BSD licence): `scenes` places 3-10 objects
with the rules of CLEVR's renderer, `questions` instantiates the 90 templates (9 families) on a
scene as CLEVR's question generator does, `programs` executes any program, and `files` reads and
writes CLEVR's released JSON formats and encodes them for the models. Host (pure Python and
NumPy).

>>> scenes, questions = generate(2, seed=0)
>>> all(execute(q["program"], scenes[q["image_index"]]) is not None for q in questions)
True
"""

from gnkit.tasks.clevr.files import (
    OBJECT_FEATURES,
    encode,
    generate,
    object_table,
    read_questions,
    read_scenes,
    split_files,
    write_split,
)
from gnkit.tasks.clevr.programs import INVALID, SceneIndex, execute
from gnkit.tasks.clevr.questions import QuestionGenerator, instantiate, render_text
from gnkit.tasks.clevr.scenes import random_scene
from gnkit.tasks.clevr.vocab import FAMILIES, answer_text, answers, family, tokenize, words

__all__ = [
    "FAMILIES",
    "INVALID",
    "OBJECT_FEATURES",
    "QuestionGenerator",
    "SceneIndex",
    "answer_text",
    "answers",
    "encode",
    "execute",
    "family",
    "generate",
    "instantiate",
    "object_table",
    "random_scene",
    "read_questions",
    "read_scenes",
    "render_text",
    "split_files",
    "tokenize",
    "words",
    "write_split",
]
