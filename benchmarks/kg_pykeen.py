"""gnkit vs PyKEEN: the same knowledge-graph model trained and evaluated on the same files.

    python -m benchmarks.kg_pykeen [--data umls] [--model rotate] [--dim 100] [--epochs 100]
        [--seeds 0,1,2] [--threads 1,2] [--json PATH] [--quick]

Both sides train the same model (`--model`: rotate, distmult, complex or transe) on the same
training file with the same embedding size (complex coordinates for RotatE and ComplEx), loss
(RotatE's self-adversarial negative-sampling loss, margin `--margin`, temperature 1), uniform
corruption of head or tail (`--negatives` per positive), batch size, epochs, Adam and learning
rate, then rank the test triples against all entities as head and as tail, filtered by train,
valid and test, ties counted as the mean rank. Per seed, in one process, interleaved: gnkit,
then PyKEEN with each of `--threads` torch intra-op thread counts. Timed: training wall seconds
per epoch (gnkit: from the second epoch, after compilation; PyKEEN: the whole `train` call over
the epochs) and the test evaluation (the second of two calls on each side). Printed: test MRR
and Hits@10 per seed, their mean and spread (min-max), and the time ratios. Needs PyKEEN (the
`bench` extra); the gnkit side alone runs without it (`--no-pykeen`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence

import jax
import numpy as np
import optax

from gnkit import kg

PYKEEN_MODELS = {"rotate": "RotatE", "distmult": "DistMult", "complex": "ComplEx",
                 "transe": "TransE"}


def _gnkit_run(graph, args, seed):
    """Train and evaluate gnkit's model; returns metrics and timings."""
    scorer = kg.get_scorer(args.model)
    width_e, width_r = scorer.entity_width(args.dim), scorer.relation_width(args.dim)
    keys = jax.random.split(jax.random.key(seed), 3)
    bound_e = np.sqrt(6.0 / (graph.num_entities + width_e))
    params = {
        "entities": jax.random.uniform(keys[0], (graph.num_entities, width_e), minval=-bound_e,
                                       maxval=bound_e),
        "relations": (jax.random.uniform(keys[1], (graph.num_relations, width_r), minval=-np.pi,
                                         maxval=np.pi)
                      if scorer.relation_is_phase else
                      jax.random.uniform(keys[1], (graph.num_relations, width_r), minval=-bound_e,
                                         maxval=bound_e)),
    }

    def loss(p, triples, weights, key):
        entities, relations = p["entities"], p["relations"]
        negatives = kg.corrupt_uniform(key, triples, args.negatives, graph.num_entities)
        positive = scorer.score(entities[triples[:, 0]], relations[triples[:, 1]],
                                entities[triples[:, 2]])
        # Corruptions keep the relation: its embedding (RotatE: its rotation) broadcasts over them.
        negative = scorer.score(entities[negatives[..., 0]], relations[triples[:, 1]][:, None],
                                entities[negatives[..., 2]])
        return kg.self_adversarial_loss(positive, negative, args.margin, 1.0, weights)

    optimizer = optax.adam(args.lr)
    epoch = kg.make_epoch(loss, optimizer, graph.train, args.batch_size)
    opt_state = optimizer.init(params)
    start = time.perf_counter()
    params, opt_state, _ = epoch(params, opt_state, jax.random.fold_in(keys[2], 0))
    jax.block_until_ready(params)
    first_epoch = time.perf_counter() - start
    start = time.perf_counter()
    for number in range(1, args.epochs):
        params, opt_state, metrics = epoch(params, opt_state, jax.random.fold_in(keys[2], number))
    jax.block_until_ready(params)
    per_epoch = (time.perf_counter() - start) / max(args.epochs - 1, 1)
    task = kg.ranking_task(graph.test, graph.known(), graph.num_relations, args.eval_chunk)
    kg.evaluate(scorer, params["entities"], params["relations"], task)
    start = time.perf_counter()
    metrics = kg.evaluate(scorer, params["entities"], params["relations"], task)
    eval_seconds = time.perf_counter() - start
    return {"mrr": metrics["mrr"], "hits@10": metrics["hits@10"], "epoch_seconds": per_epoch,
            "first_epoch_seconds": first_epoch, "eval_seconds": eval_seconds}


def _labelled(graph, split):
    rows = getattr(graph, split)
    return np.array([[graph.entities[h], graph.relations[r], graph.entities[t]]
                     for h, r, t in rows.tolist()])


def _pykeen_run(graph, args, seed, threads):
    """Train and evaluate PyKEEN's model with `threads` torch threads."""
    import torch
    from pykeen.evaluation import RankBasedEvaluator
    from pykeen.losses import NSSALoss
    from pykeen.models import model_resolver
    from pykeen.training import SLCWATrainingLoop
    from pykeen.triples import TriplesFactory

    torch.set_num_threads(threads)
    entity_ids = {name: i for i, name in enumerate(graph.entities)}
    relation_ids = {name: i for i, name in enumerate(graph.relations)}
    factories = {
        split: TriplesFactory.from_labeled_triples(_labelled(graph, split), entity_to_id=entity_ids,
                                                   relation_to_id=relation_ids)
        for split in ("train", "valid", "test")
    }
    model = model_resolver.make(
        PYKEEN_MODELS[args.model], triples_factory=factories["train"], embedding_dim=args.dim,
        loss=NSSALoss(margin=args.margin, adversarial_temperature=1.0), random_seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loop = SLCWATrainingLoop(model=model, triples_factory=factories["train"],
                             optimizer=optimizer, negative_sampler="basic",
                             negative_sampler_kwargs={"num_negs_per_pos": args.negatives})
    start = time.perf_counter()
    loop.train(triples_factory=factories["train"], num_epochs=args.epochs,
               batch_size=args.batch_size, use_tqdm=False, use_tqdm_batch=False)
    per_epoch = (time.perf_counter() - start) / args.epochs
    evaluator = RankBasedEvaluator(filtered=True)
    filters = [factories["train"].mapped_triples, factories["valid"].mapped_triples]

    def evaluate():
        return evaluator.evaluate(model, factories["test"].mapped_triples,
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


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="umls")
    parser.add_argument("--model", default="rotate", choices=sorted(PYKEEN_MODELS))
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--negatives", type=int, default=32)
    parser.add_argument("--margin", type=float, default=6.0)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.005)
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
    seeds = [int(seed) for seed in args.seeds.split(",")]
    threads = [] if args.no_pykeen else [int(t) for t in args.threads.split(",")]
    sides = ["gnkit"] + [f"pykeen {t} thread{'s' if t > 1 else ''}" for t in threads]
    runs: dict[str, list] = {side: [] for side in sides}
    print(f"{args.data}, {args.model}: dim {args.dim}, {args.negatives} negatives, margin "
          f"{args.margin}, batch {args.batch_size}, Adam {args.lr}, {args.epochs} epochs; "
          f"{os.cpu_count()} CPUs")
    for seed in seeds:
        for side in sides:
            if side == "gnkit":
                run = _gnkit_run(graph, args, seed)
            else:
                run = _pykeen_run(graph, args, seed, threads[sides.index(side) - 1])
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
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)
    return result


if __name__ == "__main__":
    main()
