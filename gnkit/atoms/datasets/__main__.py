"""`python -m gnkit.atoms.datasets emt --out FILE --n N --seed S`: write the EMT data set;
`python -m gnkit.atoms.datasets qm9 --out FILE --split SPLIT [--n-train ...]`: write a split of
a seeded QM9 subset (`load_qm9`, U0 in eV) as extended XYZ."""

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
    qm9 = commands.add_parser(
        "qm9", help="a split of a seeded QM9 subset (qm9pack) with U0 in eV, as extended XYZ"
    )
    qm9.add_argument("--out", required=True,
                     help="the file to write (.xyz; .xyz.xz / .gz / .bz2 compress)")
    qm9.add_argument("--split", choices=("train", "validation", "test"), default="train")
    qm9.add_argument("--n-train", type=int, default=10_000, help="default 10,000")
    qm9.add_argument("--n-validation", type=int, default=1_000, help="default 1,000")
    qm9.add_argument("--n-test", type=int, default=2_000, help="default 2,000")
    qm9.add_argument("--seed", type=int, default=0, help="the subset's seed (default 0)")
    return parser


def _write_qm9(arguments) -> list:
    import ase.io

    from gnkit.atoms.datasets.qm9 import load_qm9

    molecules = load_qm9(arguments.split, n_train=arguments.n_train,
                         n_validation=arguments.n_validation, n_test=arguments.n_test,
                         seed=arguments.seed)
    ase.io.write(arguments.out, molecules, format="extxyz")
    return molecules


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status. Host."""
    arguments = _parser().parse_args(argv)
    start = time.perf_counter()
    if arguments.command == "qm9":
        structures = _write_qm9(arguments)
    else:
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
