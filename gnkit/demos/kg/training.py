"""How a (graph, model) pair of the knowledge-graph demo trains: the recipe's loss, the jitted
epoch, filtered evaluation, and the fit into the run directory. Host driver around jitted
epochs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

from gnkit import experiments
from gnkit import kg as kgraph
from gnkit import train as training
from gnkit.demos.kg.config import KGConfig
from gnkit.demos.kg.data import encoder_graph
from gnkit.demos.kg.models import build_model
from gnkit.graph import GraphsTuple
from gnkit.nn import KGEmbedding

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
    penalty included. Jittable.

    Args:
      config: the run's config (the recipe and its penalty).
      module: the pair's `KGEmbedding`.
      num_entities: entities in the graph (for uniform corruption).
      graph_input: the R-GCN's input graph, or None.

    Returns:
      The loss function.
    """
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


@dataclasses.dataclass(frozen=True)
class Pair:
    """One (graph, model) pair of a run: what training and evaluation need.

    Attributes:
      config: the run's config.
      model: the scorer's name (`rotate`, ...).
      graph: the knowledge graph.
      module: its `KGEmbedding`.
      graph_input: the R-GCN's input graph (`encoder_graph`), or None without an encoder.
      optimizer: Adam at the config's constant rate.
      epoch: `(params, opt_state, key) -> (params, opt_state, metrics)`, one jitted scan over
        the shuffled training triples.
      tasks: the filtered ranking tasks of `valid` and `test`.
    """

    config: KGConfig
    model: str
    graph: kgraph.KnowledgeGraph
    module: KGEmbedding
    graph_input: GraphsTuple | None
    optimizer: optax.GradientTransformation
    epoch: Callable
    tasks: dict


def make_pair(config: KGConfig, model: str, graph: kgraph.KnowledgeGraph) -> Pair:
    """The `Pair` of `model` on `graph` under `config`: module, loss, jitted epoch, tasks."""
    module = build_model(config, model, graph)
    graph_input = encoder_graph(graph) if config.encoder == "rgcn" else None
    optimizer = optax.adam(config.learning_rate)
    loss = batch_loss(config, module, graph.num_entities, graph_input)
    known = graph.known()
    tasks = {
        split: kgraph.ranking_task(
            getattr(graph, split), known, graph.num_relations, config.eval_chunk
        )
        for split in ("valid", "test")
    }
    epoch = kgraph.make_epoch(loss, optimizer, graph.train, config.batch_size)
    return Pair(config, model, graph, module, graph_input, optimizer, epoch, tasks)


def initial_state(pair: Pair) -> training.TrainingState:
    """The pair's untrained parameters (from the config's seed) and optimiser state."""
    index = jnp.zeros((1,), jnp.int32)
    key = jax.random.key(pair.config.seed)
    params = pair.module.init(key, index, index, index, pair.graph_input)
    return training.TrainingState(params=params, opt_state=pair.optimizer.init(params))


def epoch_step(pair: Pair) -> Callable:
    """`(params, opt_state, epoch) -> (params, opt_state, metrics)` for `fit`: one epoch, its
    data order a pure function of the seed and the epoch."""

    def step(params, opt_state, epoch: int):
        key = jax.random.fold_in(jax.random.key(pair.config.seed), epoch)
        return pair.epoch(params, opt_state, key)

    return step


def evaluate_pair(pair: Pair, params, split: str) -> dict[str, float]:
    """Filtered MRR, mean rank and Hits@1/3/10 on `split` (`valid` or `test`)."""
    entities, relations = pair.module.apply(params, pair.graph_input, method="tables")
    return kgraph.evaluate(pair.model, entities, relations, pair.tasks[split])


def _checkpoints(run_dir: experiments.RunDir, name: str) -> Path:
    return run_dir.checkpoint_dir / name


def fit_pair(pair: Pair, run_dir: experiments.RunDir, options: experiments.Options, name: str):
    """Train in `run_dir/checkpoints/<name>` (resuming), validation MRR every
    `eval_every_epochs` epochs as the score; raises `training.TrainingStopped` on a stop.

    Args:
      pair: the (graph, model) `Pair`.
      run_dir: the run directory.
      options: the command's options.
      name: the pair's name in the run directory.

    Returns:
      The final `gnkit.train.TrainingState`.
    """
    config = pair.config
    state = training.resume_or(initial_state(pair), _checkpoints(run_dir, name))
    if options.progress:
        print(f"{name}: training from epoch {int(state.step)} of {config.epochs}", flush=True)
    return training.fit(
        state,
        epoch_step(pair),
        lambda epoch: epoch,
        config.epochs,
        examples_per_step=len(pair.graph.train),
        evaluate=lambda params: {"score": evaluate_pair(pair, params, "valid")["mrr"]},
        eval_every_steps=config.eval_every_epochs,
        checkpoint_dir=_checkpoints(run_dir, name),
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=1,
        progress=options.progress,
        log_evals=options.verbose,
        should_stop=options.should_stop,
    )


def best_state(pair: Pair, run_dir: experiments.RunDir, name: str) -> training.TrainingState:
    """The pair's best validated state in `run_dir` (else its latest checkpoint)."""
    return experiments.load_model_state(run_dir, name, initial_state(pair))
