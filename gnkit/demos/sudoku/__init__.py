"""Sudoku with a recurrent relational network: train, evaluate, solve, demo.

    python -m gnkit.demos.sudoku demo                      # shipped model, a few minutes on a CPU
    python -m gnkit.demos.sudoku train --config default --run-dir runs/sudoku_cpu --set remat=step
    python -m gnkit.demos.sudoku eval --checkpoint pretrained --data rrn_valid --per-level 100
    python -m gnkit.demos.sudoku solve 000000010400000000020000000000050407008000300001090000...
    python -m gnkit.demos.sudoku export --from runs/sudoku_cpu --to exports/sudoku_rrn
    python -m gnkit.demos.sudoku curves --run cpu=runs/sudoku_cpu --plot sudoku_curves.png

A demo on `gnkit.experiments`: the config (`config.SudokuConfig`, presets `default`,
`quick`, `paper`, `gpu`, `tiny`), the model (`models.SudokuRRN`), the training recipe
(`recipe`), evaluation tables and heatmaps (`evaluation`), the verbs that use a trained model
(`verbs`: eval, demo, solve, export, curves) and the verbs' own flags (`cli`). The framework
gives the common flags (`--config`, `--set KEY=VALUE`, `--seed`, `--run-dir`, `--json`,
`--plot`, `--parallel`, `--no-progress`), run directories and one-line errors with exit
status 2.

`--data`, `--valid` and `--pool` take a CSV path or a named data set shipped with gnkit
(`DATA_SETS`): `rrn_valid` (the paper's validation set, 1,000 puzzles per givens level 17-34),
`rrn_valid_slice` (its first 30 per level) or `royle17_train_pool`. Nothing is ever written into
the gnkit package: `export` refuses a target inside it (to replace the shipped model in a checkout,
export elsewhere and copy the three files into `gnkit/pretrained/sudoku_rrn/` by hand).

`train --init-from MODEL` starts a new run from a model's parameters (fresh optimiser);
`train --budget-min M` stops after M wall-clock minutes, saves, validates and reports. The `gpu`
preset makes its batches on the device (`data=device`, `recipe.make_device_train_step`) and runs
bf16 matmuls; `benchmarks/accelerator.py` is the plan for one accelerator window.

Data-parallel training over every device: `train --parallel pmap` or `--parallel mesh` (the
batch is split evenly over the devices; on a CPU, try 8 forced devices with
`XLA_FLAGS=--xla_force_host_platform_device_count=8`).

(`gnkit sudoku ...` is the same.) Host driver; the model and metrics are jitted. The names below
are imported on first use, so the model, recipe and evaluation load without the command line's
libraries (tyro): what an accelerator image without the demo extras runs.
"""

import importlib

_EXPORTS = {
    "DEMO": "cli",
    "main": "cli",
    "CONFIGS": "config",
    "SudokuConfig": "config",
    "init_state": "config",
    "make_optimizer": "config",
    "learning_curves": "curves",
    "plot_curves": "curves",
    "DATA_SETS": "data",
    "load_data": "data",
    "validation_slice": "data",
    "evaluate_puzzles": "evaluation",
    "format_table": "evaluation",
    "summarise": "evaluation",
    "SudokuRRN": "models",
    "PRETRAINED": "model_files",
    "export": "model_files",
    "load_model": "model_files",
    "pretrained_dir": "model_files",
    "make_batches": "recipe",
    "make_train_step": "recipe",
    "describe_solve": "solving",
    "solve_steps": "solving",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
