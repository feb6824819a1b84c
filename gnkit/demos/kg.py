"""Link prediction on knowledge graphs: TransE, DistMult, ComplEx, RotatE, with an optional
R-GCN encoder, trained and evaluated with filtered MRR and Hits@1/3/10.

`gnkit kg train --data umls --model rotate` trains one model on one graph (`--data`: a shipped
graph, `kinships`, `nations`, `umls`, or a directory of `train.txt`, `valid.txt`, `test.txt`
triple files; `--model`: `transe`, `transe_l2`, `distmult`, `complex`, `rotate`, `rotate_l2`
(PyKEEN's RotatE: the Euclidean norm of the complex difference)), evaluating
validation MRR every `eval_every_epochs` epochs (the best state is kept), then tests the best
state: filtered ranks of every test triple against all entities as head and as tail. It prints
MRR / Hits and draws the learning curve (`curve_<data>_<model>.png`: training loss and
validation MRR by epoch); `--json` holds the test metrics at the top level (`mrr`, `hits@1`,
`hits@3`, `hits@10`). One run directory holds any number of (graph, model) pairs, each in its
own checkpoint folder, all trained with the run's config. `eval` tests a finished pair again.

Two recipes (`training`): `1-n` (every entity scored as tail and as head, cross-entropy, N3
regularisation of DistMult and ComplEx (`penalized`); the default) and `negatives` (uniform
corruption of head or tail, the side drawn per corruption or per triple (`negative_sides`),
RotatE's self-adversarial loss or TransE's margin loss). An epoch is one jitted scan over
device-side batches. Presets: `default` (the 1-N recipe, a few CPU-minutes per graph and model),
`negatives` (RotatE's recipe), `quick` (tests, notebook).
Host driver around jitted epochs.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import experiments
from gnkit import kg as kgraph
from gnkit import train as training
from gnkit.experiments import setting
from gnkit.graph import GraphsTuple
from gnkit.nn import KGEmbedding, RGCNEncoder

ModelName = Literal["transe", "transe_l2", "distmult", "complex", "rotate", "rotate_l2"]
MODEL_NAMES: tuple[str, ...] = tuple(kgraph.SCORERS)


@dataclasses.dataclass(frozen=True)
class KGConfig:
    """Embedding size, recipe, optimiser and evaluation of every (graph, model) of a run."""

    dim: int = setting(100, minimum=1, help="embedding size (complex coordinates: ComplEx, RotatE)")
    training: Literal["1-n", "negatives"] = setting("1-n", help="1-N cross-entropy or negatives")
    loss: Literal["self_adversarial", "margin"] = setting(
        "self_adversarial", help="loss of the negatives recipe"
    )
    num_negatives: int = setting(64, minimum=1, help="corruptions per positive (negatives)")
    negative_sides: Literal["per-negative", "per-triple"] = setting(
        "per-negative", help="side of each corruption drawn per corruption or per triple"
    )
    margin: float = setting(6.0, help="margin of either negatives loss")
    adversarial_temperature: float = setting(1.0, minimum=0.0, help="0: uniform weights")
    regularizer: Literal["n3", "l2", "none"] = setting("n3", help="penalty on the embeddings")
    regularization: float = setting(0.01, minimum=0.0, help="weight of the penalty")
    penalized: Literal["multiplicative", "all"] = setting(
        "multiplicative", help="models the penalty applies to: DistMult and ComplEx, or all"
    )
    label_smoothing: float = setting(0.0, minimum=0.0, help="1-N recipe only")
    init: Literal["xavier_uniform", "normal", "uniform"] = setting("normal")
    init_scale: float = setting(0.1, minimum=0.0, help="std (normal) or half-width (uniform)")
    encoder: Literal["none", "rgcn"] = setting("none", help="R-GCN over the training graph")
    encoder_layers: int = setting(1, minimum=1)
    encoder_bases: int = setting(4, minimum=1, help="basis decomposition of the R-GCN weights")
    batch_size: int = setting(256, minimum=1)
    epochs: int = setting(100, minimum=1)
    learning_rate: float = setting(0.01, minimum=0.0, help="Adam, constant")
    eval_every_epochs: int = setting(10, minimum=1)
    eval_chunk: int = setting(256, minimum=1, help="test triples ranked per step")
    seed: int = 0


CONFIGS = {
    "default": KGConfig(),
    "negatives": KGConfig(
        training="negatives",
        num_negatives=32,
        margin=6.0,
        regularizer="none",
        regularization=0.0,
        init="xavier_uniform",
        learning_rate=0.005,
    ),
    "quick": KGConfig(dim=16, epochs=6, eval_every_epochs=3, batch_size=512),
}

# Filtered test MRR / Hits@10 of ConvE (Dettmers et al. 2018) on the same splits, as listed in
# the README of the paper's repository (TimDettmers/ConvE): a strong published reference.
PUBLISHED = {
    "kinships": {"model": "ConvE", "mrr": 0.83, "hits@10": 0.98},
    "umls": {"model": "ConvE", "mrr": 0.94, "hits@10": 0.99},
    "nations": {"model": "ConvE", "mrr": 0.82, "hits@10": 1.00},
}


def _add_flags(parser) -> None:
    parser.add_argument("--data", default="umls",
                        help="kinships, nations, umls, or a directory of train/valid/test.txt")
    parser.add_argument("--model", default="rotate", choices=MODEL_NAMES)


def load_data(data: str) -> kgraph.KnowledgeGraph:
    """The graph `--data` names; a bad file or directory is a one-line `UsageError`."""
    try:
        return kgraph.load_graph(data)
    except kgraph.TripleFileError as error:
        raise experiments.UsageError(f"--data {error}") from None


def pair_name(data: str, model: str) -> str:
    """The folder and file stem of one (graph, model) in a run directory: `umls_rotate`."""
    return f"{Path(str(data)).name}_{model}"


def encoder_graph(graph: kgraph.KnowledgeGraph) -> GraphsTuple:
    """The training triples as a graph for the R-GCN: edges head -> tail with the relation id,
    and tail -> head with `relation + num_relations` (inverse relations)."""
    heads, relations, tails = np.asarray(graph.train).T
    senders = np.concatenate([heads, tails])
    receivers = np.concatenate([tails, heads])
    edge_relations = np.concatenate([relations, relations + graph.num_relations])
    return GraphsTuple(
        nodes=None,
        edges=jnp.asarray(edge_relations, jnp.int32),
        senders=jnp.asarray(senders, jnp.int32),
        receivers=jnp.asarray(receivers, jnp.int32),
        globals=None,
        n_node=jnp.asarray([graph.num_entities]),
        n_edge=jnp.asarray([len(senders)]),
    )


def build_model(config: KGConfig, model: str, graph: kgraph.KnowledgeGraph) -> KGEmbedding:
    """The `KGEmbedding` of `model` for `graph` (with its R-GCN encoder if configured)."""
    encoder = None
    if config.encoder == "rgcn":
        width = kgraph.get_scorer(model).entity_width(config.dim)
        encoder = RGCNEncoder(
            (width,) * config.encoder_layers,
            2 * graph.num_relations,
            num_bases=config.encoder_bases,
        )
    return KGEmbedding(
        graph.num_entities,
        graph.num_relations,
        config.dim,
        scorer=model,
        initializer=config.init,
        init_scale=config.init_scale,
        encoder=encoder,
    )


#: The scorers N3 was designed for (Lacroix et al. 2018): products of embeddings, whose scores
#: grow with the embeddings' norms. On distance models it is off by default: on Kinships the
#: test MRR of RotatE-L2 was 0.845 without it and 0.714 with N3 0.01, that of RotatE (L1) 0.663
#: and 0.701 (`penalized=all` restores it).
MULTIPLICATIVE = ("distmult", "complex")


def _penalized(config: KGConfig, model: str) -> bool:
    """Whether the configured penalty applies to `model`."""
    if config.regularizer == "none" or not config.regularization:
        return False
    return config.penalized == "all" or model in MULTIPLICATIVE


def batch_loss(config: KGConfig, module: KGEmbedding, num_entities: int, graph_input):
    """`(params, triples [B, 3], weights [B], key) -> loss` of the configured recipe, the
    penalty included. Jittable."""
    scorer = kgraph.get_scorer(module.scorer)

    def loss(params, triples, weights, key):
        entities, relations = module.apply(params, graph_input, method="tables")
        heads, relation, tails = (entities[triples[:, 0]], relations[triples[:, 1]],
                                  entities[triples[:, 2]])
        if config.training == "1-n":
            value = kgraph.one_to_n_loss(
                scorer.score_tails(heads, relation, entities),
                scorer.score_heads(relation, tails, entities),
                triples,
                weights,
                config.label_smoothing,
            )
        else:
            negatives = kgraph.corrupt_uniform(
                key, triples, config.num_negatives, num_entities,
                same_side=config.negative_sides == "per-triple",
            )
            # Corruptions keep the relation: its embedding broadcasts over them (RotatE computes
            # each rotation once per triple, not once per negative).
            negative_scores = scorer.score(
                entities[negatives[..., 0]], relation[:, None], entities[negatives[..., 2]]
            )
            positive_scores = scorer.score(heads, relation, tails)
            if config.loss == "margin":
                value = kgraph.margin_ranking_loss(
                    positive_scores, negative_scores, config.margin, weights
                )
            else:
                value = kgraph.self_adversarial_loss(
                    positive_scores, negative_scores, config.margin,
                    config.adversarial_temperature, weights,
                )
        if _penalized(config, scorer.name):
            factors = [heads, tails] + ([] if scorer.relation_is_phase else [relation])
            value = value + config.regularization * kgraph.penalty(
                factors, config.regularizer, scorer.complex_entities
            )
        return value

    return loss


class Trainer:
    """One (graph, model) pair of a run: the module, its jitted epoch, and evaluation."""

    def __init__(self, config: KGConfig, model: str, graph: kgraph.KnowledgeGraph):
        self.config, self.model, self.graph = config, model, graph
        self.module = build_model(config, model, graph)
        self.graph_input = encoder_graph(graph) if config.encoder == "rgcn" else None
        self.optimizer = optax.adam(config.learning_rate)
        loss = batch_loss(config, self.module, graph.num_entities, self.graph_input)
        self.epoch = kgraph.make_epoch(loss, self.optimizer, graph.train, config.batch_size)
        known = graph.known()
        self.tasks = {
            split: kgraph.ranking_task(getattr(graph, split), known, graph.num_relations,
                                       config.eval_chunk)
            for split in ("valid", "test")
        }

    def initial_state(self) -> training.TrainingState:
        index = jnp.zeros((1,), jnp.int32)
        params = self.module.init(jax.random.key(self.config.seed), index, index, index,
                                  self.graph_input)
        return training.TrainingState(params=params, opt_state=self.optimizer.init(params))

    def train_step(self, params, opt_state, epoch: int):
        """One epoch; its data order is a pure function of the seed and the epoch."""
        key = jax.random.fold_in(jax.random.key(self.config.seed), epoch)
        return self.epoch(params, opt_state, key)

    def evaluate(self, params, split: str) -> dict[str, float]:
        """Filtered MRR, mean rank and Hits@1/3/10 on `split` (`valid` or `test`)."""
        entities, relations = self.module.apply(params, self.graph_input, method="tables")
        return kgraph.evaluate(self.model, entities, relations, self.tasks[split])


def _checkpoints(run_dir: experiments.RunDir, name: str) -> Path:
    return run_dir.checkpoint_dir / name


def fit_pair(trainer: Trainer, run_dir: experiments.RunDir, options: experiments.Options, name):
    """Train in `run_dir/checkpoints/<name>` (resuming), validation MRR every
    `eval_every_epochs` epochs as the score; raises `training.TrainingStopped` on a stop."""
    config = trainer.config
    state = training.resume_or(trainer.initial_state(), _checkpoints(run_dir, name))
    if options.progress:
        print(f"{name}: training from epoch {int(state.step)} of {config.epochs}", flush=True)
    return training.fit(
        state,
        trainer.train_step,
        lambda epoch: epoch,
        config.epochs,
        examples_per_step=len(trainer.graph.train),
        evaluate=lambda params: {"score": trainer.evaluate(params, "valid")["mrr"]},
        eval_every_steps=config.eval_every_epochs,
        checkpoint_dir=_checkpoints(run_dir, name),
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=1,
        progress=options.progress,
        should_stop=options.should_stop,
    )


def learning_curve(run_dir: experiments.RunDir, name: str) -> dict[str, list[float]]:
    """Training loss by epoch and validation MRR by epoch, from the run's metrics. Host."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    curve: dict[str, list[float]] = {"epochs": [], "loss": [], "eval_epochs": [], "valid_mrr": []}
    for record in records:
        if "score" in record:
            curve["eval_epochs"].append(record["step"])
            curve["valid_mrr"].append(record["score"])
        elif "loss" in record:
            curve["epochs"].append(record["step"])
            curve["loss"].append(record["loss"])
    return curve


def _best_state(trainer: Trainer, run_dir: experiments.RunDir, name: str):
    checkpoints = _checkpoints(run_dir, name)
    path = checkpoints / training.BEST_CHECKPOINT
    if not path.exists():
        path = training.latest_checkpoint(checkpoints)
    if path is None:
        raise experiments.UsageError(f"--run-dir {run_dir.path}: no checkpoint of {name}")
    with experiments.reading_file(path, f"a checkpoint of {name} with this config"):
        return training.load_checkpoint(path, trainer.initial_state())


def _time_per_epoch(run_dir: experiments.RunDir, name: str) -> float | None:
    """Median wall seconds between consecutive training epochs with no evaluation (nor the
    first epoch, which compiles) between them."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    gaps = [
        60 * (later["wall_minutes"] - earlier["wall_minutes"])
        for earlier, later in zip(records, records[1:], strict=False)
        if earlier["kind"] == later["kind"] == "train" and later["step"] == earlier["step"] + 1
    ]
    return float(np.median(gaps)) if gaps else None


def _run_cpu_minutes(run_dir: experiments.RunDir, name: str) -> float | None:
    """CPU minutes of the whole training run (evaluations included), from its last record."""
    path = run_dir.path / f"metrics_{name}.jsonl"
    records = training.read_metrics(path) if path.exists() else []
    return round(records[-1]["cpu_minutes"], 2) if records else None


def report_pair(trainer: Trainer, run_dir: experiments.RunDir, options, data: str, name: str):
    """Test metrics of the best-validation state, the table, the figure."""
    state = _best_state(trainer, run_dir, name)
    test = trainer.evaluate(state.params, "test")
    start = time.perf_counter()
    trainer.evaluate(state.params, "test")  # timed once compiled
    eval_seconds = time.perf_counter() - start
    graph_name = Path(str(data)).name
    results: dict[str, Any] = {
        "data": graph_name,
        "model": trainer.model,
        **{key: test[key] for key in ("mrr", "hits@1", "hits@3", "hits@10", "mean_rank")},
        "valid": trainer.evaluate(state.params, "valid"),
        "epoch": int(state.step),
        "test_triples": len(trainer.graph.test),
        "entities": trainer.graph.num_entities,
        "relations": trainer.graph.num_relations,
        "seconds_per_epoch": _time_per_epoch(run_dir, name),
        "test_eval_seconds": round(eval_seconds, 4),
        "cpu_minutes": _run_cpu_minutes(run_dir, name),
        "published": PUBLISHED.get(graph_name),
        "curve": learning_curve(run_dir, name),
    }
    print(format_table(results))
    path = options.plot_path(run_dir, f"curve_{name}.png")
    results["figures"] = {"curve": str(plot_curve(results, path))} if path else {}
    return results


def format_table(results: dict[str, Any]) -> str:
    """The test metrics, and the published ones where known. Host."""
    lines = [
        f"{results['data']}, {results['model']}: filtered ranks of {results['test_triples']} test "
        f"triples as head and tail, best validation state (epoch {results['epoch']})",
        f"{'':<10}{'MRR':>7}{'H@1':>7}{'H@3':>7}{'H@10':>7}",
        f"{'gnkit':<10}{results['mrr']:>7.3f}{results['hits@1']:>7.3f}{results['hits@3']:>7.3f}"
        f"{results['hits@10']:>7.3f}",
    ]
    published = results.get("published")
    if published:
        lines.append(f"{published['model']:<10}{published['mrr']:>7.3f}{'':>14}"
                     f"{published['hits@10']:>7.3f}  (published, Dettmers et al. 2018)")
    return "\n".join(lines)


def plot_curve(results: dict[str, Any], path: Path) -> Path:
    """Training loss and validation MRR against epochs."""
    plt = experiments.pyplot()
    curve = results["curve"]
    figure, loss_axis = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    loss_axis.plot(curve["epochs"], curve["loss"], color="tab:gray", lw=1)
    loss_axis.set_xlabel("epoch")
    loss_axis.set_ylabel("training loss", color="tab:gray")
    mrr_axis = loss_axis.twinx()
    mrr_axis.plot(curve["eval_epochs"], curve["valid_mrr"], "o-", ms=3, color="tab:blue")
    mrr_axis.set_ylabel("validation MRR (filtered)", color="tab:blue")
    mrr_axis.set_ylim(0, 1)
    loss_axis.set_title(f"{results['data']}, {results['model']}: test MRR {results['mrr']:.3f}, "
                        f"Hits@10 {results['hits@10']:.3f}", fontsize=10)
    return experiments.save_figure(figure, path)


def train(config: KGConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `train` verb: train `--model` on `--data` (resuming), then test the best state."""
    if options.parallel != "single":
        raise experiments.UsageError(
            f"--parallel {options.parallel}: the kg demo trains on one device (an epoch is one "
            "jitted scan; these graphs fit any device)"
        )
    data, model = options.flags.data, options.flags.model
    trainer = Trainer(config, model, load_data(data))
    name = pair_name(data, model)
    try:
        fit_pair(trainer, run_dir, options, name)
    except training.TrainingStopped:
        return None
    return report_pair(trainer, run_dir, options, data, name)


def evaluate(config: KGConfig, run_dir: experiments.RunDir, options: experiments.Options):
    """The `eval` verb: test the best state of `--model` on `--data` of a finished run."""
    data, model = options.flags.data, options.flags.model
    trainer = Trainer(config, model, load_data(data))
    return report_pair(trainer, run_dir, options, data, pair_name(data, model))


DEMO = experiments.Demo(
    "kg",
    "Knowledge-graph link prediction: TransE, DistMult, ComplEx, RotatE (and an R-GCN encoder), "
    "filtered MRR and Hits@k.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb("train", train, "train --model on --data (resumes), then test",
                         add_flags=_add_flags),
        experiments.Verb("eval", evaluate, "test a trained --model on --data again",
                         run_dir="existing", add_flags=_add_flags),
    ],
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit kg train|eval ...`; returns the exit status."""
    return experiments.run(DEMO, argv)


if __name__ == "__main__":
    sys.exit(main())
