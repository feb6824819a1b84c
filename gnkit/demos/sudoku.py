"""Sudoku with a recurrent relational network: train, evaluate, solve, demo.

    python -m gnkit.demos.sudoku demo                      # shipped model, a few minutes on a CPU
    python -m gnkit.demos.sudoku train --config cpu --run-dir runs/sudoku_cpu --set remat step
    python -m gnkit.demos.sudoku eval --checkpoint pretrained --data rrn_valid --per-level 100
    python -m gnkit.demos.sudoku solve 000000010400000000020000000000050407008000300001090000...
    python -m gnkit.demos.sudoku export --from runs/sudoku_cpu --to exports/sudoku_rrn

`--data`, `--valid` and `--pool` take a CSV path or a named data set shipped with gnkit
(`DATA_SETS`): `rrn_valid` (the paper's validation set, 1,000 puzzles per givens level 17-34),
`rrn_valid_slice` (its first 30 per level) or `royle17_train_pool`. Nothing is ever written into
the gnkit package: `export` refuses a target inside it (to replace the shipped model in a checkout,
export elsewhere and copy the three files into `gnkit/pretrained/sudoku_rrn/` by hand).

Data-parallel training over every device: `train --parallel pmap` or `--parallel mesh` (the
batch is split evenly over the devices; on a CPU, try 8 forced devices with
`XLA_FLAGS=--xla_force_host_platform_device_count=8`).

(`gnkit sudoku ...` is the same.) Host driver; the model and metrics are jitted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import types
import typing
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Literal

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import parallel
from gnkit import train as training
from gnkit.parallel.placement import local_devices
from gnkit.progress import track
from gnkit.tasks import sudoku

PRETRAINED = "pretrained"

# Named data sets: name -> (file shipped in gnkit/data/, puzzles kept per givens level or None).
DATA_SETS = {
    "rrn_valid": (sudoku.VALID_SET, None),
    "rrn_valid_slice": (sudoku.VALID_SET, 30),
    "royle17_train_pool": (sudoku.TRAIN_POOL, None),
}


@dataclasses.dataclass(frozen=True)
class SudokuConfig:
    """Model, data and optimiser settings of one training run.

    `train --set FIELD VALUE` parses each field by its annotation here (`apply_overrides`).
    `remat` is False, True / 'step' or 'block', as in `RecurrentRelationalNetwork`.
    """

    hidden_size: int = 96
    embed_size: int = 16
    encoder_layers: int = 3
    message_layers: int = 3
    update_layers: int = 3
    cell: Literal["lstm", "gru", "mlp"] = "lstm"
    num_steps: int = 32
    eval_steps: int = 64
    batch_size: int = 64
    learning_rate: float = 2e-4
    warmup_updates: int = 0
    cosine_decay: bool = False
    l2: float = 1e-4
    updates: int = 300_000
    curriculum_start_givens: int = 17
    curriculum_fraction: float = 0.0
    remat: bool | Literal["step", "block"] = False
    seed: int = 0

    def model(self) -> sudoku.SudokuRRN:
        return sudoku.SudokuRRN(
            hidden_size=self.hidden_size,
            embed_size=self.embed_size,
            encoder_layers=self.encoder_layers,
            message_layers=self.message_layers,
            update_layers=self.update_layers,
            cell=self.cell,
            remat=self.remat,
        )

    def givens_range(self, update: int) -> np.ndarray:
        """Givens levels sampled at `update`: the curriculum lowers the minimum to 17 linearly."""
        span = self.curriculum_fraction * self.updates
        progress = 1.0 if span <= 0 else min(update / span, 1.0)
        low = round(self.curriculum_start_givens + progress * (17 - self.curriculum_start_givens))
        return np.arange(low, sudoku.MAX_GIVENS + 1)


CONFIGS = {
    # Palm et al. (2018): hidden 96, 3-layer MLPs, LSTM, 32 steps, batch 64, Adam 2e-4, L2 1e-4.
    "paper": SudokuConfig(),
    # Sample-efficient CPU recipe: a 2-layer message MLP (its per-edge cost is a ReLU only, thanks
    # to the factorised first layer and the linear layer after the sum), 16 steps in training and
    # 64 in evaluation, a 5x larger learning rate with warmup and cosine decay over the run, and a
    # curriculum from 30-34 givens down to 17-34 over the first 40% of updates. One CPU thread
    # trains it at ~28 puzzles/s against 5.6 for the paper config: 2,500 updates (80k puzzles)
    # take about 50 CPU-minutes.
    "cpu": SudokuConfig(
        hidden_size=96,
        message_layers=2,
        update_layers=2,
        encoder_layers=2,
        num_steps=16,
        batch_size=32,
        learning_rate=1e-3,
        warmup_updates=100,
        cosine_decay=True,
        updates=2_500,
        curriculum_start_givens=30,
        curriculum_fraction=0.4,
    ),
    # For tests and smoke runs.
    "tiny": SudokuConfig(
        hidden_size=16,
        embed_size=8,
        encoder_layers=1,
        message_layers=2,
        update_layers=1,
        num_steps=4,
        eval_steps=8,
        batch_size=8,
        learning_rate=3e-3,
        updates=20,
    ),
}


def apply_overrides(config: SudokuConfig, pairs: Sequence[tuple[str, str]] | None) -> SudokuConfig:
    """`config` with `--set FIELD VALUE` pairs applied, each parsed by the field's declared type.

    `bool` takes true/false/yes/no/1/0, a `Literal` one of its values, and a union (such as
    `remat: bool | Literal["step", "block"]`) the first member that parses. An unknown field or a
    value of the wrong type raises `ValueError` naming the field. Host.
    """
    declared = typing.get_type_hints(SudokuConfig)
    changes = {}
    for key, text in pairs or ():
        if key not in declared:
            raise ValueError(f"--set {key}: unknown config field; fields: {', '.join(declared)}")
        value = _parse_typed(text, declared[key])
        if value is None:
            raise ValueError(f"--set {key}: {text!r} is not {_describe_type(declared[key])}")
        changes[key] = value
    return dataclasses.replace(config, **changes)


_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


def _members(annotation) -> tuple:
    """The alternatives of a union type, else `(annotation,)`."""
    is_union = (
        isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    )
    return typing.get_args(annotation) if is_union else (annotation,)


def _parse_typed(text: str, annotation):
    """`text` as a value of `annotation` (bool, int, float, str, Literal or a union), else None."""
    for member in _members(annotation):
        if typing.get_origin(member) is Literal:
            choices = typing.get_args(member)
            if text in choices:
                return text
        elif member is bool:
            if text.lower() in _TRUE + _FALSE:
                return text.lower() in _TRUE
        elif member in (int, float):
            try:
                return member(text)
            except ValueError:
                continue
        elif member is str:
            return text
    return None


def _describe_type(annotation) -> str:
    """What `_parse_typed` accepts for `annotation`, in words: `true, false, 'step' or 'block'`."""
    words = []
    for member in _members(annotation):
        if typing.get_origin(member) is Literal:
            words.extend(repr(choice) for choice in typing.get_args(member))
        elif member is bool:
            words.extend(["true", "false"])
        else:
            words.append(f"an {member.__name__}" if member is int else f"a {member.__name__}")
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def load_data(source: str | Path, flag: str = "--data") -> tuple[np.ndarray, np.ndarray]:
    """`(quizzes, solutions)`, int8 `[P, 81]`, from a CSV path or a named data set. Host.

    A path to an existing file is read as it is. Otherwise `source` is looked up in `DATA_SETS`,
    by name (`rrn_valid`) or by its shipped file's name (`rrn_valid.csv.xz`). Anything else raises
    `FileNotFoundError` naming `flag` and the known names.
    """
    if Path(source).is_file():
        return sudoku.read_puzzles(source)
    for name, (file_name, per_level) in DATA_SETS.items():
        if str(source) in (name, file_name):
            data = sudoku.read_puzzles(sudoku.shipped_data(file_name))
            return validation_slice(data, per_level) if per_level else data
    raise FileNotFoundError(
        f"{flag} {source}: no such file, and not a named data set ({', '.join(DATA_SETS)})"
    )


def check_outside_package(path: str | Path, flag: str) -> Path:
    """`path`, unless it lies inside the installed gnkit package: then `ValueError` naming `flag`.

    Output must never land in the package, where it would replace shipped files (the model used
    by `demo` and `solve`) or, in an editable install, tracked files of the checkout. Host.
    """
    package = Path(str(resources.files("gnkit"))).resolve()
    resolved = Path(path).resolve()
    if resolved == package or package in resolved.parents:
        raise ValueError(
            f"{flag} {path}: inside the gnkit package ({package}); nothing is written there, "
            "choose a directory outside it"
        )
    return Path(path)


def make_optimizer(config: SudokuConfig) -> optax.GradientTransformation:
    """Adam with L2 on the MLP kernels (added to the gradient, as an L2 loss term would)."""
    if config.cosine_decay:
        schedule = optax.warmup_cosine_decay_schedule(
            0.0,
            config.learning_rate,
            max(config.warmup_updates, 1),
            max(config.updates, config.warmup_updates + 1),
            end_value=config.learning_rate * 0.05,
        )
    elif config.warmup_updates:
        schedule = optax.linear_schedule(0.0, config.learning_rate, config.warmup_updates)
    else:
        schedule = config.learning_rate

    def kernels(params):
        def is_mlp_kernel(path, _):
            keys = [getattr(key, "key", None) for key in path]
            return keys[-1] == "kernel" and "lstm" not in keys and "gru" not in keys

        return jax.tree_util.tree_map_with_path(is_mlp_kernel, params)

    return optax.chain(optax.add_decayed_weights(config.l2, mask=kernels), optax.adam(schedule))


def init_state(config: SudokuConfig) -> training.TrainState:
    """A fresh `TrainState` for `config` (parameters from `config.seed`)."""
    model = config.model()
    quizzes = jnp.zeros((1, sudoku.NUM_CELLS), jnp.int32)
    params = model.init(jax.random.PRNGKey(config.seed), quizzes, 1)
    return training.TrainState(params=params, opt_state=make_optimizer(config).init(params))


def make_train_step(config: SudokuConfig, mode: str = "single", mesh=None):
    """`(params, opt_state, (quizzes, solutions)) -> (params, opt_state, metrics)`, compiled.

    `mode` is 'single', 'pmap' or 'mesh' (`gnkit.parallel.make_train_step`): with 'pmap' or
    'mesh' each device takes an equal share of the batch (from `make_batches` with the same mode)
    and the step equals a single-device step on the whole batch. Buffers are not donated, so an
    interrupt never finds the last parameters deleted.
    """
    model = config.model()

    def loss_fn(params, batch):
        quizzes, solutions = batch
        logits = model.apply(params, quizzes, config.num_steps)
        loss = jnp.mean(sudoku.cell_loss(logits, solutions))
        solved, cell_accuracy = sudoku.step_accuracy(logits[-1:], quizzes, solutions)
        return loss, {"solved": jnp.mean(solved), "cells": jnp.mean(cell_accuracy)}

    return parallel.make_train_step(
        loss_fn, make_optimizer(config), mode, mesh=mesh, has_aux=True, donate=False
    )


def make_batches(
    config: SudokuConfig, pool: tuple[np.ndarray, np.ndarray], mode: str = "single", mesh=None
):
    """`update -> (quizzes, solutions)` int32 `[B, 81]` each, on the devices as `mode` expects
    (`gnkit.parallel.shard_batch`). A pure function of the update number (exact resume)."""
    if mode != "single":
        devices = len(local_devices(mesh or parallel.make_mesh()))
        if config.batch_size % devices:
            raise ValueError(
                f"batch_size {config.batch_size} does not split over {devices} devices; "
                "pass --set batch_size N with N a multiple of the device count."
            )

    def make_batch(update: int):
        rng = np.random.default_rng([config.seed, update])
        quizzes, solutions = sudoku.sample_puzzles(
            rng, pool[0], pool[1], config.batch_size, config.givens_range(update)
        )
        batch = (quizzes.astype(np.int32), solutions.astype(np.int32))
        return parallel.shard_batch(batch, mode, mesh)

    return make_batch


def make_predict(model: sudoku.SudokuRRN, num_steps: int):
    """Jitted `(params, quizzes [B, 81], solutions [B, 81]) -> (solved [T, B] bool, empty-cell
    accuracy [T, B])` at every step `T = num_steps`."""

    @jax.jit
    def predict(params, quizzes, solutions):
        logits = model.apply(params, quizzes, num_steps)
        solved, cells = sudoku.step_accuracy(logits, quizzes, solutions)
        return solved, cells

    return predict


def evaluate_puzzles(
    model: sudoku.SudokuRRN,
    params,
    quizzes: np.ndarray,
    solutions: np.ndarray,
    num_steps: int,
    batch_size: int = 100,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per step and puzzle: `(solved [T, P] bool, empty-cell accuracy [T, P])`. Host driver.

    `quizzes` and `solutions` are int `[P, 81]`; `T = num_steps`. Batches are padded to
    `batch_size` (with copies of the first puzzle, dropped from the results) so one compiled
    function serves any number of puzzles. `progress` shows a progress bar.
    """
    predict = make_predict(model, num_steps)
    total = len(quizzes)
    solved, cells = [], []
    starts = range(0, total, batch_size)
    if progress:
        starts = track(starts, len(starts), f"evaluating {total} puzzles")
    for start in starts:
        part = slice(start, start + batch_size)
        count = len(quizzes[part])
        pad = batch_size - count
        q = np.concatenate([quizzes[part], np.repeat(quizzes[:1], pad, 0)]).astype(np.int32)
        s = np.concatenate([solutions[part], np.repeat(solutions[:1], pad, 0)]).astype(np.int32)
        batch_solved, batch_cells = jax.device_get(predict(params, q, s))
        solved.append(batch_solved[:, :count])
        cells.append(batch_cells[:, :count])
    return np.concatenate(solved, axis=1), np.concatenate(cells, axis=1)


def summarise(
    givens: np.ndarray, solved: np.ndarray, cells: np.ndarray
) -> dict[str, dict[str, list[float] | float]]:
    """Accuracies per givens level: final-step puzzle and cell accuracy, and both per step.

    `givens` int `[P]`, `solved` bool `[T, P]` and `cells` `[T, P]` (from `evaluate_puzzles`).
    Returns `{level: {"puzzles", "puzzle_accuracy", "cell_accuracy", "puzzle_accuracy_per_step",
    "cell_accuracy_per_step"}}` with levels as strings in increasing order. Host.
    """
    table = {}
    for level in np.unique(givens):
        rows = givens == level
        table[str(int(level))] = {
            "puzzles": int(rows.sum()),
            "puzzle_accuracy": float(solved[-1, rows].mean()),
            "cell_accuracy": float(cells[-1, rows].mean()),
            "puzzle_accuracy_per_step": solved[:, rows].mean(axis=1).round(4).tolist(),
            "cell_accuracy_per_step": cells[:, rows].mean(axis=1).round(4).tolist(),
        }
    return table


def validation_slice(
    data: tuple[np.ndarray, np.ndarray], per_level: int, levels: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The first `per_level` puzzles of each givens level (all levels, or `levels`), `[P', 81]`."""
    quizzes, solutions = data
    givens = sudoku.num_givens(quizzes)
    levels = np.unique(givens) if levels is None else levels
    rows = np.concatenate([np.flatnonzero(givens == level)[:per_level] for level in levels])
    return quizzes[rows], solutions[rows]


def make_evaluate(config: SudokuConfig, valid: tuple[np.ndarray, np.ndarray], num_steps: int):
    """`params -> metrics` for `fit` on `valid` at `num_steps` steps. Host driver.

    score = mean puzzle accuracy + mean empty-cell accuracy / 100 (cells break ties); the metrics
    also hold both accuracies overall and per givens level.
    """
    model = config.model()
    givens = sudoku.num_givens(valid[0])

    def evaluate(params):
        solved, cells = evaluate_puzzles(model, params, valid[0], valid[1], num_steps)
        table = summarise(givens, solved, cells)
        puzzle_accuracy = float(solved[-1].mean())
        cell_accuracy = float(cells[-1].mean())
        return {
            "score": puzzle_accuracy + cell_accuracy / 100,
            "puzzle_accuracy": puzzle_accuracy,
            "cell_accuracy": cell_accuracy,
            "eval_steps": num_steps,
            "per_givens": {
                level: {"puzzle": row["puzzle_accuracy"], "cell": row["cell_accuracy"]}
                for level, row in table.items()
            },
        }

    return evaluate


def train(args: argparse.Namespace) -> training.TrainState:
    """The `train` command: resumes from `run_dir` if it holds checkpoints.

    The overrides and data are checked before anything is written to `run_dir`. SIGINT and
    SIGTERM stop training after the current update, with a checkpoint (`training.TrainingStopped`).
    """
    config = apply_overrides(CONFIGS[args.config], args.set)
    run_dir = check_outside_package(args.run_dir, "--run-dir")
    pool = load_data(args.pool, "--pool")
    valid = load_data(args.valid, "--valid")
    valid = validation_slice(valid, args.valid_per_level, args.valid_givens)
    config_path = run_dir / "config.json"
    if config_path.exists():
        saved = SudokuConfig(**json.loads(config_path.read_text()))
        if saved != config:
            raise ValueError(
                f"--run-dir {run_dir} holds a run with another config ({config_path}); "
                "use a new --run-dir"
            )
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        config_path.write_text(json.dumps(dataclasses.asdict(config), indent=2))
    mesh = None if args.parallel == "single" else parallel.make_mesh()
    state = training.resume_or(init_state(config), run_dir / "checkpoints")
    if state.step:
        print(f"resuming {run_dir} at update {int(state.step)}", flush=True)
    print(
        f"config {args.config}: {json.dumps(dataclasses.asdict(config))}\n"
        f"pool {len(pool[0])} puzzles, validation {len(valid[0])} puzzles, "
        f"{args.parallel} on {1 if mesh is None else mesh.size} device(s)",
        flush=True,
    )
    with training.stop_on_signals() as stop:
        return training.fit(
            state,
            make_train_step(config, args.parallel, mesh),
            make_batches(config, pool, args.parallel, mesh),
            args.updates or config.updates,
            examples_per_step=config.batch_size,
            evaluate=make_evaluate(config, valid, args.valid_steps or config.eval_steps),
            eval_every_s=args.eval_every_min * 60,
            checkpoint_dir=run_dir / "checkpoints",
            checkpoint_every_s=args.checkpoint_every_min * 60,
            metrics_path=run_dir / "metrics.jsonl",
            log_every_steps=args.log_every,
            progress=not args.no_progress,
            mode=args.parallel,
            mesh=mesh,
            should_stop=stop,
        )


def load_model(source: str | Path) -> tuple[SudokuConfig, object, dict]:
    """`(config, params, info)` from `"pretrained"`, an exported directory, or a training run.

    An exported directory (`gnkit/pretrained/sudoku_rrn/` is one) holds `config.json`,
    `params.msgpack` and `training.json`. A run directory (`train --run-dir`) holds `config.json`
    and `checkpoints/`; its best validated checkpoint is used, else its latest. A `.msgpack`
    file inside a run's `checkpoints/` works too. Host.
    """
    path = pretrained_dir() if str(source) == PRETRAINED else Path(source)
    if path.is_file():
        checkpoint, run_dir = path, path.parent.parent
    else:
        checkpoint, run_dir = None, path
    config_path = run_dir / "config.json"
    if not config_path.exists():
        raise FileNotFoundError(f"no config.json in {run_dir}: not an exported model or a run")
    config = SudokuConfig(**json.loads(config_path.read_text()))
    if checkpoint is None and (run_dir / "params.msgpack").exists():
        template = init_state(config).params
        params = flax.serialization.from_bytes(template, (run_dir / "params.msgpack").read_bytes())
        info_path = run_dir / "training.json"
        info = json.loads(info_path.read_text()) if info_path.exists() else {}
        return config, params, info
    if checkpoint is None:
        best = run_dir / "checkpoints" / "best.msgpack"
        checkpoint = best if best.exists() else training.latest_checkpoint(run_dir / "checkpoints")
        if checkpoint is None:
            raise FileNotFoundError(f"{run_dir} has no checkpoints yet")
    state = training.load_checkpoint(checkpoint, init_state(config))
    info = {
        "checkpoint": str(checkpoint),
        "updates": int(state.step),
        "puzzles_seen": int(state.step) * config.batch_size,
        "cpu_hours": round(float(state.cpu_seconds) / 3600, 3),
        "wall_hours": round(float(state.wall_seconds) / 3600, 3),
    }
    return config, state.params, info


def pretrained_dir() -> Path:
    """Where the shipped checkpoint lives: `gnkit/pretrained/sudoku_rrn/`."""
    return Path(str(resources.files("gnkit") / "pretrained" / "sudoku_rrn"))


def export(run_dir: str | Path, target: str | Path) -> dict:
    """Write a run's model to `target` as `config.json`, `params.msgpack` and `training.json`.

    The model is the run's best validated checkpoint, else its latest (`load_model`);
    `training.json` records its updates, puzzles seen, CPU-hours, validation metrics and the
    machine. `target` must lie outside the gnkit package (`check_outside_package`); files already
    in `target` are replaced. Returns the `training.json` record. Host.
    """
    run_dir = Path(run_dir)
    target = check_outside_package(target, "--to")
    config, params, info = load_model(run_dir)
    if "updates" not in info:
        raise ValueError(
            f"--from {run_dir}: an exported model, not a training run (train --run-dir)"
        )
    metrics_path = run_dir / "metrics.jsonl"
    if metrics_path.exists():
        evals = [
            row
            for row in training.read_metrics(metrics_path)
            if row["kind"] == "eval" and row["step"] == info["updates"]
        ]
        if evals:
            info["validation"] = {
                key: evals[-1][key]
                for key in ("puzzle_accuracy", "cell_accuracy", "eval_steps", "per_givens")
            }
    info["checkpoint"] = Path(info["checkpoint"]).name
    info["machine"] = _machine()
    target.mkdir(parents=True, exist_ok=True)
    (target / "params.msgpack").write_bytes(flax.serialization.to_bytes(jax.device_get(params)))
    (target / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2))
    (target / "training.json").write_text(json.dumps(info, indent=2))
    return info


def _machine() -> str:
    import platform

    return f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPU cores".strip()


def format_table(table: dict, steps_shown: Sequence[int]) -> str:
    """A text table: givens, puzzles, puzzle and cell accuracy, puzzle accuracy at some steps."""
    header = f"{'givens':>6} {'puzzles':>7} {'solved':>7} {'cells':>7}  " + " ".join(
        f"{'@' + str(step):>6}" for step in steps_shown
    )
    lines = [header, "-" * len(header)]
    for level, row in table.items():
        curve = row["puzzle_accuracy_per_step"]
        at = " ".join(f"{curve[step - 1]:>6.1%}" for step in steps_shown)
        lines.append(
            f"{level:>6} {row['puzzles']:>7} {row['puzzle_accuracy']:>7.1%} "
            f"{row['cell_accuracy']:>7.1%}  {at}"
        )
    return "\n".join(lines)


def plot_heatmap(table: dict, path: str | Path, title: str) -> None:
    """Puzzle and cell accuracy as heatmaps, steps (rows) x givens (columns), saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = list(table)
    figure, axes = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    for axis, key, label in zip(
        axes,
        ("puzzle_accuracy_per_step", "cell_accuracy_per_step"),
        ("puzzles solved", "cells"),
        strict=False,
    ):
        grid = np.array([table[level][key] for level in levels]).T
        image = axis.imshow(
            grid,
            aspect="auto",
            origin="lower",
            vmin=0,
            vmax=1,
            cmap="viridis",
            extent=(-0.5, len(levels) - 0.5, 0.5, grid.shape[0] + 0.5),
        )
        axis.set_xticks(range(len(levels)), levels, fontsize=7)
        axis.set_xlabel("givens")
        axis.set_ylabel("step")
        axis.set_title(label)
        figure.colorbar(image, ax=axis)
    figure.suptitle(title)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run_eval(args: argparse.Namespace) -> dict:
    """The `eval` command: writes files only where `--json` and `--plot` say."""
    for path, flag in ((args.json, "--json"), (args.plot, "--plot")):
        if path:
            check_outside_package(path, flag)
    quizzes, solutions = _evaluation_data(args)
    config, params, info = load_model(args.checkpoint)
    steps = args.steps
    print(f"model: {args.checkpoint} ({_describe(config, info)})")
    print(f"data: {args.data}, {len(quizzes)} puzzles, {steps} steps")
    start = time.time()
    solved, cells = evaluate_puzzles(
        config.model(), params, quizzes, solutions, steps, progress=not args.no_progress
    )
    seconds = time.time() - start
    table = summarise(sudoku.num_givens(quizzes), solved, cells)
    shown = [step for step in (1, 4, 8, 16, 32, 64, 128) if step < steps] + [steps]
    print(format_table(table, shown))
    print(
        f"all: {solved[-1].mean():.1%} puzzles solved, {cells[-1].mean():.1%} of empty cells right "
        f"({len(quizzes) / seconds:.1f} puzzles/s including compilation)"
    )
    result = {
        "checkpoint": str(args.checkpoint),
        "data": str(args.data),
        "per_level": args.per_level,
        "steps": steps,
        "puzzle_accuracy": float(solved[-1].mean()),
        "cell_accuracy": float(cells[-1].mean()),
        "per_givens": table,
        "model": info,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"wrote {args.json}")
    if args.plot:
        plot_heatmap(table, args.plot, f"RRN Sudoku, {steps} steps")
        print(f"wrote {args.plot}")
    return result


def _evaluation_data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """`--data`, cut to the first `--per-level` puzzles of each givens level if given."""
    data = load_data(args.data, "--data")
    return validation_slice(data, args.per_level) if args.per_level else data


def _describe(config: SudokuConfig, info: dict) -> str:
    trained = ""
    if "puzzles_seen" in info:
        trained = f", trained on {info['puzzles_seen']:,} puzzles"
        if "cpu_hours" in info:
            trained += f" in {info['cpu_hours']:.2f} CPU-hours"
    size = f"hidden {config.hidden_size}, {config.cell}"
    return f"{size}, trained with {config.num_steps} steps{trained}"


def solve_steps(config: SudokuConfig, params, quiz: np.ndarray, steps: int) -> np.ndarray:
    """Digit probabilities of every cell at every step for one quiz int `[81]`: `[steps, 81, 9]`.

    Host driver around a jitted forward pass.
    """
    logits = jax.jit(config.model().apply, static_argnums=2)(
        params, jnp.asarray(quiz[None], jnp.int32), steps
    )
    return np.asarray(jax.nn.softmax(logits[:, 0], axis=-1))


def describe_solve(
    quiz: np.ndarray, probs: np.ndarray, solution: np.ndarray | None = None, boards_at=()
) -> str:
    """How the beliefs settle: per step, cells changed, confidence, rule violations, accuracy.

    One line per step up to 16, then every 8th step and the last; then the boards at `boards_at`.
    """
    empty = quiz == 0
    boards = np.where(empty, probs.argmax(-1) + 1, quiz)
    lines = [
        "changed: empty cells whose best digit changed; confidence: their mean top probability;",
        "conflicts: pairs of cells in one row, column or box showing the same digit",
        f"{'step':>4} {'changed':>7} {'confidence':>10} {'conflicts':>9}"
        + (f" {'correct':>7}" if solution is not None else ""),
    ]
    senders, receivers = sudoku.sudoku_edges()
    for step in range(len(probs)):
        if step >= 16 and (step + 1) % 8 and step + 1 != len(probs):
            continue
        board = boards[step]
        changed = int((board != boards[step - 1]).sum()) if step else int(empty.sum())
        confidence = float(probs[step].max(-1)[empty].mean()) if empty.any() else 1.0
        conflicts = int((board[senders] == board[receivers]).sum()) // 2
        line = f"{step + 1:>4} {changed:>7} {confidence:>10.3f} {conflicts:>9}"
        if solution is not None:
            line += f" {int((board == solution)[empty].sum()):>3}/{int(empty.sum())}"
        lines.append(line)
    if boards_at:
        panels = [sudoku.format_board(boards[step - 1]).splitlines() for step in boards_at]
        titles = [f"after step {step}" for step in boards_at]
        lines.append("\n" + "    ".join(f"{title:<21}" for title in titles))
        lines.extend("    ".join(rows) for rows in zip(*panels, strict=True))
    return "\n".join(lines)


def run_solve(args: argparse.Namespace) -> np.ndarray:
    """The `solve` command: rejects a malformed puzzle or contradictory givens before solving."""
    quiz = sudoku.check_givens(sudoku.parse_board(args.puzzle))
    config, params, info = load_model(args.checkpoint)
    probs = solve_steps(config, params, quiz, args.steps)
    board = np.where(quiz == 0, probs[-1].argmax(-1) + 1, quiz)
    print(f"quiz ({int((quiz != 0).sum())} givens):\n{sudoku.format_board(quiz)}\n")
    print(f"how the beliefs settle ({args.steps} steps):")
    shown = [step for step in (1, 4, 16) if step < args.steps]
    print(describe_solve(quiz, probs, boards_at=shown))
    valid = sudoku.is_valid_solution(board)
    print(f"\nsolved board after {args.steps} steps ({'valid' if valid else 'NOT valid'}):")
    print(sudoku.format_board(board))
    return board


def run_demo(args: argparse.Namespace) -> dict:
    """The `demo` command: the shipped model on `--per-level` puzzles of each givens level of
    `--data`, then the hardest puzzle it solves, step by step."""
    quizzes, solutions = _evaluation_data(args)
    config, params, info = load_model(args.checkpoint)
    print(f"Sudoku RRN demo: {_describe(config, info)}")
    print(f"evaluating {len(quizzes)} puzzles ({args.data}) at {args.steps} steps")
    start = time.time()
    solved, cells = evaluate_puzzles(
        config.model(), params, quizzes, solutions, args.steps, progress=not args.no_progress
    )
    givens = sudoku.num_givens(quizzes)
    table = summarise(givens, solved, cells)
    shown = [step for step in (1, 4, 8, 16, 32) if step < args.steps] + [args.steps]
    print(format_table(table, shown))
    print(
        f"all: {solved[-1].mean():.1%} solved, {cells[-1].mean():.1%} of empty cells right, "
        f"{time.time() - start:.0f} s"
    )
    # The hardest puzzle the model solves, else the easiest one, step by step.
    solved_rows = np.flatnonzero(solved[-1])
    index = solved_rows[np.argmin(givens[solved_rows])] if len(solved_rows) else np.argmax(givens)
    quiz, solution = quizzes[index], solutions[index]
    probs = solve_steps(config, params, quiz, args.steps)
    print(f"\none puzzle, step by step ({int(givens[index])} givens):")
    print(sudoku.format_board(quiz))
    shown = [step for step in (1, 4, 16) if step < args.steps] + [args.steps]
    print(describe_solve(quiz, probs, solution, boards_at=shown))
    return table


def learning_curves(runs: dict[str, str | Path]) -> dict[str, list[dict]]:
    """Validation records of each run with `train_cpu_minutes` (CPU time minus evaluation)."""
    curves = {}
    for name, run_dir in runs.items():
        rows, eval_minutes = [], 0.0
        for row in training.read_metrics(Path(run_dir) / "metrics.jsonl"):
            if row["kind"] != "eval":
                continue
            eval_minutes += row.get("eval_cpu_minutes", 0.0)
            rows.append({**row, "train_cpu_minutes": row["cpu_minutes"] - eval_minutes})
        curves[name] = rows
    return curves


def plot_curves(curves: dict[str, list[dict]], path: str | Path, key: str = "puzzle") -> None:
    """Validation accuracy vs training CPU-minutes, one panel per givens level, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = sorted(
        {level for rows in curves.values() for row in rows for level in row["per_givens"]}, key=int
    )
    columns = min(len(levels), 4)
    rows_count = -(-len(levels) // columns)
    figure, axes = plt.subplots(
        rows_count,
        columns,
        figsize=(3.4 * columns, 2.8 * rows_count),
        squeeze=False,
        sharex=True,
        sharey=True,
        constrained_layout=True,
    )
    for axis, level in zip(axes.flat, levels, strict=False):
        for name, rows in curves.items():
            points = [
                (row["train_cpu_minutes"], row["per_givens"][level][key])
                for row in rows
                if level in row["per_givens"]
            ]
            if points:
                axis.plot(*zip(*points, strict=False), marker=".", label=name)
        axis.set_title(f"{level} givens")
        axis.grid(alpha=0.3)
    for axis in axes.flat[len(levels) :]:
        axis.axis("off")
    for axis in axes[-1]:
        axis.set_xlabel("training CPU-minutes")
    for axis in axes[:, 0]:
        axis.set_ylabel("puzzles solved" if key == "puzzle" else "empty cells right")
    axes.flat[0].legend()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run_curves(args: argparse.Namespace) -> dict:
    """The `curves` command: writes `--out` and its `_cells` twin."""
    check_outside_package(args.out, "--out")
    runs = dict(item.split("=", 1) for item in args.run)
    curves = learning_curves(runs)
    for name, rows in curves.items():
        for row in rows:
            levels = " ".join(
                f"{level}:{values['puzzle']:.0%}/{values['cell']:.0%}"
                for level, values in row["per_givens"].items()
            )
            print(
                f"{name:>8} {row['examples']:>8} puzzles {row['train_cpu_minutes']:>7.1f} "
                f"CPU-min  {levels}"
            )
    plot_curves(curves, args.out, "puzzle")
    plot_curves(curves, Path(args.out).with_name(Path(args.out).stem + "_cells.png"), "cell")
    print(f"wrote {args.out} (puzzles solved) and its _cells twin (empty cells right)")
    return curves


def _givens_levels(text: str) -> list[int]:
    """`--valid-givens 20,30` as `[20, 30]`."""
    try:
        return [int(level) for level in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gnkit sudoku", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    data_help = f"a quiz,solution CSV (plain or .xz) or a named data set: {', '.join(DATA_SETS)}"
    p = commands.add_parser("demo", help="evaluate the shipped model and solve one puzzle")
    p.add_argument("--checkpoint", default=PRETRAINED)
    p.add_argument("--data", default="rrn_valid", help=f"{data_help} (default: %(default)s)")
    p.add_argument("--per-level", type=int, default=20, help="puzzles per givens level")
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--no-progress", action="store_true")

    p = commands.add_parser("eval", help="accuracy per givens level and per step")
    p.add_argument("--checkpoint", default=PRETRAINED, help="'pretrained', a run or export dir")
    p.add_argument("--data", default="rrn_valid_slice", help=f"{data_help} (default: %(default)s)")
    p.add_argument("--per-level", type=int, help="use only the first N puzzles of each level")
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--json", help="write the results here (default: print only)")
    p.add_argument("--plot", help="write a steps x givens heatmap PNG here (default: none)")
    p.add_argument("--no-progress", action="store_true")

    p = commands.add_parser("solve", help="solve one puzzle and show how the beliefs settle")
    p.add_argument("puzzle", help="81 characters, ASCII digits, 0 or . for blanks")
    p.add_argument("--checkpoint", default=PRETRAINED)
    p.add_argument("--steps", type=int, default=64)

    p = commands.add_parser("export", help="copy a run's best checkpoint as a shippable model")
    p.add_argument("--from", dest="source", required=True, help="a train --run-dir")
    p.add_argument(
        "--to", dest="target", required=True, help="a directory outside the gnkit package"
    )

    p = commands.add_parser("curves", help="plot validation accuracy vs CPU-minutes of runs")
    p.add_argument("--run", action="append", required=True, metavar="NAME=RUN_DIR")
    p.add_argument("--out", default="sudoku_curves.png")

    p = commands.add_parser("train", help="train an RRN (resumes from --run-dir)")
    p.add_argument("--config", choices=sorted(CONFIGS), default="cpu")
    p.add_argument("--run-dir", default="runs/sudoku")
    p.add_argument("--updates", type=int, help="stop after this many updates (default: config)")
    p.add_argument(
        "--set",
        nargs=2,
        action="append",
        metavar=("FIELD", "VALUE"),
        help="override a config field (parsed by its declared type), e.g. --set remat step",
    )
    p.add_argument(
        "--pool", default="royle17_train_pool", help=f"{data_help} (default: %(default)s)"
    )
    p.add_argument("--valid", default="rrn_valid", help=f"{data_help} (default: %(default)s)")
    p.add_argument("--valid-per-level", type=int, default=30)
    p.add_argument(
        "--valid-givens", type=_givens_levels, help="comma-separated givens levels to validate on"
    )
    p.add_argument("--valid-steps", type=int, help="steps at validation (default: eval_steps)")
    p.add_argument("--eval-every-min", type=float, default=10.0)
    p.add_argument("--checkpoint-every-min", type=float, default=5.0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument(
        "--parallel",
        choices=parallel.MODES,
        default="single",
        help="one device, or data-parallel over all devices with pmap or jit over a mesh",
    )
    p.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m gnkit.demos.sudoku` and `gnkit sudoku`."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            train(args)
        elif args.command == "eval":
            run_eval(args)
        elif args.command == "solve":
            run_solve(args)
        elif args.command == "demo":
            run_demo(args)
        elif args.command == "curves":
            run_curves(args)
        elif args.command == "export":
            info = export(args.source, args.target)
            print(
                f"exported {args.source}/checkpoints/{info['checkpoint']} to {args.target}: "
                f"{info['updates']} updates, {info['puzzles_seen']:,} puzzles, "
                f"{info['cpu_hours']} CPU-hours"
            )
    except training.TrainingStopped as stopped:
        return stopped.exit_code
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
