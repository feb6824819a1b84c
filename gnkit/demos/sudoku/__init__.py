"""Sudoku with a recurrent relational network: train, evaluate, solve, demo.

    python -m gnkit.demos.sudoku demo                      # shipped model, a few minutes on a CPU
    python -m gnkit.demos.sudoku train --config cpu --run-dir runs/sudoku_cpu --set remat=step
    python -m gnkit.demos.sudoku eval --checkpoint pretrained --data rrn_valid --per-level 100
    python -m gnkit.demos.sudoku solve 000000010400000000020000000000050407008000300001090000...
    python -m gnkit.demos.sudoku export --from runs/sudoku_cpu --to exports/sudoku_rrn
    python -m gnkit.demos.sudoku curves --run cpu=runs/sudoku_cpu --plot sudoku_curves.png

A demo on `gnkit.experiments`: the config (`config.SudokuConfig`, presets `tiny`, `cpu`,
`paper`, `gpu`), the training recipe (`recipe`), evaluation tables and heatmaps (`evaluation`), the
verbs that use a trained model (`verbs`: eval, demo, solve, export, curves) and the verbs' own
flags (`cli`). The framework gives the common flags (`--config`, `--set KEY=VALUE`, `--seed`,
`--run-dir`, `--json`, `--plot`, `--parallel`, `--no-progress`), run directories and one-line
errors with exit status 2.

`--data`, `--valid` and `--pool` take a CSV path or a named data set shipped with gnkit
(`DATA_SETS`): `rrn_valid` (the paper's validation set, 1,000 puzzles per givens level 17-34),
`rrn_valid_slice` (its first 30 per level) or `royle17_train_pool`. Nothing is ever written into
the gnkit package: `export` refuses a target inside it (to replace the shipped model in a checkout,
export elsewhere and copy the three files into `gnkit/pretrained/sudoku_rrn/` by hand).

`train --init-from MODEL` starts a new run from a model's parameters (fresh optimiser);
`train --budget-min M` stops after M wall-clock minutes, saves, validates and reports. The `gpu`
preset makes its batches on the device (`data=device`, `recipe.make_device_train_step`) and runs
bf16 matmuls; `benchmarks/sudoku_device.py` is the script for one accelerator window.

Data-parallel training over every device: `train --parallel pmap` or `--parallel mesh` (the
batch is split evenly over the devices; on a CPU, try 8 forced devices with
`XLA_FLAGS=--xla_force_host_platform_device_count=8`).

(`gnkit sudoku ...` is the same.) Host driver; the model and metrics are jitted.
"""

from gnkit.demos.sudoku.cli import DEMO, main
from gnkit.demos.sudoku.config import CONFIGS, SudokuConfig, init_state, make_optimizer
from gnkit.demos.sudoku.curves import learning_curves, plot_curves
from gnkit.demos.sudoku.data import DATA_SETS, load_data, validation_slice
from gnkit.demos.sudoku.evaluation import evaluate_puzzles, format_table, summarise
from gnkit.demos.sudoku.model_files import PRETRAINED, export, load_model, pretrained_dir
from gnkit.demos.sudoku.recipe import make_batches, make_train_step
from gnkit.demos.sudoku.solving import describe_solve, solve_steps

__all__ = [
    "CONFIGS",
    "DATA_SETS",
    "DEMO",
    "PRETRAINED",
    "SudokuConfig",
    "describe_solve",
    "evaluate_puzzles",
    "export",
    "format_table",
    "init_state",
    "learning_curves",
    "load_data",
    "load_model",
    "main",
    "make_batches",
    "make_optimizer",
    "make_train_step",
    "plot_curves",
    "pretrained_dir",
    "solve_steps",
    "summarise",
    "validation_slice",
]
