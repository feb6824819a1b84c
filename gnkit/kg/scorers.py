"""Scoring functions of knowledge-graph embeddings: TransE, DistMult, ComplEx and RotatE.

Each model is a `Scorer` of three pure functions over embedding arrays (higher scores mean more
plausible triples):

- `score(heads [B, W], relations [B, Wr], tails [B, W]) -> [B]`, one score per triple;
- `score_tails(heads [B, W], relations [B, Wr], entities [E, W]) -> [B, E]`, every entity as the
  tail of each `(head, relation)`;
- `score_heads(relations [B, Wr], tails [B, W], entities [E, W]) -> [B, E]`, every entity as the
  head of each `(relation, tail)`.

DistMult, ComplEx, TransE-L2 and RotatE-L2 score all entities with one matmul (no `[B, E, W]`
array);
TransE-L1 and RotatE sum a non-linear function of each coordinate, so their all-entity scores
hold a `[B, E, W]` difference: bound `B` (the evaluation's chunk size) for large graphs.
`score`'s arguments broadcast against each other over their leading axes: `K` corruptions of
each triple score as `score(heads [B, K, W], relations [B, 1, Wr], tails [B, K, W]) -> [B, K]`.

Complex embeddings (ComplEx, RotatE) are real arrays `[..., 2 * dim]`: the `dim` real parts,
then the `dim` imaginary parts. RotatE's relations are phases `[..., dim]`: the relation is the
rotation `exp(i * phase)`, of modulus 1 by construction. `rotate` is the paper's distance (the
sum of the coordinates' moduli); `rotate_l2` is PyKEEN's RotatE (the Euclidean norm of the complex
difference). Jittable, differentiable, no Flax.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

# Added under square roots so that distances of 0 keep finite gradients.
_TINY = 1e-18


def _halves(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Real and imaginary parts of a complex embedding `[..., 2 * dim]`, each `[..., dim]`."""
    dim = x.shape[-1] // 2
    return x[..., :dim], x[..., dim:]


def _safe_sqrt(x: jax.Array) -> jax.Array:
    return jnp.sqrt(jnp.maximum(x, 0.0) + _TINY)


def _distance(difference: jax.Array, norm: int) -> jax.Array:
    """The L1 or L2 norm over the last axis."""
    if norm == 1:
        return jnp.sum(jnp.abs(difference), axis=-1)
    return _safe_sqrt(jnp.sum(difference * difference, axis=-1))


def _distance_to_all(queries: jax.Array, entities: jax.Array, norm: int) -> jax.Array:
    """`||queries[b] - entities[e]||_norm`, `[B, W], [E, W] -> [B, E]`; L2 as one matmul,
    `|q|^2 - 2 q.e + |e|^2`."""
    if norm == 1:
        # Coordinates leading, `[W, B, E]`: on the CPU the gradient of this layout ran 6x faster
        # than that of `[B, E, W]` reduced over its last axis.
        return jnp.sum(jnp.abs(queries.T[:, :, None] - entities.T[:, None, :]), axis=0)
    squared = (
        jnp.sum(queries * queries, axis=-1)[:, None]
        - 2.0 * queries @ entities.T
        + jnp.sum(entities * entities, axis=-1)[None, :]
    )
    return _safe_sqrt(squared)


def transe(heads: jax.Array, relations: jax.Array, tails: jax.Array, norm: int = 1) -> jax.Array:
    """TransE (Bordes et al. 2013): `-||h + r - t||_norm`, `[B, D]` each -> `[B]`. Jittable.

    Args:
      heads: head embeddings `[B, D]`.
      relations: relation embeddings (translations) `[B, D]`.
      tails: tail embeddings `[B, D]`.
      norm: 1 (the paper's L1) or 2.

    Returns:
      `[B]`, higher for more plausible triples.
    """
    return -_distance(heads + relations - tails, norm)


def transe_tails(heads, relations, entities, norm: int = 1) -> jax.Array:
    """TransE with every entity as the tail: `[B, D], [B, D], [E, D] -> [B, E]`.

    Args:
      heads: head embeddings `[B, D]`.
      relations: relation embeddings `[B, D]`.
      entities: every entity's embedding `[E, D]`, each tried as the tail.
      norm: 1 (one `[B, E, D]` difference) or 2 (one matmul).

    Returns:
      `[B, E]`.
    """
    return -_distance_to_all(heads + relations, entities, norm)


def transe_heads(relations, tails, entities, norm: int = 1) -> jax.Array:
    """TransE with every entity as the head: `||e + r - t|| = ||e - (t - r)||`, `-> [B, E]`.

    Args:
      relations: relation embeddings `[B, D]`.
      tails: tail embeddings `[B, D]`.
      entities: every entity's embedding `[E, D]`, each tried as the head.
      norm: 1 (one `[B, E, D]` difference) or 2 (one matmul).

    Returns:
      `[B, E]`.
    """
    return -_distance_to_all(tails - relations, entities, norm)


def distmult(heads: jax.Array, relations: jax.Array, tails: jax.Array) -> jax.Array:
    """DistMult (Yang et al. 2015): `sum_k h_k r_k t_k`, `[B, D]` each -> `[B]`."""
    return jnp.sum(heads * relations * tails, axis=-1)


def distmult_tails(heads, relations, entities) -> jax.Array:
    """DistMult with every entity as the tail, one matmul: `(h * r) @ E^T`, `-> [B, E]`."""
    return (heads * relations) @ entities.T


def distmult_heads(relations, tails, entities) -> jax.Array:
    """DistMult with every entity as the head, one matmul: `(r * t) @ E^T`, `-> [B, E]`."""
    return (relations * tails) @ entities.T


def _complex_product(x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    (x_re, x_im), (y_re, y_im) = _halves(x), _halves(y)
    return x_re * y_re - x_im * y_im, x_re * y_im + x_im * y_re


def complex_score(heads: jax.Array, relations: jax.Array, tails: jax.Array) -> jax.Array:
    """ComplEx (Trouillon et al. 2016): `Re(sum_k h_k r_k conj(t_k))`, complex embeddings
    `[B, 2 * dim]` each -> `[B]`."""
    product_re, product_im = _complex_product(heads, relations)
    tails_re, tails_im = _halves(tails)
    return jnp.sum(product_re * tails_re + product_im * tails_im, axis=-1)


def complex_tails(heads, relations, entities) -> jax.Array:
    """ComplEx with every entity as the tail, one matmul: `[Re(h r), Im(h r)] @ E^T`,
    `-> [B, E]`."""
    return jnp.concatenate(_complex_product(heads, relations), axis=-1) @ entities.T


def complex_heads(relations, tails, entities) -> jax.Array:
    """ComplEx with every entity as the head, one matmul: with `z = r conj(t)`,
    `Re(h z) = [Re z, -Im z] . h`, `-> [B, E]`."""
    (r_re, r_im), (t_re, t_im) = _halves(relations), _halves(tails)
    z_re = r_re * t_re + r_im * t_im
    z_im = r_im * t_re - r_re * t_im
    return jnp.concatenate([z_re, -z_im], axis=-1) @ entities.T


def rotation(phases: jax.Array) -> jax.Array:
    """The unit complex numbers `exp(i * phases)`: `[..., dim] -> [..., 2 * dim]`
    (cosines, then sines), each of modulus 1."""
    return jnp.concatenate([jnp.cos(phases), jnp.sin(phases)], axis=-1)


def _rotated(entities: jax.Array, phases: jax.Array) -> jax.Array:
    """Complex entities `[..., 2 * dim]` each multiplied by `exp(i * phases)`, same layout."""
    return jnp.concatenate(_complex_product(entities, rotation(phases)), axis=-1)


def _modulus_sum(difference_re: jax.Array, difference_im: jax.Array, axis: int = -1) -> jax.Array:
    return jnp.sum(_safe_sqrt(difference_re**2 + difference_im**2), axis=axis)


def rotate(heads: jax.Array, phases: jax.Array, tails: jax.Array) -> jax.Array:
    """RotatE (Sun et al. 2019): `-sum_k |h_k exp(i phase_k) - t_k|`, complex entities
    `[B, 2 * dim]` and phases `[B, dim]` -> `[B]`."""
    rotated_re, rotated_im = _complex_product(heads, rotation(phases))
    tails_re, tails_im = _halves(tails)
    return -_modulus_sum(rotated_re - tails_re, rotated_im - tails_im)


def _rotate_to_all(queries: jax.Array, entities: jax.Array) -> jax.Array:
    """`-sum_k |q_bk - e_ek|`, `[B, 2 dim], [E, 2 dim] -> [B, E]`, coordinates leading
    (`[dim, B, E]`, as in `_distance_to_all`)."""
    (q_re, q_im), (e_re, e_im) = _halves(queries), _halves(entities)
    difference_re = q_re.T[:, :, None] - e_re.T[:, None, :]
    difference_im = q_im.T[:, :, None] - e_im.T[:, None, :]
    return -_modulus_sum(difference_re, difference_im, axis=0)


def rotate_tails(heads, phases, entities) -> jax.Array:
    """RotatE with every entity as the tail: `-> [B, E]` (a `[B, E, dim]` difference)."""
    return _rotate_to_all(_rotated(heads, phases), entities)


def rotate_heads(phases, tails, entities) -> jax.Array:
    """RotatE with every entity as the head: as `|r| = 1`, `|h r - t| = |h - t conj(r)|`,
    `-> [B, E]`."""
    return _rotate_to_all(_rotated(tails, -phases), entities)


def rotate_l2(heads: jax.Array, phases: jax.Array, tails: jax.Array) -> jax.Array:
    """RotatE with the Euclidean norm, PyKEEN's `RotatE`: `-sqrt(sum_k |h_k exp(i phase_k) -
    t_k|^2)`, complex entities `[B, 2 * dim]` and phases `[B, dim]` -> `[B]`."""
    return -_distance(_rotated(heads, phases) - tails, 2)


def rotate_l2_tails(heads, phases, entities) -> jax.Array:
    """`rotate_l2` with every entity as the tail, one matmul: `-> [B, E]`."""
    return -_distance_to_all(_rotated(heads, phases), entities, 2)


def rotate_l2_heads(phases, tails, entities) -> jax.Array:
    """`rotate_l2` with every entity as the head (`|h r - t| = |h - t conj(r)|`), one matmul:
    `-> [B, E]`."""
    return -_distance_to_all(_rotated(tails, -phases), entities, 2)


@dataclasses.dataclass(frozen=True)
class Scorer:
    """One embedding model's scoring functions and its embedding widths.

    `score`, `score_tails` and `score_heads` are described in the module docstring. A frozen
    dataclass of module-level functions, hashable, so it can be a static argument of
    `jax.jit`.

    Attributes:
      name: the key in `SCORERS`.
      score: `(heads, relations, tails) -> [B]`.
      score_tails: `(heads, relations, entities) -> [B, E]`.
      score_heads: `(relations, tails, entities) -> [B, E]`.
      complex_entities: the entity embeddings are complex (`2 * dim` reals for `dim` complex
        coordinates).
      relation_is_phase: the relation embeddings are `dim` phases (RotatE).
    """

    name: str
    score: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
    score_tails: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
    score_heads: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
    complex_entities: bool = False
    relation_is_phase: bool = False

    def entity_width(self, dim: int) -> int:
        """Reals per entity embedding: `dim`, or `2 * dim` for complex embeddings."""
        return 2 * dim if self.complex_entities else dim

    def relation_width(self, dim: int) -> int:
        """Reals per relation embedding: `dim` phases for RotatE, else as an entity's."""
        return dim if self.relation_is_phase else self.entity_width(dim)


def _transe_l1_tails(heads, relations, entities):
    return transe_tails(heads, relations, entities, 1)


def _transe_l1_heads(relations, tails, entities):
    return transe_heads(relations, tails, entities, 1)


def _transe_l2(heads, relations, tails):
    return transe(heads, relations, tails, 2)


def _transe_l2_tails(heads, relations, entities):
    return transe_tails(heads, relations, entities, 2)


def _transe_l2_heads(relations, tails, entities):
    return transe_heads(relations, tails, entities, 2)


#: The scorers by name: `transe` (L1), `transe_l2`, `distmult`, `complex`, `rotate`, `rotate_l2`.
SCORERS: dict[str, Scorer] = {
    "transe": Scorer("transe", transe, _transe_l1_tails, _transe_l1_heads),
    "transe_l2": Scorer("transe_l2", _transe_l2, _transe_l2_tails, _transe_l2_heads),
    "distmult": Scorer("distmult", distmult, distmult_tails, distmult_heads),
    "complex": Scorer(
        "complex", complex_score, complex_tails, complex_heads, complex_entities=True
    ),
    "rotate": Scorer(
        "rotate", rotate, rotate_tails, rotate_heads, complex_entities=True, relation_is_phase=True
    ),
    "rotate_l2": Scorer(
        "rotate_l2",
        rotate_l2,
        rotate_l2_tails,
        rotate_l2_heads,
        complex_entities=True,
        relation_is_phase=True,
    ),
}


def get_scorer(scorer: str | Scorer) -> Scorer:
    """The `Scorer` named `scorer` (`transe` (L1), `transe_l2`, `distmult`, `complex`,
    `rotate`, `rotate_l2`), or `scorer` itself."""
    if isinstance(scorer, Scorer):
        return scorer
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; known: {', '.join(SCORERS)}")
    return SCORERS[scorer]
