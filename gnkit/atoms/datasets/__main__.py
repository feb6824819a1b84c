"""`python -m gnkit.atoms.datasets emt --out FILE --n N --seed S`: write the EMT data set."""

from __future__ import annotations

import argparse
import sys
import time

from gnkit.atoms.datasets.emt import write_emt_dataset


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gnkit.atoms.datasets", description="Make gnkit.atoms data sets."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    emt = commands.add_parser(
        "emt", help="fcc Cu / Al supercells labelled by ASE's EMT, as extended XYZ"
    )
    emt.add_argument("--out", required=True,
                     help="the file to write (.xyz; .xyz.xz / .gz / .bz2 compress)")
    emt.add_argument("--n", type=int, required=True, help="number of structures")
    emt.add_argument("--seed", type=int, default=0, help="the data set's seed (default 0)")
    emt.add_argument("--md-fraction", type=float, default=0.5,
                     help="fraction of structures taken from a short Langevin MD (default 0.5)")
    emt.add_argument("--md-steps", type=int, default=20,
                     help="steps of each MD, 2 fs each (default 20)")
    emt.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status. Host."""
    arguments = _parser().parse_args(argv)
    start = time.perf_counter()
    structures = write_emt_dataset(
        arguments.out, arguments.n, arguments.seed, md_fraction=arguments.md_fraction,
        md_steps=arguments.md_steps, progress=not arguments.no_progress,
    )
    atoms = sum(len(structure) for structure in structures)
    print(f"wrote {len(structures)} structures ({atoms} atoms) to {arguments.out} in "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
