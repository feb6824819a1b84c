"""External force of the 2D reverse Poiseuille flow (LagrangeBench's force.py)."""

import jax.numpy as jnp


def force_fn(r):
    """Body force [dim] at one particle position r [dim]: -1 in x above y = 1, +1 below."""
    return jnp.where(r[1] > 1.0, jnp.array([-1.0, 0.0]), jnp.array([1.0, 0.0]))
