"""Filtered link-prediction ranks, MRR and Hits@k, computed on the device in one jitted pass.

For each test triple `(h, r, t)` the tail `t` is ranked against every entity as the tail of
`(h, r, ?)`, and `h` against every entity as the head of `(?, r, t)`. Filtered: other entities
that make a known true triple (`known`, usually train + valid + test) are left out of the
ranking. Ties count half (the mean of the optimistic and the pessimistic rank):
`rank = 1 + #{score > true} + #{score == true} / 2` over the entities left in.

`ranking_task` (host, NumPy) lays the test triples out in chunks of `chunk_size` and lists, per
chunk, the `(row, entity)` pairs to filter; `filtered_ranks` (jittable) scans the chunks, so
memory is bounded by `chunk_size * num_entities` scores (times the embedding width for the
scorers that need a `[B, E, W]` difference), whatever the number of test triples.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.kg.scorers import Scorer, get_scorer

#: The `k` of the Hits@k that `rank_metrics` reports.
HITS_AT = (1, 3, 10)


class RankingTask(NamedTuple):
    """Test triples in chunks and the entities to filter out of each chunk's rankings. Host.

    Attributes:
      triples: int32 `[n_chunks, chunk_size, 3]` `(head, relation, tail)`; the last chunk is
        padded with copies of the first triple.
      valid: bool `[n_chunks, chunk_size]`, false on padding.
      tail_filter: int32 `[n_chunks, P, 2]` `(row in chunk, entity)` pairs of the known tails of
        each `(h, r)`; padding pairs have row `chunk_size` (out of range, dropped).
      head_filter: int32 `[n_chunks, P, 2]`, the same for the known heads of each `(r, t)`.
    """

    triples: np.ndarray
    valid: np.ndarray
    tail_filter: np.ndarray
    head_filter: np.ndarray

    @property
    def num_triples(self) -> int:
        return int(self.valid.sum())


def _matches(queries: np.ndarray, keys: np.ndarray, values: np.ndarray):
    """For each query key, every value stored under the same key: `(query index, value)`
    pairs, sorted by query index. Vectorised: `keys` sorted once, ranges by `searchsorted`."""
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    starts = np.searchsorted(keys, queries, side="left")
    counts = np.searchsorted(keys, queries, side="right") - starts
    rows = np.repeat(np.arange(len(queries)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return rows, values[np.repeat(starts, counts) + offsets]


def _chunked_pairs(rows: np.ndarray, entities: np.ndarray, n_chunks: int, chunk_size: int):
    """`(row, entity)` pairs grouped by chunk: `[n_chunks, P, 2]`, padded with row `chunk_size`."""
    chunk = rows // chunk_size
    per_chunk = np.bincount(chunk, minlength=n_chunks)
    width = max(int(per_chunk.max(initial=0)), 1)
    pairs = np.zeros((n_chunks, width, 2), np.int32)
    pairs[:, :, 0] = chunk_size
    position = np.arange(len(rows)) - np.repeat(np.cumsum(per_chunk) - per_chunk, per_chunk)
    pairs[chunk, position, 0] = rows % chunk_size
    pairs[chunk, position, 1] = entities
    return pairs


def ranking_task(
    triples: np.ndarray,
    known: np.ndarray | None,
    num_relations: int,
    chunk_size: int = 256,
) -> RankingTask:
    """The test triples in chunks, with the known true triples to filter out. Host, NumPy.

    Args:
      triples: int `[T, 3]` `(head, relation, tail)`, the triples to rank.
      known: int `[K, 3]`, the true triples to filter out of the rankings (usually
        `KnowledgeGraph.known()`); None for the raw, unfiltered ranking.
      num_relations: relations in the graph (to key `(entity, relation)` pairs).
      chunk_size: triples per chunk, at least 1 (capped at `T`); bounds the `[chunk, E]` scores
        held at once.

    Returns:
      The `RankingTask`.
    """
    triples = np.asarray(triples, np.int64).reshape(-1, 3)
    if len(triples) == 0:
        raise ValueError("ranking_task: no triples to rank")
    if chunk_size < 1:
        raise ValueError(f"ranking_task: chunk_size must be >= 1, got {chunk_size}")
    chunk_size = min(chunk_size, len(triples))
    n_chunks = -(-len(triples) // chunk_size)
    padding = np.repeat(triples[:1], n_chunks * chunk_size - len(triples), axis=0)
    padded = np.concatenate([triples, padding])
    valid = np.arange(n_chunks * chunk_size) < len(triples)
    known = np.zeros((0, 3)) if known is None else known
    known = np.asarray(known, np.int64).reshape(-1, 3)
    # One integer key per (entity, relation) pair: entity * num_relations + relation.
    tail_rows, tail_entities = _matches(
        triples[:, 0] * num_relations + triples[:, 1],
        known[:, 0] * num_relations + known[:, 1],
        known[:, 2],
    )
    head_rows, head_entities = _matches(
        triples[:, 2] * num_relations + triples[:, 1],
        known[:, 2] * num_relations + known[:, 1],
        known[:, 0],
    )
    return RankingTask(
        triples=padded.reshape(n_chunks, chunk_size, 3).astype(np.int32),
        valid=valid.reshape(n_chunks, chunk_size),
        tail_filter=_chunked_pairs(tail_rows, tail_entities, n_chunks, chunk_size),
        head_filter=_chunked_pairs(head_rows, head_entities, n_chunks, chunk_size),
    )


def _ranks(scores: jax.Array, targets: jax.Array, filter_pairs: jax.Array) -> jax.Array:
    """Mean (tie-aware) filtered rank of `scores[b, targets[b]]` in row `b`: `[C, E] -> [C]`."""
    rows = jnp.arange(scores.shape[0])
    true_scores = scores[rows, targets]
    left_out = jnp.zeros(scores.shape, bool)
    left_out = left_out.at[filter_pairs[:, 0], filter_pairs[:, 1]].set(True, mode="drop")
    left_out = left_out.at[rows, targets].set(True)
    higher = jnp.sum((scores > true_scores[:, None]) & ~left_out, axis=-1)
    equal = jnp.sum((scores == true_scores[:, None]) & ~left_out, axis=-1)
    return 1.0 + higher + 0.5 * equal


def filtered_ranks(
    scorer: Scorer | str, entities: jax.Array, relations: jax.Array, task: RankingTask
) -> jax.Array:
    """Filtered ranks of every triple of `task`, tails and heads.

    One `lax.scan` over the chunks; jittable with `scorer` static (`evaluate` does that).

    Args:
      scorer: a `Scorer` or its name in `SCORERS`.
      entities: the entity embeddings `[E, W]` the scorer reads.
      relations: the relation embeddings `[R, Wr]`.
      task: the chunked triples and filters of `ranking_task`.

    Returns:
      float32 `[n_chunks * chunk_size, 2]`: each triple's tail rank, then its head rank (ties
      count half), padding rows included (mask them with `task.valid`).
    """
    scorer = get_scorer(scorer)
    entities, relations = jnp.asarray(entities), jnp.asarray(relations)

    def chunk_ranks(_, chunk):
        triples, tail_filter, head_filter = chunk
        heads = entities[triples[:, 0]]
        relation = relations[triples[:, 1]]
        tails = entities[triples[:, 2]]
        tail_scores = scorer.score_tails(heads, relation, entities)
        head_scores = scorer.score_heads(relation, tails, entities)
        tail_ranks = _ranks(tail_scores, triples[:, 2], tail_filter)
        head_ranks = _ranks(head_scores, triples[:, 0], head_filter)
        return None, jnp.stack([tail_ranks, head_ranks], axis=-1)

    chunks = tuple(jnp.asarray(x) for x in (task.triples, task.tail_filter, task.head_filter))
    _, ranks = jax.lax.scan(chunk_ranks, None, chunks)
    return ranks.reshape(-1, 2)


def rank_metrics(ranks: jax.Array, valid: jax.Array) -> dict[str, jax.Array]:
    """MRR, mean rank and Hits@1/3/10 over the valid rows of `ranks` `[T, 2]` (both
    directions pooled, as is usual). Jittable."""
    weights = jnp.broadcast_to(jnp.asarray(valid, ranks.dtype).reshape(-1, 1), ranks.shape)
    total = jnp.sum(weights)
    metrics = {
        "mrr": jnp.sum(weights / ranks) / total,
        "mean_rank": jnp.sum(weights * ranks) / total,
    }
    for k in HITS_AT:
        metrics[f"hits@{k}"] = jnp.sum(weights * (ranks <= k)) / total
    return metrics


@jax.jit(static_argnums=0)
def _evaluate(scorer, entities, relations, task):
    ranks = filtered_ranks(scorer, entities, relations, task)
    return rank_metrics(ranks, task.valid.reshape(-1))


def evaluate(
    scorer: Scorer | str, entities: jax.Array, relations: jax.Array, task: RankingTask
) -> dict[str, float]:
    """Filtered MRR, mean rank and Hits@1/3/10 of `task`'s triples, as Python floats: one
    jitted pass (compiled once per scorer and shapes).

    Args:
      scorer: a `Scorer` or its name in `SCORERS`.
      entities: the entity embeddings `[E, W]`.
      relations: the relation embeddings `[R, Wr]`.
      task: the chunked triples and filters of `ranking_task`.

    Returns:
      `{"mrr", "mean_rank", "hits@1", "hits@3", "hits@10"}` as floats, both directions pooled.
    """
    metrics = _evaluate(get_scorer(scorer), entities, relations, task)
    return {name: float(value) for name, value in metrics.items()}
