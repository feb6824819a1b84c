"""The Sinkhorn divergence between two particle distributions, LagrangeBench's `sinkhorn`.

LagrangeBench (`evaluate/metrics.py`) compares a predicted and a reference frame as two uniform
point clouds with ott-jax's `sinkhorn_divergence`: the cost is the squared periodic distance,
the entropic regularisation `epsilon` is 0.05 times the mean cost between the two clouds
(ott's default, shared by all three terms), and

    S(x, y) = OT_eps(x, y) - (OT_eps(x, x) + OT_eps(y, y)) / 2,

where `OT_eps(a, b) = <w_a, f> + <w_b, g>` is the entropic transport cost at the converged dual
potentials `f`, `g` (uniform weights `w`). It is zero for equal clouds and close to the squared
Wasserstein-2 distance for clouds far apart relative to `epsilon`. Here the potentials come
from log-domain Sinkhorn updates until the marginal error is below `threshold` (ott's 1e-4 in
LagrangeBench) or `max_iterations`. Jittable; memory `[N, M]` per cloud pair.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from gnkit.particles._checks import check_count, check_number


def periodic_cost(x: jax.Array, y: jax.Array, box) -> jax.Array:
    """Squared minimum-image distances `[N, M]` between `x` `[N, dim]` and `y` `[M, dim]` in a
    periodic box `[dim]`. Jittable."""
    box = jnp.asarray(box, x.dtype)
    delta = x[:, None, :] - y[None, :, :]
    delta = delta - box * jnp.round(delta / box)
    return jnp.sum(delta**2, axis=-1)


def entropic_cost(cost: jax.Array, epsilon, threshold: float = 1e-4,
                  max_iterations: int = 2000) -> jax.Array:
    """`OT_eps` between uniform weights for a cost matrix `[N, M]`: `<w_a, f> + <w_b, g>` at the
    Sinkhorn potentials. Jittable.

    Args:
      cost: `[N, M]`.
      epsilon: the entropic regularisation (a scalar).
      threshold: stop once the L1 error of the column marginal is below it (the rows are
        exact after each update of `f`).
      max_iterations: the most pairs of updates.
    """
    n, m = cost.shape
    log_a = jnp.full(n, -jnp.log(n), cost.dtype)
    log_b = jnp.full(m, -jnp.log(m), cost.dtype)

    def update_g(f):
        return -epsilon * logsumexp((f[:, None] - cost) / epsilon + log_a[:, None], axis=0)

    def update_f(g):
        return -epsilon * logsumexp((g[None, :] - cost) / epsilon + log_b[None, :], axis=1)

    def column_error(f, g):
        log_columns = logsumexp((f[:, None] + g[None, :] - cost) / epsilon + log_a[:, None]
                                + log_b[None, :], axis=0)
        return jnp.sum(jnp.abs(jnp.exp(log_columns) - jnp.exp(log_b)))

    def not_done(carry):
        f, g, iteration = carry
        return (iteration < max_iterations) & (column_error(f, g) > threshold)

    def body(carry):
        f, g, iteration = carry
        g = update_g(f)
        return update_f(g), g, iteration + 1

    f, g, _ = jax.lax.while_loop(not_done, body, (update_f(jnp.zeros(m, cost.dtype)),
                                                  jnp.zeros(m, cost.dtype), 0))
    g = update_g(f)
    return jnp.mean(f) + jnp.mean(g)


def sinkhorn_divergence(x: jax.Array, y: jax.Array, box, relative_epsilon: float = 0.05,
                        threshold: float = 1e-4, max_iterations: int = 2000) -> jax.Array:
    """LagrangeBench's Sinkhorn divergence between frames `x` `[N, dim]` and `y` `[M, dim]`.
    Jittable (float32 on the default device).

    Args:
      x, y: particle positions in the periodic box.
      box: box lengths `[dim]`.
      relative_epsilon: `epsilon` as a multiple of the mean cost between `x` and `y`.
      threshold, max_iterations: as `entropic_cost`.

    Returns:
      The divergence, a scalar (squared length units).
    """
    check_number("relative_epsilon", relative_epsilon, above=0.0)
    check_number("threshold", threshold, above=0.0)
    check_count("max_iterations", max_iterations)
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must be [N, dim] and [M, dim] of one dim, got {x.shape} "
                         f"and {y.shape}")
    cost_xy = periodic_cost(x, y, box)
    epsilon = relative_epsilon * jnp.mean(cost_xy)
    terms = [entropic_cost(cost, epsilon, threshold, max_iterations)
             for cost in (cost_xy, periodic_cost(x, x, box), periodic_cost(y, y, box))]
    return terms[0] - 0.5 * (terms[1] + terms[2])
