"""Device-varying types under `shard_map`, for initial carries built from constants. Jittable.

Inside `shard_map` every value has a set of mesh axes it varies over. A scan's initial carry
built from constants (zeros, an identity memory) varies over none, while the carry its body
returns varies over the data axis because the parameters and inputs do; `lax.scan` rejects the
mismatch. `varying_like` marks the carry with the axes of the values it is combined with.
"""

from __future__ import annotations

from typing import Any

import jax


def varying_axes(leaf: Any) -> frozenset:
    """The `shard_map` axes `leaf` varies over (empty outside `shard_map`)."""
    aval = jax.typeof(leaf)
    varying = getattr(aval, "vma", None)  # the attribute's name before JAX 0.10
    return frozenset(aval.manual_axis_type.varying if varying is None else varying)


def varying_like(tree: Any, reference: Any) -> Any:
    """`tree` with each leaf marked varying over every axis that a leaf of `tree` or of the
    pytree `reference` varies over; unchanged outside `shard_map`."""
    leaves = jax.tree.leaves((tree, reference))
    axes = frozenset().union(*(varying_axes(leaf) for leaf in leaves))

    def mark(leaf):
        missing = tuple(sorted(axes - varying_axes(leaf)))
        return jax.lax.pcast(leaf, missing, to="varying") if missing else leaf

    return jax.tree.map(mark, tree)
