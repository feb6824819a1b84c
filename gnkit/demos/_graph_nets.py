"""What graph_nets' three demos share: config, padded batches, training, evaluation, CLI.

graph_nets' demo settings: an `EncodeProcessDecode` with latent size 16 and 2-layer MLPs with
LayerNorm, Adam at 1e-3, a loss on the output of every processing step. A config can also clip
the gradient's global norm and decay the learning rate (cosine) to zero by the last step; the
sort demo does (with graph_nets' constant rate and no clipping, a sort run that had solved every
monitored list diverged in its last 100 updates). Batches are padded to the buckets of a
`BucketPolicy`, so a run compiles its train step a handful of times; losses and metrics mask the
padding.

The reports (`train`'s and `eval`'s) use the run's best-validation checkpoint (`best.msgpack`,
the best score on the monitoring graphs, the latest of equal scores) and say which one in
`results.json`. `train` resumes
from the latest checkpoint; Ctrl-C or SIGTERM during training saves the state and exits with
status 130 (SIGINT) or 143 (SIGTERM) after one line naming the step saved. Host driver; the
model, loss and train step are jitted.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import parallel
from gnkit import train as training
from gnkit.batching import (
    BucketPolicy,
    batch_np,
    pad_to_bucket,
    pad_with_graphs,
)
from gnkit.graph import GraphsTuple
from gnkit.nn.encode_process_decode import EncodeProcessDecode

Generate = Callable[[np.random.Generator, int, int, int], tuple[list, list]]


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """Model, data and optimiser settings of one demo run.

    `train_sizes` is the `(min, max)` graph size (nodes, list elements or masses) of training
    graphs; `test_sizes` the size ranges reported at the end, `eval_graphs` graphs each.
    `eval_every_steps` evaluates on `monitor_graphs` graphs of training size during training.
    The optimiser is Adam at `learning_rate`, decayed to zero by `train_steps` when
    `learning_rate_schedule` is 'cosine' (constant when 'constant'), after clipping the
    gradient's global norm to `clip_gradient_norm` (None: no clipping).
    Training batches are padded up a `BucketPolicy` ladder of ratio `bucket_growth` (larger:
    fewer shapes to compile, more padding). `quick_compile` turns XLA's backend optimisation off:
    about half the compile time and slower steps, the better trade for runs of a few steps
    (tests, quick notebooks).
    """

    train_steps: int = 5000
    batch_size: int = 32
    latent_size: int = 16
    num_layers: int = 2
    layer_norm: bool = True
    learning_rate: float = 1e-3
    learning_rate_schedule: str = "constant"
    clip_gradient_norm: float | None = None
    num_processing_steps: int = 10
    eval_processing_steps: int = 10
    train_sizes: tuple[int, int] = (8, 16)
    test_sizes: tuple[tuple[int, int], ...] = ((8, 16), (16, 32))
    eval_graphs: int = 1000
    eval_batch_size: int = 100
    monitor_graphs: int = 200
    eval_every_steps: int = 500
    factorised: bool = True
    bucket_growth: float = 1.2
    quick_compile: bool = False
    seed: int = 0


def tiny_config(size: int, **overrides) -> DemoConfig:
    """A config for tests and smoke runs: 40 steps on graphs of `size` (training and the one
    test range), latent 8, 2 processing steps, a fast compile; `overrides` replace any field.
    Monitoring and test batches share one padded shape, so prediction compiles once."""
    settings = dict(
        train_steps=40,
        batch_size=8,
        latent_size=8,
        num_processing_steps=2,
        eval_processing_steps=2,
        train_sizes=(size, size),
        test_sizes=((size, size),),
        eval_graphs=16,
        eval_batch_size=8,
        monitor_graphs=8,
        eval_every_steps=20,
        quick_compile=True,
    )
    return DemoConfig(**{**settings, **overrides})


_SCHEDULES = ("constant", "cosine")


def make_optimizer(config: DemoConfig) -> optax.GradientTransformation:
    """Adam with `config`'s learning-rate schedule, after global-norm clipping (if set)."""
    if config.learning_rate_schedule not in _SCHEDULES:
        raise ValueError(
            f"learning_rate_schedule must be one of {_SCHEDULES}, "
            f"got {config.learning_rate_schedule!r}"
        )
    learning_rate = config.learning_rate
    if config.learning_rate_schedule == "cosine":
        learning_rate = optax.cosine_decay_schedule(config.learning_rate, config.train_steps)
    adam = optax.adam(learning_rate)
    if config.clip_gradient_norm is None:
        return adam
    return optax.chain(optax.clip_by_global_norm(config.clip_gradient_norm), adam)


def override(config: DemoConfig, pairs: Sequence[tuple[str, str]] | None) -> DemoConfig:
    """`config` with `FIELD VALUE` pairs from the command line applied (JSON values)."""
    fields = {field.name for field in dataclasses.fields(config)}
    changes = {}
    for key, value in pairs or ():
        if key not in fields:
            raise SystemExit(f"unknown config field {key!r}; fields: {', '.join(sorted(fields))}")
        parsed = json.loads(value)
        if isinstance(parsed, list):
            parsed = tuple(tuple(item) if isinstance(item, list) else item for item in parsed)
        changes[key] = parsed
    return dataclasses.replace(config, **changes)


def config_from_json(text: str) -> DemoConfig:
    """The inverse of `json.dumps(dataclasses.asdict(config))`."""
    values = json.loads(text)
    values["train_sizes"] = tuple(values["train_sizes"])
    values["test_sizes"] = tuple(tuple(pair) for pair in values["test_sizes"])
    return DemoConfig(**values)


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
    """
    return BucketPolicy(
        growth=growth,
        min_nodes=batch_size * min_nodes,
        min_edges=max(batch_size * min_edges, 1),
        min_graphs=batch_size + 1,
    )


def pad_pair(
    inputs: list[GraphsTuple], targets: list[GraphsTuple], policy: BucketPolicy
) -> tuple[GraphsTuple, GraphsTuple]:
    """Batch input and target graphs and pad both to the same bucket of `policy`. Host."""
    padded = pad_to_bucket(batch_np(inputs), policy)
    sizes = (len(padded.senders), len(padded.n_node))
    nodes = int(np.sum(padded.n_node))
    return padded, pad_with_graphs(batch_np(targets), nodes, sizes[0], sizes[1])


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `values` `[R]` over the rows where `mask` `[R]` is True (0 if none). Jittable."""
    mask = mask.astype(values.dtype)
    return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


_QUICK_COMPILE = {"xla_backend_optimization_level": 0}


def compiler_options(config: DemoConfig) -> dict | None:
    """XLA options for `jax.jit`: backend optimisation off when `config.quick_compile`."""
    return _QUICK_COMPILE if config.quick_compile else None


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
    num_processing_steps: int,
    options: dict | None = None,
    mode: str = "single",
):
    """A jitted `(params, opt_state, (inputs, targets)) -> (params, opt_state, {"loss"})`.

    `options` are XLA compiler options (see `compiler_options`). With `mode` 'pmap' or 'mesh'
    it is `gnkit.parallel.make_train_step` over every device (batches from `random_batches` in
    the same mode; each device's loss is the masked mean over its own graphs, and the devices'
    losses are averaged with equal weight), compiled with XLA's default options.
    """

    def loss_of(params, inputs, targets):
        return loss_fn(model.apply(params, inputs, num_processing_steps), targets)

    if mode != "single":
        return parallel.make_train_step(
            lambda params, batch: loss_of(params, *batch), optimizer, mode, donate=False
        )

    @functools.partial(jax.jit, compiler_options=options)
    def train_step(params, opt_state, batch):
        inputs, targets = batch
        loss, grads = jax.value_and_grad(loss_of)(params, inputs, targets)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"loss": loss}

    return train_step


def _last_step(model: EncodeProcessDecode, num_processing_steps: int, params, inputs):
    return model.apply(params, inputs, num_processing_steps)[-1]


_PREDICT = {
    False: jax.jit(_last_step, static_argnums=(0, 1)),
    True: jax.jit(_last_step, static_argnums=(0, 1), compiler_options=_QUICK_COMPILE),
}


def make_predict(model: EncodeProcessDecode, config: DemoConfig):
    """A jitted `(params, padded inputs) -> output graph` at `config.eval_processing_steps`.

    Compiled once per model, step count and input shape for the whole process (the model is a
    static argument), so periodic evaluations do not recompile.
    """
    predict = _PREDICT[config.quick_compile]
    return functools.partial(predict, model, config.eval_processing_steps)


def pad_all_to(graphs: list[GraphsTuple], batch_size: int) -> list[tuple[GraphsTuple, int, int]]:
    """Batches of `batch_size` graphs, all padded to one shape (the largest batch's, + 1 node).

    Returns `(padded batch, real nodes, real edges)` per batch. Host.
    """
    batches = [batch_np(graphs[i : i + batch_size]) for i in range(0, len(graphs), batch_size)]
    sizes = [(int(np.sum(b.n_node)), int(np.sum(b.n_edge))) for b in batches]
    n_node = max(nodes for nodes, _ in sizes) + 1
    n_edge = max(edges for _, edges in sizes)
    return [
        (pad_with_graphs(b, n_node, n_edge, batch_size + 1), *size)
        for b, size in zip(batches, sizes, strict=True)
    ]


def predict_graphs(
    predict, params, inputs: list[GraphsTuple], batch_size: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`predict`'s node and edge outputs for `inputs`, concatenated in order (padding dropped)."""
    nodes, edges = [], []
    for padded, real_nodes, real_edges in pad_all_to(inputs, batch_size):
        output = jax.device_get(predict(params, padded))
        if output.nodes is not None:
            nodes.append(np.asarray(output.nodes)[:real_nodes])
        if output.edges is not None:
            edges.append(np.asarray(output.edges)[:real_edges])
    return (
        np.concatenate(nodes) if nodes else None,
        np.concatenate(edges) if edges else None,
    )


def random_batches(
    config: DemoConfig, generate: Generate, policy: BucketPolicy, mode: str = "single"
) -> Callable[[int], tuple[GraphsTuple, GraphsTuple]]:
    """`step -> padded (inputs, targets)`, a pure function of the step (exact resume). Host.

    With `mode` 'pmap' or 'mesh' the graphs are split over every device
    (`gnkit.parallel.device_batches`, whole graphs, balanced, one padded shape) and laid out
    for that mode.
    """

    def make_batch(step: int):
        rng = np.random.default_rng([config.seed, step])
        inputs, targets = generate(rng, config.batch_size, *config.train_sizes)
        if mode == "single":
            return pad_pair(inputs, targets, policy)
        count = jax.local_device_count()
        per_device = zip(
            parallel.device_batches(inputs, count, policy),
            parallel.device_batches(targets, count, policy),
            strict=True,
        )
        return parallel.shard_device_batches(list(per_device), mode)

    return make_batch


def run_training(
    config: DemoConfig,
    model: EncodeProcessDecode,
    example: GraphsTuple,
    loss_fn,
    make_batch,
    evaluate,
    out_dir: Path,
    progress: bool,
    mode: str = "single",
    should_stop=None,
) -> training.TrainState:
    """Train with `gnkit.train.fit` (resuming from `out_dir/checkpoints`); return the last state.

    `mode`: 'single', or data-parallel 'pmap' / 'mesh' over every device (`make_batch` from
    `random_batches` in the same mode). `should_stop` is `fit`'s (e.g. the flag of
    `gnkit.train.stop_on_signals()`); without it a KeyboardInterrupt still stops the run
    cleanly. Raises `gnkit.train.TrainingStopped` once a stopped run is saved."""
    optimizer = make_optimizer(config)
    params = init_params(model, example, config)
    state = training.TrainState(params=params, opt_state=optimizer.init(params))
    state = training.resume_or(state, out_dir / "checkpoints")
    if state.step:
        print(f"resuming {out_dir} at step {int(state.step)}", flush=True)
    return training.fit(
        state,
        make_train_step(
            model, optimizer, loss_fn, config.num_processing_steps, compiler_options(config), mode
        ),
        make_batch,
        config.train_steps,
        examples_per_step=config.batch_size,
        evaluate=evaluate,
        eval_every_steps=config.eval_every_steps,
        checkpoint_dir=out_dir / "checkpoints",
        metrics_path=out_dir / "metrics.jsonl",
        log_every_steps=max(1, min(100, config.train_steps // 10)),
        progress=progress,
        mode=mode,
        should_stop=training.StopRequest() if should_stop is None else should_stop,
    )


_BOOKKEEPING = (
    "kind",
    "step",
    "examples",
    "cpu_minutes",
    "wall_minutes",
    "eval_cpu_minutes",
    "score",
)


def load_report_checkpoint(
    model: EncodeProcessDecode, example: GraphsTuple, config: DemoConfig, out_dir
) -> tuple[Any, dict[str, Any]]:
    """`(params, info)` of the checkpoint the reports use: `out_dir/checkpoints/best.msgpack`
    (best monitored score), else the latest one. `info` names the file and gives its step, its
    score and the monitored metrics logged at that step (`validation`). Host."""
    directory = Path(out_dir) / "checkpoints"
    path = directory / "best.msgpack"
    if not path.exists():
        path = training.latest_checkpoint(directory)
    if path is None:
        raise SystemExit(f"no checkpoint in {directory}; run `train` first")
    params = jax.eval_shape(lambda: model.init(jax.random.PRNGKey(config.seed), example, 1))
    opt_state = jax.eval_shape(make_optimizer(config).init, params)
    template = training.TrainState(params=params, opt_state=opt_state)
    try:
        state = training.load_checkpoint(path, template)
    except training.CheckpointError as error:
        raise SystemExit(str(error)) from None
    step = int(state.step)
    info = {
        "file": path.name,
        "step": step,
        "score": float(state.best_score) if np.isfinite(state.best_score) else None,
        "validation": monitored_at(Path(out_dir) / "metrics.jsonl", step),
    }
    return state.params, info


def monitored_at(metrics_path: Path, step: int) -> dict[str, Any] | None:
    """The monitored metrics of the evaluation logged at `step` (None if there is none)."""
    if not metrics_path.exists():
        return None
    for row in training.read_metrics(metrics_path):
        if row["kind"] == "eval" and row["step"] == step:
            return {key: value for key, value in row.items() if key not in _BOOKKEEPING}
    return None


def prepare_out_dir(out_dir: str | Path, config: DemoConfig) -> Path:
    """Create `out_dir` and record `config` there; refuse a directory of another config."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "config.json"
    if path.exists() and config_from_json(path.read_text()) != config:
        raise SystemExit(f"{out_dir} holds a run with another config; use another --out")
    path.write_text(json.dumps(dataclasses.asdict(config), indent=2))
    return out_dir


def saved_config(out_dir: str | Path) -> DemoConfig:
    path = Path(out_dir) / "config.json"
    if not path.exists():
        raise SystemExit(f"no config.json in {out_dir}; run `train` first")
    return config_from_json(path.read_text())


def earlier_training(out_dir: str | Path) -> dict[str, Any]:
    """`train_time` of an earlier `results.json` in `out_dir` (kept when re-evaluating)."""
    path = Path(out_dir) / "results.json"
    if not path.exists():
        return {}
    earlier = json.loads(path.read_text())
    return {"train_time": earlier["train_time"]} if "train_time" in earlier else {}


def write_results(out_dir: Path, results: dict[str, Any]) -> None:
    """Write `results.json` in `out_dir` and print it."""
    (out_dir / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2), flush=True)


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_training(out_dir: Path, score_key: str, score_label: str) -> None:
    """`training.png`: training loss and the monitored score against the step."""
    rows = training.read_metrics(out_dir / "metrics.jsonl")
    train_rows = [row for row in rows if row["kind"] == "train"]
    eval_rows = [row for row in rows if row["kind"] == "eval" and score_key in row]
    plt = pyplot()
    figure, (loss_axis, score_axis) = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    loss_axis.plot([r["step"] for r in train_rows], [r["loss"] for r in train_rows])
    loss_axis.set(xlabel="step", ylabel="training loss", yscale="log")
    score_axis.plot([r["step"] for r in eval_rows], [r[score_key] for r in eval_rows], marker=".")
    score_axis.set(xlabel="step", ylabel=score_label)
    for axis in (loss_axis, score_axis):
        axis.grid(alpha=0.3)
    figure.savefig(out_dir / "training.png", dpi=110)
    plt.close(figure)


def build_parser(name: str, description: str, configs: dict[str, DemoConfig]):
    """`train` and `eval` subcommands shared by the demos (`--run-dir` is `--out`)."""
    command = name.replace("_", "-")
    parser = argparse.ArgumentParser(
        prog=f"gnkit {command}",
        description=description,
        epilog="Ctrl-C (SIGINT) or SIGTERM during `train` saves the run and exits with status "
        "130 or 143; the same command resumes it exactly.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train (resumes from --out), then evaluate")
    train.add_argument("--config", choices=sorted(configs), default="default")
    train.add_argument("--out", "--run-dir", default=f"runs/{name}", help="run directory")
    train.add_argument("--steps", type=int, help="training steps (default: the config's)")
    train.add_argument("--seed", type=int, help="random seed (default: the config's)")
    train.add_argument(
        "--set",
        nargs=2,
        action="append",
        metavar=("FIELD", "VALUE"),
        help="override a config field with a JSON value, e.g. --set batch_size 16",
    )
    train.add_argument(
        "--parallel",
        choices=parallel.MODES,
        default="single",
        help="one device, or data-parallel over all devices with pmap or jit over a mesh",
    )
    train.add_argument("--no-progress", action="store_true")
    evaluate = commands.add_parser("eval", help="evaluate the run in --out on the test sets")
    evaluate.add_argument("--out", "--run-dir", default=f"runs/{name}", help="run directory")
    return parser


def config_from_args(args: argparse.Namespace, configs: dict[str, DemoConfig]) -> DemoConfig:
    config = override(configs[args.config], args.set)
    if args.steps is not None:
        config = dataclasses.replace(config, train_steps=args.steps)
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)
    return config


def run_stoppable(train: Callable[[Any], Any]) -> int:
    """Run `train(should_stop)` with SIGINT / SIGTERM handlers that ask it to stop; the command's
    exit status: 0, or 130 / 143 once a stopped run is saved (`fit` prints the line naming the
    step). Main thread only (elsewhere no handler is installed)."""
    try:
        with training.stop_on_signals() as stop:
            train(stop)
    except training.TrainingStopped as stopped:
        return stopped.exit_code
    return 0


class Stopwatch:
    """Wall and process CPU seconds since construction."""

    def __init__(self):
        self.wall, self.cpu = time.time(), time.process_time()

    def read(self) -> dict[str, float]:
        return {
            "wall_seconds": round(time.time() - self.wall, 1),
            "cpu_seconds": round(time.process_time() - self.cpu, 1),
        }
