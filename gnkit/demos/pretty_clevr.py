"""Pretty-CLEVR: an RRN answers n-jump questions after about n steps; an RN one jump, an MLP none.

The diagnostic of Palm et al. (2018), on state descriptions (see `gnkit.tasks.pretty_clevr`).
Every object is `[position, one-hot colour, one-hot marker]`; the question is the one-hot anchor
symbol and the one-hot number of jumps, and each object is also told whether it is the anchor
(`anchor_indicator`: its colour or marker is the one named), which the paper's models had to learn
to compute themselves. Three models answer with one of 16 symbols:

- `rrn`: `nn.RecurrentRelationalNetwork` on the fully connected 8-object graph of a scene (edge
  feature: the distance of the two objects), the question embedded into every node; at every
  step the node outputs are summed over the scene and an MLP reads the answer out; the loss is
  the mean over the steps. Trained with `steps` steps (8) and evaluated after each step 1..8.
- `rn`: `nn.RelationNetwork`, one relational step: `g` over the 64 ordered object pairs with
  their distance (the RRN's edge feature) and the question, summed, then `f` (dense layout).
- `mlp`: an MLP over the whole object table (objects in marker order: colours, anchor flags,
  positions, all pairwise distances) and the question.

Training draws questions uniformly with a curriculum: the most jumps asked rises from 0 to 7 over
the first `curriculum` fraction of the updates (`max_jumps`); without it none of the three models
left chance level within a few thousand updates here (one-hot pointers are slow to learn).

`gnkit pretty-clevr train` trains each model of `models` in turn in one run directory
(resumable), evaluates on the test scenes (accuracy per number of jumps; per step for the RRN),
prints the table and draws the paper's Figure 2b (`accuracy.png`) and a test scene with a
question's path and each model's answers (`scene.png`). `eval --run-dir DIR` evaluates a
finished run again. Host driver around jitted steps.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments, parallel
from gnkit import train as training
from gnkit.experiments import setting
from gnkit.graph import GraphsTuple
from gnkit.nn import MLP, RecurrentRelationalNetwork, RelationNetwork
from gnkit.tasks import pretty_clevr as task

ModelName = Literal["rrn", "rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rrn", "rn", "mlp")
_QUESTION_KEYS = ("anchor_is_color", "anchor", "jumps", "answer")
# Palm et al. (2018), Figure 2b, read off the plot: accuracy for 0..7 jumps.
PAPER = {
    "rrn (4 steps)": (1.00, 1.00, 0.99, 0.98, 0.94, 0.86, 0.84, 0.84),
    "rn": (1.00, 0.97, 0.54, 0.34, 0.34, 0.32, 0.27, 0.52),
}


@dataclasses.dataclass(frozen=True)
class PrettyClevrConfig:
    """Data, models and training of one run; every model in `models` gets the same budget."""

    models: tuple[ModelName, ...] = setting(("mlp", "rn", "rrn"), help="models to train, in turn")
    updates: int = setting(8_000, minimum=1, help="optimiser steps per model")
    steps: int = setting(8, minimum=1, help="RRN message-passing steps in training")
    batch_size: int = setting(128, minimum=1, help="questions per update")
    hidden: int = setting(64, minimum=1, help="width of every layer")
    message_layers: int = setting(
        3, minimum=1, help="layers of the RRN message MLP (the last is linear)"
    )
    learning_rate: float = setting(1e-3, minimum=0.0, help="Adam, cosine decay to 5%")
    train_scenes: int = setting(100_000, minimum=1)
    valid_scenes: int = setting(1_000, minimum=1)
    test_scenes: int = setting(1_000, minimum=1)
    monitor_scenes: int = setting(100, minimum=1, help="validation scenes used during training")
    eval_every_updates: int = setting(1_000, minimum=1)
    curriculum: float = setting(
        0.5, minimum=0.0, help="fraction of updates over which the jumps asked rise from 0 to 7"
    )
    augment: bool = True
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")
        if self.monitor_scenes > self.valid_scenes:
            raise ValueError("monitor_scenes must be <= valid_scenes")


# paper: the reference code's sizes and optimiser (hidden 128, message MLP of 4 layers, Adam
# 1e-4, batch 512; it unrolls 8 steps, this preset trains 4, the step count of the paper's
# comparison row), no curriculum; the paper gives no update count, 1,000,000 is a guess at its
# scale (an accelerator's).
CONFIGS = {
    "default": PrettyClevrConfig(),
    "paper": PrettyClevrConfig(
        updates=1_000_000,
        batch_size=512,
        steps=4,
        hidden=128,
        message_layers=4,
        learning_rate=1e-4,
        curriculum=0.0,
    ),
    "tiny": PrettyClevrConfig(
        updates=6,
        steps=3,
        batch_size=16,
        hidden=16,
        train_scenes=40,
        valid_scenes=4,
        test_scenes=4,
        monitor_scenes=2,
        eval_every_updates=3,
    ),
}


def object_features(positions: jax.Array, colors: jax.Array, markers: jax.Array) -> jax.Array:
    """`[position (2), one-hot colour (8), one-hot marker (8)]` per object: `[B, 8, 18]` from
    positions `[B, 8, 2]`, colours and markers `[B, 8]`. Jittable."""
    return jnp.concatenate(
        [
            positions,
            jax.nn.one_hot(colors, task.NUM_OBJECTS, dtype=positions.dtype),
            jax.nn.one_hot(markers, task.NUM_OBJECTS, dtype=positions.dtype),
        ],
        axis=-1,
    )


def question_features(anchor_is_color: jax.Array, anchor: jax.Array, jumps: jax.Array):
    """`[one-hot anchor symbol (16: colours, then markers), one-hot jumps (8)]`: `[B, 24]`.
    Jittable."""
    symbol = jnp.where(anchor_is_color, anchor, task.NUM_OBJECTS + anchor)
    return jnp.concatenate(
        [jax.nn.one_hot(symbol, task.NUM_ANSWERS), jax.nn.one_hot(jumps, task.NUM_JUMPS)], axis=-1
    )


def anchor_indicator(batch: dict[str, jax.Array]) -> jax.Array:
    """1.0 for the object the question names (its colour, or marker, is the anchor), else 0.0:
    `[B, 8]`. Jittable."""
    own = jnp.where(batch["anchor_is_color"][:, None], batch["colors"], batch["markers"])
    return (own == batch["anchor"][:, None]).astype(batch["positions"].dtype)


def scene_edges(num_scenes: int) -> tuple[np.ndarray, np.ndarray]:
    """Senders and receivers of `num_scenes` fully connected 8-object graphs without self-edges,
    sorted by receiver (7 each): int32 `[num_scenes * 56]` each. Host."""
    receivers, senders = np.nonzero(~np.eye(task.NUM_OBJECTS, dtype=bool))
    offsets = np.arange(num_scenes)[:, None] * task.NUM_OBJECTS
    return (
        (senders + offsets).reshape(-1).astype(np.int32),
        (receivers + offsets).reshape(-1).astype(np.int32),
    )


class PrettyRRN(nn.Module):
    """The RRN of the demo. Called with a batch (see `make_batch`) and a static `num_steps`;
    returns answer logits at every step, `[num_steps, B, 16]`. Jittable."""

    hidden: int
    message_layers: int = 3

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int) -> jax.Array:
        objects = object_features(batch["positions"], batch["colors"], batch["markers"])
        num_scenes = objects.shape[0]
        question = question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"])
        question = jnp.broadcast_to(
            question[:, None], (num_scenes, task.NUM_OBJECTS, question.shape[-1])
        )
        nodes = jnp.concatenate([objects, question, anchor_indicator(batch)[..., None]], -1)
        nodes = nodes.reshape(num_scenes * task.NUM_OBJECTS, -1)
        senders, receivers = scene_edges(num_scenes)
        positions = batch["positions"].reshape(-1, 2)
        distances = jnp.linalg.norm(positions[senders] - positions[receivers], axis=-1)
        graph = GraphsTuple(
            nodes=nodes,
            edges=distances[:, None],
            receivers=receivers,
            senders=senders,
            globals=None,
            n_node=np.full(num_scenes, task.NUM_OBJECTS, np.int32),
            n_edge=np.full(num_scenes, task.NUM_OBJECTS * (task.NUM_OBJECTS - 1), np.int32),
        )
        width = self.hidden
        node_outputs = RecurrentRelationalNetwork(
            encoder_features=(width, width),
            message_features=(width,) * self.message_layers,
            update_features=(width,),
            readout_features=(width,),
            receivers_sorted=True,
            fixed_degree=task.NUM_OBJECTS - 1,
            name="rrn",
        )(graph, num_steps)
        per_scene = node_outputs.reshape(num_steps, num_scenes, task.NUM_OBJECTS, width).sum(2)
        return MLP((width, task.NUM_ANSWERS), name="answer")(per_scene)


def pair_distances(positions: jax.Array) -> jax.Array:
    """The distance of every two objects, `[B, 8, 8, 1]`, from positions `[B, 8, 2]`. Jittable."""
    offsets = positions[:, :, None] - positions[:, None]
    return jnp.linalg.norm(offsets, axis=-1, keepdims=True)


class PrettyRN(nn.Module):
    """The relation network of the demo: logits `[1, B, 16]` (one step). Its `g` sees each pair's
    distance, as the RRN's messages do; `g` and `f` are twice `hidden` wide (at width 64 the RN
    stayed at chance beyond 0 jumps). Jittable."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int = 1) -> jax.Array:
        objects = object_features(batch["positions"], batch["colors"], batch["markers"])
        objects = jnp.concatenate([objects, anchor_indicator(batch)[..., None]], -1)
        question = question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"])
        width = 2 * self.hidden
        network = RelationNetwork(
            pair_features=(width,) * 4,
            output_features=(width, width, task.NUM_ANSWERS),
            use_edges=True,
            name="rn",
        )
        pairs = pair_distances(batch["positions"])
        return network.dense(objects, question, pairs=pairs)[None]


class PrettyMLP(nn.Module):
    """The MLP of the demo over the object table in marker order: logits `[1, B, 16]`.
    Jittable."""

    hidden: int

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array], num_steps: int = 1) -> jax.Array:
        order = jnp.argsort(batch["markers"], axis=1)
        positions = jnp.take_along_axis(batch["positions"], order[..., None], axis=1)
        colors = jnp.take_along_axis(batch["colors"], order, axis=1)
        is_anchor = jnp.take_along_axis(anchor_indicator(batch), order, axis=1)
        distances = pair_distances(positions)
        num_scenes = positions.shape[0]
        table = jnp.concatenate(
            [
                jax.nn.one_hot(colors, task.NUM_OBJECTS).reshape(num_scenes, -1),
                is_anchor,
                positions.reshape(num_scenes, -1),
                distances.reshape(num_scenes, -1),
                question_features(batch["anchor_is_color"], batch["anchor"], batch["jumps"]),
            ],
            axis=-1,
        )
        return MLP((self.hidden * 2,) * 4 + (task.NUM_ANSWERS,), name="mlp")(table)[None]


def build_model(name: str, config: PrettyClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rrn`, `rn` or `mlp`)."""
    if name == "rrn":
        return PrettyRRN(hidden=config.hidden, message_layers=config.message_layers)
    models = {"rn": PrettyRN, "mlp": PrettyMLP}
    return models[name](hidden=config.hidden)


def model_steps(name: str, config: PrettyClevrConfig) -> int:
    """The steps model `name` runs: `config.steps` for the RRN, 1 for the others."""
    return config.steps if name == "rrn" else 1


def make_datasets(config: PrettyClevrConfig) -> dict[str, dict[str, np.ndarray]]:
    """Train, validation and test scenes with their questions, from `config.seed`. Host."""
    sizes = {"train": config.train_scenes, "valid": config.valid_scenes, "test": config.test_scenes}
    return {
        split: task.generate(np.random.default_rng([config.seed, index]), sizes[split])
        for index, split in enumerate(sizes)
    }


def question_batch(data: dict[str, np.ndarray], questions: np.ndarray, positions=None):
    """The model input of the given question indices `[B]`: positions `[B, 8, 2]` (the scene's,
    or `positions` if given), colours and markers `[B, 8]`, and the question's fields `[B]`."""
    scene = data["scene"][questions]
    return {
        "positions": data["positions"][scene] if positions is None else positions,
        "colors": data["colors"][scene].astype(np.int32),
        "markers": data["markers"][scene].astype(np.int32),
        **{key: data[key][questions].astype(np.int32) for key in _QUESTION_KEYS},
    }


def max_jumps(config: PrettyClevrConfig, step: int) -> int:
    """The most jumps a training question asks at update `step`: rises linearly from 0 to 7 over
    the first `curriculum` fraction of the updates (always 7 with `curriculum=0`)."""
    ramp = config.curriculum * config.updates
    if step >= ramp:
        return task.NUM_JUMPS - 1
    return int(task.NUM_JUMPS * step / ramp)


def make_batch(config: PrettyClevrConfig, train: dict[str, np.ndarray]) -> Callable[[int], dict]:
    """`step -> batch`: `batch_size` questions drawn uniformly among those asking at most
    `max_jumps(config, step)` jumps, positions augmented (random scale and rotation) unless
    `config.augment` is off. A pure function of the step, so a resumed run sees the same batches.
    Host."""
    num_scenes = len(train["positions"])

    def batch(step: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([config.seed, 1_000, step])
        size = config.batch_size
        questions = task.question_index(
            rng.integers(0, num_scenes, size),
            rng.integers(0, task.NUM_OBJECTS, size),
            rng.integers(0, max_jumps(config, step) + 1, size),
            rng.integers(0, 2, size).astype(bool),
        )
        positions = train["positions"][train["scene"][questions]]
        if config.augment:
            positions = task.augment(rng, positions)
        return question_batch(train, questions, positions)

    return batch


def loss_fn(model: nn.Module, num_steps: int):
    """`(params, batch) -> (loss, metrics)`: cross-entropy in bits, averaged over the steps;
    accuracy of the last step. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch, num_steps)
        answers = batch["answer"]
        per_step = optax.softmax_cross_entropy_with_integer_labels(logits, answers[None])
        accuracy = jnp.mean(jnp.argmax(logits[-1], axis=-1) == answers)
        return jnp.mean(per_step) / jnp.log(2.0), {"accuracy": accuracy}

    return loss


def optimizer(config: PrettyClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 1."""
    warmup = max(1, min(500, config.updates // 10))
    decay_steps = max(config.updates, warmup + 1)
    peak, end = config.learning_rate, config.learning_rate / 20
    schedule = optax.warmup_cosine_decay_schedule(0.0, peak, warmup, decay_steps, end)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


@functools.cache
def answer_fn(name: str, config: PrettyClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answers after each step`, int `[num_steps, B]`, of model
    `name`; one per model and config in a process, so evaluation compiles once."""
    model, num_steps = build_model(name, config), model_steps(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch, num_steps), -1))


def predict(answers_of: Callable, params, data: dict[str, np.ndarray], chunk: int = 1024):
    """The answers of every question of `data` after each step: int `[num_steps, Q]`, from
    `answers_of = answer_fn(...)`. Host driver; the last chunk is padded to `chunk` questions so
    one compiled shape serves all."""
    num_questions = len(data["scene"])
    outputs = []
    for start in range(0, num_questions, chunk):
        questions = np.arange(start, start + chunk) % num_questions
        answers = answers_of(params, question_batch(data, questions))
        outputs.append(np.asarray(answers)[:, : min(chunk, num_questions - start)])
    return np.concatenate(outputs, axis=1)


def accuracy_table(predictions: np.ndarray, data: dict[str, np.ndarray]) -> np.ndarray:
    """Accuracy per step and number of jumps, `[num_steps, 8]`, from `predict`'s output. Host."""
    return task.accuracy_by_jumps(predictions == data["answer"], data["jumps"])


def make_evaluate(name: str, config: PrettyClevrConfig, monitor: dict[str, np.ndarray]):
    """`params -> metrics` for `fit`: accuracy on the monitor scenes at the last step (`score`)
    and per number of jumps."""
    answers_of = answer_fn(name, config)

    def evaluate(params):
        table = accuracy_table(predict(answers_of, params, monitor), monitor)
        return {"score": float(np.nanmean(table[-1])), "accuracy_by_jumps": table[-1].round(4)}

    return evaluate


def subset(data: dict[str, np.ndarray], num_scenes: int) -> dict[str, np.ndarray]:
    """The first `num_scenes` scenes of `data` and their questions. Host."""
    keep = data["scene"] < num_scenes
    scenes = {key: data[key][:num_scenes] for key in ("positions", "colors", "markers")}
    return {**scenes, "scene": data["scene"][keep], **{k: data[k][keep] for k in _QUESTION_KEYS}}


def _init_state(model: nn.Module, config: PrettyClevrConfig, example: dict, num_steps: int):
    params = model.init(jax.random.key(config.seed), example, num_steps)
    return training.TrainingState(params=params, opt_state=optimizer(config).init(params))


def train_model(
    name: str,
    config: PrettyClevrConfig,
    datasets: dict[str, dict[str, np.ndarray]],
    run_dir: experiments.RunDir,
    options: experiments.Options,
) -> training.TrainingState:
    """Train model `name` in `run_dir/checkpoints/<name>` (resuming), with its metrics in
    `run_dir/metrics_<name>.jsonl`. Raises `training.TrainingStopped` after a stop request."""
    model, num_steps = build_model(name, config), model_steps(name, config)
    batches = make_batch(config, datasets["train"])
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(_init_state(model, config, batches(0), num_steps), checkpoints)
    strategy = parallel.data_parallel(options.parallel)
    step = strategy.train_step(loss_fn(model, num_steps), optimizer(config), has_aux=True)
    monitor = subset(datasets["valid"], config.monitor_scenes)
    if options.progress:
        print(f"{name}: training from update {int(state.step)} of {config.updates}", flush=True)
    return training.fit(
        state,
        step,
        lambda index: strategy.shard(batches(index)),
        config.updates,
        examples_per_step=config.batch_size,
        evaluate=make_evaluate(name, config, monitor),
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=max(1, min(100, config.eval_every_updates)),
        progress=options.progress,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def load_trained(name: str, config: PrettyClevrConfig, run_dir: experiments.RunDir, datasets):
    """The best validated state of model `name` in `run_dir` (else its latest checkpoint)."""
    model, num_steps = build_model(name, config), model_steps(name, config)
    example = question_batch(datasets["test"], np.arange(2))
    template = _init_state(model, config, example, num_steps)
    return experiments.load_model_state(run_dir, name, template)


def evaluate_models(config, run_dir, options, states: dict[str, training.TrainingState], datasets):
    """Test accuracy per model (per step for the RRN) and number of jumps; table, figures."""
    test = datasets["test"]
    results: dict[str, Any] = {"test_scenes": config.test_scenes, "models": {}}
    predictions = {}
    for name, state in states.items():
        predictions[name] = predict(answer_fn(name, config), state.params, test)
        table = accuracy_table(predictions[name], test)
        results["models"][name] = {
            "accuracy_by_jumps": table.round(4).tolist(),
            "accuracy": np.nanmean(table, axis=1).round(4).tolist(),
            "updates": int(state.step),
            "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
        }
    results["paper"] = {key: list(values) for key, values in PAPER.items()}
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        figures["accuracy"] = str(plot_accuracy(results, accuracy_path))
    scene_path = options.plot_path(run_dir, "scene.png", main=False)
    if scene_path is not None:
        figures["scene"] = str(plot_scene(test, predictions, scene_path))
    results["figures"] = figures
    return results


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _rows(results: dict[str, Any]) -> list[tuple[str, Sequence[float]]]:
    rows = []
    for name, entry in results["models"].items():
        table = entry["accuracy_by_jumps"]
        if name == "rrn":
            rows += [(f"rrn, {_steps(t + 1)}", row) for t, row in enumerate(table)]
        else:
            rows.append((name, table[0]))
    return rows


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy by number of jumps, one row per model (per step count for the RRN), with
    the paper's rows below. Host."""
    header = f"{'model':<20}" + "".join(f"{jumps:>6}" for jumps in range(task.NUM_JUMPS))
    lines = [f"test accuracy by number of jumps ({results['test_scenes']} scenes)", header]
    for label, row in _rows(results):
        lines.append(f"{label:<20}" + "".join(f"{value:>6.2f}" for value in row))
    for label, row in results["paper"].items():
        lines.append(f"{'paper ' + label:<20}" + "".join(f"{value:>6.2f}" for value in row))
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], path: Path) -> Path:
    """Accuracy vs number of jumps, one curve per model and per RRN step count (Figure 2b)."""
    plt = experiments.pyplot()
    figure, ax = plt.subplots(figsize=(7.6, 4.4))
    jumps = np.arange(task.NUM_JUMPS)
    rrn_rows = results["models"].get("rrn", {}).get("accuracy_by_jumps", [])
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, max(1, len(rrn_rows))))
    for t, row in enumerate(rrn_rows):
        ax.plot(jumps, row, "o-", color=colors[t], ms=3, label=f"RRN, {_steps(t + 1)}")
    styles = {"rn": ("s--", "tab:red", "RN"), "mlp": ("^:", "tab:gray", "MLP")}
    for name, (style, color, label) in styles.items():
        if name in results["models"]:
            ax.plot(jumps, results["models"][name]["accuracy_by_jumps"][0], style, color=color,
                    label=label)
    ax.axhline(1 / 8, color="0.7", lw=0.8, ls="-", label="chance (1 of 8)")
    ax.set_xlabel("jumps")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title("Pretty-CLEVR: accuracy by number of jumps")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.tight_layout()
    return experiments.save_figure(figure, path)


def plot_scene(data, predictions: dict[str, np.ndarray], path: Path, question: int | None = None):
    """One test scene with the path of a question (by default the first 7-jump question) and
    each model's answer (the RRN's after every step)."""
    plt = experiments.pyplot()
    if question is None:
        question = int(np.flatnonzero(data["jumps"] == task.NUM_JUMPS - 1)[0])
    scene = int(data["scene"][question])
    positions, colors, markers = (data[k][scene] for k in ("positions", "colors", "markers"))
    anchor, by_color, jumps = (int(data[k][question]) for k in ("anchor", "anchor_is_color",
                                                                "jumps"))
    start = int(np.flatnonzero((colors if by_color else markers) == anchor)[0])
    path_objects = task.greedy_paths(positions[None])[0, start, : jumps + 1]
    figure, ax = plt.subplots(figsize=(4.8, 5.8), layout="constrained")
    task.draw_scene(ax, positions, colors, markers, path_objects)
    lines = [task.describe_question(bool(by_color), anchor, jumps),
             f"answer: {task.answer_name(int(data['answer'][question]))}"]
    for name, answers in predictions.items():
        said = [task.answer_name(int(a)) for a in answers[:, question]]
        lines.append(f"{name}: {' '.join(said)}" if name == "rrn" else f"{name}: {said[0]}")
    ax.set_title("\n".join(lines), fontsize=7)
    return experiments.save_figure(figure, path)


def train(config: PrettyClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: each model of `config.models` in turn (resuming), then the test table
    and figures of each model's best validated state. Returns the results (also `train.json`);
    a stop request ends it with `training.TrainingStopped` once the model in training is saved."""
    datasets = make_datasets(config)
    for name in config.models:
        train_model(name, config, datasets, run_dir, options)
    states = {name: load_trained(name, config, run_dir, datasets) for name in config.models}
    return evaluate_models(config, run_dir, options, states, datasets)


def evaluate(config: PrettyClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: the test table and figures of a finished run's models (best validated
    states)."""
    datasets = make_datasets(config)
    states = {name: load_trained(name, config, run_dir, datasets) for name in config.models}
    return evaluate_models(config, run_dir, options, states, datasets)


DEMO = experiments.Demo(
    "pretty-clevr",
    "Pretty-CLEVR: RRN (accuracy after 1..8 steps) vs RN vs MLP, by number of reasoning jumps.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train each model (resumes from --run-dir), then test"),
        experiments.Verb("eval", evaluate, "test the models of a finished run", run_dir="existing"),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit pretty-clevr train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


if __name__ == "__main__":
    sys.exit(main())
