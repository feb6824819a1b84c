"""Render the results tables of `docs/results/*.md` and the README from the run records.

A page keeps each table twice: its template in an HTML comment, then the rendered table, which
readers see::

    <!-- table
    | model | relational |
    |---|---|
    | CNN+RN | {default:models.rn.relational:.3f} |
    -->
    | model | relational |
    |---|---|
    | CNN+RN | 0.828 |
    <!-- end table -->

A field `{RUN:PATH:SPEC}` is the value at the dotted `PATH` in the `results` of run `RUN` of the
page's record (`docs/results/<page>.json`), formatted with the Python format `SPEC` (optional).
`RUN` may be `DEMO/RUN` to read another page's record (the README names every run this way),
`paper` reads the record's published values, and a `PATH` starting with `@` reads a field of the
run itself (`@cpu_minutes`, `@command`). Integers in a path index lists. A `*` in a row's
field repeats that cell once per remaining header column, with the column's heading in place of
the `*` (`| solved | {run:per_givens.*.puzzle_accuracy:.0%} |` under `| givens | 17 | 18 |`).

`python docs/results/_tables.py` re-renders every table in place; `stale_tables(path)` lists the
tables whose rendered text differs from their template's rendering (the tests call it). Host
Python, standard library only.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

RESULTS = pathlib.Path(__file__).resolve().parent
README = RESULTS.parent.parent / "README.md"
TABLE = re.compile(r"<!-- table\n(?P<template>.*?)-->\n(?P<rendered>.*?)<!-- end table -->", re.S)
FIELD = re.compile(r"\{(?P<run>[\w/.-]+):(?P<path>[^{}:]+)(?::(?P<spec>[^{}]*))?\}")


def load_record(demo: str) -> dict:
    """The run record `docs/results/<demo>.json`."""
    path = RESULTS / f"{demo}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no run record {path} (a table names the demo {demo!r})")
    return json.loads(path.read_text())


def lookup(record_demo: str | None, run: str, path: str):
    """The value a field names: run `run` (or `DEMO/RUN`) of the record, at dotted `path`."""
    demo, _, name = run.rpartition("/")
    demo = demo or record_demo
    if demo is None:
        raise KeyError(f"field {{{run}:{path}}} names no demo (write DEMO/RUN outside a page)")
    record = load_record(demo)
    if name == "paper":
        value, keys = record["paper"], path.split(".")
    elif name not in record["runs"]:
        raise KeyError(f"{demo}.json has no run {name!r} (runs: {sorted(record['runs'])})")
    elif path.startswith("@"):
        value, keys = record["runs"][name], path[1:].split(".")
    else:
        value, keys = record["runs"][name]["results"], path.split(".")
    for key in keys:
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError):
            raise KeyError(f"{demo}.json, run {name!r}: no {key!r} in path {path!r}") from None
    return value


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _expand_stars(template: str) -> str:
    """Rows with a `*` field, one cell per remaining header column."""
    lines = template.split("\n")
    header = _cells(lines[0]) if lines else []
    for index, line in enumerate(lines):
        cells = _cells(line) if line.startswith("|") else []
        starred = [i for i, cell in enumerate(cells) if "*" in cell and FIELD.search(cell)]
        if starred:
            i = starred[0]
            columns = header[i:len(header) - (len(cells) - i - 1)]
            cells[i:i + 1] = [cells[i].replace("*", column) for column in columns]
            lines[index] = "| " + " | ".join(cells) + " |"
    return "\n".join(lines)


def render(template: str, record_demo: str | None) -> str:
    """The template with every field replaced by its formatted value."""

    def field(match: re.Match) -> str:
        value = lookup(record_demo, match["run"], match["path"])
        return format(value, match["spec"] or "")

    return FIELD.sub(field, _expand_stars(template))


def _page_demo(path: pathlib.Path) -> str | None:
    return path.stem if path.parent == RESULTS else None


def stale_tables(path: pathlib.Path) -> list[str]:
    """The templates of `path` whose rendering differs from the table shown below them."""
    demo = _page_demo(path)
    return [
        match["template"]
        for match in TABLE.finditer(path.read_text())
        if render(match["template"], demo) != match["rendered"]
    ]


def refresh(path: pathlib.Path) -> None:
    """Re-render every table of `path` in place."""
    demo = _page_demo(path)

    def rendered(match: re.Match) -> str:
        template = match["template"]
        return f"<!-- table\n{template}-->\n{render(template, demo)}<!-- end table -->"

    path.write_text(TABLE.sub(rendered, path.read_text()))


def pages() -> list[pathlib.Path]:
    """Every file with tables: the results pages and the README."""
    return [*sorted(RESULTS.glob("*.md")), README]


if __name__ == "__main__":
    for page in pages():
        refresh(page)
        print(f"rendered {page}", file=sys.stderr)
