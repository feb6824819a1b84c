"""What graph_nets' three demos share: model, padded batches, training, evaluation, verbs.

graph_nets' demo settings: an `EncodeProcessDecode` with latent size 16 and 2-layer MLPs with
LayerNorm, Adam at 1e-3, a loss on the output of every processing step. A config can also clip
the gradient's global norm and decay the learning rate (cosine) to zero by the last update; the
sort demo does (with graph_nets' constant rate and no clipping, a sort run that had solved every
monitored list diverged in its last 100 updates). Batches are padded to the buckets of a
`BucketPolicy`, so a run compiles its train step a handful of times; losses and metrics mask the
padding.

Each demo is a `gnkit.experiments.Demo` with the verbs `train` (resumes from `--run-dir`, then
reports) and `eval` (reports on an earlier run); flags, run directories, `--set`, `--json`, stop
requests (exit 130 / 143) are the framework's. One `gnkit.parallel` strategy (`--parallel`) builds
the train step, lays out the batches and holds the replicas. The reports use the run's
best-validation checkpoint (`best.msgpack`, the best score on the monitoring graphs, the latest
of equal scores) and name it under `checkpoint` in the results. Host driver; the model, loss and
train step are jitted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments
from gnkit import train as training
from gnkit.batching import BucketPolicy
from gnkit.demos.graph_nets.config import DemoConfig
from gnkit.graph import GraphsTuple
from gnkit.nn.encode_process_decode import EncodeProcessDecode
from gnkit.parallel import Strategy, data_parallel, device_batches

Generate = Callable[[np.random.Generator, int, int, int], tuple[list, list]]


def make_optimizer(config: DemoConfig) -> optax.GradientTransformation:
    """Adam with `config`'s learning-rate schedule, after global-norm clipping (if set)."""
    learning_rate = config.learning_rate
    if config.learning_rate_schedule == "cosine":
        learning_rate = optax.cosine_decay_schedule(config.learning_rate, config.updates)
    adam = optax.adam(learning_rate)
    if config.clip_gradient_norm is None:
        return adam
    return optax.chain(optax.clip_by_global_norm(config.clip_gradient_norm), adam)


def make_model(
    config: DemoConfig, edge_output_size: int | None, node_output_size: int | None
) -> EncodeProcessDecode:
    """The demos' `EncodeProcessDecode` (sum aggregation, receiver-sorted batches)."""
    return EncodeProcessDecode(
        edge_output_size=edge_output_size,
        node_output_size=node_output_size,
        latent_size=config.latent_size,
        num_layers=config.num_layers,
        layer_norm=config.layer_norm,
        factorised=config.factorised,
        indices_are_sorted=True,
    )


def bucket_policy(
    batch_size: int, min_nodes: int, min_edges: int, growth: float = 1.2
) -> BucketPolicy:
    """Buckets for batches of `batch_size` graphs, from `min_nodes` and `min_edges` per graph.

    The three budgets climb one ladder together, so `min_edges / min_nodes` should be about the
    data's edges per node.

    Args:
      batch_size: graphs per batch.
      min_nodes: nodes of the smallest graph.
      min_edges: edges of the smallest graph.
      growth: the ladder's ratio.

    Returns:
      The `BucketPolicy`.
    """
    return BucketPolicy(
        growth=growth,
        min_nodes=batch_size * min_nodes,
        min_edges=max(batch_size * min_edges, 1),
        min_graphs=batch_size + 1,
    )


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `values` `[R]` over the rows where `mask` `[R]` is True (0 if none). Jittable."""
    mask = mask.astype(values.dtype)
    return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


# XLA options of `quick_compile`: backend optimisation off.
QUICK_COMPILE = {"xla_backend_optimization_level": 0}


def compiler_options(config: DemoConfig) -> dict | None:
    """XLA options for `jax.jit`: backend optimisation off when `config.quick_compile`."""
    return QUICK_COMPILE if config.quick_compile else None


def init_params(model: EncodeProcessDecode, example: GraphsTuple, config: DemoConfig):
    """Parameters for `model` from one small example graph (they do not depend on its size).

    Jitted: one compile instead of one per initialiser op.
    """
    init = jax.jit(model.init, static_argnums=2, compiler_options=compiler_options(config))
    return init(jax.random.PRNGKey(config.seed), example, 1)


def make_train_step(
    model: EncodeProcessDecode,
    optimizer: optax.GradientTransformation,
    loss_fn: Callable[[list[GraphsTuple], GraphsTuple], jax.Array],
    config: DemoConfig,
    strategy: Strategy,
):
    """`strategy`'s compiled `(params, opt_state, (inputs, targets)) -> (params, opt_state,
    {"loss"})` at `config.steps` processing steps, with `config`'s XLA compiler options.

    Batches come from `random_batches` with the same strategy; over several devices each
    device's loss is the masked mean over its own graphs, and the devices' losses are averaged
    with equal weight. `UsageError` for `quick_compile` under `pmap` (no compiler options).

    Args:
      model: the `EncodeProcessDecode`.
      optimizer: the optax optimiser.
      loss_fn: `(per-step outputs, targets) -> loss`, jittable.
      config: the run's config.
      strategy: the data-parallel strategy.

    Returns:
      The compiled train step.

    Raises:
      UsageError: `quick_compile` under `pmap`.
    """

    def loss_of(params, batch):
        inputs, targets = batch
        return loss_fn(model.apply(params, inputs, config.steps), targets)

    try:
        return strategy.train_step(
            loss_of, optimizer, donate=False, compiler_options=compiler_options(config)
        )
    except ValueError:
        raise experiments.UsageError(
            f"--parallel {strategy.name} with quick_compile=True: {strategy.name} takes no XLA "
            "compiler options; use --parallel mesh, or --set quick_compile=False"
        ) from None


def random_batches(
    config: DemoConfig, generate: Generate, policy: BucketPolicy, strategy: Strategy
) -> Callable[[int], Any]:
    """`step -> (inputs, targets)` on the devices, a pure function of the step (exact resume).

    The graphs are split over `strategy`'s local devices (`gnkit.parallel.device_batches`:
    whole graphs, balanced, one padded shape from `policy`; on one device, the whole batch
    padded to its bucket) and laid out by `strategy.shard_device_batches`. Host.

    Args:
      config: the run's config (seed, batch size, training sizes).
      generate: `(rng, n_graphs, min_size, max_size) -> (inputs, targets)`.
      policy: the padding buckets.
      strategy: the data-parallel strategy.

    Returns:
      `step -> batch` laid out for the strategy.
    """

    def make_batch(step: int):
        rng = np.random.default_rng([config.seed, step])
        inputs, targets = generate(rng, config.batch_size, *config.train_sizes)
        count = strategy.num_local_devices
        per_device = zip(
            device_batches(inputs, count, policy),
            device_batches(targets, count, policy),
            strict=True,
        )
        return strategy.shard_device_batches(list(per_device))

    return make_batch


def initial_state(
    model: EncodeProcessDecode, example: GraphsTuple, config: DemoConfig
) -> training.TrainingState:
    """A fresh `TrainingState`: parameters from `config.seed`, Adam's zero moments."""
    params = init_params(model, example, config)
    return training.TrainingState(params=params, opt_state=make_optimizer(config).init(params))


def run_training(
    config: DemoConfig,
    model: EncodeProcessDecode,
    example: GraphsTuple,
    loss_fn,
    generate: Generate,
    policy: BucketPolicy,
    evaluate,
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> training.TrainingState:
    """Train with `gnkit.train.fit` (resuming from the run's checkpoints) on `options.parallel`'s
    strategy; return the last state. Raises `gnkit.train.TrainingStopped` once a stopped run is
    saved (`options.should_stop`).

    Args:
      config: the run's config.
      model: the `EncodeProcessDecode`.
      example: a small input graph for initialisation.
      loss_fn: `(per-step outputs, targets) -> loss`, jittable.
      generate: the task's generator.
      policy: the padding buckets.
      evaluate: `params -> metrics` with a `score`, on the monitoring graphs.
      run_dir: the run directory.
      options: the command's options.

    Returns:
      The last `gnkit.train.TrainingState`.
    """
    strategy = data_parallel(options.parallel)
    step = make_train_step(model, make_optimizer(config), loss_fn, config, strategy)
    checkpoints = run_dir.checkpoint_dir
    state = training.resume_or(initial_state(model, example, config), checkpoints)
    if state.step:
        print(f"resuming {run_dir.path} at update {int(state.step)}", flush=True)
    return training.fit(
        state,
        step,
        random_batches(config, generate, policy, strategy),
        config.updates,
        examples_per_step=config.batch_size,
        evaluate=evaluate,
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.metrics_path,
        log_every_steps=max(1, min(100, config.updates // 10)),
        progress=options.progress,
        log_evals=options.verbose,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def demo(
    name: str,
    description: str,
    presets: Mapping[str, DemoConfig],
    train,
    evaluate,
    preset_notes: Mapping[str, str],
):
    """The `gnkit.experiments.Demo` of a graph_nets demo: verbs `train` and `eval`.

    Args:
      name: the demo's command name (`gnkit NAME`).
      description: its one-line description.
      presets: its configs by preset name.
      train: the `train` verb's function.
      evaluate: the `eval` verb's function.
      preset_notes: a line per preset for `--help`.

    Returns:
      The `Demo`.
    """
    return experiments.Demo(
        name,
        description,
        presets=presets,
        preset_notes=preset_notes,
        verbs=[
            experiments.Verb("train", train, "train (resumes from --run-dir), then test"),
            experiments.Verb(
                "eval", evaluate, "test the best checkpoint of a run", run_dir="existing"
            ),
        ],
    )
