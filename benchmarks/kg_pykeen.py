"""gnkit vs PyKEEN: the same knowledge-graph model trained and evaluated on the same files.

    python -m benchmarks.kg_pykeen [--data umls] [--model rotate_l2] [--dim 64] [--epochs 40]
        [--lr 0.01] [--seeds 0,1,2] [--threads 1,2] [--sides per-triple] [--relations unit]
        [--json PATH] [--quick] [--no-pykeen]

Both sides train the same model (`--model`, a gnkit scorer: `rotate_l2` is PyKEEN's `RotatE`,
whose distance is the Euclidean norm of the complex difference; `distmult`, `complex`, `transe`;
any gnkit scorer with `--no-pykeen`, e.g. `rotate`, the paper's sum of moduli)
on the same training file with PyKEEN's sLCWA recipe: the same embedding size (complex
coordinates for RotatE and ComplEx), PyKEEN's initialisation (gnkit starts from the very weights
PyKEEN starts from, copied before PyKEEN trains; without PyKEEN, from the same distributions:
entities uniform in `+-sqrt(6 / reals per entity)`, rotations of uniform phase), RotatE's
self-adversarial loss (`--margin`, temperature 1), `--negatives` unfiltered uniform corruptions
per positive, all of a triple's corruptions on one side (`--sides per-triple`, as PyKEEN's
basic sampler; `per-negative` is gnkit's default), relations as unit complex numbers renormalised
after every update (`--relations unit`, as PyKEEN; `phases` is gnkit's default), the same batch
size, epochs, Adam and learning rate. Then both rank the test triples against all entities as
head and as tail, filtered by train, valid and test, ties counted as the mean rank.

Per seed, in one process: gnkit, then PyKEEN with the first of `--threads` torch intra-op thread
counts; the other thread counts run on the first seed only (they time PyKEEN; its results do not
depend on them). Timed (wall): training seconds per epoch (gnkit: from the second epoch, after
compilation; PyKEEN: the whole `train` call over the epochs) and the test evaluation (the second
of two calls on each side). Printed: test MRR and Hits@10 per seed, their mean and spread
(min-max), the time ratios, and whether the MRRs are within noise (ranges overlap, or the
difference of the means is below the larger spread). Needs PyKEEN (the `bench` extra); the gnkit
side alone runs without it (`--no-pykeen`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import kg

PYKEEN_MODELS = {"rotate_l2": "RotatE", "distmult": "DistMult", "complex": "ComplEx",
                 "transe": "TransE"}


def _initial_weights(graph, scorer, dim, seed):
    """PyKEEN's initial distributions in gnkit's layout, drawn with NumPy."""
    rng = np.random.default_rng(seed)
    width_e = scorer.entity_width(dim)
    bound = np.sqrt(6.0 / width_e)
    entities = rng.uniform(-bound, bound, (graph.num_entities, width_e))
    if scorer.relation_is_phase:
        relations = rng.uniform(0.0, 2 * np.pi, (graph.num_relations, dim))
    else:
        relations = rng.uniform(-bound, bound, (graph.num_relations, scorer.relation_width(dim)))
    return {"entities": entities.astype(np.float32), "relations": relations.astype(np.float32)}


def _unit_rotations(phases):
    """Phases `[R, d]` as unit complex numbers `[R, 2 d]` (cosines, then sines)."""
    return jnp.concatenate([jnp.cos(phases), jnp.sin(phases)], axis=-1)


def _phases(unit):
    """Unit complex numbers `[R, 2 d]` back to phases `[R, d]`."""
    dim = unit.shape[-1] // 2
    return jnp.arctan2(unit[..., dim:], unit[..., :dim])


def _renormalise(params):
    """PyKEEN's relation constraint: each complex coordinate divided by its modulus."""
    relations = params["relations"]
    dim = relations.shape[-1] // 2
    modulus = jnp.sqrt(relations[..., :dim] ** 2 + relations[..., dim:] ** 2)
    modulus = jnp.maximum(jnp.concatenate([modulus, modulus], axis=-1), 1e-7)
    return {**params, "relations": relations / modulus}


def _rotate_unit(scorer, heads, relations, tails):
    """RotatE's score with the rotation given as complex numbers `[..., 2 d]` rather than phases:
    the head rotated by `relations`, then the scorer's distance to the tail at phase 0."""
    dim = relations.shape[-1] // 2
    (h_re, h_im), (r_re, r_im) = (heads[..., :dim], heads[..., dim:]), (relations[..., :dim],
                                                                         relations[..., dim:])
    rotated = jnp.concatenate([h_re * r_re - h_im * r_im, h_re * r_im + h_im * r_re], axis=-1)
    return scorer.score(rotated, jnp.zeros(relations.shape[:-1] + (dim,)), tails)


def _gnkit_run(graph, args, seed, initial):
    """Train and evaluate gnkit's model from the weights `initial`; returns metrics and timings."""
    scorer = kg.get_scorer(args.model)
    unit = args.relations == "unit" and scorer.relation_is_phase
    params = {name: jnp.asarray(value) for name, value in initial.items()}
    if unit:
        params["relations"] = _unit_rotations(params["relations"])

    def score(heads, relations, tails):
        if unit:
            return _rotate_unit(scorer, heads, relations, tails)
        return scorer.score(heads, relations, tails)

    def loss(p, triples, weights, key):
        entities, relations = p["entities"], p["relations"]
        negatives = kg.corrupt_uniform(key, triples, args.negatives, graph.num_entities,
                                       same_side=args.sides == "per-triple")
        positive = score(entities[triples[:, 0]], relations[triples[:, 1]],
                         entities[triples[:, 2]])
        # Corruptions keep the relation: its embedding broadcasts over them.
        negative = score(entities[negatives[..., 0]], relations[triples[:, 1]][:, None],
                         entities[negatives[..., 2]])
        return kg.self_adversarial_loss(positive, negative, args.margin, 1.0, weights)

    optimizer = optax.adam(args.lr)
    epoch = kg.make_epoch(loss, optimizer, graph.train, args.batch_size,
                          constrain=_renormalise if unit else None)
    opt_state = optimizer.init(params)
    keys = jax.random.split(jax.random.key(seed), 2)
    start = time.perf_counter()
    params, opt_state, _ = epoch(params, opt_state, jax.random.fold_in(keys[1], 0))
    jax.block_until_ready(params)
    first_epoch = time.perf_counter() - start
    start = time.perf_counter()
    for number in range(1, args.epochs):
        params, opt_state, _ = epoch(params, opt_state, jax.random.fold_in(keys[1], number))
    jax.block_until_ready(params)
    per_epoch = (time.perf_counter() - start) / max(args.epochs - 1, 1)
    relations = _phases(params["relations"]) if unit else params["relations"]
    task = kg.ranking_task(graph.test, graph.known(), graph.num_relations, args.eval_chunk)
    kg.evaluate(scorer, params["entities"], relations, task)
    start = time.perf_counter()
    metrics = kg.evaluate(scorer, params["entities"], relations, task)
    eval_seconds = time.perf_counter() - start
    return {"mrr": metrics["mrr"], "hits@10": metrics["hits@10"], "epoch_seconds": per_epoch,
            "first_epoch_seconds": first_epoch, "eval_seconds": eval_seconds}


def _labelled(graph, split):
    rows = getattr(graph, split)
    return np.array([[graph.entities[h], graph.relations[r], graph.entities[t]]
                     for h, r, t in rows.tolist()])


def _pykeen_weights(representation, complex_pairs, as_phases=False):
    """A PyKEEN embedding's weights in gnkit's layout: complex `(re, im)` pairs as all real parts,
    then all imaginary parts, or (`as_phases`, RotatE's unit relations) as their phases."""
    weights = representation._embeddings.weight.detach().numpy().astype(np.float32)
    if not complex_pairs:
        return weights
    pairs = weights.reshape(weights.shape[0], -1, 2)
    if as_phases:
        return np.arctan2(pairs[..., 1], pairs[..., 0])
    return np.concatenate([pairs[..., 0], pairs[..., 1]], axis=-1)


class _PykeenSide:
    """PyKEEN's model for one seed: built (and its initial weights read) before training."""

    def __init__(self, graph, args, seed):
        import torch
        from pykeen.losses import NSSALoss
        from pykeen.models import model_resolver
        from pykeen.triples import TriplesFactory

        entity_ids = {name: i for i, name in enumerate(graph.entities)}
        relation_ids = {name: i for i, name in enumerate(graph.relations)}
        self.factories = {
            split: TriplesFactory.from_labeled_triples(
                _labelled(graph, split), entity_to_id=entity_ids, relation_to_id=relation_ids)
            for split in ("train", "valid", "test")
        }
        self.args, self.seed = args, seed
        self.model = model_resolver.make(
            PYKEEN_MODELS[args.model], triples_factory=self.factories["train"],
            embedding_dim=args.dim, loss=NSSALoss(margin=args.margin, adversarial_temperature=1.0),
            random_seed=seed)
        # `train` re-initialises the weights from torch's generator: draw them once here and
        # rewind the generator, so that training starts from exactly these weights.
        state = torch.get_rng_state()
        self.model.reset_parameters_()
        scorer = kg.get_scorer(args.model)
        complex_pairs = scorer.complex_entities
        self.initial = {
            "entities": _pykeen_weights(self.model.entity_representations[0], complex_pairs),
            "relations": _pykeen_weights(self.model.relation_representations[0], complex_pairs,
                                         as_phases=scorer.relation_is_phase),
        }
        self._rng_state = state

    def run(self, threads):
        import torch
        from pykeen.evaluation import RankBasedEvaluator
        from pykeen.training import SLCWATrainingLoop

        torch.set_num_threads(threads)
        torch.set_rng_state(self._rng_state)
        args, factories = self.args, self.factories
        optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr)
        loop = SLCWATrainingLoop(model=self.model, triples_factory=factories["train"],
                                 optimizer=optimizer, negative_sampler="basic",
                                 negative_sampler_kwargs={"num_negs_per_pos": args.negatives},
                                 automatic_memory_optimization=False)
        start = time.perf_counter()
        loop.train(triples_factory=factories["train"], num_epochs=args.epochs,
                   batch_size=args.batch_size, use_tqdm=False, use_tqdm_batch=False)
        per_epoch = (time.perf_counter() - start) / args.epochs
        evaluator = RankBasedEvaluator(filtered=True)
        filters = [factories["train"].mapped_triples, factories["valid"].mapped_triples]

        def evaluate():
            return evaluator.evaluate(self.model, factories["test"].mapped_triples,
                                      batch_size=args.eval_chunk, use_tqdm=False,
                                      additional_filter_triples=filters)

        evaluate()
        start = time.perf_counter()
        results = evaluate()
        eval_seconds = time.perf_counter() - start
        return {"mrr": float(results.get_metric("both.realistic.inverse_harmonic_mean_rank")),
                "hits@10": float(results.get_metric("both.realistic.hits_at_10")),
                "epoch_seconds": per_epoch, "eval_seconds": eval_seconds}


def _summary(runs):
    mrr = [run["mrr"] for run in runs]
    return {
        "mrr_mean": statistics.mean(mrr), "mrr_min": min(mrr), "mrr_max": max(mrr),
        "hits@10_mean": statistics.mean(run["hits@10"] for run in runs),
        "epoch_seconds": statistics.median(run["epoch_seconds"] for run in runs),
        "eval_seconds": statistics.median(run["eval_seconds"] for run in runs),
    }


def within_noise(first: dict, second: dict) -> str:
    """Whether two sides' MRRs (`_summary` entries) are within noise: `'ranges overlap'`,
    `'difference below the larger spread'`, or `'no'`."""
    if first["mrr_min"] <= second["mrr_max"] and second["mrr_min"] <= first["mrr_max"]:
        return "ranges overlap"
    spread = max(first["mrr_max"] - first["mrr_min"], second["mrr_max"] - second["mrr_min"])
    if abs(first["mrr_mean"] - second["mrr_mean"]) < spread:
        return "difference below the larger spread"
    return "no"


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="umls")
    parser.add_argument("--model", default="rotate_l2", choices=sorted(kg.SCORERS))
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--negatives", type=int, default=32)
    parser.add_argument("--margin", type=float, default=6.0)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--sides", default="per-triple", choices=["per-triple", "per-negative"])
    parser.add_argument("--relations", default="unit", choices=["unit", "phases"])
    parser.add_argument("--eval-chunk", type=int, default=256)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--no-pykeen", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 epochs, dim 8, one seed")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.quick:
        args.epochs, args.dim, args.seeds, args.negatives = 2, 8, "0", 4
    graph = kg.load_graph(args.data)
    scorer = kg.get_scorer(args.model)
    seeds = [int(seed) for seed in args.seeds.split(",")]
    threads = [] if args.no_pykeen else [int(t) for t in args.threads.split(",")]
    if threads and args.model not in PYKEEN_MODELS:
        parser.error(f"--model {args.model} has no PyKEEN counterpart; with PyKEEN use one of "
                     f"{', '.join(sorted(PYKEEN_MODELS))} (or --no-pykeen)")
    sides = ["gnkit"] + [f"pykeen {t} thread{'s' if t > 1 else ''}" for t in threads]
    runs: dict[str, list] = {side: [] for side in sides}
    print(f"{args.data}, {args.model}: dim {args.dim}, {args.negatives} negatives "
          f"({args.sides}), relations {args.relations}, margin {args.margin}, batch "
          f"{args.batch_size}, Adam {args.lr}, {args.epochs} epochs; {os.cpu_count()} CPUs")
    for seed in seeds:
        pykeen = _PykeenSide(graph, args, seed) if threads else None
        initial = (pykeen.initial if pykeen else
                   _initial_weights(graph, scorer, args.dim, seed))
        for index, side in enumerate(sides):
            if side == "gnkit":
                run = _gnkit_run(graph, args, seed, initial)
            elif index == 1 or seed == seeds[0]:
                run = pykeen.run(threads[index - 1])
            else:
                continue
            runs[side].append(run)
            print(f"seed {seed} {side:<17} MRR {run['mrr']:.3f}  H@10 {run['hits@10']:.3f}  "
                  f"{run['epoch_seconds']:.3f} s/epoch  eval {run['eval_seconds']:.3f} s",
                  flush=True)
    summary = {side: _summary(side_runs) for side, side_runs in runs.items()}
    print(f"{'':<18}{'MRR mean (min-max)':>22}{'H@10':>7}{'s/epoch':>9}{'eval s':>8}"
          f"{'epoch x':>9}{'eval x':>8}")
    for side, entry in summary.items():
        epoch_ratio = entry["epoch_seconds"] / summary["gnkit"]["epoch_seconds"]
        eval_ratio = entry["eval_seconds"] / summary["gnkit"]["eval_seconds"]
        print(f"{side:<18}{entry['mrr_mean']:>9.3f} ({entry['mrr_min']:.3f}-{entry['mrr_max']:.3f})"
              f"{entry['hits@10_mean']:>7.3f}{entry['epoch_seconds']:>9.3f}"
              f"{entry['eval_seconds']:>8.3f}{epoch_ratio:>9.1f}{eval_ratio:>8.1f}")
    result = {"settings": vars(args), "runs": runs, "summary": summary}
    if threads:
        result["within_noise"] = within_noise(summary["gnkit"], summary[sides[1]])
        print(f"MRR within noise (gnkit vs {sides[1]}): {result['within_noise']}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)
    return result


if __name__ == "__main__":
    main()
