"""N-th farthest: a relational memory core reasons across time where an LSTM does not.

The task of Santoro et al. (2018) (see `gnkit.tasks.nth_farthest`): labelled vectors arrive one
per step, with the question "which vector is the n-th farthest from vector m?". Two models
answer it, each a recurrent core over the steps whose final output goes through an MLP
(4 layers of 256, ReLU) to one logit per label:

- `rmc`: `nn.RelationalMemory` (8 slots, 8 heads of size 32, 1 attention block, a 2-layer
  attention MLP, per-unit gates), as the paper;
- `lstm`: `flax.linen.OptimizedLSTMCell` under `flax.linen.RNN`, 512 units, a baseline of similar
  size (1.46 M parameters against the RMC model's 1.33 M).

These are the sizes of the `paper` preset, on the paper's task (8 vectors of 16 dimensions).

Why training stalls at `trivial_accuracy` (25% for 8 vectors): answering `m` itself when
`n = K - 1` is learnt at once; for every other `n` the answer, averaged over `n`, is uniform over
the other labels whatever the distances, so a feature of the distances that does not yet depend
on `n` gets no gradient on average (what `n = 0` asks for, the nearest ranks ask against). Only
distance and `n` learnt together pay, and on the full task both models sit at the plateau for
all the updates a CPU budget buys. `curriculum_updates` breaks the symmetry: training questions
first ask only `n = 0` (the farthest), then one rank nearer per stage (`curriculum_choices`),
until every `n` is asked; the test set always asks every `n`.

The `default` preset fits a CPU budget with a smaller task, 6 vectors of 2 dimensions, the
curriculum (stages of 1,500 updates), batches of 256 sequences, an RMC with one slot per vector
(6 slots, 4 heads of size 16, 0.34 M parameters with its MLP) and a 148-unit LSTM (0.34 M).
With batches of 64 neither model left the `n = 0` plateau of this task in 3,000 updates; with
256 the RMC leaves it after about 800 updates and the LSTM thousands of updates later (see the
README for what was measured).

The loss is the paper's: cross-entropy of the final step's logits against the target label,
Adam, gradient norm clipped; with `final_learning_rate_fraction` below 1 the learning rate is
constant until every `n` is asked, then decays (cosine) to that fraction at the last update.
Training sequences are sampled afresh for every update (a pure function of the seed and the
update, so a resumed run sees the same data); accuracy is measured on one fixed held-out test
set (every `n`), the same for every seed.

`gnkit nth-farthest train` trains each model of `models` in turn in one run directory
(resumable), evaluating test accuracy every `eval_every_updates` updates; it then prints the
final table and draws the learning curves of both (`curves.png`: test accuracy against updates
and against training CPU minutes). `eval --run-dir DIR` tests a finished run again. Presets:
`default` (12,000 updates of 256 sequences per model, Adam 1e-3 decaying to 5e-5 over the
last 4,500, under 30 CPU minutes for both models), `paper` (the paper's task and sizes, batch
1600, Adam 1e-4, no curriculum: for an accelerator), `tiny` (tests). Host driver around jitted
steps.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments, parallel
from gnkit import train as training
from gnkit._varying import varying_like
from gnkit.experiments import setting
from gnkit.nn import MLP, RelationalMemory
from gnkit.tasks import nth_farthest as task

ModelName = Literal["rmc", "lstm"]
MODEL_NAMES: tuple[str, ...] = ("rmc", "lstm")
GateStyle = Literal["unit", "memory", "none"]
TEST_SEED = 20_180_601


def trivial_accuracy(num_objects: int) -> float:
    """Accuracy without any distance computed: `n = K - 1` answered with `m` itself, the
    `K - 1` other labels guessed for other `n`: `1/K + (K-1)/K * 1/(K-1) = 2/K` (0.25 for the
    paper's 8 objects, cross-entropy `(K-1)/K ln(K-1)`, 1.70)."""
    return 2 / num_objects


# Santoro et al. (2018): test accuracy on the N-th farthest task (an LSTM and a DNC stay near 30%).
PAPER = {"rmc": 0.91, "lstm": 0.30}


@dataclasses.dataclass(frozen=True)
class NthFarthestConfig:
    """Models, sizes and training of one run; every model in `models` gets the same updates."""

    models: tuple[ModelName, ...] = setting(("lstm", "rmc"), help="models to train, in turn")
    num_objects: int = setting(task.NUM_OBJECTS, minimum=2, help="vectors per sequence")
    num_features: int = setting(task.NUM_FEATURES, minimum=1, help="dimensions per vector")
    curriculum_updates: int = setting(
        0, minimum=0, help="updates per curriculum stage (0: none, every n from the start)"
    )
    updates: int = setting(3_500, minimum=1, help="optimiser steps per model")
    batch_size: int = setting(64, minimum=1, help="sequences per update")
    learning_rate: float = setting(5e-4, minimum=0.0, help="Adam, constant until decay_start")
    final_learning_rate_fraction: float = setting(
        1.0,
        minimum=0.0,
        help="cosine decay from decay_start to this fraction of learning_rate (1: constant)",
    )
    clip_norm: float = setting(5.0, minimum=0.0, help="gradient global-norm clip")
    mem_slots: int = setting(8, minimum=1, help="RMC memory slots")
    num_heads: int = setting(8, minimum=1, help="RMC attention heads")
    head_size: int = setting(32, minimum=1, help="RMC head size; memory width heads * size")
    num_blocks: int = setting(1, minimum=1, help="RMC attention blocks per step")
    attention_mlp_layers: int = setting(2, minimum=1, help="RMC row-wise MLP layers")
    gate_style: GateStyle = setting("unit", help="RMC gates: per unit, per memory slot, none")
    lstm_units: int = setting(512, minimum=1, help="LSTM baseline width")
    mlp_features: tuple[int, ...] = setting((256,) * 4, minimum=1, help="MLP on the final output")
    test_size: int = setting(4_000, minimum=1, help="held-out test sequences")
    eval_every_updates: int = setting(250, minimum=1)
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if not self.mlp_features:
            raise ValueError("mlp_features must have at least one layer")


CONFIGS = {
    # A smaller task than the paper's (6 vectors of 2 dimensions), a curriculum on n (the
    # farthest first, one rank nearer every 1,500 updates, every n from update 7,500), an RMC
    # with one slot per vector (6 slots, 4 heads of 16: 0.34 M parameters) and an LSTM of the
    # same size (148 units), batches of 256, Adam 1e-3 decaying (cosine) to 5% from update
    # 7,500: under 30 CPU minutes for both. Without the curriculum both stay at the trivial
    # accuracy; with a constant 1e-3 the RMC flattens near 87% (see the README).
    "default": NthFarthestConfig(
        num_objects=6,
        num_features=2,
        curriculum_updates=1_500,
        updates=12_000,
        batch_size=256,
        learning_rate=1e-3,
        final_learning_rate_fraction=0.05,
        mem_slots=6,
        num_heads=4,
        head_size=16,
        lstm_units=148,
        eval_every_updates=500,
    ),
    "paper": NthFarthestConfig(
        updates=1_000_000,
        batch_size=1_600,
        learning_rate=1e-4,
        test_size=10_000,
        eval_every_updates=1_000,
    ),
    "tiny": NthFarthestConfig(
        updates=4,
        batch_size=8,
        mem_slots=2,
        num_heads=2,
        head_size=4,
        lstm_units=8,
        mlp_features=(16,),
        test_size=16,
        eval_every_updates=2,
    ),
}


class NthFarthestModel(nn.Module):
    """A recurrent core over the sequence, then an MLP from its final output to 8 logits.

    Called with inputs `[B, 8, 40]`; returns logits `[B, 8]`. Jittable.
    """

    core: nn.RNNCellBase
    mlp_features: Sequence[int]
    num_objects: int = task.NUM_OBJECTS

    @nn.compact
    def __call__(self, inputs: jax.Array) -> jax.Array:
        carry = self.core.initialize_carry(jax.random.key(0), inputs[:, 0].shape)
        carry = varying_like(carry, inputs)
        outputs = nn.RNN(self.core, name="rnn")(inputs, initial_carry=carry)
        head = MLP(tuple(self.mlp_features) + (self.num_objects,), name="mlp")
        return head(outputs[:, -1])


def build_model(name: str, config: NthFarthestConfig) -> NthFarthestModel:
    """The flax module of model `name` (`rmc` or `lstm`)."""
    if name == "rmc":
        core = RelationalMemory(
            mem_slots=config.mem_slots,
            head_size=config.head_size,
            num_heads=config.num_heads,
            num_blocks=config.num_blocks,
            attention_mlp_layers=config.attention_mlp_layers,
            gate_style=None if config.gate_style == "none" else config.gate_style,
        )
    else:
        core = nn.OptimizedLSTMCell(config.lstm_units)
    return NthFarthestModel(
        core=core, mlp_features=config.mlp_features, num_objects=config.num_objects
    )


def parameter_count(name: str, config: NthFarthestConfig) -> int:
    """How many parameters model `name` has."""
    model = build_model(name, config)
    shapes = jax.eval_shape(model.init, jax.random.key(0), _dummy_inputs(config))
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(shapes))


def _dummy_inputs(config: NthFarthestConfig) -> jax.Array:
    size = task.input_size(config.num_objects, config.num_features)
    return jnp.zeros((1, config.num_objects, size), jnp.float32)


def curriculum_choices(config: NthFarthestConfig, update: int) -> list[int] | None:
    """The values of `n` that training questions at `update` ask, or None for all of them.

    With `curriculum_updates = U > 0` and `K` objects, stage `s = update // U` asks
    `n in {0, ..., s}`: only the farthest at first, one rank nearer per stage, until every `n`
    is asked, from update `U * (K - 1)` on. Host."""
    stages = config.num_objects - 1
    if config.curriculum_updates == 0 or update >= config.curriculum_updates * stages:
        return None
    return list(range(update // config.curriculum_updates + 1))


def make_batch(config: NthFarthestConfig):
    """`update -> (inputs [B, K, F + 3K], targets [B])`: fresh sequences, a pure function of
    the seed and the update, so a resumed run sees the same data; the questions follow
    `curriculum_choices`. Host."""

    def batch(update: int) -> tuple[np.ndarray, np.ndarray]:
        return task.sample(
            np.random.default_rng([config.seed, update]),
            config.batch_size,
            config.num_objects,
            config.num_features,
            n_choices=curriculum_choices(config, update),
        )

    return batch


def held_out_test_set(config: NthFarthestConfig) -> tuple[np.ndarray, np.ndarray]:
    """The fixed held-out test set: `test_size` sequences from `TEST_SEED`, whatever the run's
    seed. Host."""
    return task.held_out_set(TEST_SEED, config.test_size, config.num_objects, config.num_features)


def loss_fn(model: nn.Module):
    """`(params, (inputs, targets)) -> (loss, metrics)`: cross-entropy of the final step's
    logits (the paper's loss), and accuracy. Jittable."""

    def loss(params, batch):
        inputs, targets = batch
        logits = model.apply(params, inputs)
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == targets)
        return jnp.mean(cross_entropy), {"accuracy": accuracy}

    return loss


def decay_start(config: NthFarthestConfig) -> int:
    """The update from which every `n` is asked (`curriculum_updates * (K - 1)`, 0 without a
    curriculum): the learning rate is constant before it and decays after it."""
    return config.curriculum_updates * (config.num_objects - 1)


def learning_rate_schedule(config: NthFarthestConfig) -> optax.Schedule:
    """`update -> learning rate`: `learning_rate` until `decay_start`, then a cosine decay to
    `final_learning_rate_fraction * learning_rate` at `updates` (constant after it)."""
    start = min(decay_start(config), config.updates)
    decay = optax.cosine_decay_schedule(
        config.learning_rate,
        decay_steps=max(1, config.updates - start),
        alpha=config.final_learning_rate_fraction,
    )
    constant = optax.constant_schedule(config.learning_rate)
    return optax.join_schedules([constant, decay], boundaries=[start])


def optimizer(config: NthFarthestConfig) -> optax.GradientTransformation:
    """Adam at `learning_rate_schedule` (a plain constant when `final_learning_rate_fraction`
    is 1), gradient global norm clipped at `clip_norm`."""
    clip = optax.clip_by_global_norm(config.clip_norm)
    if config.final_learning_rate_fraction == 1.0:
        return optax.chain(clip, optax.adam(config.learning_rate))
    return optax.chain(clip, optax.adam(learning_rate_schedule(config)))


@functools.partial(jax.jit, static_argnums=0)
def _answers(model: nn.Module, params, inputs: jax.Array) -> jax.Array:
    return jnp.argmax(model.apply(params, inputs), axis=-1)


def accuracy(model: nn.Module, params, data: tuple[np.ndarray, np.ndarray], chunk: int = 1000):
    """Fraction of `data`'s sequences answered right. Host driver; the last chunk is padded to
    `chunk` sequences so one compiled shape serves all."""
    inputs, targets = data
    size = len(targets)
    chunk = min(chunk, size)
    correct = 0
    for start in range(0, size, chunk):
        rows = np.arange(start, start + chunk) % size
        answers = np.asarray(_answers(model, params, inputs[rows]))[: min(chunk, size - start)]
        correct += int(np.sum(answers == targets[start : start + chunk]))
    return correct / size


def _init_state(model: nn.Module, config: NthFarthestConfig) -> training.TrainingState:
    params = model.init(jax.random.key(config.seed), _dummy_inputs(config))
    return training.TrainingState(params=params, opt_state=optimizer(config).init(params))


def train_model(
    name: str,
    config: NthFarthestConfig,
    test: tuple[np.ndarray, np.ndarray],
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> training.TrainingState:
    """Train model `name` in `run_dir/checkpoints/<name>` (resuming), its metrics in
    `run_dir/metrics_<name>.jsonl`, test accuracy every `eval_every_updates` updates (the
    `score`). Raises `training.TrainingStopped` after a stop request."""
    model = build_model(name, config)
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(_init_state(model, config), checkpoints)
    strategy = parallel.data_parallel(options.parallel)
    step = strategy.train_step(loss_fn(model), optimizer(config), has_aux=True)
    batches = make_batch(config)
    if options.progress:
        print(f"{name}: training from update {int(state.step)} of {config.updates}", flush=True)
    return training.fit(
        state,
        step,
        lambda update: strategy.shard(batches(update)),
        config.updates,
        examples_per_step=config.batch_size,
        evaluate=lambda params: {"score": accuracy(model, params, test)},
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=max(1, min(50, config.eval_every_updates)),
        progress=options.progress,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def load_trained(name: str, config: NthFarthestConfig, run_dir: experiments.RunDir, which: str):
    """Model `name`'s final (`which="final"`, the latest checkpoint) or best-scoring
    (`"best"`) state in `run_dir`."""
    checkpoints = run_dir.path / "checkpoints" / name
    path = checkpoints / training.BEST_CHECKPOINT if which == "best" else None
    if path is None or not path.exists():
        path = training.latest_checkpoint(checkpoints)
    if path is None:
        raise experiments.UsageError(f"--run-dir {run_dir.path}: no checkpoint of model {name}")
    template = _init_state(build_model(name, config), config)
    with experiments.reading_file(path, f"a checkpoint of model {name} of this config"):
        return training.load_checkpoint(path, template)


def learning_curve(run_dir: experiments.RunDir, name: str) -> dict[str, list[float]]:
    """Model `name`'s test accuracy during training: `updates`, `cpu_minutes` (training, not
    counting evaluation) and `accuracy`, one entry per evaluation. Host."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    curve: dict[str, list[float]] = {"updates": [], "cpu_minutes": [], "accuracy": []}
    eval_cpu = 0.0
    for record in records:
        if "score" not in record:
            continue
        eval_cpu += record.get("eval_cpu_minutes", 0.0)
        curve["updates"].append(record["step"])
        curve["cpu_minutes"].append(round(record["cpu_minutes"] - eval_cpu, 3))
        curve["accuracy"].append(record["score"])
    return curve


def evaluate_models(config, run_dir, options, test) -> dict[str, Any]:
    """Test accuracy of each model's final and best state, curves, table and figure."""
    results: dict[str, Any] = {
        "test_size": config.test_size,
        "num_objects": config.num_objects,
        "num_features": config.num_features,
        "models": {},
        "paper": PAPER,
    }
    for name in config.models:
        model = build_model(name, config)
        final = load_trained(name, config, run_dir, "final")
        curve = learning_curve(run_dir, name)
        results["models"][name] = {
            "parameters": parameter_count(name, config),
            "updates": int(final.step),
            "sequences": int(final.step) * config.batch_size,
            "test_accuracy": accuracy(model, final.params, test),
            "best_test_accuracy": max(curve["accuracy"], default=float("nan")),
            "cpu_minutes": round(float(final.cpu_seconds) / 60, 2),
            "training_cpu_minutes": curve["cpu_minutes"][-1] if curve["cpu_minutes"] else None,
            "wall_minutes": round(float(final.wall_seconds) / 60, 2),
            "curve": curve,
        }
    print(format_table(results))
    path = options.plot_path(run_dir, "curves.png")
    results["figures"] = {"curves": str(plot_curves(results, path))} if path else {}
    return results


def format_table(results: dict[str, Any]) -> str:
    """One line per model: parameters, updates, final and best test accuracy, CPU minutes,
    and the paper's number. Host."""
    lines = [
        f"N-th farthest ({results['num_objects']} vectors of {results['num_features']}), test "
        f"accuracy on {results['test_size']} held-out sequences",
        f"{'model':<6}{'params':>11}{'updates':>9}{'final':>8}{'best':>8}{'CPU min':>9}"
        f"{'paper':>7}",
    ]
    for name, entry in results["models"].items():
        lines.append(
            f"{name:<6}{entry['parameters']:>11,}{entry['updates']:>9}"
            f"{entry['test_accuracy']:>8.1%}{entry['best_test_accuracy']:>8.1%}"
            f"{entry['cpu_minutes']:>9.1f}{results['paper'][name]:>7.0%}"
        )
    return "\n".join(lines)


def plot_curves(results: dict[str, Any], path: Path) -> Path:
    """Test accuracy against updates and against training CPU minutes, one curve per model."""
    plt = experiments.pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), sharey=True)
    colors = {"rmc": "tab:blue", "lstm": "tab:orange"}
    labels = {"rmc": "RMC", "lstm": "LSTM"}
    objects = results["num_objects"]
    for name, entry in results["models"].items():
        curve = entry["curve"]
        for ax, x in zip(axes, ("updates", "cpu_minutes"), strict=True):
            ax.plot(
                curve[x],
                curve["accuracy"],
                "o-",
                ms=2.5,
                color=colors[name],
                label=f"{labels[name]} ({entry['parameters'] / 1e6:.2f} M parameters)",
            )
    for ax, xlabel in zip(axes, ("updates", "training CPU minutes"), strict=True):
        ax.axhline(1 / objects, color="0.7", lw=0.8, label=f"chance (1 of {objects})")
        ax.axhline(
            trivial_accuracy(objects),
            color="0.5",
            lw=0.8,
            ls="--",
            label=f"n = {objects - 1} answered (m itself), other n guessed",
        )
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test accuracy")
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=7, loc="upper left")
    figure.suptitle(
        f"N-th farthest, {objects} vectors of {results['num_features']}: relational memory core "
        "vs LSTM",
        fontsize=10,
    )
    figure.tight_layout()
    return experiments.save_figure(figure, path)


def train(config: NthFarthestConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: each model of `config.models` in turn (resuming), then the test table
    and the learning curves. Returns the results (also `train.json`), or None after a stop
    request."""
    test = held_out_test_set(config)
    try:
        for name in config.models:
            train_model(name, config, test, run_dir, options)
    except training.TrainingStopped:
        return None
    return evaluate_models(config, run_dir, options, test)


def evaluate(config: NthFarthestConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: the test table and learning curves of a finished run."""
    return evaluate_models(config, run_dir, options, held_out_test_set(config))


DEMO = experiments.Demo(
    "nth-farthest",
    "N-th farthest: relational memory core vs LSTM, test accuracy and learning curves.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train each model (resumes from --run-dir), then test"),
        experiments.Verb("eval", evaluate, "test the models of a finished run", run_dir="existing"),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit nth-farthest train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


if __name__ == "__main__":
    sys.exit(main())
