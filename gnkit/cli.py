"""The `gnkit` command: `gnkit DEMO VERB ...` runs a demo (`gnkit --help` lists them).

Also `python -m gnkit`. Listing the demos, `--version`, and the one-line errors for an unknown
demo or a missing `demos` extra import nothing heavy (no JAX, no demo module); only the demo
that runs is imported. Host.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from collections.abc import Sequence

DEMOS = {
    "sudoku": ("gnkit.demos.sudoku", "Sudoku with a recurrent relational network"),
    "sort": ("gnkit.demos.sort", "sort a list with a graph network (graph_nets' demo)"),
    "shortest-path": (
        "gnkit.demos.shortest_path",
        "shortest paths with a graph network (graph_nets' demo)",
    ),
    "physics": ("gnkit.demos.physics", "mass-spring physics with a graph network"),
    "nth-farthest": (
        "gnkit.demos.nth_farthest",
        "N-th farthest: a relational memory core against an LSTM",
    ),
    "pretty-clevr": (
        "gnkit.demos.pretty_clevr",
        "Pretty-CLEVR: n-jump questions, RRN against RN and MLP",
    ),
    "kg": ("gnkit.demos.kg", "knowledge-graph link prediction: TransE, DistMult, ComplEx, RotatE"),
    "sort-of-clevr": (
        "gnkit.demos.sort_of_clevr",
        "Sort-of-CLEVR from pixels: a relation network against an MLP",
    ),
    "clevr": ("gnkit.demos.clevr", "CLEVR from state descriptions: a relation network"),
    "molecules": (
        "gnkit.demos.molecules", "molecular properties: D-MPNN, GINE, GPS beside chemprop"
    ),
    "wordnet": ("gnkit.demos.wordnet", "WordNet: GraphSAGE, GCN, R-GCN, MLP; hypernym prediction"),
    "graph-files": (
        "gnkit.demos.graph_files", "your own graph tables: node or graph classification"
    ),
    "typed-nodes": ("gnkit.demos.typed_nodes", "UMLS typed nodes: R-GCN, to_hetero vs GCN twin"),
    "rdl": ("gnkit.demos.rdl", "the Lahman database: a temporal typed GNN against LightGBM"),
    "potentials": (
        "gnkit.demos.potentials", "interatomic potentials: SchNet, PaiNN, NequIP, MACE"
    ),
    "particles": ("gnkit.demos.particles", "particle fluids (TGV, RPF): GNS, SEGNN and rollouts"),
}
DEMO_EXTRAS = ("matplotlib", "rich", "tyro")
_INSTALL_DEMOS = 'pip install "gnkit[demos]"'


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing_demo_extras() -> list[str]:
    """The packages of the `demos` extra that cannot be imported (found without importing)."""
    return [name for name in DEMO_EXTRAS if not _importable(name)]


def demo_extras_message(missing: Sequence[str]) -> str:
    """The one line that names the missing packages and the command that installs them."""
    return f"the demos need {', '.join(missing)} (not installed): {_INSTALL_DEMOS}"


def _usage() -> str:
    width = max(map(len, DEMOS))
    rows = "\n".join(f"  {name:<{width}}  {about}" for name, (_, about) in DEMOS.items())
    return (
        "usage: gnkit DEMO VERB [flags]    (or python -m gnkit ...)\n\n"
        f"demos:\n{rows}\n\n"
        "`gnkit DEMO --help` lists a demo's verbs; `gnkit DEMO VERB --help` its flags.\n"
        "  --version  print gnkit's version"
    )


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("gnkit")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _unknown(name: str) -> str:
    nearest = difflib.get_close_matches(name, DEMOS, n=1, cutoff=0.5)
    hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
    return f"gnkit: error: unknown demo {name!r}{hint} (demos: {', '.join(DEMOS)})"


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `gnkit DEMO ARGS...` to the demo module's `main(ARGS)`; the exit status.

    No arguments or `-h` / `--help`: the demos with a line each (exit 0). `--version`: the
    installed version. An unknown demo or a missing `demos` extra: one line on stderr naming
    it (the nearest demo, or the install command), exit 2, nothing imported or run; a demo
    that cannot be imported without another extra (`gnkit.extras.MissingExtraError`): that
    error's one line, exit 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        print(f"gnkit {_version()}")
        return 0
    if argv[0] not in DEMOS:
        print(_unknown(argv[0]), file=sys.stderr)
        return 2
    missing = missing_demo_extras()
    if missing:
        print(f"gnkit {argv[0]}: error: {demo_extras_message(missing)}", file=sys.stderr)
        return 2
    try:
        demo = importlib.import_module(DEMOS[argv[0]][0])
    except ModuleNotFoundError as error:
        from gnkit.extras import MissingExtraError

        if not isinstance(error, MissingExtraError):
            raise
        print(f"gnkit {argv[0]}: error: {error}", file=sys.stderr)
        return 2
    return demo.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
