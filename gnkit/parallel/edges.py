"""Edge-sharded message passing: one graph's edges split over devices, nodes replicated.

`split_edges` / `shard_edges` cut the edges into equal contiguous chunks, one per device of a mesh
axis (default name `EDGE_AXIS`); nodes, globals and `n_node` are copied to every device.
`edge_sharded(fn, mesh)` runs a model function on that layout under `shard_map`. The model is the
ordinary one, built from gnkit's blocks, with its edge reductions replaced by
`sharded_aggregator(...)` and its attention softmax by `sharded_softmax()`. Each reduces its own
chunk and then combines partial results across devices (`psum`, `pmax`), but only when its input
varies across devices (JAX tracks that under `shard_map`): a reduction of replicated node features
into globals stays local, so one sharded aggregator can be passed everywhere. A reduction left
unsharded is caught at trace time, because its output varies across devices and the replicated
output spec rejects that. Jittable and differentiable.

The GCN, GIN and attention blocks (`gnkit.convolutions`, `gnkit.attention`) and their `gnkit.nn`
layers take these as `aggregator=` (and `softmax=`). A GCN adds its self-edge term after the
reduction, so `add_self_edges` works sharded; attention layers would append their self-edges
once per device and raise instead: add them on the host before sharding
(`gnkit.batching.add_self_edges`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from gnkit import aggregators, segment
from gnkit.graph import GraphsTuple, num_edges

EDGE_AXIS = "edges"

tree_map = jax.tree_util.tree_map


def _varies(axis_name: str, *arrays: jax.Array) -> bool:
    """Whether any of the arrays holds different values on the devices of `axis_name`."""
    return any(axis_name in jax.typeof(x).mat.varying for x in arrays)


def _column(values: jax.Array, like: jax.Array) -> jax.Array:
    """A per-segment `[S]` array reshaped to broadcast against `like` `[S, ...]`."""
    return values.reshape(values.shape + (1,) * (like.ndim - values.ndim)).astype(like.dtype)


def _static(num_segments: int | None) -> int:
    if num_segments is None:
        raise ValueError("sharded reductions need a static num_segments (shards see other ids).")
    return num_segments


def _is_lowest(values: jax.Array) -> jax.Array:
    """Where `values` equal the identity of a max reduction (-inf, or the lowest integer)."""
    if jnp.issubdtype(values.dtype, jnp.floating):
        return jnp.isneginf(values)
    return values == jnp.iinfo(values.dtype).min


def _sharded_sum(axis_name: str) -> Callable:
    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        sums = segment.segment_sum(data, segment_ids, _static(num_segments), indices_are_sorted)
        return jax.lax.psum(sums, axis_name) if _varies(axis_name, data, segment_ids) else sums

    return aggregate


def _sharded_mean(axis_name: str) -> Callable:
    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        count = _static(num_segments)
        sums = segment.segment_sum(data, segment_ids, count, indices_are_sorted)
        counts = segment.segment_count(segment_ids, count, indices_are_sorted)
        if _varies(axis_name, data, segment_ids):
            sums, counts = jax.lax.psum((sums, counts), axis_name)
        return sums / _column(jnp.maximum(counts, 1), sums)

    return aggregate


def _sharded_max(axis_name: str, empty_value: float | None) -> Callable:
    """Max over all shards; the gradient goes to the shard(s) holding it (split between ties)."""

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        maxima = segment.segment_max(data, segment_ids, _static(num_segments), indices_are_sorted)
        if _varies(axis_name, data, segment_ids):
            top = jax.lax.pmax(jax.lax.stop_gradient(maxima), axis_name)
            if jnp.issubdtype(maxima.dtype, jnp.floating):
                holds = maxima == top
                kept = jnp.where(holds, maxima, jnp.zeros_like(maxima))
                total, holders = jax.lax.psum((kept, holds.astype(maxima.dtype)), axis_name)
                maxima = jnp.where(jnp.isneginf(top), top, total / holders)
            else:
                maxima = top
        if empty_value is None:
            return maxima
        return jnp.where(_is_lowest(maxima), jnp.asarray(empty_value, maxima.dtype), maxima)

    return aggregate


def _sharded_min(axis_name: str, empty_value: float | None) -> Callable:
    largest = _sharded_max(axis_name, None if empty_value is None else -empty_value)

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        return -largest(-data, segment_ids, num_segments, indices_are_sorted)

    return aggregate


_SHARDED_FORMS = {
    "sum": lambda axis_name: _sharded_sum(axis_name),
    "mean": lambda axis_name: _sharded_mean(axis_name),
    "max": lambda axis_name: _sharded_max(axis_name, 0.0),
    "min": lambda axis_name: _sharded_min(axis_name, 0.0),
    "jraph_max": lambda axis_name: _sharded_max(axis_name, None),
    "jraph_min": lambda axis_name: _sharded_min(axis_name, None),
}
_KNOWN_FUNCTIONS = {
    aggregators.sum: "sum",
    segment.segment_sum: "sum",
    segment.safe_segment_sum: "sum",
    jax.ops.segment_sum: "sum",
    aggregators.mean: "mean",
    segment.segment_mean: "mean",
    segment.safe_segment_mean: "mean",
    aggregators.max: "max",
    segment.safe_segment_max: "max",
    aggregators.min: "min",
    segment.safe_segment_min: "min",
    segment.segment_max: "jraph_max",
    jax.ops.segment_max: "jraph_max",
    segment.segment_min: "jraph_min",
    jax.ops.segment_min: "jraph_min",
}


def sharded_aggregator(aggregator: str | Callable, axis_name: str = EDGE_AXIS) -> Callable:
    """The edge-sharded form of a sum, mean, max or min aggregator. Jittable.

    `aggregator` is a name ('sum', 'mean', 'max', 'min') or one of gnkit's or jraph's segment
    functions for those (`segment_sum`, `safe_segment_max`, `jax.ops.segment_max`, ...). Returns
    an aggregator `(data [E, ...], segment_ids [E], num_segments, indices_are_sorted=False) ->
    [S, ...]` with the original's values (safe forms: 0 on empty segments; jraph's `segment_max` /
    `segment_min`: -inf / +inf). When `data` or `segment_ids` vary across the devices of
    `axis_name` (edge data inside `edge_sharded`), it reduces the local chunk and combines: sum
    by `psum`, mean by `psum` of sums and counts, max and min by `pmax` / `pmin` (the gradient
    goes to the shard holding the extremum). Otherwise (replicated data, or outside `shard_map`)
    it is the plain reduction. `num_segments` must be static.
    """
    name = _KNOWN_FUNCTIONS.get(aggregator) if callable(aggregator) else aggregator
    if name not in _SHARDED_FORMS:
        raise ValueError(
            f"no edge-sharded form of aggregator {aggregator!r}; supported: 'sum', 'mean', "
            "'max', 'min', and gnkit's or jraph's segment_sum / mean / max / min and their "
            "safe_ forms."
        )
    return _SHARDED_FORMS[name](axis_name)


def sharded_softmax(axis_name: str = EDGE_AXIS) -> Callable:
    """An edge-sharded `safe_segment_softmax`. Jittable.

    `(logits [E, ...], segment_ids [E], num_segments, indices_are_sorted=False, mask=None) ->
    [E, ...]`, with the values of `gnkit.segment.safe_segment_softmax` (invalid or masked logits
    get 0; a segment without valid logits gives zeros, never NaN). On logits that vary across the
    devices of `axis_name`, the segment maximum is combined with `pmax` and the sum of
    exponentials with `psum`, so each weight is normalised over the whole segment, across
    devices. Pass it as a GAT's softmax or as jraph's `attention_normalize_fn`.
    """

    def softmax(logits, segment_ids, num_segments=None, indices_are_sorted=False, mask=None):
        count = _static(num_segments)
        partial = _varies(axis_name, logits, segment_ids)
        valid = ~jnp.isneginf(logits)
        if mask is not None:
            mask = jnp.asarray(mask, bool)
            valid = valid & mask.reshape(mask.shape + (1,) * (logits.ndim - mask.ndim))
        masked = jnp.where(valid, logits, -jnp.inf)
        maxima = segment.segment_max(masked, segment_ids, count, indices_are_sorted)
        maxima = jax.lax.stop_gradient(maxima)
        if partial:
            maxima = jax.lax.pmax(maxima, axis_name)
        maxima = jnp.where(jnp.isneginf(maxima), 0.0, maxima)
        shifted = jnp.where(valid, logits - maxima[segment_ids], 0.0)
        exps = jnp.where(valid, jnp.exp(shifted), 0.0)
        totals = segment.segment_sum(exps, segment_ids, count, indices_are_sorted)
        if partial:
            totals = jax.lax.psum(totals, axis_name)
        return exps / jnp.where(totals > 0, totals, 1.0)[segment_ids]

    return softmax


def edge_sharded_specs(axis_name: str = EDGE_AXIS) -> GraphsTuple:
    """The `PartitionSpec` of each field of an edge-sharded graph: edges, senders, receivers and
    the per-chunk `n_edge` split over `axis_name`; nodes, globals and `n_node` replicated."""
    split, whole = P(axis_name), P()
    return GraphsTuple(
        nodes=whole,
        edges=split,
        receivers=split,
        senders=split,
        globals=whole,
        n_node=whole,
        n_edge=split,
    )


def split_edges(graph: GraphsTuple, num_shards: int) -> GraphsTuple:
    """The host layout of an edge-sharded graph: `n_edge` counted per chunk. Host (NumPy).

    Chunk `k` is edges `k E / D .. (k + 1) E / D - 1` of the `E` edges (`E % D == 0` for
    `D = num_shards`; pad the graph first with `gnkit.batching.pad_with_graphs` to a multiple of
    `D` edges, the padding edges then belong to the padding graph). Receiver-sorted edges stay
    sorted within each chunk. Returns the graph with `n_edge` replaced by each chunk's edge count
    per graph, `[D * G]`; everything else is unchanged.
    """
    total = num_edges(graph)
    if total % num_shards:
        raise ValueError(
            f"{total} edges do not split evenly over {num_shards} devices; pad the graph to a "
            f"multiple of {num_shards} edges first (gnkit.batching.pad_with_graphs)."
        )
    n_edge = np.asarray(graph.n_edge)
    edge_graph = np.repeat(np.arange(len(n_edge)), n_edge)
    per_chunk = [np.bincount(c, minlength=len(n_edge)) for c in np.split(edge_graph, num_shards)]
    return graph._replace(n_edge=np.concatenate(per_chunk).astype(n_edge.dtype))


def shard_edges(graph: GraphsTuple, mesh: Mesh) -> GraphsTuple:
    """Split one (batched) graph's edges over the devices of `mesh` and put it there. Host.

    `split_edges` over `mesh`'s one axis, then device arrays laid out as `edge_sharded_specs`:
    device `k` holds chunk `k` of the edges and a copy of the nodes, globals and `n_node`.
    """
    axis_name = mesh.axis_names[0]
    host_graph = split_edges(jax.device_get(graph), mesh.shape[axis_name])
    return jax.tree_util.tree_map(
        lambda spec, field: tree_map(lambda x: jax.device_put(x, NamedSharding(mesh, spec)), field),
        edge_sharded_specs(axis_name),
        host_graph,
        is_leaf=lambda x: isinstance(x, P),
    )


def edge_sharded(
    fn: Callable[[Any, GraphsTuple], Any], mesh: Mesh, out_specs: Any = None
) -> Callable[[Any, GraphsTuple], Any]:
    """Run `fn(params, graph)` on an edge-sharded graph from `shard_edges`. Jittable.

    `fn` is an ordinary model function built from gnkit's blocks whose edge reductions are
    `sharded_aggregator(..., axis_name)` and whose attention softmax is `sharded_softmax(
    axis_name)`, `axis_name` being `mesh`'s axis. Under `shard_map` each device sees its chunk of
    edges, all nodes and globals, and `params` replicated. `out_specs` describes the output
    (default: a graph laid out as `edge_sharded_specs`; `P()` for a replicated array such as
    node features or a loss). Gradients with respect to `params` are summed over devices.
    """
    specs = edge_sharded_specs(mesh.axis_names[0])
    return jax.shard_map(
        fn, mesh=mesh, in_specs=(P(), specs), out_specs=specs if out_specs is None else out_specs
    )
