"""The training recipe: loss, batches and the `train` verb on one data-parallel strategy. Host
driver around a jitted step."""

from __future__ import annotations

import dataclasses
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments, parallel
from gnkit import train as training
from gnkit.demos.sudoku.config import SudokuConfig, init_state, make_optimizer
from gnkit.demos.sudoku.data import load_data, validation_slice
from gnkit.demos.sudoku.evaluation import make_evaluate
from gnkit.demos.sudoku.model_files import final_validation, load_model
from gnkit.tasks import sudoku


def _batch_loss(model, params, quizzes, solutions, num_steps: int):
    """Mean cross-entropy over cells and all `num_steps` steps (as the paper), and the last
    step's puzzle and cell accuracy; `quizzes`, `solutions` int `[B, 81]`. Jittable."""
    logits = model.apply(params, quizzes, num_steps)
    loss = jnp.mean(sudoku.cell_loss(logits, solutions))
    solved, cell_accuracy = sudoku.step_accuracy(logits[-1:], quizzes, solutions)
    return loss, {"solved": jnp.mean(solved), "cells": jnp.mean(cell_accuracy)}


def make_train_step(config: SudokuConfig, strategy: parallel.Strategy | None = None):
    """`(params, opt_state, (quizzes, solutions)) -> (params, opt_state, metrics)`, compiled by
    `strategy` (default: one device). Each device takes an equal share of the batch (from
    `make_batches` with the same strategy) and the step equals a single-device step on the
    whole batch. Buffers are not donated, so an interrupt never finds the last parameters
    deleted."""
    strategy = strategy or parallel.data_parallel("single")
    model = config.model()

    def loss_fn(params, batch):
        return _batch_loss(model, params, *batch, config.steps)

    return strategy.train_step(loss_fn, make_optimizer(config), has_aux=True, donate=False)


def make_device_train_step(config: SudokuConfig, pool: tuple[np.ndarray, np.ndarray]):
    """`(params, opt_state, update) -> (params, opt_state, metrics)` on one device, making its
    batch inside the jitted step (`sudoku.device_puzzles`, with `config.symmetries`) from `pool`,
    which is copied to the device once. The host sends only the update number (int32 scalar,
    `make_device_batches`): the PRNG key is `fold_in(PRNGKey(seed), update)` and the
    curriculum's fewest givens `config.min_givens(update)`, both computed on the device, so a
    run resumes exactly. Buffers are not donated (as in `make_train_step`)."""
    model = config.model()
    optimizer = make_optimizer(config)
    pool_quizzes, pool_solutions = (jnp.asarray(part, jnp.int8) for part in pool)

    def loss_fn(params, quizzes, solutions):
        return _batch_loss(model, params, quizzes, solutions, config.steps)

    @jax.jit
    def step(params, opt_state, update, pool_quizzes, pool_solutions):
        key = jax.random.fold_in(jax.random.PRNGKey(config.seed), update)
        quizzes, solutions = sudoku.device_puzzles(
            key,
            pool_quizzes,
            pool_solutions,
            config.batch_size,
            config.min_givens(update),
            config.symmetries,
        )
        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
        (loss, metrics), grads = grad_fn(params, quizzes, solutions)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"loss": loss, **metrics}

    def train_step(params, opt_state, update):
        return step(params, opt_state, update, pool_quizzes, pool_solutions)

    return train_step


def make_device_batches(config: SudokuConfig):
    """`update -> update` as an int32 scalar: all `make_device_train_step` needs from the host."""
    del config
    return lambda update: np.int32(update)


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


def initial_state(config: SudokuConfig, init_from: str | None) -> training.TrainingState:
    """A fresh state for `config`, its parameters taken from the model `init_from` if given.

    `init_from` is anything `load_model` reads ('pretrained', an export, a run). Its parameters
    must have the shapes of `config`'s model (a `UsageError` naming `--init-from` otherwise); the
    optimiser state starts fresh, so `config`'s schedule (warmup, learning rate) applies anew.
    """
    state = init_state(config)
    if init_from is None:
        return state
    _, params, _ = load_model(init_from, "--init-from")
    want = jax.tree_util.tree_structure(state.params)
    got = jax.tree_util.tree_structure(params)
    shapes_differ = want != got or any(
        np.shape(a) != np.shape(b)
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(state.params), strict=True)
    )
    if shapes_differ:
        raise experiments.UsageError(
            f"--init-from {init_from}: its parameters do not fit this config's model "
            "(hidden_size, embed_size, *_layers and cell must match)"
        )
    params = jax.tree.map(jnp.asarray, params)
    return state.replace(params=params, opt_state=make_optimizer(config).init(params))


def train(config: SudokuConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: resumes from the run directory if it holds checkpoints.

    The flags and data are checked before anything is written. After a stop request `fit` saves
    the state and raises `training.TrainingStopped` (the entry point exits 130 or 143). With
    `--budget-min M` the run also stops once M minutes of wall time have passed in this
    command, saves, validates and returns like a finished run. The verb returns the updates
    done and the final validation metrics.
    """
    flags = options.flags
    pool = load_data(flags.pool, "--pool")
    valid = validation_data(flags)
    strategy = parallel.data_parallel(options.parallel)
    check_batch_splits(config, strategy)
    if config.data == "device" and strategy.num_local_devices != 1:
        raise experiments.UsageError(
            f"--parallel {strategy.name}: data=device trains on one device; use --parallel single"
        )
    state = training.resume_or(initial_state(config, flags.init_from), run_dir.checkpoint_dir)
    if state.step:
        print(f"resuming {run_dir.path} at update {int(state.step)}", flush=True)
    print(
        f"config {options.preset or 'of the run'}: {json.dumps(dataclasses.asdict(config))}\n"
        f"pool {len(pool[0])} puzzles, validation {len(valid[0])} puzzles, "
        f"{strategy.name} on {strategy.num_local_devices} device(s)",
        flush=True,
    )
    if config.data == "device":
        step, batches = make_device_train_step(config, pool), make_device_batches(config)
    else:
        step, batches = make_train_step(config, strategy), make_batches(config, pool, strategy)
    evaluate = make_evaluate(config, valid, flags.valid_steps or config.eval_steps)
    deadline = None if flags.budget_min is None else time.time() + flags.budget_min * 60
    try:
        state = training.fit(
            state,
            step,
            batches,
            flags.updates or config.updates,
            examples_per_step=config.batch_size,
            evaluate=evaluate,
            eval_every_s=flags.eval_every_min * 60,
            checkpoint_dir=run_dir.checkpoint_dir,
            checkpoint_every_s=flags.checkpoint_every_min * 60,
            metrics_path=run_dir.metrics_path,
            log_every_steps=flags.log_every,
            progress=options.progress,
            log_evals=options.verbose,
            parallel=strategy,
            should_stop=_stop_or_past(options.should_stop, deadline, flags.budget_min),
        )
    except training.TrainingStopped as stopped:
        if options.should_stop():  # a signal: keep its exit status
            signal = getattr(options.should_stop, "signal_number", None)
            raise training.TrainingStopped(stopped.step, stopped.checkpoint, signal) from None
        if not _past(deadline):
            raise
        print(f"--budget-min {flags.budget_min:g} reached: validating", flush=True)
        state = validate_saved_state(run_dir, state, config, evaluate)
    return {
        "updates": int(state.step),
        "puzzles_seen": int(state.step) * config.batch_size,
        "cpu_hours": round(float(state.cpu_seconds) / 3600, 3),
        "wall_hours": round(float(state.wall_seconds) / 3600, 3),
        "validation": final_validation(run_dir.path, int(state.step)),
    }


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.time() >= deadline


class _StopOrBudget:
    """`should_stop` that is also true once `deadline` (a `time.time()`) has passed; `fit` reads
    `signal_number` and `reason` from it for its stop message."""

    def __init__(self, should_stop, deadline: float, minutes: float):
        self._should_stop = should_stop
        self._deadline = deadline
        self._minutes = minutes

    def __call__(self) -> bool:
        return self._should_stop() or _past(self._deadline)

    @property
    def signal_number(self) -> int | None:
        return getattr(self._should_stop, "signal_number", None)

    @property
    def reason(self) -> str | None:
        past = _past(self._deadline) and not self._should_stop()
        return f"--budget-min {self._minutes:g}" if past else None


def _stop_or_past(should_stop, deadline: float | None, minutes: float | None = None):
    """`should_stop` itself without a deadline (`fit` then reads its signal), else one that is
    also true once `deadline` has passed, `minutes` after the start."""
    if deadline is None:
        return should_stop
    return _StopOrBudget(should_stop, deadline, minutes)


def validate_saved_state(
    run_dir: experiments.RunDir, template: training.TrainingState, config: SudokuConfig, evaluate
) -> training.TrainingState:
    """Validate the run's newest checkpoint (saved by a stopped `fit`) as `fit` does at its end:
    an eval record in `metrics.jsonl` and `best.msgpack` if the score is the best. Host.

    Args:
      run_dir: the run's directory (its checkpoints and `metrics.jsonl`).
      template: a `TrainingState` of the right structure, to restore into.
      config: the run's config (its `batch_size` goes into the log record).
      evaluate: `params -> results dict` with a `"score"` (higher is better).

    Returns:
      The restored state, its `best_score` raised when this score is the best.
    """
    state = training.resume_or(template, run_dir.checkpoint_dir)
    results = dict(evaluate(state.params))
    with training.MetricsWriter(run_dir.metrics_path, int(state.step), config.batch_size) as log:
        log.write("eval", state, results)
    if results["score"] >= state.best_score:
        state = state.replace(best_score=float(results["score"]))
        training.save_checkpoint(run_dir.checkpoint_dir, state, training.BEST_CHECKPOINT)
        training.save_checkpoint(run_dir.checkpoint_dir, state)
    return state
