"""The `gnkit` command: `gnkit DEMO ...` runs a demo (`gnkit --help` lists them)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

_DEMOS = {
    "sudoku": "gnkit.demos.sudoku",
    "sort": "gnkit.demos.sort",
    "shortest-path": "gnkit.demos.shortest_path",
    "physics": "gnkit.demos.physics",
    "nth-farthest": "gnkit.demos.nth_farthest",
    "pretty-clevr": "gnkit.demos.pretty_clevr",
    "kg": "gnkit.demos.kg",
    "sort-of-clevr": "gnkit.demos.sort_of_clevr",
    "clevr": "gnkit.demos.clevr",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `gnkit DEMO ARGS...` to the demo module's `main(ARGS)`."""
    import importlib

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in _DEMOS:
        known = ", ".join(sorted(_DEMOS))
        print(f"usage: gnkit DEMO [ARGS...]   (demos: {known}; try `gnkit sudoku --help`)")
        return 0 if not argv or argv[0] in ("-h", "--help") else 2
    return importlib.import_module(_DEMOS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
