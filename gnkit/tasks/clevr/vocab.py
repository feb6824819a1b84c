"""CLEVR's vocabularies: object attributes, the program functions, templates, synonyms, answers and
question words, read from the files shipped in `gnkit/data/clevr` (CLEVR 1.0's own). Host."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

ATTRIBUTES = ("size", "color", "material", "shape")
"""Object attributes, in the order of a filter option `(size, color, material, shape)`."""
ATTRIBUTE_TYPES = {"size": "Size", "color": "Color", "material": "Material", "shape": "Shape"}
RELATIONS = ("left", "right", "behind", "front")
FAMILIES = ("exist", "count", "compare_integer", "compare_attribute", "query_attribute")
"""The question families of the RN paper's table, named by a program's last function."""
_FAMILY_OF_FUNCTION = {
    "exist": "exist",
    "count": "count",
    "equal_integer": "compare_integer",
    "less_than": "compare_integer",
    "greater_than": "compare_integer",
    **{f"equal_{name}": "compare_attribute" for name in ATTRIBUTES},
    **{f"query_{name}": "query_attribute" for name in ATTRIBUTES},
}
PAD, UNKNOWN = "<pad>", "<unk>"
_TOKEN = re.compile(r"[a-z]+|[0-9]+|[?;,.]")


def _data_file(*parts: str):
    return resources.files("gnkit").joinpath("data", "clevr", *parts)


@functools.cache
def metadata() -> dict[str, Any]:
    """CLEVR's `metadata.json`: attribute value lists (`types`) and the program functions."""
    return json.loads(_data_file("metadata.json").read_text())


@functools.cache
def synonyms() -> dict[str, list[str]]:
    """CLEVR's `synonyms.json`: the words a value may be rendered as in question text."""
    return json.loads(_data_file("synonyms.json").read_text())


@functools.cache
def properties() -> dict[str, Any]:
    """CLEVR's `properties.json`: shapes, colours (RGB), materials, sizes (radius)."""
    return json.loads(_data_file("properties.json").read_text())


@functools.cache
def templates() -> tuple[tuple[str, int, dict[str, Any]], ...]:
    """The 90 question templates as `(file name, index in file, template)`, files sorted by name."""
    folder = _data_file("templates")
    names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".json"))
    return tuple(
        (name, index, template)
        for name in names
        for index, template in enumerate(json.loads(folder.joinpath(name).read_text()))
    )


def values(attribute: str) -> tuple[str, ...]:
    """The values of an object attribute (`size`, `color`, `material`, `shape`) in
    metadata order, e.g. `values("shape") == ("cube", "sphere", "cylinder")`."""
    return tuple(metadata()["types"][ATTRIBUTE_TYPES[attribute]])


@functools.cache
def answers() -> tuple[str, ...]:
    """CLEVR's 28 answers: yes, no, the counts 0..10, then every attribute value."""
    counts = tuple(str(number) for number in range(11))
    return ("yes", "no", *counts, *(value for name in ATTRIBUTES for value in values(name)))


def answer_text(value: Any) -> str:
    """An answer as the released files write it: booleans `yes` / `no`, integers as digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def family(program: list[dict[str, Any]]) -> str:
    """The RN paper's question family of a program, from its last function (`exist`, `count`,
    `compare_integer`, `compare_attribute`, `query_attribute`)."""
    last = program[-1]
    return _FAMILY_OF_FUNCTION[last.get("function", last.get("type"))]


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation: `"Is it red?" -> ["is", "it", "red", "?"]`."""
    return _TOKEN.findall(text.lower())


@functools.cache
def words() -> tuple[str, ...]:
    """The question vocabulary: `<pad>`, `<unk>`, then (sorted) every word of the templates' text
    and of every value and synonym, singular and plural (`<S>s` renders `cubes`, `things`)."""
    found = set()
    for _, _, template in templates():
        for text in template["text"]:
            found.update(tokenize(re.sub(r"<[A-Z]+[0-9]*>", " ", text)))
    names = [value for kind in metadata()["types"].values() if kind for value in kind]
    names += [word for forms in synonyms().values() for word in forms] + list(synonyms())
    for name in names:
        for word in tokenize(name):
            found.update((word, word + "s"))
    found.add("a")  # CLEVR's rendering writes "another" as "a" when the objects differ
    return (PAD, UNKNOWN, *sorted(found))
