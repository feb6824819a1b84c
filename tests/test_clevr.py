"""CLEVR generator: scene rules, vocabularies, and every question's answer recomputed by an
evaluator written here (plain Python over the scene dicts, no call into gnkit's executor)."""

import collections
import json
import math
from importlib import resources

import numpy as np
import pytest

from gnkit.tasks import clevr
from gnkit.tasks.clevr import vocab

DATA = resources.files("gnkit").joinpath("data", "clevr")
PROPERTIES = json.loads(DATA.joinpath("properties.json").read_text())
METADATA = json.loads(DATA.joinpath("metadata.json").read_text())
DIRECTIONS = ("left", "right", "front", "behind")


@pytest.fixture(scope="module")
def generated():
    return clevr.generate(120, seed=3, split="val")


# An evaluator of CLEVR programs over the scene dicts, written for the test: sets are Python sets.
def _matches(obj, values):
    return all(value in ("", "thing", None) or obj[name] == value
               for name, value in zip(("size", "color", "material", "shape"), values, strict=True))


def _related(scene, obj, relation):
    return set(scene["relationships"][relation][obj])


def _one(objects):
    return next(iter(objects)) if len(objects) == 1 else None


def evaluate(program, scene):
    objects = scene["objects"]
    out = []
    for node in program:
        name, values = node["function"], node["value_inputs"]
        args = [out[i] for i in node["inputs"]]
        if any(arg is None for arg in args):
            return None
        if name == "scene":
            value = set(range(len(objects)))
        elif name.startswith("filter_") and name[7:] in ("size", "color", "material", "shape"):
            value = {i for i in args[0] if objects[i][name[7:]] == values[0]}
        elif name == "unique":
            value = _one(args[0])
        elif name == "relate":
            value = _related(scene, args[0], values[0])
        elif name in ("union", "intersect"):
            value = args[0] | args[1] if name == "union" else args[0] & args[1]
        elif name == "count":
            value = len(args[0])
        elif name == "exist":
            value = "yes" if args[0] else "no"
        elif name.startswith("query_"):
            value = objects[args[0]][name[6:]]
        elif name.startswith("same_"):
            attribute = name[5:]
            value = {i for i, o in enumerate(objects)
                     if i != args[0] and o[attribute] == objects[args[0]][attribute]}
        elif name.startswith("equal_"):
            value = "yes" if args[0] == args[1] else "no"
        elif name in ("less_than", "greater_than"):
            smaller = args[0] < args[1] if name == "less_than" else args[0] > args[1]
            value = "yes" if smaller else "no"
        elif name.startswith("filter"):  # the template-only filter_* / filter
            kept = {i for i in args[0] if _matches(objects[i], values)}
            value = {"filter": kept, "filter_unique": _one(kept), "filter_count": len(kept),
                     "filter_exist": "yes" if kept else "no"}[name]
        elif name.startswith("relate_filter"):
            related = _related(scene, args[0], values[0])
            kept = {i for i in related if _matches(objects[i], values[1:])}
            value = {"relate_filter": kept, "relate_filter_unique": _one(kept),
                     "relate_filter_count": len(kept),
                     "relate_filter_exist": "yes" if kept else "no"}[name]
        else:
            raise AssertionError(f"unknown function {name}")
        out.append(value)
    return str(out[-1]) if isinstance(out[-1], int) else out[-1]


def test_scene_attributes_come_from_clevr_vocabularies(generated):
    scenes, _ = generated
    seen = collections.defaultdict(set)
    for scene in scenes:
        assert 3 <= len(scene["objects"]) <= 10
        for obj in scene["objects"]:
            assert obj["shape"] in {"cube", "sphere", "cylinder"}
            assert obj["color"] in PROPERTIES["colors"]
            assert obj["material"] in PROPERTIES["materials"]
            assert obj["size"] in PROPERTIES["sizes"]
            for key in ("shape", "color", "material", "size"):
                seen[key].add(obj[key])
            radius = PROPERTIES["sizes"][obj["size"]] / (math.sqrt(2) if obj["shape"] == "cube"
                                                          else 1)
            assert obj["3d_coords"][2] == pytest.approx(radius)
            assert all(-3 <= c <= 3 for c in obj["3d_coords"][:2])
    assert {key: len(values) for key, values in seen.items()} == {
        "shape": 3, "color": 8, "material": 2, "size": 2}
    assert {len(scene["objects"]) for scene in scenes} == set(range(3, 11))


def test_objects_keep_minimum_distance_and_margins(generated):
    scenes, _ = generated
    for scene in scenes:
        directions = scene["directions"]
        coords = [np.array(obj["3d_coords"]) for obj in scene["objects"]]
        for i, first in enumerate(coords):
            for j, second in enumerate(coords):
                if i == j:
                    continue
                gap = np.hypot(*(second - first)[:2]) - first[2] - second[2]
                assert gap >= 0.25
                for name in DIRECTIONS:
                    offset = float(np.dot((second - first)[:2], directions[name][:2]))
                    assert not 0 < offset < 0.4, (name, offset)


def test_directions_and_relationships(generated):
    scenes, _ = generated
    for scene in scenes:
        d = {name: np.array(vector) for name, vector in scene["directions"].items()}
        assert np.allclose([np.linalg.norm(d[name]) for name in DIRECTIONS], 1)
        assert np.allclose(d["left"], -d["right"]) and np.allclose(d["front"], -d["behind"])
        assert abs(np.dot(d["left"], d["behind"])) < 1e-9
        # facing "behind", "left" is a quarter turn anticlockwise (seen from above)
        assert d["behind"][0] * d["left"][1] - d["behind"][1] * d["left"][0] > 0
        coords = [np.array(obj["3d_coords"]) for obj in scene["objects"]]
        for name in DIRECTIONS:
            for i, here in enumerate(coords):
                expected = [j for j, there in enumerate(coords)
                            if j != i and np.dot(there - here, d[name]) > 0.2]
                assert scene["relationships"][name][i] == expected


def test_every_answer_recomputed_independently(generated):
    scenes, questions = generated
    assert len(questions) >= 10 * len(scenes) * 0.9
    for question in questions:
        scene = scenes[question["image_index"]]
        assert evaluate(question["program"], scene) == question["answer"], question["question"]
        assert clevr.execute(question["program"], scene) is not None


def test_programs_use_only_basic_functions_of_the_metadata(generated):
    _, questions = generated
    functions = {spec["name"]: spec for spec in METADATA["functions"]}
    for question in questions:
        assert question["program"][0] == {"function": "scene", "inputs": [], "value_inputs": []}
        for position, node in enumerate(question["program"]):
            spec = functions[node["function"]]
            assert not spec.get("template_only")
            assert len(node["inputs"]) == len(spec["inputs"])
            assert all(0 <= i < position for i in node["inputs"])
            kinds = spec.get("side_inputs", [])
            assert len(node["value_inputs"]) == len(kinds)
            for kind, value in zip(kinds, node["value_inputs"], strict=True):
                assert value in METADATA["types"][kind]


def test_all_families_and_templates_and_answers_appear(generated):
    _, questions = generated
    templates = {q["template_filename"] for q in questions}
    assert templates == {f"{name}.json" for name in (
        "zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or", "same_relate",
        "comparison", "compare_integer")}
    families = collections.Counter(vocab.family(q["program"]) for q in questions)
    assert set(families) == set(clevr.FAMILIES)
    assert {q["answer"] for q in questions} <= set(clevr.answers())
    per_scene = collections.Counter(q["image_index"] for q in questions)
    assert max(per_scene.values()) <= 10
    templates_per_scene = collections.defaultdict(list)
    for q in questions:
        templates_per_scene[q["image_index"]].append((q["template_filename"],
                                                      q["question_family_index"]))
    assert all(len(set(used)) == len(used) for used in templates_per_scene.values())


def test_answers_are_balanced(generated):
    _, questions = generated
    yes_no = collections.Counter(q["answer"] for q in questions if q["answer"] in ("yes", "no"))
    assert 0.4 < yes_no["yes"] / sum(yes_no.values()) < 0.6
    by_template = collections.defaultdict(collections.Counter)
    for q in questions:
        by_template[(q["template_filename"], q["question_family_index"])][q["answer"]] += 1
    for counts in by_template.values():
        ordered = sorted(counts.values())
        # CLEVR's rule: an answer more than 1.1 x the second most frequent one (when that is
        # above zero) is not accepted again, so the top answer leads by at most a few
        if len(ordered) > 1 and ordered[-2] > 0:
            assert ordered[-1] <= 1.1 * ordered[-2] + 1


def test_null_constrained_parameters_are_never_filtered_on(generated):
    _, questions = generated
    templates = {(name, i): t for name, i, t in vocab.templates()}
    for q in questions:
        template = templates[(q["template_filename"], q["question_family_index"])]
        null_params = {c["params"][0] for c in template["constraints"] if c["type"] == "NULL"}
        type_of = {p["name"]: p["type"] for p in template["params"]}
        # a NULL attribute is never filtered on: no filter_<its type> beyond those of other params
        filtered = collections.Counter(n["function"] for n in q["program"]
                                       if n["function"].startswith("filter_"))
        nullable = collections.Counter(f"filter_{type_of[p].lower()}" for p in type_of
                                       if p not in null_params and type_of[p] != "Relation")
        assert all(filtered[name] <= nullable[name] for name in filtered)


def test_degenerate_relate_questions_are_rejected(generated):
    scenes, questions = generated
    checked = 0
    for q in questions:
        if q["template_filename"] != "single_and.json":
            continue
        program = q["program"]
        for index, node in enumerate(program):
            if node["function"] != "relate":
                continue
            replaced = [dict(n) for n in program]
            replaced[index] = {"function": "scene", "inputs": [], "value_inputs": []}
            assert evaluate(replaced, scenes[q["image_index"]]) != q["answer"]
            checked += 1
    assert checked > 0


def test_executor_on_a_hand_made_scene():
    scene = {
        "objects": [
            {"color": "red", "shape": "cube", "material": "metal", "size": "large"},
            {"color": "red", "shape": "sphere", "material": "rubber", "size": "small"},
            {"color": "blue", "shape": "cube", "material": "rubber", "size": "small"},
        ],
        # object 1 is left of 0, object 2 is left of 0 and of 1
        "relationships": {"left": [[1, 2], [2], []], "right": [[], [0], [0, 1]],
                          "behind": [[], [], []], "front": [[], [], []]},
    }
    node = lambda f, inputs=(), values=(): {"function": f, "inputs": list(inputs),  # noqa: E731
                                            "value_inputs": list(values)}
    red = [node("scene"), node("filter_color", [0], ["red"])]
    assert clevr.execute(red + [node("count", [1])], scene) == 2
    assert clevr.execute(red + [node("unique", [1])], scene) == clevr.INVALID
    big_red = red + [node("filter_size", [1], ["large"]), node("unique", [2])]
    left_of_big_red = big_red + [node("relate", [3], ["left"])]
    assert clevr.execute(left_of_big_red, scene) == [1, 2]
    assert clevr.execute(left_of_big_red + [node("filter_shape", [4], ["cube"]), node(
        "unique", [5]), node("query_color", [6])], scene) == "blue"
    same = big_red + [node("same_color", [3])]
    assert clevr.execute(same, scene) == [1]
    assert clevr.execute(same + [node("count", [4]), node("scene"), node("count", [6]),
                                 node("less_than", [5, 7])], scene) is True
    assert clevr.execute([node("scene")], scene) == [0, 1, 2]
    unique_blue = [node("scene"), node("filter_unique", [0], ["", "blue", "", "thing"])]
    assert clevr.execute(unique_blue, scene) == 2
    assert clevr.execute(unique_blue + [node("relate_filter_count", [1],
                                             ["right", "", "red", "", "thing"])], scene) == 2


def test_question_words_and_answers_vocabulary(generated):
    _, questions = generated
    known = set(clevr.words())
    assert all(word in known for q in questions for word in clevr.tokenize(q["question"]))
    assert len(clevr.answers()) == 28 and len(set(clevr.answers())) == 28
    assert clevr.tokenize("Is the big thing left of it?") == ["is", "the", "big", "thing", "left",
                                                             "of", "it", "?"]


def test_files_round_trip_and_encoding(generated, tmp_path):
    scenes, questions = generated
    clevr.write_split(tmp_path, scenes[:5], [q for q in questions if q["image_index"] < 5], "val")
    loaded_scenes = clevr.read_scenes(tmp_path / "scenes.json")
    loaded = clevr.read_questions(tmp_path / "questions.json")
    assert [s["objects"] for s in loaded_scenes] == json.loads(json.dumps(
        [s["objects"] for s in scenes[:5]]))
    arrays = clevr.encode(loaded_scenes, loaded)
    assert arrays["objects"].shape == (5, 10, clevr.OBJECT_FEATURES) == (5, 10, 18)
    first = scenes[0]["objects"][0]
    row = arrays["objects"][0, 0]
    assert np.allclose(row[:3], first["3d_coords"])
    colours = list(PROPERTIES["colors"])  # metadata order equals properties order for colours
    assert row[3 + colours.index(first["color"])] == 1 and row[3:11].sum() == 1
    assert arrays["object_mask"][0].sum() == len(scenes[0]["objects"])
    assert (arrays["objects"][~arrays["object_mask"]] == 0).all()
    for q, question in enumerate(loaded):
        assert clevr.answers()[arrays["answer"][q]] == question["answer"]
        assert clevr.FAMILIES[arrays["family"][q]] == vocab.family(question["program"])
        words = [clevr.words()[i] for i in arrays["words"][q, : arrays["length"][q]]]
        assert words == clevr.tokenize(question["question"])


def test_released_answers_and_generator_answers_read_alike(tmp_path):
    questions = [{"image_index": 0, "question": "Is there a cube?", "answer": answer,
                  "program": []} for answer in (True, False, 3, "yes", "7", "cube")]
    (tmp_path / "questions.json").write_text(json.dumps({"info": {}, "questions": questions}))
    answers = [q["answer"] for q in clevr.read_questions(tmp_path / "questions.json")]
    assert answers == ["yes", "no", "3", "yes", "7", "cube"]


def test_generation_is_deterministic():
    first, second = clevr.generate(3, seed=7), clevr.generate(3, seed=7)
    assert first == second
    assert clevr.generate(3, seed=8)[0] != first[0]
