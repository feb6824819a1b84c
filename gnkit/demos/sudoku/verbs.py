"""The verbs that use a trained model: `eval`, `demo`, `solve`, `export`, `curves`. Each writes
files only where its flags say (`--json`, `--plot`, `--to`), never into the gnkit package."""

from __future__ import annotations

import time

import numpy as np

from gnkit import experiments
from gnkit.demos.sudoku.config import SudokuConfig
from gnkit.demos.sudoku.curves import learning_curves, named_runs, plot_curves, print_curves
from gnkit.demos.sudoku.data import load_data, validation_slice
from gnkit.demos.sudoku.evaluation import (
    evaluate_puzzles,
    format_table,
    plot_heatmap,
    shown_steps,
    summarise,
)
from gnkit.demos.sudoku.model_files import export, load_model
from gnkit.demos.sudoku.solving import describe_solve, solve_steps
from gnkit.tasks import sudoku


def evaluation_data(flags) -> tuple[np.ndarray, np.ndarray]:
    """`--data`, cut to the first `--per-level` puzzles of each givens level if given."""
    data = load_data(flags.data, "--data")
    return validation_slice(data, flags.per_level) if flags.per_level else data


def describe_model(config: SudokuConfig, info: dict) -> str:
    """`hidden 96, lstm, trained with 16 steps, trained on 80,000 puzzles in 0.95 CPU-hours`."""
    trained = ""
    if "puzzles_seen" in info:
        trained = f", trained on {info['puzzles_seen']:,} puzzles"
        if "cpu_hours" in info:
            trained += f" in {info['cpu_hours']:.2f} CPU-hours"
    size = f"hidden {config.hidden_size}, {config.cell}"
    return f"{size}, trained with {config.steps} steps{trained}"


def evaluate(config, run_dir, options: experiments.Options) -> dict:
    """The `eval` verb: accuracy per givens level and per step of `--checkpoint` on `--data`."""
    flags = options.flags
    quizzes, solutions = evaluation_data(flags)
    config, params, info = load_model(flags.checkpoint)
    print(f"model: {flags.checkpoint} ({describe_model(config, info)})")
    print(f"data: {flags.data}, {len(quizzes)} puzzles, {flags.steps} steps")
    start = time.time()
    model = config.model()
    solved, cells = evaluate_puzzles(
        model, params, quizzes, solutions, flags.steps, progress=options.progress
    )
    seconds = time.time() - start
    table = summarise(sudoku.num_givens(quizzes), solved, cells)
    print(format_table(table, shown_steps(flags.steps)))
    print(
        f"all: {solved[-1].mean():.1%} puzzles solved, {cells[-1].mean():.1%} of empty cells right "
        f"({len(quizzes) / seconds:.1f} puzzles/s including compilation)"
    )
    plot = options.plot_path(None, "heatmap.png")
    if plot is not None:
        plot_heatmap(table, plot, f"RRN Sudoku, {flags.steps} steps")
    return {
        "checkpoint": str(flags.checkpoint),
        "data": str(flags.data),
        "per_level": flags.per_level,
        "steps": flags.steps,
        "puzzle_accuracy": float(solved[-1].mean()),
        "cell_accuracy": float(cells[-1].mean()),
        "per_givens": table,
        "model": info,
    }


def demo(config, run_dir, options: experiments.Options) -> dict:
    """The `demo` verb: the shipped model on `--per-level` puzzles of each givens level of
    `--data`, then the hardest puzzle it solves (else the easiest), step by step."""
    flags = options.flags
    quizzes, solutions = evaluation_data(flags)
    config, params, info = load_model(flags.checkpoint)
    print(f"Sudoku RRN demo: {describe_model(config, info)}")
    print(f"evaluating {len(quizzes)} puzzles ({flags.data}) at {flags.steps} steps")
    start = time.time()
    solved, cells = evaluate_puzzles(
        config.model(), params, quizzes, solutions, flags.steps, progress=options.progress
    )
    givens = sudoku.num_givens(quizzes)
    table = summarise(givens, solved, cells)
    print(format_table(table, shown_steps(flags.steps, (1, 4, 8, 16, 32))))
    print(
        f"all: {solved[-1].mean():.1%} solved, {cells[-1].mean():.1%} of empty cells right, "
        f"{time.time() - start:.0f} s"
    )
    solved_rows = np.flatnonzero(solved[-1])
    index = solved_rows[np.argmin(givens[solved_rows])] if len(solved_rows) else np.argmax(givens)
    quiz, solution = quizzes[index], solutions[index]
    probs = solve_steps(config, params, quiz, flags.steps)
    print(f"\none puzzle, step by step ({int(givens[index])} givens):")
    print(sudoku.format_board(quiz))
    boards_at = shown_steps(flags.steps, (1, 4, 16))
    print(describe_solve(quiz, probs, solution, boards_at=boards_at))
    return {"steps": flags.steps, "per_givens": table, "model": info}


def solve(config, run_dir, options: experiments.Options) -> dict:
    """The `solve` verb: rejects a malformed puzzle or contradictory givens before solving."""
    flags = options.flags
    try:
        quiz = sudoku.check_givens(sudoku.parse_board(flags.puzzle))
    except ValueError as error:
        raise experiments.UsageError(str(error)) from None
    config, params, _ = load_model(flags.checkpoint)
    probs = solve_steps(config, params, quiz, flags.steps)
    board = np.where(quiz == 0, probs[-1].argmax(-1) + 1, quiz)
    print(f"quiz ({int((quiz != 0).sum())} givens):\n{sudoku.format_board(quiz)}\n")
    print(f"how the beliefs settle ({flags.steps} steps):")
    print(describe_solve(quiz, probs, boards_at=shown_steps(flags.steps, (1, 4, 16))[:-1]))
    valid = bool(sudoku.is_valid_solution(board))
    print(f"\nsolved board after {flags.steps} steps ({'valid' if valid else 'NOT valid'}):")
    print(sudoku.format_board(board))
    solved_board = "".join(str(digit) for digit in board)
    return {"puzzle": flags.puzzle, "steps": flags.steps, "board": solved_board, "valid": valid}


def export_model(config, run_dir, options: experiments.Options) -> dict:
    """The `export` verb: a run's best checkpoint as a shippable model in `--to`."""
    flags = options.flags
    info = export(flags.source, flags.target)
    print(
        f"exported {flags.source}/checkpoints/{info['checkpoint']} to {flags.target}: "
        f"{info['updates']} updates, {info['puzzles_seen']:,} puzzles, "
        f"{info['cpu_hours']} CPU-hours"
    )
    return info


def curves(config, run_dir, options: experiments.Options) -> dict:
    """The `curves` verb: validation accuracy vs training CPU-minutes of `--run`s; with
    `--plot PATH`, puzzles solved in PATH and empty cells right in its `_cells` twin."""
    runs = learning_curves(named_runs(options.flags.run))
    print_curves(runs)
    puzzles_path = options.plot_path(None, "curves.png")
    if puzzles_path is not None:
        plot_curves(runs, puzzles_path, "puzzle")
        plot_curves(runs, options.plot_path(None, "cells.png", main=False), "cell")
    return runs
