"""Training pieces: negative sampling, the losses, and whole epochs as one jitted scan.

Two recipes, both built from these pieces:

- negative sampling (sLCWA): each positive triple gets `num_negatives` corruptions of its head
  or its tail (`corrupt_uniform`, the side picked per corruption or per triple), scored with
  the positive by `self_adversarial_loss` (RotatE's loss: log-sigmoid with a margin, negatives
  weighted by a softmax of their own scores; a temperature of 0 weights them equally) or
  `margin_ranking_loss` (TransE's hinge);
- 1-N scoring (`one_to_n_loss`): every entity as the tail of `(h, r, ?)` and as the head of
  `(?, r, t)`, cross-entropy against the true one; the stronger modern recipe (Lacroix et al.
  2018, Ruffinelli et al. 2020).

`epoch_batches` shuffles the training triples' indices on the device and `make_epoch` runs one
epoch of optimiser updates as a `lax.scan`, so an epoch is one call with nothing on the host.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax


def corrupt_uniform(
    key: jax.Array,
    triples: jax.Array,
    num_negatives: int,
    num_entities: int,
    same_side: bool = False,
) -> jax.Array:
    """`num_negatives` corruptions of each triple: `[B, 3] -> [B, K, 3]`. Each replaces the
    head or the tail (chance 1/2 each) by an entity drawn uniformly from the others (never the
    entity it replaces). By default each corruption picks its side; with `same_side` all `K`
    corruptions of a triple replace the same side, picked per triple (the RotatE authors'
    head-batch / tail-batch and PyKEEN's basic sampler, which corrupts the heads of half the
    batch and the tails of the other half). Jittable.

    Args:
      key: a PRNG key.
      triples: int `[B, 3]` `(head, relation, tail)`.
      num_negatives: `K`, corruptions per triple (static).
      num_entities: entities to draw from (static).
      same_side: all `K` corruptions of a triple replace the same side (static).

    Returns:
      int `[B, K, 3]`.
    """
    side_key, entity_key = jax.random.split(key)
    batch = triples.shape[0]
    side_shape = (batch, 1) if same_side else (batch, num_negatives)
    corrupt_tail = jnp.broadcast_to(
        jax.random.bernoulli(side_key, 0.5, side_shape), (batch, num_negatives)
    )
    column = jnp.where(corrupt_tail, 2, 0)
    original = jnp.where(corrupt_tail, triples[:, None, 2], triples[:, None, 0])
    drawn = jax.random.randint(entity_key, (batch, num_negatives), 0, num_entities - 1)
    replacement = drawn + (drawn >= original)
    negatives = jnp.broadcast_to(triples[:, None, :], (batch, num_negatives, 3))
    columns = jnp.arange(3)
    return jnp.where(columns == column[..., None], replacement[..., None], negatives)


def _weighted_mean(values: jax.Array, weights: jax.Array | None) -> jax.Array:
    if weights is None:
        return jnp.mean(values)
    return jnp.sum(values * weights) / jnp.maximum(jnp.sum(weights), 1.0)


def self_adversarial_loss(
    positive_scores: jax.Array,
    negative_scores: jax.Array,
    margin: float,
    temperature: float = 1.0,
    weights: jax.Array | None = None,
) -> jax.Array:
    """RotatE's loss (Sun et al. 2019), scores `s = -distance`:
    `(-log sig(margin + s_pos) - sum_i p_i log sig(-margin - s_neg_i)) / 2`, with
    `p = softmax(temperature * s_neg)` held constant (no gradient through it). Jittable.

    Args:
      positive_scores: `[B]`, the true triples' scores.
      negative_scores: `[B, K]`, their corruptions' scores.
      margin: `margin` of the formula (the RotatE paper's gamma).
      temperature: of the adversarial softmax; 0 weights the negatives equally.
      weights: per-triple `[B]` (0 for padding), or None for a plain mean.

    Returns:
      A scalar: the weighted mean over the batch.
    """
    if temperature:
        adversarial = jax.nn.softmax(temperature * negative_scores, axis=-1)
        adversarial = jax.lax.stop_gradient(adversarial)
    else:
        adversarial = jnp.full(negative_scores.shape, 1.0 / negative_scores.shape[-1])
    positive = -jax.nn.log_sigmoid(margin + positive_scores)
    negative = -jnp.sum(adversarial * jax.nn.log_sigmoid(-margin - negative_scores), axis=-1)
    return _weighted_mean((positive + negative) / 2, weights)


def margin_ranking_loss(
    positive_scores: jax.Array,
    negative_scores: jax.Array,
    margin: float,
    weights: jax.Array | None = None,
) -> jax.Array:
    """The pairwise hinge of TransE: mean over negatives of `max(0, margin - s_pos + s_neg)`,
    Jittable.

    Args:
      positive_scores: `[B]`, the true triples' scores.
      negative_scores: `[B, K]`, their corruptions' scores.
      margin: how far a positive must score above each negative to cost nothing.
      weights: per-triple `[B]` (0 for padding), or None for a plain mean.

    Returns:
      A scalar: the weighted mean over the batch.
    """
    hinge = jnp.maximum(0.0, margin - positive_scores[:, None] + negative_scores)
    return _weighted_mean(jnp.mean(hinge, axis=-1), weights)


def one_to_n_loss(
    tail_scores: jax.Array,
    head_scores: jax.Array,
    triples: jax.Array,
    weights: jax.Array | None = None,
    label_smoothing: float = 0.0,
) -> jax.Array:
    """1-N cross-entropy: softmax over all entities as the tail and as the head, against the
    triples' own tail and head; the mean of both directions. Jittable.

    Args:
      tail_scores: `[B, E]`, every entity as the tail of each `(h, r)`.
      head_scores: `[B, E]`, every entity as the head of each `(r, t)`.
      triples: int `[B, 3]`, whose tail and head are the targets.
      weights: per-triple `[B]` (0 for padding), or None for a plain mean.
      label_smoothing: of the one-hot targets (`optax.smooth_labels`); 0 for none.

    Returns:
      A scalar: the weighted mean over the batch of both directions' mean.
    """
    num_entities = tail_scores.shape[-1]

    def cross_entropy(scores, targets):
        labels = optax.smooth_labels(jax.nn.one_hot(targets, num_entities), label_smoothing)
        return optax.softmax_cross_entropy(scores, labels)

    both = cross_entropy(tail_scores, triples[:, 2]) + cross_entropy(head_scores, triples[:, 0])
    return _weighted_mean(both / 2, weights)


def epoch_batches(key: jax.Array, num_triples: int, batch_size: int) -> tuple[jax.Array, jax.Array]:
    """A shuffled epoch: `indices [n_batches, batch_size]` into the training triples and
    `weights [n_batches, batch_size]` (0 on the last batch's padding, which repeats indices).
    `n_batches = ceil(num_triples / batch_size)`. Jittable; sizes static."""
    n_batches = -(-num_triples // batch_size)
    order = jax.random.permutation(key, num_triples)
    slots = jnp.arange(n_batches * batch_size)
    indices = order[slots % num_triples]
    weights = (slots < num_triples).astype(jnp.float32)
    return indices.reshape(n_batches, batch_size), weights.reshape(n_batches, batch_size)


def penalty(
    factors: list[jax.Array], kind: str = "n3", complex_entities: bool = False
) -> jax.Array:
    """The regulariser of a batch's embeddings `factors` (each `[B, W]`): N3 (`'n3'`, Lacroix
    et al. 2018: the sum of cubed moduli) or L2 (`'l2'`: of the squares), over the batch size.
    With `complex_entities` the modulus is that of each complex coordinate (halves: real,
    imaginary); give it only complex factors then. Jittable."""
    if kind not in ("n3", "l2"):
        raise ValueError(f"penalty: kind must be 'n3' or 'l2', got {kind!r}")
    power = 3 if kind == "n3" else 2
    total = 0.0
    for factor in factors:
        if complex_entities:
            half = factor.shape[-1] // 2
            modulus = jnp.sqrt(factor[..., :half] ** 2 + factor[..., half:] ** 2 + 1e-18)
        else:
            modulus = jnp.abs(factor)
        total = total + jnp.sum(modulus**power)
    return total / factors[0].shape[0]


BatchLoss = Callable[[object, jax.Array, jax.Array, jax.Array], jax.Array]


def make_epoch(
    loss_fn: BatchLoss,
    optimizer: optax.GradientTransformation,
    train_triples: jax.Array,
    batch_size: int,
    constrain: Callable | None = None,
) -> Callable:
    """One epoch as a function: a pass over the training triples in shuffled batches, one
    optimiser update per batch, as a jitted `lax.scan` (nothing on the host).

    Args:
      loss_fn: `(params, triples [B, 3], weights [B], key) -> scalar`; weights are 0 on padding and
        `key` is the batch's own, for negative sampling.
      optimizer: the optax transformation, one update per batch.
      train_triples: int `[n, 3]`, all the training triples (kept on the device).
      batch_size: triples per batch (capped at `n`); the last batch is padded.
      constrain: `params -> params` applied after every update (a projection, e.g. PyKEEN's
        renormalisation of unit-modulus relations), or None.

    Returns:
      The jitted `epoch(params, opt_state, key) -> (params, opt_state, {"loss": mean})`.
    """
    train_triples = jnp.asarray(train_triples)
    num_triples = train_triples.shape[0]
    batch_size = min(batch_size, num_triples)

    def update(carry, batch):
        params, opt_state = carry
        indices, weights, key = batch
        loss, grads = jax.value_and_grad(loss_fn)(params, train_triples[indices], weights, key)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if constrain is not None:
            params = constrain(params)
        return (params, opt_state), loss

    @jax.jit
    def epoch(params, opt_state, key):
        shuffle_key, batch_key = jax.random.split(key)
        indices, weights = epoch_batches(shuffle_key, num_triples, batch_size)
        keys = jax.random.split(batch_key, indices.shape[0])
        (params, opt_state), losses = jax.lax.scan(
            update, (params, opt_state), (indices, weights, keys)
        )
        return params, opt_state, {"loss": jnp.mean(losses)}

    return epoch
