"""Train and compare named models: the runner behind every model-comparing demo's verbs.

A demo that compares models (a relation network against an MLP, a relational memory core
against an LSTM) describes what differs as a `Comparison` of plain callables, in the idiom of
`optax.GradientTransformation(init, update)`. The runner does the rest, the same way for every
demo:

- `train_model` trains one model in `run_dir/checkpoints/<name>` (resuming from its latest
  checkpoint), logs to `run_dir/metrics_<name>.jsonl`, validates every `eval_every_updates`
  updates and keeps the best-scoring state; it is the one place demos call `gnkit.train.fit`;
- `trained_state` loads a model's best validated state (or its latest) back from a run;
- `comparison_verbs` gives the demo its `train` (each model in turn, then the report) and `eval`
  (the report of a finished run) verbs.

One stop policy: a stop request (Ctrl-C, SIGTERM) ends training after the current update with
`gnkit.train.TrainingStopped`, once the model is saved; the runner lets it propagate, and the
entry point turns it into exit status 130 or 143. Host driver around jitted steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import optax

from gnkit import parallel
from gnkit import train as training
from gnkit.experiments.checkpoints import load_model_state
from gnkit.experiments.demo import Options, Verb
from gnkit.experiments.errors import UsageError, reading_file
from gnkit.experiments.run_dir import RunDir

Batch = Any
Params = Any
Report = Callable[[Any, RunDir, Options, Mapping[str, training.TrainingState], Any], dict]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What one model-comparing demo supplies to the runner; every field a plain callable.

    Attributes:
      load_data: `(config, run_dir, progress) -> data`, everything the models train and are
        tested on (generated, read or cached in the run directory).
      init: `(name, config, data) -> params`, model `name`'s initial parameters from
        `config.seed`.
      loss: `(name, config, data) -> loss_fn`, with `loss_fn(params, batch) -> (loss,
        metrics)` jittable (metrics: a dict of scalars).
      optimizer: `config -> optax.GradientTransformation`.
      make_batch: `(name, config, data) -> batch_of_step`, with `batch_of_step(update) ->
        batch` a pure function of the update index, so a resumed run sees the same batches
        (`same_batches` wraps a `(config, data)` builder whose models all see one order).
      validate: `(name, config, data) -> evaluate`, with `evaluate(params) -> metrics`, whose
        `"score"` chooses the best state.
      report: `(config, run_dir, options, states, data) -> results`, the test table and figures
        of the trained `states` (a dict from model name to `gnkit.train.TrainingState`).
      examples_per_step: `config -> int`, examples per update (for throughput in the log).
      log_every: updates between log lines (at most `config.eval_every_updates`).
      report_best: whether `report` gets each model's best validated state (else its latest).
      model_config: `(name, config, data) -> config`, the config model `name` trains under
        (its own `updates`, `eval_every_updates`, ...) and the other callables get for it;
        None: the run's config for every model.
    """

    load_data: Callable[[Any, RunDir, bool], Any]
    init: Callable[[str, Any, Any], Params]
    loss: Callable[[str, Any, Any], Callable[[Params, Batch], tuple[jax.Array, dict]]]
    optimizer: Callable[[Any], optax.GradientTransformation]
    make_batch: Callable[[str, Any, Any], Callable[[int], Batch]]
    validate: Callable[[str, Any, Any], Callable[[Params], Mapping[str, Any]]]
    report: Report
    examples_per_step: Callable[[Any], int]
    log_every: int = 100
    report_best: bool = True
    model_config: Callable[[str, Any, Any], Any] | None = None

    def config_of(self, name: str, config, data):
        """The config model `name` trains under (`model_config`, else `config`)."""
        return config if self.model_config is None else self.model_config(name, config, data)


def initial_state(comparison: Comparison, name: str, config, data) -> training.TrainingState:
    """Model `name`'s untrained state: parameters and optimiser state at update 0.

    Args:
      comparison: the demo's `Comparison`.
      name: the model's name, one of `config.models`.
      config: the run's config.
      data: what `comparison.load_data` returned.

    Returns:
      A `gnkit.train.TrainingState` at step 0.
    """
    params = comparison.init(name, config, data)
    opt_state = comparison.optimizer(config).init(params)
    return training.TrainingState(params=params, opt_state=opt_state)


def same_batches(
    make_batch: Callable[[Any, Any], Callable[[int], Batch]],
) -> Callable[[str, Any, Any], Callable[[int], Batch]]:
    """A `Comparison.make_batch` from a `(config, data) -> batch_of_step` builder: every model
    of the comparison trains on the same batches, in the same order."""
    return lambda name, config, data: make_batch(config, data)


def train_model(
    comparison: Comparison, name: str, config, data, run_dir: RunDir, options: Options
) -> training.TrainingState:
    """Train model `name` up to `config.updates` in `run_dir/checkpoints/<name>`, resuming.

    Metrics go to `run_dir/metrics_<name>.jsonl`; `comparison.validate` runs every
    `config.eval_every_updates` updates and at the end, and the best-scoring state is kept as
    `best.msgpack`. The step is built by `options.parallel`'s data-parallel strategy.

    Args:
      comparison: the demo's `Comparison`.
      name: the model's name, one of `config.models`.
      config: the run's config (its `updates`, `eval_every_updates` and `seed` are used here).
      data: what `comparison.load_data` returned.
      run_dir: the run directory.
      options: the command's options (`parallel`, `progress`, `should_stop`).

    Returns:
      The final `gnkit.train.TrainingState`.

    Raises:
      gnkit.train.TrainingStopped: after a stop request, once the state is saved.
    """
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(initial_state(comparison, name, config, data), checkpoints)
    strategy = parallel.data_parallel(options.parallel)
    step = strategy.train_step(
        comparison.loss(name, config, data), comparison.optimizer(config), has_aux=True
    )
    batches = comparison.make_batch(name, config, data)
    if options.progress:
        print(f"{name}: training from update {int(state.step)} of {config.updates}", flush=True)
    return training.fit(
        state,
        step,
        lambda update: strategy.shard(batches(update)),
        config.updates,
        examples_per_step=comparison.examples_per_step(config),
        evaluate=comparison.validate(name, config, data),
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=max(1, min(comparison.log_every, config.eval_every_updates)),
        progress=options.progress,
        log_evals=options.verbose,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def trained_state(
    comparison: Comparison, name: str, config, run_dir: RunDir, data, best: bool = True
) -> training.TrainingState:
    """Model `name`'s best validated state in `run_dir` (else its latest), or its latest.

    Args:
      comparison: the demo's `Comparison`.
      name: the model's name.
      config: the run's config.
      run_dir: the run directory.
      data: what `comparison.load_data` returned (for the state's shapes, traced with
        `jax.eval_shape`: nothing is initialised).
      best: `best.msgpack` when there is one (True), or the latest checkpoint (False).

    Returns:
      The `gnkit.train.TrainingState` read back.

    Raises:
      UsageError: there is no checkpoint of the model, or it does not fit the config.
    """
    template = jax.eval_shape(lambda: initial_state(comparison, name, config, data))
    if best:
        return load_model_state(run_dir, name, template)
    path = training.latest_checkpoint(run_dir.path / "checkpoints" / name)
    if path is None:
        raise UsageError(f"--run-dir {run_dir.path}: no checkpoint of model {name}")
    with reading_file(path, f"a checkpoint of model {name} of this config"):
        return training.load_checkpoint(path, template)


def trained_states(comparison: Comparison, config, run_dir: RunDir, data) -> dict:
    """`{name: state}` for every model of `config.models`: its best validated state, or its
    latest without `comparison.report_best`.

    Args:
      comparison: the demo's `Comparison`.
      config: the run's config.
      run_dir: the run directory.
      data: what `comparison.load_data` returned.

    Returns:
      A dict from model name to `gnkit.train.TrainingState`.
    """
    best = comparison.report_best
    return {
        name: trained_state(
            comparison, name, comparison.config_of(name, config, data), run_dir, data, best
        )
        for name in config.models
    }


def eval_records(run_dir: RunDir, name: str, keys: Sequence[str]) -> dict[str, list]:
    """Model `name`'s validation curve: for each of `keys` (`"step"`, `"score"`, a metric), its
    values in the `eval` records of `metrics_<name>.jsonl`, in order (empty lists if none)."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    evals = [record for record in records if record["kind"] == "eval"]
    return {key: [record[key] for record in evals] for key in keys}


def predict_in_chunks(
    answer: Callable[[Params, Batch], jax.Array],
    params: Params,
    select: Callable[[np.ndarray], Batch],
    size: int,
    chunk: int,
    axis: int = 0,
) -> np.ndarray:
    """`answer(params, select(indices))` over indices `0..size-1`, `chunk` at a time.

    The last chunk wraps around to fill `chunk` examples, so one compiled shape serves all, and
    its extra rows are dropped. Host driver.

    Args:
      answer: `(params, batch) -> array`, jitted, with the examples along `axis`.
      params: the model's parameters.
      select: `indices [k] -> batch`, the model input of those examples.
      size: how many examples there are.
      chunk: examples per call (at most `size` are used).
      axis: the example axis of `answer`'s output.

    Returns:
      The answers of all `size` examples, in order, concatenated along `axis`.
    """
    chunk = min(chunk, size)
    outputs = []
    for start in range(0, size, chunk):
        rows = np.arange(start, start + chunk) % size
        answers = np.asarray(answer(params, select(rows)))
        outputs.append(np.take(answers, np.arange(min(chunk, size - start)), axis=axis))
    return np.concatenate(outputs, axis=axis)


def warmup_cosine_adam(
    learning_rate: float, updates: int, clip_norm: float = 1.0
) -> optax.GradientTransformation:
    """Adam with a linear warm-up over a tenth of `updates` (at most 500, at least 1), then
    cosine decay to 5% of `learning_rate` at `updates`; the gradient's global norm clipped at
    `clip_norm` first."""
    warmup = max(1, min(500, updates // 10))
    decay_steps = max(updates, warmup + 1)
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, learning_rate, warmup, decay_steps, learning_rate / 20
    )
    return optax.chain(optax.clip_by_global_norm(clip_norm), optax.adam(schedule))


def comparison_verbs(comparison: Comparison) -> list[Verb]:
    """The `train` and `eval` verbs of a comparison demo.

    `train`: each model of `config.models` in turn (resuming), then `comparison.report` on each
    model's best validated state. A model whose training loss stops being finite
    (`gnkit.train.TrainingDiverged`) stops there, is named on stdout and under `"diverged"` in
    the results, and its best validated state is tested like the others'. `eval`: the same
    report on a finished run.
    """

    def train(config, run_dir: RunDir, options: Options) -> dict:
        data = comparison.load_data(config, run_dir, options.progress)
        diverged = {}
        for name in config.models:
            model_config = comparison.config_of(name, config, data)
            try:
                train_model(comparison, name, model_config, data, run_dir, options)
            except training.TrainingDiverged as error:
                diverged[name] = {"step": error.step, "message": str(error)}
                print(f"{name}: {error}; its best validated state is tested", flush=True)
        states = trained_states(comparison, config, run_dir, data)
        results = comparison.report(config, run_dir, options, states, data)
        if diverged:
            results["diverged"] = diverged
        return results

    def evaluate(config, run_dir: RunDir, options: Options) -> dict:
        data = comparison.load_data(config, run_dir, options.progress)
        states = trained_states(comparison, config, run_dir, data)
        return comparison.report(config, run_dir, options, states, data)

    return [
        Verb("train", train, "train each model (resumes from --run-dir), then test"),
        Verb("eval", evaluate, "test the models of a finished run", run_dir="existing"),
    ]
