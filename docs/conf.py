"""Sphinx configuration for gnkit's documentation: API reference and guides."""

import os
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
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Docstrings write code as `name` (Markdown style); show it as code rather than as a citation.
default_role = "code"

autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = f"gnkit {release}"
html_theme_options = {
    "repository_url": "https://github.com/gnkit/gnkit",
    "use_repository_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_static_path = []


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


def setup(app):
    # Before napoleon (priority 500), which reads the same plain-text layout.
    app.connect("autodoc-process-docstring", _end_indented_blocks, priority=400)
