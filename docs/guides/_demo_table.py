"""Render the table of demos in `docs/guides/demos.md` from the `gnkit` command's registry.

The page keeps the rendered table between two comments::

    <!-- demo table: rendered by docs/guides/_demo_table.py -->
    | command | what it runs | presets | extras | results |
    ...
    <!-- end demo table -->

Each row is one entry of `gnkit.cli.DEMOS` (its command and line of help), the demo's presets
(`Demo.presets`, the default first), the extras it needs (`demos`, and `Demo.extra`) and its
results page. `python docs/guides/_demo_table.py` re-renders the table in place; `page_table()`
and `demo_table()` are what the tests compare. Host Python; imports each demo module (no JAX
work is done).
"""

from __future__ import annotations

import importlib
import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[1]
PAGE = DOCS / "guides" / "demos.md"
START = "<!-- demo table: rendered by docs/guides/_demo_table.py -->\n"
END = "<!-- end demo table -->"
TABLE = re.compile(re.escape(START) + r"(?P<table>.*?)" + re.escape(END), re.S)


def _row(name: str, module: str, about: str) -> str:
    demo = importlib.import_module(module).DEMO
    presets = [demo.default, *(preset for preset in demo.presets if preset != demo.default)]
    extras = ["demos", *([demo.extra] if demo.extra else [])]
    page = module.rsplit(".", 1)[-1]
    results = f"{{doc}}`../results/{page}`" if (DOCS / "results" / f"{page}.md").is_file() else ""
    cells = [
        f"`gnkit {name}`",
        about,
        ", ".join(f"`{preset}`" for preset in presets),
        ", ".join(f"`{extra}`" for extra in extras),
        results,
    ]
    return f"| {' | '.join(cells)} |"


def demo_table() -> str:
    """The table's Markdown: a header and a row per demo of `gnkit.cli.DEMOS`, in its order."""
    from gnkit.cli import DEMOS

    rows = [_row(name, module, about) for name, (module, about) in DEMOS.items()]
    header = "| command | what it runs | presets (default first) | extras | results |\n"
    return header + "|---|---|---|---|---|\n" + "\n".join(rows) + "\n"


def page_table(path: pathlib.Path = PAGE) -> str:
    """The table as the page has it (between the two comments)."""
    match = TABLE.search(path.read_text())
    if match is None:
        raise ValueError(f"{path}: no {START.strip()} ... {END} block")
    return match["table"]


def refresh(path: pathlib.Path = PAGE) -> None:
    """Rewrite the page's table as `demo_table()` renders it."""
    page_table(path)  # the block must be there
    text = path.read_text()
    path.write_text(TABLE.sub(lambda _: START + demo_table() + END, text, count=1))


if __name__ == "__main__":
    refresh()
