"""The training recipe: loss, batches and the `train` verb on one data-parallel strategy. Host
driver around a jitted step."""

from __future__ import annotations

import dataclasses
import json

import jax.numpy as jnp
import numpy as np

from gnkit import experiments, parallel
from gnkit import train as training
from gnkit.demos.sudoku.config import SudokuConfig, init_state, make_optimizer
from gnkit.demos.sudoku.data import load_data, validation_slice
from gnkit.demos.sudoku.evaluation import make_evaluate
from gnkit.demos.sudoku.model_files import final_validation
from gnkit.tasks import sudoku


def make_train_step(config: SudokuConfig, strategy: parallel.Strategy | None = None):
    """`(params, opt_state, (quizzes, solutions)) -> (params, opt_state, metrics)`, compiled by
    `strategy` (default: one device). Each device takes an equal share of the batch (from
    `make_batches` with the same strategy) and the step equals a single-device step on the
    whole batch. Buffers are not donated, so an interrupt never finds the last parameters
    deleted."""
    strategy = strategy or parallel.data_parallel("single")
    model = config.model()

    def loss_fn(params, batch):
        quizzes, solutions = batch
        logits = model.apply(params, quizzes, config.steps)
        loss = jnp.mean(sudoku.cell_loss(logits, solutions))
        solved, cell_accuracy = sudoku.step_accuracy(logits[-1:], quizzes, solutions)
        return loss, {"solved": jnp.mean(solved), "cells": jnp.mean(cell_accuracy)}

    return strategy.train_step(loss_fn, make_optimizer(config), has_aux=True, donate=False)


def make_batches(
    config: SudokuConfig,
    pool: tuple[np.ndarray, np.ndarray],
    strategy: parallel.Strategy | None = None,
):
    """`update -> (quizzes, solutions)` int32 `[B, 81]` each, laid out over the devices by
    `strategy` (default: one device). A pure function of the update number (exact resume)."""
    strategy = strategy or parallel.data_parallel("single")

    def make_batch(update: int):
        rng = np.random.default_rng([config.seed, update])
        quizzes, solutions = sudoku.sample_puzzles(
            rng, pool[0], pool[1], config.batch_size, config.givens_range(update)
        )
        return strategy.shard((quizzes.astype(np.int32), solutions.astype(np.int32)))

    return make_batch


def check_batch_splits(config: SudokuConfig, strategy: parallel.Strategy) -> None:
    """A `UsageError` unless `batch_size` splits evenly over the strategy's local devices."""
    devices = strategy.num_local_devices
    if config.batch_size % devices:
        raise experiments.UsageError(
            f"--parallel {strategy.name}: batch_size {config.batch_size} does not split over "
            f"{devices} devices; pass --set batch_size=N with N a multiple of {devices}"
        )


def validation_data(flags) -> tuple[np.ndarray, np.ndarray]:
    """`--valid` cut to `--valid-per-level` puzzles of each level of `--valid-givens`."""
    valid = load_data(flags.valid, "--valid")
    valid = validation_slice(valid, flags.valid_per_level, flags.valid_givens)
    if not len(valid[0]):
        levels = ",".join(map(str, flags.valid_givens))
        raise experiments.UsageError(
            f"--valid-givens {levels}: no puzzles of these givens in {flags.valid}"
        )
    return valid


def train(config: SudokuConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: resumes from the run directory if it holds checkpoints.

    The flags and data are checked before anything is written. After a stop request `fit` saves
    the state and raises `training.TrainingStopped` (the entry point exits 130 or 143); else the
    verb returns the updates done and the final validation metrics.
    """
    flags = options.flags
    pool = load_data(flags.pool, "--pool")
    valid = validation_data(flags)
    strategy = parallel.data_parallel(options.parallel)
    check_batch_splits(config, strategy)
    state = training.resume_or(init_state(config), run_dir.checkpoint_dir)
    if state.step:
        print(f"resuming {run_dir.path} at update {int(state.step)}", flush=True)
    print(
        f"config {options.preset}: {json.dumps(dataclasses.asdict(config))}\n"
        f"pool {len(pool[0])} puzzles, validation {len(valid[0])} puzzles, "
        f"{strategy.name} on {strategy.num_local_devices} device(s)",
        flush=True,
    )
    state = training.fit(
        state,
        make_train_step(config, strategy),
        make_batches(config, pool, strategy),
        flags.updates or config.updates,
        examples_per_step=config.batch_size,
        evaluate=make_evaluate(config, valid, flags.valid_steps or config.eval_steps),
        eval_every_s=flags.eval_every_min * 60,
        checkpoint_dir=run_dir.checkpoint_dir,
        checkpoint_every_s=flags.checkpoint_every_min * 60,
        metrics_path=run_dir.metrics_path,
        log_every_steps=flags.log_every,
        progress=options.progress,
        parallel=strategy,
        should_stop=options.should_stop,
    )
    return {
        "updates": int(state.step),
        "puzzles_seen": int(state.step) * config.batch_size,
        "cpu_hours": round(float(state.cpu_seconds) / 3600, 3),
        "validation": final_validation(run_dir.path, int(state.step)),
    }
