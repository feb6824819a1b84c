"""Sphinx configuration for gnkit's documentation: API reference and guides."""

import os
import re
import sys

sys.path.insert(0, os.path.abspath(".."))

import gnkit  # noqa: E402

project = "gnkit"
author = "gnkit authors"
copyright = "gnkit authors"
release = gnkit.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Docstrings write code as `name` (Markdown style); show it as code rather than as a citation.
# Code that names a documented object becomes a link to it (`_link_code_names` below).
default_role = "code"

autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# `Attributes:` sections as fields of their class, not as attribute entries of their own, which
# would repeat the entries autodoc makes for the same dataclass and NamedTuple fields.
napoleon_use_ivar = True
# Attribute types come from the annotations in the signature; the text says the rest.
napoleon_attr_annotations = False

# Formulas: `:math:` in docstrings, `$...$` in the guides, set by MathJax in the reader's browser
# (the build itself needs no network).
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = f"gnkit {release}"
html_theme_options = {
    "repository_url": "https://github.com/gnkit/gnkit",
    "use_repository_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # One search box, the sidebar's: none in the header bar as well.
    "navbar_persistent": [],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]


def _end_indented_blocks(app, what, name, obj, options, lines):
    """Insert a blank line where an indented block is followed directly by a less indented line.

    Docstrings here are written as plain text: a list indented under a sentence and then the next
    sentence, with no blank line between. reStructuredText reads the indented part as a definition
    list and warns that it "ends without a blank line"; a blank line there keeps the same reading.
    """

    def indent(line):
        return len(line) - len(line.lstrip())

    fixed = []
    for line in lines:
        previous = fixed[-1] if fixed else ""
        if (
            line.strip()
            and previous.strip()
            and indent(line) < indent(previous)
            and not previous.lstrip().startswith((">>>", "..."))
            and not line.lstrip().startswith((">>>", "..."))
        ):
            fixed.append("")
        fixed.append(line)
    lines[:] = fixed


def _field_defaults(cls):
    """Source text of the default of each annotated class attribute, base classes first."""
    import ast
    import inspect
    import textwrap

    defaults = {}
    for klass in reversed(cls.__mro__):
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        tree = ast.parse(source)
        if not (tree.body and isinstance(tree.body[0], ast.ClassDef)):
            continue
        for node in tree.body[0].body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                defaults[node.target.id] = ast.get_source_segment(source, node.value)
    return defaults


def _module_signature(app, what, name, obj, options, signature, return_annotation):
    """Flax linen modules: show their own fields (not `parent` / `name`) with short defaults.

    A linen module's `__init__` is generated from its dataclass fields, so its signature lists
    Flax's internal `parent` and `name` and shows defaults as object reprs.
    """
    if what != "class":
        return None
    try:
        import dataclasses

        import flax.linen as linen
    except ImportError:
        return None
    if not (isinstance(obj, type) and issubclass(obj, linen.Module)):
        return None
    parts = []
    source_defaults = _field_defaults(obj)
    for field in dataclasses.fields(obj):
        if field.name in ("parent", "name") or not field.init:
            continue
        if field.default is not dataclasses.MISSING:
            default = source_defaults.get(field.name) or repr(field.default)
            parts.append(f"{field.name}={default}")
        elif field.default_factory is not dataclasses.MISSING:
            parts.append(f"{field.name}={source_defaults.get(field.name, '...')}")
        else:
            parts.append(field.name)
    return f"({', '.join(parts)})", return_annotation


def _drop_object_call_doc(app, what, name, obj, options, lines):
    """A module's `__call__` without a docstring inherits `object`'s; show nothing instead."""
    if name.endswith(".__call__") and "\n".join(lines).strip() == "Call self as a function.":
        lines[:] = []


def _drop_type_doc(app, what, name, obj, options, lines):
    """A type alias (`A | B`) has no docstring of its own; drop the one of its type."""
    type_doc = type(obj).__doc__
    if what == "data" and type_doc and "\n".join(lines).strip() == type_doc.strip():
        lines[:] = []


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?")
_LINKED_TYPES = ("class", "function", "exception", "data", "module")
_PREFIXES = {"gn.": "gnkit.", "nn.": "gnkit.nn.", "nnx.": "gnkit.nnx."}


def _index_objects(domain):
    """`(full names, {last component: full names})` of the documented Python objects."""
    objects = domain.objects
    by_last = {}
    for name, entry in objects.items():
        if entry.objtype in _LINKED_TYPES:
            by_last.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    return objects, by_last


def _target(text, objects, by_last):
    """The documented object that inline code `text` names, or None.

    `gnkit.x.y`, `gn.y`, `nn.Y` and `name()` are read as full names; a bare `Name` links when
    one package-level object has that name (`gnkit.Name`, else the shortest full name, the
    first in alphabetical order among equals); attributes and methods only by full name.
    """
    if not _NAME.fullmatch(text):
        return None
    name = text.removesuffix("()")
    for short, full in _PREFIXES.items():
        if name.startswith(short):
            name = full + name[len(short) :]
    for candidate in (name, f"gnkit.{name}"):
        if candidate in objects:
            return candidate
    if "." in name:
        return None
    found = by_last.get(name, [])
    return min(found, key=lambda full: (full.count("."), full)) if found else None


def _link_code_names(app, doctree, docname):
    """Turn inline code naming a documented object into a link to its API entry (HTML only).

    MyST writes `name` as inline code and the docstrings' default role does the same, so
    neither links by itself; text that names nothing documented stays plain code.
    """
    from docutils import nodes

    if app.builder.format != "html":
        return
    objects, by_last = _index_objects(app.env.get_domain("py"))
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, nodes.reference) or "xref" in literal["classes"]:
            continue
        target = _target(literal.astext(), objects, by_last)
        if target is None:
            continue
        entry = objects[target]
        uri = app.builder.get_relative_uri(docname, entry.docname) + "#" + entry.node_id
        if entry.docname == docname:
            uri = "#" + entry.node_id
        reference = nodes.reference("", "", internal=True, refuri=uri, reftitle=target)
        literal.replace_self(reference)
        reference += literal


def setup(app):
    app.connect("doctree-resolved", _link_code_names)
    app.connect("autodoc-process-docstring", _drop_type_doc)
    app.connect("autodoc-process-docstring", _drop_object_call_doc)
    app.connect("autodoc-process-signature", _module_signature)
    # Before napoleon (priority 500), which reads the same plain-text layout.
    app.connect("autodoc-process-docstring", _end_indented_blocks, priority=400)
