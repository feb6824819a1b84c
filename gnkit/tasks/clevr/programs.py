"""An executor for CLEVR's functional programs: every function of CLEVR's `metadata.json`.

A program is a list of nodes, each `{"function": name, "inputs": [node indices], "value_inputs":
[values]}` as in CLEVR's released question files (the templates' spelling, `type` and
`side_inputs`, is read too). Nodes run in order; a node's inputs are earlier nodes' outputs.
Object sets are bit masks (`int`, bit i = object i) inside; `execute` returns CLEVR's answer
(`bool`, `int` or an attribute value) or `INVALID` when `unique` meets a set that is not one
object. The template-only functions (`filter`, `filter_unique`, `relate_filter_count`, ...) take
`(size, color, material, shape)` values (relation first for `relate_*`), where `""`, `"thing"`
or None matches any value. Host.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from gnkit.tasks.clevr import vocab

INVALID = "__INVALID__"
_ANY = ("", "thing", None)


class SceneIndex:
    """A scene prepared for execution: per-object attributes and bit masks of attribute values,
    relations (`relations[d][i]`: objects in direction d of object i) and same-attribute sets
    (`same[a][i]`: the other objects sharing attribute a with object i).

    `filter_options` maps every `(size, color, material, shape)` key with some entries None that
    matches at least one object (CLEVR's 16 masks of the attributes) to the mask of its objects.
    """

    def __init__(self, scene: dict[str, Any]):
        objects = scene["objects"]
        self.num_objects = len(objects)
        self.all = (1 << self.num_objects) - 1
        self.attributes = {name: [obj[name] for obj in objects] for name in vocab.ATTRIBUTES}
        self.by_value = {name: {} for name in vocab.ATTRIBUTES}
        for name, column in self.attributes.items():
            for i, value in enumerate(column):
                self.by_value[name][value] = self.by_value[name].get(value, 0) | (1 << i)
        self.relations = {
            name: [_mask(related) for related in scene["relationships"][name]]
            for name in vocab.RELATIONS
        }
        self.same = {
            name: [self.by_value[name][value] & ~(1 << i) for i, value in enumerate(column)]
            for name, column in self.attributes.items()
        }
        self.filter_options: dict[tuple, int] = {}
        for i in range(self.num_objects):
            key = tuple(self.attributes[name][i] for name in vocab.ATTRIBUTES)
            for keep in range(16):
                masked = tuple(v if keep >> j & 1 else None for j, v in enumerate(key))
                self.filter_options[masked] = self.filter_options.get(masked, 0) | (1 << i)

    @functools.cached_property
    def unused_filter_keys(self) -> list[tuple]:
        """Every `(size, color, material, shape)` key (entries may be None) matching no object."""
        choices = [(*vocab.values(name), None) for name in vocab.ATTRIBUTES]
        return [key for key in itertools.product(*choices) if key not in self.filter_options]

    def filter(self, objects: int, attribute: str, value: Any) -> int:
        """The objects of the set `objects` whose `attribute` is `value` (any value if blank)."""
        if value in _ANY:
            return objects
        return objects & self.by_value[attribute].get(value, 0)

    def filter_all(self, objects: int, values: Sequence[Any]) -> int:
        """The objects of `objects` matching `(size, color, material, shape)` `values`."""
        for attribute, value in zip(vocab.ATTRIBUTES, values, strict=True):
            objects = self.filter(objects, attribute, value)
        return objects


def _mask(indices) -> int:
    mask = 0
    for i in indices:
        mask |= 1 << i
    return mask


def objects_of(mask: int) -> list[int]:
    """The sorted object indices of a bit mask: `objects_of(0b101) == [0, 2]`."""
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def _unique(mask: int) -> int | str:
    if mask == 0 or mask & (mask - 1):
        return INVALID
    return mask.bit_length() - 1


def _relate_filter(index: SceneIndex, obj: int, values) -> int:
    return index.filter_all(index.relations[values[0]][obj], values[1:])


def _filter_handler(attribute: str):
    return lambda index, inputs, values: index.filter(inputs[0], attribute, values[0])


def _query_handler(attribute: str):
    return lambda index, inputs, values: index.attributes[attribute][inputs[0]]


def _same_handler(attribute: str):
    return lambda index, inputs, values: index.same[attribute][inputs[0]]


def _equal(index, inputs, values):
    return inputs[0] == inputs[1]


Handler = Callable[[SceneIndex, list, list], Any]
HANDLERS: dict[str, Handler] = {
    "scene": lambda index, inputs, values: index.all,
    **{f"filter_{name}": _filter_handler(name) for name in vocab.ATTRIBUTES},
    "unique": lambda index, inputs, values: _unique(inputs[0]),
    "relate": lambda index, inputs, values: index.relations[values[0]][inputs[0]],
    "union": lambda index, inputs, values: inputs[0] | inputs[1],
    "intersect": lambda index, inputs, values: inputs[0] & inputs[1],
    "count": lambda index, inputs, values: inputs[0].bit_count(),
    **{f"query_{name}": _query_handler(name) for name in vocab.ATTRIBUTES},
    "exist": lambda index, inputs, values: inputs[0] != 0,
    **{f"equal_{name}": _equal for name in (*vocab.ATTRIBUTES, "integer", "object")},
    "less_than": lambda index, inputs, values: inputs[0] < inputs[1],
    "greater_than": lambda index, inputs, values: inputs[0] > inputs[1],
    **{f"same_{name}": _same_handler(name) for name in vocab.ATTRIBUTES},
    "filter": lambda index, inputs, values: index.filter_all(inputs[0], values),
    "filter_unique": lambda index, inputs, values: _unique(index.filter_all(inputs[0], values)),
    "filter_count": lambda index, inputs, values: index.filter_all(inputs[0], values).bit_count(),
    "filter_exist": lambda index, inputs, values: index.filter_all(inputs[0], values) != 0,
    "relate_filter": lambda index, inputs, values: _relate_filter(index, inputs[0], values),
    "relate_filter_unique": lambda index, inputs, values: _unique(
        _relate_filter(index, inputs[0], values)
    ),
    "relate_filter_count": lambda index, inputs, values: _relate_filter(
        index, inputs[0], values
    ).bit_count(),
    "relate_filter_exist": lambda index, inputs, values: _relate_filter(
        index, inputs[0], values
    ) != 0,
}
"""`function name -> handler(scene index, input outputs, value inputs) -> output`."""


def run_node(index: SceneIndex, function: str, inputs: list, values: Sequence[Any]) -> Any:
    """The output of one node from its inputs' outputs, or `INVALID` if an input is invalid.

    Args:
      index: the scene, prepared.
      function: the node's function name (a key of `HANDLERS`).
      inputs: the outputs of the node's input nodes (object sets as bit masks).
      values: its value inputs (attribute values, relation names).

    Returns:
      The node's output: a bit mask, `bool`, `int`, an attribute value, or `INVALID`.
    """
    if any(isinstance(value, str) and value == INVALID for value in inputs):
        return INVALID
    return HANDLERS[function](index, inputs, list(values))


def node_parts(node: dict[str, Any]) -> tuple[str, list[int], list[Any]]:
    """`(function, inputs, value inputs)` of a node in the released (`function`,
    `value_inputs`) or the template (`type`, `side_inputs`) spelling."""
    function = node["function"] if "function" in node else node["type"]
    values = node["value_inputs"] if "value_inputs" in node else node.get("side_inputs", [])
    return function, list(node["inputs"]), list(values)


def execute(program: list[dict[str, Any]], scene: dict[str, Any] | SceneIndex, outputs=False):
    """Run `program` on `scene` (a scene dict or its `SceneIndex`). Returns the last node's output
    (an `INVALID` node ends the run), or every node's output with `outputs=True`; object sets
    come back as sorted lists of object indices."""
    index = scene if isinstance(scene, SceneIndex) else SceneIndex(scene)
    results = []
    for node in program:
        function, inputs, values = node_parts(node)
        result = run_node(index, function, [results[i] for i in inputs], values)
        results.append(result)
        if isinstance(result, str) and result == INVALID:
            break
    metadata_outputs = {spec["name"]: spec["output"] for spec in vocab.metadata()["functions"]}
    as_lists = [
        objects_of(result)
        if metadata_outputs[node_parts(node)[0]] == "ObjectSet" and isinstance(result, int)
        else result
        for node, result in zip(program, results, strict=False)
    ]
    return as_lists if outputs else as_lists[-1]
