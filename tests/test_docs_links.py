"""Which inline code the docs turn into links (`_target` in `docs/conf.py`), on a small index of
documented objects: full names, the `gn.` / `nn.` spellings, `name()`, bare package-level names,
and text that names nothing (shapes, commands, methods by their bare name) left as code."""

import importlib.util
from collections import namedtuple
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parents[1] / "docs" / "conf.py"
Entry = namedtuple("Entry", "docname node_id objtype aliased")


@pytest.fixture(scope="module")
def conf():
    spec = importlib.util.spec_from_file_location("docs_conf", CONF)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def index(conf):
    names = {
        "gnkit.GraphNetwork": "function",
        "gnkit.segment_sum": "function",
        "gnkit.nn.GraphNetwork": "class",
        "gnkit.nn.GCN": "class",
        "gnkit.nnx.GCN": "class",
        "gnkit.nn.MLP": "class",
        "gnkit.nn.MLP.apply": "method",
        "gnkit.train.fit": "function",
        "gnkit.nn": "module",
    }
    objects = {name: Entry("api/x", name, kind, False) for name, kind in names.items()}

    class Domain:
        pass

    domain = Domain()
    domain.objects = objects
    return conf._index_objects(domain)


@pytest.mark.parametrize(
    "text, target",
    [
        ("gnkit.train.fit", "gnkit.train.fit"),
        ("gn.segment_sum", "gnkit.segment_sum"),
        ("segment_sum()", "gnkit.segment_sum"),
        ("nn.GraphNetwork", "gnkit.nn.GraphNetwork"),
        ("GraphNetwork", "gnkit.GraphNetwork"),  # the package-level name first
        ("GCN", "gnkit.nn.GCN"),  # equal depth: the first alphabetically
        ("MLP", "gnkit.nn.MLP"),
        ("gnkit.nn.MLP.apply", "gnkit.nn.MLP.apply"),
        ("apply", None),  # a method only by its full name
        ("[n_edge, F]", None),
        ("--set updates=N", None),
        ("jraph.segment_sum", None),
        ("fit(state, step)", None),
    ],
)
def test_inline_code_links_only_where_it_names_a_documented_object(conf, index, text, target):
    assert conf._target(text, *index) == target
