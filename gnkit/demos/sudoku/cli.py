"""`gnkit sudoku VERB`: the demo's verbs and their own flags on the shared demo framework."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from gnkit import experiments
from gnkit.demos.sudoku.config import CONFIGS, PRESET_NOTES
from gnkit.demos.sudoku.data import DATA_HELP
from gnkit.demos.sudoku.model_files import PRETRAINED
from gnkit.demos.sudoku.recipe import train
from gnkit.demos.sudoku.verbs import curves, demo, evaluate, export_model, solve

COUNT = experiments.at_least(1)
MINUTES = experiments.at_least(0.1, float)


def givens_levels(text: str) -> list[int]:
    """`--valid-givens 20,30` as `[20, 30]`."""
    try:
        return [int(level) for level in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint", default=PRETRAINED, help="'pretrained', a run or an export directory"
    )
    parser.add_argument("--steps", type=COUNT, default=64, help="message-passing steps")


def _eval_flags(parser: argparse.ArgumentParser) -> None:
    _model_flags(parser)
    parser.add_argument("--data", default="rrn_valid_slice", help=f"{DATA_HELP} (%(default)s)")
    parser.add_argument("--per-level", type=COUNT, help="first N puzzles of each level")


def _demo_flags(parser: argparse.ArgumentParser) -> None:
    _model_flags(parser)
    parser.add_argument("--data", default="rrn_valid", help=f"{DATA_HELP} (%(default)s)")
    parser.add_argument("--per-level", type=COUNT, default=20, help="puzzles per level")


def _solve_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("puzzle", help="81 characters, ASCII digits, 0 or . for blanks")
    _model_flags(parser)


def _export_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", required=True, help="a train --run-dir")
    parser.add_argument("--to", dest="target", required=True, help="a directory outside gnkit")


def _curves_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", action="append", required=True, metavar="NAME=RUN_DIR")


def _train_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--updates", type=COUNT, help="stop after N updates (schedule: config updates)"
    )
    parser.add_argument(
        "--budget-min",
        type=MINUTES,
        help="stop after this many wall-clock minutes: checkpoint, validate, report",
    )
    parser.add_argument(
        "--init-from",
        help="start a new run from this model's parameters ('pretrained', an export or a run)",
    )
    parser.add_argument("--pool", default="royle17_train_pool", help=f"{DATA_HELP} (%(default)s)")
    parser.add_argument("--valid", default="rrn_valid", help=f"{DATA_HELP} (%(default)s)")
    parser.add_argument("--valid-per-level", type=COUNT, default=30)
    parser.add_argument("--valid-givens", type=givens_levels, help="levels to validate on: 20,30")
    parser.add_argument("--valid-steps", type=COUNT, help="default: config eval_steps")
    parser.add_argument("--eval-every-min", type=MINUTES, default=10.0)
    parser.add_argument("--checkpoint-every-min", type=MINUTES, default=5.0)
    parser.add_argument("--log-every", type=COUNT, default=50)


DEMO = experiments.Demo(
    "sudoku",
    "Sudoku with a recurrent relational network: train, evaluate, solve, demo.",
    presets=CONFIGS,
    preset_notes=PRESET_NOTES,
    verbs=[
        experiments.Verb(
            "demo",
            demo,
            "evaluate the shipped model and solve one puzzle",
            None,
            _demo_flags,
            configured=False,
        ),
        experiments.Verb(
            "train", train, "train an RRN (resumes from --run-dir)", add_flags=_train_flags
        ),
        experiments.Verb(
            "eval",
            evaluate,
            "accuracy per givens level and per step",
            None,
            _eval_flags,
            configured=False,
        ),
        experiments.Verb(
            "solve",
            solve,
            "solve one puzzle and show how the beliefs settle",
            None,
            _solve_flags,
            configured=False,
        ),
        experiments.Verb(
            "export",
            export_model,
            "copy a run's best checkpoint as a model",
            None,
            _export_flags,
            configured=False,
        ),
        experiments.Verb(
            "curves",
            curves,
            "validation accuracy vs CPU-minutes of runs",
            None,
            _curves_flags,
            configured=False,
        ),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m gnkit.demos.sudoku VERB ...` and `gnkit sudoku VERB ...`; the exit status."""
    return experiments.run(DEMO, argv)
