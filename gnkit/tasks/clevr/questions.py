"""Questions from CLEVR's templates, instantiated on a scene as CLEVR's generator does.

A template is a program with parameters (`<Z>` size, `<C>` colour, `<M>` material, `<S>` shape,
`<R>` relation) and text forms. `instantiate` walks the template's nodes depth first, in random
order, keeping a partial program and its outputs on the scene:

- a `filter*` / `relate_filter*` node branches over the filter options the scene offers at that
  point (every partly blank `(size, color, material, shape)` combination of the objects in the
  input set, with the relation first for `relate_*`), expanded into CLEVR's basic functions
  (`relate`, `filter_<attribute>`, then `unique` / `count` / `exist`); `filter_unique` keeps the
  options naming one object; `filter_count` and `filter` add as many options matching nothing as
  there are options matching one object, `filter_exist` as many as there are options, so that zero
  counts and "no" answers occur; `relate_filter*` keeps options whose result is not the whole
  filter (about 10% trivial ones are kept), non-empty unless it ends in `count` or `exist`;
- other nodes with a parameter branch over its values, the rest are appended as they are;
- a partial program whose output is invalid (`unique` of a set that is not one object) is dropped,
  and so is one that breaks a template constraint: `NULL` (the parameter must stay blank),
  `OUT_NEQ` (two nodes' outputs must differ), `NEQ` (two parameters must differ);
- a complete program is rejected when its answer is over-represented among this template's
  answers so far (more than 1.1 times the second most frequent, or more than 5 times the median,
  at least 5), or when the template relates objects directly (`relate`) and replacing any
  `relate` with the whole scene gives the same answer (a degenerate question).

The text is a random one of the template's forms with each parameter replaced by its value, or
one of the value's synonyms, blanks dropped, each `[optional]` part kept with probability 1/2, and
"other" / "another" dropped when the two objects named already differ.

Unlike CLEVR's generator, a search gives up after `MAX_STATES` partial programs: a template
whose answers are all over-represented on a scene (say "are there as many X as Y?" when "no" has
been asked more) would otherwise be searched exhaustively, tens of thousands of programs, on
every scene.

`QuestionGenerator` runs the templates on each scene in order of how often each was used so
far, one question per template, up to `TEMPLATES_PER_SCENE` templates per scene, with answer
counts reset every `RESET_COUNTS_EVERY` scenes, as CLEVR's defaults. Host (pure Python).
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

from gnkit.tasks.clevr import programs, vocab
from gnkit.tasks.clevr.programs import INVALID, SceneIndex

TEMPLATES_PER_SCENE = 10
RESET_COUNTS_EVERY = 250
TRIVIAL_FRACTION = 0.1
MAX_STATES = 1_000
_SPECIAL = {
    "filter_unique", "filter_count", "filter_exist", "filter",
    "relate_filter", "relate_filter_unique", "relate_filter_count", "relate_filter_exist",
}
_ENDINGS = ("unique", "count", "exist")
_OPTIONAL = re.compile(r"\[([^\[]*)\]")


def _filter_options(index: SceneIndex, objects: int, function: str, rng: random.Random):
    """`{(size, color, material, shape): matching objects}` for a `filter*` node on `objects`."""
    options = {key: mask & objects for key, mask in index.filter_options.items()}
    if function == "filter":
        options.pop((None, None, None, None), None)
    if function == "filter_unique":
        return {key: mask for key, mask in options.items() if mask.bit_count() == 1}
    if function == "filter_exist":
        extra = len(options)
    else:
        extra = sum(1 for mask in options.values() if mask.bit_count() == 1)
    unused = index.unused_filter_keys
    for key in rng.sample(unused, min(extra, len(unused))):
        options[key] = 0
    return options


def _relate_filter_options(index: SceneIndex, obj: int, function: str, rng: random.Random):
    """`{(relation, filter key): matching objects}` for a `relate_filter*` node on object `obj`."""
    unique = function == "relate_filter_unique"
    include_zero = function in ("relate_filter_count", "relate_filter_exist")
    options, trivial = {}, []
    for relation in vocab.RELATIONS:
        related = index.relations[relation][obj]
        for key, filtered in index.filter_options.items():
            both = related & filtered
            if (unique and both.bit_count() != 1) or (not include_zero and both == 0):
                continue
            if both == filtered:
                trivial.append(((relation, key), both))
            else:
                options[(relation, key)] = both
    rng.shuffle(trivial)
    keep = int(round(len(options) * TRIVIAL_FRACTION / (1 - TRIVIAL_FRACTION)))
    options.update(trivial[:keep])
    return options


def _blank(param_type: str) -> str:
    return "thing" if param_type == "Shape" else ""


def _breaks_constraint(template, param_types, vals, input_map, outputs) -> bool:
    for constraint in template["constraints"]:
        kind, params = constraint["type"], constraint["params"]
        if kind == "NULL":
            value = vals.get(params[0])
            if value is not None and value != _blank(param_types[params[0]]):
                return True
        elif kind == "OUT_NEQ":
            first, second = input_map.get(params[0]), input_map.get(params[1])
            if first is not None and second is not None and outputs[first] == outputs[second]:
                return True
        elif kind == "NEQ":
            first, second = vals.get(params[0]), vals.get(params[1])
            if first is not None and first == second:
                return True
        else:
            raise ValueError(f"unknown template constraint {kind!r}")
    return False


def _over_represented(answer_counts: dict, answer) -> bool:
    counts = sorted(answer_counts.values())
    median = max(counts[len(counts) // 2], 5)
    current = answer_counts[answer]
    return current > 1.1 * counts[-2] or current > 5.0 * median


def _without_node(nodes: list[tuple], replaced: int) -> list[tuple]:
    """The program with node `replaced` turned into `scene`, trimmed to the nodes the answer
    uses."""
    nodes = [("scene", (), ()) if i == replaced else node for i, node in enumerate(nodes)]
    used, pending = set(), [len(nodes) - 1]
    while pending:
        current = pending.pop()
        used.add(current)
        pending.extend(nodes[current][1])
    renumber = {old: new for new, old in enumerate(sorted(used))}
    return [
        (function, tuple(renumber[i] for i in inputs), values)
        for old, (function, inputs, values) in enumerate(nodes)
        if old in used
    ]


def _run(index: SceneIndex, nodes: list[tuple]) -> Any:
    outputs = []
    for function, inputs, values in nodes:
        outputs.append(programs.run_node(index, function, [outputs[i] for i in inputs], values))
    return outputs[-1]


def _is_degenerate(index: SceneIndex, nodes: list[tuple], answer) -> bool:
    return any(
        _run(index, _without_node(nodes, i)) == answer
        for i, node in enumerate(nodes)
        if node[0] == "relate"
    )


def _expand_filter(state, template_node, key, param_types):
    """The basic nodes and parameter values of one filter option of a `filter*` node."""
    nodes, outputs, vals, input_map, position = state
    vals = dict(vals)
    function = template_node["type"]
    names = list(template_node["side_inputs"])
    current = input_map[template_node["inputs"][0]]
    new_nodes = []
    if function.startswith("relate"):
        relation, key = key
        vals[names[0]] = relation
        names = names[1:]
        new_nodes.append(("relate", (current,), (relation,)))
        current = len(nodes) + len(new_nodes) - 1
    for name, value in zip(names, key, strict=True):
        param_type = param_types[name]
        if value is None:
            vals[name] = _blank(param_type)
            continue
        vals[name] = value
        new_nodes.append((f"filter_{param_type.lower()}", (current,), (value,)))
        current = len(nodes) + len(new_nodes) - 1
    ending = function.rsplit("_", 1)[-1]
    if ending in _ENDINGS:
        new_nodes.append((ending, (current,), ()))
    return new_nodes, vals


def instantiate(
    index: SceneIndex,
    template: dict[str, Any],
    answer_counts: dict,
    rng: random.Random,
    max_instances: int = 1,
    max_states: int = MAX_STATES,
) -> list[tuple[list[tuple], dict[str, str], Any]]:
    """Instantiations of `template` on the scene, by the depth-first search the module
    docstring describes.

    Args:
      index: the scene, prepared.
      template: one of CLEVR's templates (`params`, `nodes`, `constraints`, `text`).
      answer_counts: answer -> count for this template so far; updated with the answers
        returned, and read to reject over-represented answers.
      rng: the source of randomness (the search order and parameter values).
      max_instances: how many instantiations to return at most.
      max_states: partial programs searched at most before giving up.

    Returns:
      A list of `(program nodes as (function, inputs, value inputs) tuples, parameter values,
      answer)`, possibly empty.
    """
    param_types = {param["name"]: param["type"] for param in template["params"]}
    template_nodes = template["nodes"]
    has_relate = any(node["type"] == "relate" for node in template_nodes)
    first = template_nodes[0]
    start_nodes = [(first["type"], (), ())]
    states = [(start_nodes, [programs.run_node(index, first["type"], [], [])], {}, {0: 0}, 1)]
    found = []
    for _ in range(max_states):
        if not states:
            break
        state = states.pop()
        if callable(state):
            state = state()
        nodes, outputs, vals, input_map, position = state
        answer = outputs[-1]
        if isinstance(answer, str) and answer == INVALID:
            continue
        if _breaks_constraint(template, param_types, vals, input_map, outputs):
            continue
        if position == len(template_nodes):
            if _over_represented(answer_counts, answer):
                continue
            if has_relate and _is_degenerate(index, nodes, answer):
                continue
            answer_counts[answer] += 1
            found.append((nodes, vals, answer))
            if len(found) == max_instances:
                break
            continue
        states.extend(_children(index, state, template_nodes[position], param_types, rng))
    return found


def _children(index: SceneIndex, state, node: dict[str, Any], param_types, rng: random.Random):
    """The states after template node `node`, in random order, each a thunk computing its
    outputs only when the search reaches it."""
    nodes, outputs, vals, input_map, position = state
    function = node["type"]
    if function in _SPECIAL:
        source = outputs[input_map[node["inputs"][0]]]
        if function.startswith("relate_filter"):
            options = _relate_filter_options(index, source, function, rng)
        else:
            options = _filter_options(index, source, function, rng)
        keys = list(options)
        rng.shuffle(keys)
        return [
            functools.partial(_extend_filter, index, state, node, key, param_types) for key in keys
        ]
    inputs = tuple(input_map[i] for i in node["inputs"])
    if node.get("side_inputs"):
        name = node["side_inputs"][0]
        choices = list(vocab.metadata()["types"][param_types[name]])
        rng.shuffle(choices)
        return [
            functools.partial(_extend, index, state, [(function, inputs, (value,))],
                              {**vals, name: value})
            for value in choices
        ]
    return [functools.partial(_extend, index, state, [(function, inputs, ())], vals)]


def _extend_filter(index: SceneIndex, state, node, key, param_types):
    new_nodes, vals = _expand_filter(state, node, key, param_types)
    return _extend(index, state, new_nodes, vals)


def _extend(index: SceneIndex, state, new_nodes, vals):
    """The state after appending `new_nodes` for the state's next template node, with their
    outputs."""
    nodes, outputs, _, input_map, position = state
    outputs = list(outputs)
    for function, inputs, values in new_nodes:
        outputs.append(programs.run_node(index, function, [outputs[i] for i in inputs], values))
    input_map = {**input_map, position: len(nodes) + len(new_nodes) - 1}
    return nodes + new_nodes, outputs, vals, input_map, position + 1


def _replace_optionals(text: str, rng: random.Random) -> str:
    while match := _OPTIONAL.search(text):
        kept = match.group(1) if rng.random() > 0.5 else ""
        text = text[: match.start()] + kept + text[match.end():]
    return text


_PAIRED = ("<Z>", "<C>", "<M>", "<S>", "<Z2>", "<C2>", "<M2>", "<S2>")


def _drop_other(text: str, vals: dict[str, str]) -> str:
    if (" other " not in text and " another " not in text) or set(vals) != set(_PAIRED):
        return text
    differ = any(
        vals[first] != "" and vals[second] != "" and vals[first] != vals[second]
        for first, second in zip(_PAIRED[:4], _PAIRED[4:], strict=True)
    )
    if differ:
        text = text.replace(" other ", " ").replace(" another ", " a ")
    return text


def render_text(template: dict[str, Any], vals: dict[str, str], rng: random.Random) -> str:
    """The question text of an instantiation: a random text form with its parameters replaced
    (by the value or a synonym), optional parts kept with probability 1/2."""
    text = rng.choice(template["text"])
    synonyms = vocab.synonyms()
    for name, value in vals.items():
        if value in synonyms:
            value = rng.choice(synonyms[value])
        text = " ".join(text.replace(name, value).split())
    text = " ".join(_replace_optionals(text, rng).split())
    return _drop_other(text, vals)


def program_json(nodes: list[tuple]) -> list[dict[str, Any]]:
    """Program nodes in the released format: `{"function", "inputs", "value_inputs"}` each."""
    return [
        {"function": function, "inputs": list(inputs), "value_inputs": list(values)}
        for function, inputs, values in nodes
    ]


def _answer_domain(template: dict[str, Any]) -> list:
    outputs = {spec["name"]: spec["output"] for spec in vocab.metadata()["functions"]}
    kind = outputs[template["nodes"][-1]["type"]]
    if kind == "Bool":
        return [True, False]
    if kind == "Integer":
        return list(range(11))
    return list(vocab.metadata()["types"][kind])


class QuestionGenerator:
    """CLEVR's question generation loop over a stream of scenes, with its running counts of
    template uses and of each template's answers (reset every `reset_every` scenes)."""

    def __init__(self, rng: random.Random, templates_per_scene: int = TEMPLATES_PER_SCENE,
                 reset_every: int = RESET_COUNTS_EVERY):
        self.rng = rng
        self.templates_per_scene = templates_per_scene
        self.reset_every = reset_every
        self.scenes_seen = 0
        self._reset()

    def _reset(self):
        self.template_counts = {(name, i): 0 for name, i, _ in vocab.templates()}
        self.answer_counts = {
            (name, i): dict.fromkeys(_answer_domain(template), 0)
            for name, i, template in vocab.templates()
        }

    def questions(self, scene: dict[str, Any]) -> list[dict[str, Any]]:
        """Questions for one scene in the released format (`image_index`, `image_filename`,
        `split`, `question`, `answer`, `program`, `template_filename`,
        `question_family_index`)."""
        if self.scenes_seen % self.reset_every == 0:
            self._reset()
        self.scenes_seen += 1
        index = SceneIndex(scene)
        ordered = sorted(vocab.templates(), key=lambda item: self.template_counts[item[:2]])
        made = []
        for name, family_index, template in ordered:
            found = instantiate(index, template, self.answer_counts[(name, family_index)],
                                self.rng)
            for nodes, vals, answer in found:
                made.append({
                    "split": scene.get("split", "new"),
                    "image_index": scene["image_index"],
                    "image_filename": scene.get("image_filename", ""),
                    "question": render_text(template, vals, self.rng),
                    "answer": vocab.answer_text(answer),
                    "program": program_json(nodes),
                    "template_filename": name,
                    "question_family_index": family_index,
                })
            if found:
                self.template_counts[(name, family_index)] += 1
                if len(made) >= self.templates_per_scene:
                    break
        return made
