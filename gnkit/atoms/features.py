"""Edge geometry of a structure graph: edge vectors, safe norms, radial bases, cutoffs, irreps.

Everything here is pure `jnp` and jittable, and gives finite values and finite gradients on the
zero vectors of padding edges (`positions` 0, shift 0), so a padded batch differentiates cleanly.
The radial bases and envelopes are those of the papers that define them, so a number compares:
DimeNet's Bessel basis and polynomial envelope (also NequIP's and MACE's), SchNet's Gaussians and
cosine cutoff (also PaiNN's), and e3nn-jax's spherical harmonics.
"""

from __future__ import annotations

import e3nn_jax as e3nn
import jax
import jax.numpy as jnp

from gnkit.graph import GraphsTuple, edge_graph_index

__all__ = [
    "bessel_basis",
    "cosine_cutoff",
    "edge_vectors",
    "gaussian_basis",
    "polynomial_envelope",
    "safe_norm",
    "spherical_harmonics",
]


def _field(tree, name: str, where: str) -> jax.Array:
    if not isinstance(tree, dict) or name not in tree:
        found = sorted(tree) if isinstance(tree, dict) else type(tree).__name__
        raise ValueError(
            f"edge_vectors: graph.{where} must be a dict with {name!r} (see gnkit.atoms' graph "
            f"layout), found {found}"
        )
    return tree[name]


def edge_vectors(graph: GraphsTuple) -> jax.Array:
    """The vector of every edge, `positions[receivers] - positions[senders] + shifts @ cell`.

    With ASE's `neighbor_list('ijS')` convention (senders = i, receivers = j), this is ASE's `D`.
    Each edge's integer cell shift multiplies the cell of its own structure. Jittable.

    Args:
      graph: a structure graph with `nodes["positions"]` `[n_atoms, 3]`, `edges["shifts"]`
        `[n_edge, 3]` and `globals["cell"]` `[n_graph, 3, 3]` (rows are lattice vectors).

    Returns:
      `[n_edge, 3]`, in the positions' units (Å); exactly 0 on padding edges.
    """
    positions = _field(graph.nodes, "positions", "nodes")
    shifts = _field(graph.edges, "shifts", "edges")
    cell = _field(graph.globals, "cell", "globals")
    edge_cells = cell[edge_graph_index(graph)]
    return (
        positions[graph.receivers]
        - positions[graph.senders]
        + jnp.einsum("ei,eij->ej", shifts.astype(edge_cells.dtype), edge_cells)
    )


def safe_norm(vectors: jax.Array, axis: int = -1) -> jax.Array:
    """The Euclidean norm along `axis`, with a zero (finite) gradient at the zero vector.

    Args:
      vectors: `[..., 3]` (any size along `axis`).
      axis: the axis summed over.

    Returns:
      `vectors`' shape without `axis`. Jittable.
    """
    squared = jnp.sum(vectors * vectors, axis=axis)
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)


def bessel_basis(distances: jax.Array, num_basis: int, cutoff: float) -> jax.Array:
    r"""DimeNet's radial Bessel basis (also NequIP's and MACE's), finite at `r = 0`.

    .. math:: e_n(r) = \sqrt{2 / c}\, \frac{\sin(n \pi r / c)}{r}, \quad n = 1, \dots, N

    At `r = 0` it takes its limit :math:`\sqrt{2/c}\, n \pi / c` with a zero gradient. No envelope
    is applied (multiply by `polynomial_envelope` for a smooth cutoff). Jittable.

    Args:
      distances: `[n_edge]` edge lengths `r`.
      num_basis: the number of functions `N`.
      cutoff: the cutoff radius `c`.

    Returns:
      `[n_edge, num_basis]`.
    """
    distances = jnp.asarray(distances)
    frequencies = jnp.arange(1, num_basis + 1, dtype=distances.dtype) * jnp.pi / cutoff
    positive = (distances > 0)[:, None]
    safe_distances = jnp.where(positive, distances[:, None], 1.0)
    values = jnp.where(positive, jnp.sin(frequencies * safe_distances) / safe_distances,
                       frequencies)
    return jnp.sqrt(2.0 / cutoff) * values


def gaussian_basis(
    distances: jax.Array, num_basis: int, cutoff: float, width: float | None = None
) -> jax.Array:
    r"""SchNet's Gaussian radial basis, centres evenly spaced on `[0, cutoff]`.

    .. math:: e_k(r) = \exp\big(-(r - \mu_k)^2 / (2 w^2)\big), \quad
       \mu_k = k\, c / (N - 1)

    The default width `w` is the spacing of the centres, as in schnetpack's `GaussianRBF` and
    PyTorch Geometric's `GaussianSmearing`. Jittable.

    Args:
      distances: `[n_edge]` edge lengths `r`.
      num_basis: the number of Gaussians `N` (at least 2 without `width`).
      cutoff: the last centre `c`.
      width: the Gaussians' width `w`; None for the centre spacing.

    Returns:
      `[n_edge, num_basis]`.
    """
    if width is None and num_basis < 2:
        raise ValueError(
            f"gaussian_basis: num_basis must be at least 2 to derive the width from the centre "
            f"spacing, got {num_basis}; pass width="
        )
    distances = jnp.asarray(distances)
    centres = jnp.linspace(0.0, cutoff, num_basis, dtype=distances.dtype)
    if width is None:
        width = cutoff / (num_basis - 1)
    return jnp.exp(-0.5 * ((distances[:, None] - centres) / width) ** 2)


def polynomial_envelope(distances: jax.Array, cutoff: float, p: int = 6) -> jax.Array:
    r"""DimeNet's polynomial envelope (also NequIP's and MACE's), 0 at and beyond the cutoff.

    .. math:: u(d) = 1 - \frac{(p+1)(p+2)}{2} d^p + p(p+2) d^{p+1} - \frac{p(p+1)}{2} d^{p+2},
       \quad d = r / c

    for `d < 1`, and 0 for `d >= 1`; `u`, `u'` and `u''` vanish at `d = 1`. Jittable.

    Args:
      distances: `[n_edge]` edge lengths `r`.
      cutoff: the cutoff radius `c`.
      p: the polynomial order.

    Returns:
      `[n_edge]`.
    """
    scaled = jnp.asarray(distances) / cutoff
    inside = scaled < 1.0
    d = jnp.where(inside, scaled, 0.0)
    envelope = (
        1.0
        - (p + 1) * (p + 2) / 2 * d**p
        + p * (p + 2) * d ** (p + 1)
        - p * (p + 1) / 2 * d ** (p + 2)
    )
    return jnp.where(inside, envelope, 0.0)


def cosine_cutoff(distances: jax.Array, cutoff: float) -> jax.Array:
    r"""The cosine cutoff of SchNet and PaiNN (Behler's), 0 at and beyond the cutoff.

    .. math:: f(r) = \tfrac12 \big(\cos(\pi r / c) + 1\big) \text{ for } r < c, \quad 0 \text{ else}

    Jittable.

    Args:
      distances: `[n_edge]` edge lengths `r`.
      cutoff: the cutoff radius `c`.

    Returns:
      `[n_edge]`.
    """
    distances = jnp.asarray(distances)
    inside = distances < cutoff
    values = 0.5 * (jnp.cos(jnp.pi * jnp.where(inside, distances, 0.0) / cutoff) + 1.0)
    return jnp.where(inside, values, 0.0)


def spherical_harmonics(vectors: jax.Array, max_l: int) -> e3nn.IrrepsArray:
    """e3nn-jax's spherical harmonics of the edge directions, degrees 0 to `max_l`.

    The vectors are normalised with `safe_norm` before e3nn-jax's polynomials are evaluated
    (`normalize=False`, component normalisation: each `l` block has squared norm `2l + 1`), so
    on a nonzero vector this is `e3nn.spherical_harmonics(..., normalize=True)`, and the zero
    vector of a padding edge gives `Y_0 = 1`, every `l >= 1` block 0, and finite gradients.
    Jittable.

    Args:
      vectors: `[n_edge, 3]` edge vectors.
      max_l: the largest degree.

    Returns:
      An `e3nn.IrrepsArray` `[n_edge, (max_l + 1)^2]` with irreps `0e + 1o + 2e + ...`.
    """
    norms = safe_norm(vectors)[..., None]
    directions = vectors / jnp.where(norms > 0, norms, 1.0)
    return e3nn.spherical_harmonics(
        list(range(max_l + 1)), e3nn.IrrepsArray("1o", directions), normalize=False,
        normalization="component",
    )
