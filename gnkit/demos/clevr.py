"""CLEVR from state descriptions: a relation network against a non-relational baseline.

The setting of Santoro et al. (2017), section 5.1: the model sees the scene's object table
(3-D position, one-hot colour, shape, material and size per object; `gnkit.tasks.clevr`) and the
question's words, and answers with one of CLEVR's 28 answers. Both models encode the question the
same way (word embedding, then an LSTM; its last state is the question vector):

- `rn`: `nn.RelationNetwork` over every ordered pair of the scene's objects, conditioned on the
  question (dense layout, padding objects masked), then `f` to the answer logits;
- `mlp`: the non-relational baseline, an MLP over the concatenated, zero-padded object table
  (objects in scene order), the object mask and the question vector.

Data: scenes and questions generated with CLEVR's templates (`gnkit clevr generate`), cached in
the run directory as CLEVR's JSON files (`data/<split>/scenes.json`, `questions.json`), or read
from `--set data=DIR` (that layout, or CLEVR's release, `DIR/scenes/CLEVR_<split>_scenes.json`:
the release's `val` is the test split there, and the last `valid_scenes` training scenes
validate). Train, validation and test scenes are disjoint.

`gnkit clevr train` trains each model of `models` in turn in one run directory (resumable),
reports test accuracy overall and per question family (exist, count, compare integer, compare
attribute, query attribute) beside the RN paper's, and draws `accuracy.png`; `eval --run-dir DIR`
tests a finished run again; `generate --scenes N --out DIR` writes a data set. Host driver around
jitted steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import time
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
from gnkit._varying import varying_like
from gnkit.experiments import setting
from gnkit.nn import MLP, RelationNetwork
from gnkit.tasks import clevr as task
from gnkit.tasks.clevr import vocab

ModelName = Literal["rn", "mlp"]
MODEL_NAMES: tuple[str, ...] = ("rn", "mlp")
SPLITS = ("train", "val", "test")
# Santoro et al. (2017): CLEVR from state descriptions, RN test accuracy (no per-family numbers).
PAPER = {
    "rn (state descriptions)": {"overall": 0.964},
}


@dataclasses.dataclass(frozen=True)
class ClevrConfig:
    """Data, models and training of one run; every model in `models` gets the same budget."""

    models: tuple[ModelName, ...] = setting(("rn", "mlp"), help="models to train, in turn")
    updates: int = setting(6_000, minimum=1, help="optimiser steps per model")
    batch_size: int = setting(64, minimum=1, help="questions per update")
    pair_width: int = setting(128, minimum=1, help="width of the RN's 4 pair (g) layers")
    output_width: int = setting(128, minimum=1, help="width of the 2 hidden layers of f")
    mlp_width: int = setting(256, minimum=1, help="width of the baseline's 4 hidden layers")
    embedding: int = setting(32, minimum=1, help="word embedding size")
    lstm: int = setting(128, minimum=1, help="question LSTM units")
    learning_rate: float = setting(1e-3, minimum=0.0, help="Adam, warm-up then cosine decay")
    rename_attributes: bool = setting(
        False, help="train on questions with each attribute's values renamed at random"
    )
    position_scale: float = setting(1.0, help="factor on the objects' 3-D positions")
    normalize_pair_sum: bool = setting(False, help="layer norm on the RN's pair sum before f")
    train_scenes: int = setting(6_000, minimum=1)
    valid_scenes: int = setting(300, minimum=1)
    test_scenes: int = setting(1_000, minimum=1)
    eval_every_updates: int = setting(1_000, minimum=1)
    data: str = setting("", help="a data folder (generated or CLEVR's release); '' generates")
    seed: int = 0

    def validate(self) -> None:
        if not self.models or len(set(self.models)) != len(self.models):
            raise ValueError(f"models must name each of {MODEL_NAMES} at most once")


# paper: the RN paper's state-description model (g: 4 x 512, f: 512, 1024, answers; LSTM 128,
# embeddings 32, Adam 2.5e-4, batch 64) on CLEVR's 70,000 training scenes, for an accelerator.
CONFIGS = {
    "default": ClevrConfig(),
    "full": ClevrConfig(
        updates=500_000,
        pair_width=512,
        output_width=1024,
        learning_rate=2.5e-4,
        train_scenes=70_000,
        valid_scenes=1_000,
        test_scenes=15_000,
        eval_every_updates=10_000,
    ),
    "tiny": ClevrConfig(
        updates=6,
        batch_size=8,
        pair_width=16,
        output_width=16,
        mlp_width=16,
        embedding=8,
        lstm=16,
        train_scenes=12,
        valid_scenes=3,
        test_scenes=3,
        eval_every_updates=3,
    ),
}


class QuestionEncoder(nn.Module):
    """Word ids `[B, L]` (0-padded) and lengths `[B]` -> the LSTM's last state `[B, lstm]`."""

    embedding: int
    lstm: int

    @nn.compact
    def __call__(self, words: jax.Array, length: jax.Array) -> jax.Array:
        embedded = nn.Embed(len(vocab.words()), self.embedding, name="embed")(words)
        cell = nn.OptimizedLSTMCell(self.lstm, name="cell")
        carry = cell.initialize_carry(jax.random.key(0), embedded[:, 0].shape)
        rnn = nn.RNN(cell, return_carry=True, name="lstm")
        (_, hidden), _ = rnn(
            embedded, initial_carry=varying_like(carry, embedded), seq_lengths=length
        )
        return hidden


def scaled_positions(objects: jax.Array, scale: float) -> jax.Array:
    """Objects `[..., 18]` with their 3-D positions (the first 3 features) times `scale`
    (CLEVR's positions span about -3..3; the one-hot attributes are 0 or 1); `objects` itself
    for `scale == 1`."""
    if scale == 1:
        return objects
    return jnp.concatenate([objects[..., :3] * scale, objects[..., 3:]], axis=-1)


class ClevrRN(nn.Module):
    """The relation network: logits `[B, 28]` from a batch (`objects` `[B, 10, 18]`,
    `object_mask` `[B, 10]`, `words` `[B, L]`, `length` `[B]`). Jittable."""

    config: ClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array]) -> jax.Array:
        config = self.config
        question = QuestionEncoder(config.embedding, config.lstm, name="question")(
            batch["words"], batch["length"]
        )
        network = RelationNetwork(
            pair_features=(config.pair_width,) * 4,
            output_features=(config.output_width, config.output_width, len(vocab.answers())),
            normalize_sum=config.normalize_pair_sum,
            name="rn",
        )
        objects = scaled_positions(batch["objects"], config.position_scale)
        return network.dense(objects, question, batch["object_mask"])


class ClevrMLP(nn.Module):
    """The non-relational baseline: an MLP over the padded object table, its mask and the
    question vector; logits `[B, 28]`. Jittable."""

    config: ClevrConfig

    @nn.compact
    def __call__(self, batch: dict[str, jax.Array]) -> jax.Array:
        config = self.config
        question = QuestionEncoder(config.embedding, config.lstm, name="question")(
            batch["words"], batch["length"]
        )
        objects = scaled_positions(batch["objects"], config.position_scale)
        mask = batch["object_mask"]
        table = (objects * mask[..., None]).reshape(objects.shape[0], -1)
        inputs = jnp.concatenate([table, mask.astype(objects.dtype), question], axis=-1)
        widths = (config.mlp_width,) * 4 + (len(vocab.answers()),)
        return MLP(widths, name="mlp")(inputs)


def build_model(name: str, config: ClevrConfig) -> nn.Module:
    """The flax module of model `name` (`rn` or `mlp`)."""
    return {"rn": ClevrRN, "mlp": ClevrMLP}[name](config=config)


def _split_sizes(config: ClevrConfig) -> dict[str, int]:
    return {"train": config.train_scenes, "val": config.valid_scenes, "test": config.test_scenes}


def read_split(scenes_path: Path, questions_path: Path, flag: str | None = None):
    """`(scenes, questions)` from CLEVR's JSON files; an unreadable one is a `UsageError`
    naming it (and `flag`)."""
    with experiments.reading_file(scenes_path, "CLEVR scenes (JSON)", flag):
        scenes = task.read_scenes(scenes_path)
    with experiments.reading_file(questions_path, "CLEVR questions (JSON)", flag):
        return scenes, task.read_questions(questions_path)


def cached_split(folder: Path, split: str, num_scenes: int, seed: int, progress: bool = True):
    """Scenes and questions of a generated split in `folder/<split>` (made on first use, seed
    `seed`, scene indices disjoint across splits). Host."""
    scenes_path, questions_path = task.split_files(folder, split)
    if not questions_path.exists():
        if progress:
            print(f"generating {num_scenes} {split} scenes and their questions", flush=True)
        start = time.perf_counter()
        scenes, questions = task.generate(num_scenes, seed=seed, split=split)
        task.write_split(folder / split, scenes, questions, split)
        if progress:
            seconds = time.perf_counter() - start
            print(f"  {len(questions)} questions in {seconds:.0f} s", flush=True)
        return scenes, questions
    return read_split(scenes_path, questions_path)


def _released_splits(folder: Path, config: ClevrConfig):
    """CLEVR's release: train minus its last `valid_scenes` scenes, those, and `val` as test."""
    loaded = {}
    for split in ("train", "val"):
        scenes_path, questions_path = task.split_files(folder, split)
        loaded[split] = read_split(scenes_path, questions_path, "--set data")
    scenes, questions = loaded["train"]
    cut = len(scenes) - config.valid_scenes
    held_out = {scene["image_index"] for scene in scenes[cut:]}
    return {
        "train": (scenes[:cut], [q for q in questions if q["image_index"] not in held_out]),
        "val": (scenes[cut:], [q for q in questions if q["image_index"] in held_out]),
        "test": loaded["val"],
    }


def load_splits(config: ClevrConfig, run_dir: experiments.RunDir | None, progress: bool = True):
    """`{split: (scenes, questions)}` for train / val / test: from `config.data`, else generated
    into (or read back from) `run_dir/data`. Host."""
    if config.data:
        folder = Path(config.data)
        if (folder / "scenes" / "CLEVR_train_scenes.json").exists():
            return _released_splits(folder, config)
        splits = {}
        for split in SPLITS:
            scenes_path, questions_path = task.split_files(folder, split)
            splits[split] = read_split(scenes_path, questions_path, "--set data")
        return splits
    if run_dir is None:
        raise experiments.UsageError("generated data needs a run directory")
    folder = run_dir.path / "data"
    sizes = _split_sizes(config)
    return {
        split: cached_split(folder, split, sizes[split], config.seed * 1_000 + index, progress)
        for index, split in enumerate(SPLITS)
    }


def encode_splits(splits) -> dict[str, dict[str, np.ndarray]]:
    """`task.encode` of every split. Host."""
    return {split: task.encode(scenes, questions) for split, (scenes, questions) in splits.items()}


def question_batch(data: dict[str, np.ndarray], questions: np.ndarray) -> dict[str, np.ndarray]:
    """The model input of the given question indices `[B]`: their scene's `objects`
    `[B, 10, 18]` and `object_mask` `[B, 10]`, `words` `[B, L]`, `length` and `answer` `[B]`."""
    scene = data["scene"][questions]
    return {
        "objects": data["objects"][scene],
        "object_mask": data["object_mask"][scene],
        "words": data["words"][questions],
        "length": data["length"][questions],
        "answer": data["answer"][questions],
    }


def make_batch(config: ClevrConfig, train: dict[str, np.ndarray]) -> Callable[[int], dict]:
    """`step -> batch` of `batch_size` training questions drawn uniformly, with
    `rename_attributes` each renamed at random (`task.Renaming`); a pure function of the step, so
    a resumed run sees the same batches. Host."""
    num_questions = len(train["answer"])
    renaming = task.Renaming() if config.rename_attributes else None

    def batch(step: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([config.seed, 1_000, step])
        chosen = question_batch(train, rng.integers(0, num_questions, config.batch_size))
        return chosen if renaming is None else renaming.apply(chosen, rng)

    return batch


def loss_fn(model: nn.Module):
    """`(params, batch) -> (loss, metrics)`: cross-entropy in bits and accuracy. Jittable."""

    def loss(params, batch):
        logits = model.apply(params, batch)
        answers = batch["answer"]
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels(logits, answers)
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == answers)
        return jnp.mean(cross_entropy) / jnp.log(2.0), {"accuracy": accuracy}

    return loss


def optimizer(config: ClevrConfig) -> optax.GradientTransformation:
    """Adam with a short warm-up and cosine decay to 5% of `learning_rate`, gradient norm <= 5."""
    warmup = max(1, min(500, config.updates // 10))
    decay_steps = max(config.updates, warmup + 1)
    peak, end = config.learning_rate, config.learning_rate / 20
    schedule = optax.warmup_cosine_decay_schedule(0.0, peak, warmup, decay_steps, end)
    return optax.chain(optax.clip_by_global_norm(5.0), optax.adam(schedule))


@functools.cache
def answer_fn(name: str, config: ClevrConfig) -> Callable[[Any, dict], jax.Array]:
    """The jitted `(params, batch) -> answer ids [B]` of model `name`, one per model and config
    in a process, so evaluation compiles once."""
    model = build_model(name, config)
    return jax.jit(lambda params, batch: jnp.argmax(model.apply(params, batch), -1))


def predict(answers_of: Callable, params, data: dict[str, np.ndarray], chunk: int = 500):
    """The answer id of every question of `data`, int `[Q]`. The last chunk is padded to
    `chunk` questions, so one compiled shape serves all. Host driver."""
    num_questions = len(data["answer"])
    outputs = []
    for start in range(0, num_questions, chunk):
        questions = np.arange(start, start + chunk) % num_questions
        answers = answers_of(params, question_batch(data, questions))
        outputs.append(np.asarray(answers)[: min(chunk, num_questions - start)])
    return np.concatenate(outputs)


def accuracy_by_family(correct: np.ndarray, family: np.ndarray) -> dict[str, float]:
    """Accuracy overall and per question family (`vocab.FAMILIES`; NaN for a family without
    questions) from per-question correctness `[Q]` and family ids `[Q]`. Host."""
    table = {"overall": float(np.mean(correct)) if len(correct) else float("nan")}
    for index, name in enumerate(vocab.FAMILIES):
        chosen = correct[family == index]
        table[name] = float(np.mean(chosen)) if len(chosen) else float("nan")
    return table


def make_evaluate(name: str, config: ClevrConfig, valid: dict[str, np.ndarray]):
    """`params -> metrics` for `fit`: validation accuracy (`score`) and per family."""
    answers_of = answer_fn(name, config)

    def evaluate(params):
        correct = predict(answers_of, params, valid) == valid["answer"]
        table = accuracy_by_family(correct, valid["family"])
        return {"score": table["overall"], **{k: round(v, 4) for k, v in table.items()}}

    return evaluate


def _init_state(model: nn.Module, config: ClevrConfig, example: dict):
    params = model.init(jax.random.key(config.seed), example)
    return training.TrainingState(params=params, opt_state=optimizer(config).init(params))


def train_model(name: str, config: ClevrConfig, data, run_dir, options) -> training.TrainingState:
    """Train model `name` in `run_dir/checkpoints/<name>` (resuming), its metrics in
    `run_dir/metrics_<name>.jsonl`. Raises `training.TrainingStopped` after a stop request."""
    model = build_model(name, config)
    batches = make_batch(config, data["train"])
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(_init_state(model, config, batches(0)), checkpoints)
    strategy = parallel.data_parallel(options.parallel)
    step = strategy.train_step(loss_fn(model), optimizer(config), has_aux=True)
    if options.progress:
        print(f"{name}: training from update {int(state.step)} of {config.updates}", flush=True)
    return training.fit(
        state,
        step,
        lambda index: strategy.shard(batches(index)),
        config.updates,
        examples_per_step=config.batch_size,
        evaluate=make_evaluate(name, config, data["val"]),
        eval_every_steps=config.eval_every_updates,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=max(1, min(100, config.eval_every_updates)),
        progress=options.progress,
        parallel=strategy,
        should_stop=options.should_stop,
    )


def load_trained(name: str, config: ClevrConfig, run_dir: experiments.RunDir, data):
    """The best validated state of model `name` in `run_dir` (else its latest checkpoint)."""
    model = build_model(name, config)
    template = _init_state(model, config, question_batch(data["test"], np.arange(2)))
    return experiments.load_model_state(run_dir, name, template)


def evaluate_models(config, run_dir, options, states: dict[str, training.TrainingState], data):
    """Test accuracy per model, overall and per family; the table and `accuracy.png`."""
    test = data["test"]
    counts = np.bincount(test["family"], minlength=len(vocab.FAMILIES))
    results: dict[str, Any] = {
        "test_questions": int(len(test["answer"])),
        "test_scenes": int(len(test["objects"])),
        "questions_per_family": dict(zip(vocab.FAMILIES, counts.tolist(), strict=True)),
        "models": {},
    }
    for name, state in states.items():
        correct = predict(answer_fn(name, config), state.params, test) == test["answer"]
        table = accuracy_by_family(correct, test["family"])
        results["models"][name] = {
            "accuracy": {key: round(value, 4) for key, value in table.items()},
            "updates": int(state.step),
            "cpu_minutes": round(float(state.cpu_seconds) / 60, 2),
            "wall_minutes": round(float(state.wall_seconds) / 60, 2),
        }
    results["paper"] = PAPER
    print(format_table(results))
    figures = {}
    accuracy_path = options.plot_path(run_dir, "accuracy.png")
    if accuracy_path is not None:
        figures["accuracy"] = str(plot_accuracy(results, accuracy_path))
    results["figures"] = figures
    return results


_COLUMNS = ("overall", *vocab.FAMILIES)


def format_table(results: dict[str, Any]) -> str:
    """Test accuracy overall and per family, one row per model, with the paper's row. Host."""
    header = f"{'model':<26}" + "".join(f"{name:>18}" for name in _COLUMNS)
    lines = [f"test accuracy ({results['test_questions']} questions on "
             f"{results['test_scenes']} scenes)", header]
    for name, entry in results["models"].items():
        cells = "".join(f"{entry['accuracy'][column]:>18.3f}" for column in _COLUMNS)
        lines.append(f"{name:<26}{cells}  ({entry['cpu_minutes']} CPU-min)")
    for label, row in results["paper"].items():
        cells = "".join(
            f"{row[column]:>18.3f}" if column in row else f"{'-':>18}" for column in _COLUMNS
        )
        lines.append(f"{'paper ' + label:<26}{cells}")
    return "\n".join(lines)


def plot_accuracy(results: dict[str, Any], path: Path) -> Path:
    """Grouped bars: test accuracy overall and per family for each model."""
    plt = experiments.pyplot()
    figure, ax = plt.subplots(figsize=(7.6, 3.8), layout="constrained")
    names = list(results["models"])
    width = 0.8 / max(1, len(names))
    positions = np.arange(len(_COLUMNS))
    for i, name in enumerate(names):
        accuracy = results["models"][name]["accuracy"]
        ax.bar(positions + i * width, [accuracy[c] for c in _COLUMNS], width,
               label={"rn": "RN", "mlp": "MLP baseline"}.get(name, name))
    ax.axhline(results["paper"]["rn (state descriptions)"]["overall"], color="0.4", ls="--",
               lw=0.8, label="paper RN, overall")
    ax.set_xticks(positions + 0.4 - width / 2, [c.replace("_", " ") for c in _COLUMNS],
                  fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.set_title("CLEVR from state descriptions", fontsize=9)
    ax.legend(fontsize=7)
    return experiments.save_figure(figure, path)


def train(config: ClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: each model of `config.models` in turn (resuming), then the test table
    and figure of each model's best validated state. Returns the results (also `train.json`)."""
    data = encode_splits(load_splits(config, run_dir, options.progress))
    for name in config.models:
        train_model(name, config, data, run_dir, options)
    states = {name: load_trained(name, config, run_dir, data) for name in config.models}
    return evaluate_models(config, run_dir, options, states, data)


def evaluate(config: ClevrConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: the test table and figure of a finished run's models."""
    data = encode_splits(load_splits(config, run_dir, options.progress))
    states = {name: load_trained(name, config, run_dir, data) for name in config.models}
    return evaluate_models(config, run_dir, options, states, data)


def _generate_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenes", type=experiments.at_least(1), required=True,
                        help="number of scenes")
    parser.add_argument("--out", required=True, help="folder for scenes.json and questions.json")
    parser.add_argument("--seed", dest="generator_seed", type=int, default=0,
                        help="random seed of the scenes and questions")
    parser.add_argument("--split", default="new", help="split name written into the files")


def generate(config, run_dir, options: experiments.Options) -> dict[str, Any]:
    """The `generate` verb: `--scenes N` scenes and their questions into `--out DIR`
    (`scenes.json`, `questions.json`, CLEVR's formats)."""
    flags = options.flags
    out = Path(flags.out)
    experiments.check_writable(out, "--out", directory=True)
    start = time.perf_counter()
    scenes, questions = task.generate(flags.scenes, seed=flags.generator_seed, split=flags.split)
    task.write_split(out, scenes, questions, flags.split)
    families = np.bincount([vocab.FAMILIES.index(vocab.family(q["program"])) for q in questions],
                           minlength=len(vocab.FAMILIES))
    results = {
        "scenes": len(scenes),
        "questions": len(questions),
        "questions_per_family": dict(zip(vocab.FAMILIES, families.tolist(), strict=True)),
        "seconds": round(time.perf_counter() - start, 1),
        "files": [str(out / "scenes.json"), str(out / "questions.json")],
    }
    print(f"{len(scenes)} scenes, {len(questions)} questions -> {out} "
          f"({results['seconds']} s)")
    return results


DEMO = experiments.Demo(
    "clevr",
    "CLEVR from state descriptions: relation network vs an MLP, accuracy per question family.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train each model (resumes from --run-dir), then test"),
        experiments.Verb("eval", evaluate, "test the models of a finished run", run_dir="existing"),
        experiments.Verb("generate", generate, "write scenes.json and questions.json",
                         run_dir=None, add_flags=_generate_flags, configured=False),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit clevr train|eval|generate ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


if __name__ == "__main__":
    sys.exit(main())
