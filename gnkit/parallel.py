"""Scale-out: data-parallel training over devices and hosts, and edge-sharded message passing.

Data parallelism. The host splits a list of graphs into one padded batch per device, keeping whole
graphs together and balancing nodes and edges (`device_batches`); every device batch gets the same
padded shape, rounded by a `BucketPolicy`. `shard_device_batches` (or `shard_batch` for plain arrays)
puts them on the devices in one of two layouts: stacked on a leading device axis for `jax.pmap`
(mode `'pmap'`), or one global array sharded over a `Mesh` axis for `jax.jit` (mode `'mesh'`, the
style current JAX recommends). `make_train_step` builds the step for `'single'`, `'pmap'` or
`'mesh'`: parameters are replicated, each device differentiates its own batch and the gradients
are summed across devices, so one step equals a single-device step on the union of the batches.
On many hosts, call `initialize` first and give each process its part of the data with
`process_shard`; the same steps then reduce across every device of every process.

Edge sharding, for one graph too large for one device. `shard_edges` cuts the edges into equal
contiguous chunks, one per device; nodes and globals are replicated. `edge_sharded` runs a model
built from the ordinary blocks (`gnkit.blocks`, `gnkit.models`, ...) on it under `shard_map`,
provided the model's edge reductions are `sharded_aggregator`s and its attention softmax is a
`sharded_softmax`: they reduce their own chunk, then combine the partial results across devices
(`psum` / `pmax`), and only where the input actually varies across devices, so a node-to-global
reduction of replicated nodes stays local. An edge reduction left unsharded is caught at trace time:
its output varies across devices, which the replicated output spec rejects.

Host functions use NumPy; steps and model functions are jittable.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from gnkit import aggregators, segment
from gnkit.batching import BucketPolicy, batch_np, pad_with_graphs
from gnkit.graph import GraphsTuple, num_edges, num_graphs, num_nodes

MODES = ("single", "pmap", "mesh")
DATA_AXIS = "data"
EDGE_AXIS = "edges"

tree_map = jax.tree_util.tree_map


# ----------------------------------------------------------------------------------------------
# meshes and placement


def make_mesh(axis_name: str = DATA_AXIS, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis `Mesh` named `axis_name` over `devices` (default: all devices of all processes)."""
    return Mesh(np.asarray(jax.devices() if devices is None else devices), (axis_name,))


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")


def _stacked_sharding(axis_name: str) -> NamedSharding:
    """The layout `pmap` takes: leading axis over this process's devices."""
    return NamedSharding(make_mesh(axis_name, jax.local_devices()), P(axis_name))


def replicate(tree: Any, mode: str, mesh: Mesh | None = None, axis_name: str = DATA_AXIS) -> Any:
    """Put parameters (or optimiser state) on the devices as `make_train_step(mode)` expects. Host.

    'single': on the default device. 'pmap': one copy per local device, stacked on a new leading
    axis `[D_local, ...]`. 'mesh': one global array replicated over `mesh` (default: all devices).
    On many hosts every process must pass the same values.
    """
    _check_mode(mode)
    if mode == "single":
        return jax.device_put(tree)
    if mode == "pmap":
        sharding, count = _stacked_sharding(axis_name), jax.local_device_count()
        return tree_map(
            lambda x: jax.device_put(np.broadcast_to(x, (count,) + np.shape(x)), sharding), tree
        )
    sharding = NamedSharding(mesh or make_mesh(axis_name), P())
    return tree_map(lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree)


def unreplicate(tree: Any, mode: str) -> Any:
    """One copy of a replicated tree: drops the leading device axis for 'pmap', else unchanged.

    Stays on the device (no host transfer); use it before evaluating or saving a 'pmap' state.
    """
    _check_mode(mode)
    return tree_map(lambda x: x[0], tree) if mode == "pmap" else tree


def shard_batch(batch: Any, mode: str, mesh: Mesh | None = None, axis_name: str = DATA_AXIS) -> Any:
    """Split a batch along its leading axis over this process's devices and put it there. Host.

    Every leaf is `[B, ...]` with `B` divisible by the local device count `D`. 'single': the batch
    as is, on the default device. 'pmap': `[D, B / D, ...]`, device `i` holding row `i`. 'mesh':
    one global array `[B * process_count, ...]` sharded over `mesh`'s axis, each process
    contributing its own `B` rows. The transfer happens here, not inside the step.
    """
    _check_mode(mode)
    if mode == "single":
        return jax.device_put(batch)
    count = jax.local_device_count()
    for leaf in jax.tree_util.tree_leaves(batch):
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] % count:
            raise ValueError(
                f"shard_batch needs leaves [B, ...] with B divisible by the {count} local "
                f"devices; got a leaf of shape {np.shape(leaf)}."
            )
    if mode == "pmap":
        sharding = _stacked_sharding(axis_name)
        return tree_map(
            lambda x: jax.device_put(np.reshape(x, (count, -1) + np.shape(x)[1:]), sharding),
            batch,
        )
    sharding = NamedSharding(mesh or make_mesh(axis_name), P(axis_name))
    return tree_map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
    )


def shard_device_batches(
    batches: Sequence[Any], mode: str, mesh: Mesh | None = None, axis_name: str = DATA_AXIS
) -> Any:
    """Put one batch per local device (e.g. from `device_batches`) on the devices. Host.

    All batches must have the same structure and shapes. 'single' takes exactly one batch.
    'pmap' stacks them, leaves `[D, ...]`; 'mesh' concatenates them into global arrays
    `[D_total * n, ...]` sharded over `mesh`'s axis (for a `GraphsTuple`: nodes, edges, indices
    and counts all concatenated, each device's indices local to its own block).
    """
    _check_mode(mode)
    expected = 1 if mode == "single" else jax.local_device_count()
    if len(batches) != expected:
        raise ValueError(f"mode {mode!r} needs {expected} batches here, got {len(batches)}.")
    shapes = [tree_map(np.shape, batch) for batch in batches]
    if any(shape != shapes[0] for shape in shapes):
        raise ValueError(f"device batches differ in structure or shape: {shapes}")
    joined = tree_map(lambda *leaves: np.concatenate([np.asarray(x) for x in leaves]), *batches)
    return shard_batch(joined, mode, mesh, axis_name)


# ----------------------------------------------------------------------------------------------
# per-device graph batches


def split_graphs(n_node: Sequence[int], n_edge: Sequence[int], num_shards: int) -> list[np.ndarray]:
    """Assign whole graphs to `num_shards` shards, balancing nodes and edges. Host.

    `n_node`, `n_edge`: the size of each graph, `[G]`. Largest graphs first, each goes to the
    shard where it raises the larger of the node and edge load (relative to the mean) the least;
    ties go to the shard with fewer graphs, then the lower index. Deterministic. Returns each
    shard's graph indices, ascending (so each shard keeps the input order).
    """
    n_node, n_edge = np.asarray(n_node, np.int64), np.asarray(n_edge, np.int64)
    node_scale = max(n_node.sum() / num_shards, 1.0)
    edge_scale = max(n_edge.sum() / num_shards, 1.0)
    loads = np.zeros((num_shards, 3))
    members: list[list[int]] = [[] for _ in range(num_shards)]
    for index in np.argsort(-(n_node / node_scale + n_edge / edge_scale), kind="stable"):
        grown = loads[:, :2] + (n_node[index] / node_scale, n_edge[index] / edge_scale)
        shard = int(np.lexsort((np.arange(num_shards), loads[:, 2], grown.max(axis=1)))[0])
        loads[shard] += (n_node[index] / node_scale, n_edge[index] / edge_scale, 1)
        members[shard].append(int(index))
    return [np.sort(np.asarray(group, np.int64)) for group in members]


def device_batches(
    graphs: Sequence[GraphsTuple], num_devices: int, policy: BucketPolicy | None = None
) -> list[GraphsTuple]:
    """One padded batch per device from a list of graphs, all with the same padded shape. Host.

    The graphs are divided by `split_graphs`, batched with `batch_np` and padded with
    `pad_with_graphs` to the largest device batch plus one padding node and graph, rounded up by
    `policy.round` when a policy is given (so a stream of steps compiles a handful of times).
    Needs at least `num_devices` graphs. Pass the result to `shard_device_batches`.
    """
    if len(graphs) < num_devices:
        raise ValueError(f"{len(graphs)} graphs cannot fill {num_devices} devices.")
    sizes = [(int(np.sum(g.n_node)), num_edges(g)) for g in graphs]
    shards = split_graphs([s[0] for s in sizes], [s[1] for s in sizes], num_devices)
    batches = [batch_np([graphs[i] for i in shard]) for shard in shards]
    n_node = max(num_nodes(b) for b in batches)
    n_edge = max(num_edges(b) for b in batches)
    n_graph = max(num_graphs(b) for b in batches)
    budget = policy.round(n_node, n_edge, n_graph) if policy else (n_node + 1, n_edge, n_graph + 1)
    return [pad_with_graphs(b, *budget) for b in batches]


def iterate_device_batches(
    graphs: Iterable[GraphsTuple],
    graphs_per_step: int,
    num_devices: int,
    policy: BucketPolicy | None = None,
) -> Iterator[list[GraphsTuple]]:
    """Stream of `device_batches`, one list per step of `graphs_per_step` graphs. Host generator.

    A last chunk with fewer graphs than devices is dropped.
    """
    iterator = iter(graphs)
    while len(chunk := list(itertools.islice(iterator, graphs_per_step))) >= num_devices:
        yield device_batches(chunk, num_devices, policy)


# ----------------------------------------------------------------------------------------------
# data-parallel train step


def make_train_step(
    loss_fn: Callable[[Any, Any], Any],
    optimizer: optax.GradientTransformation,
    mode: str = "single",
    *,
    mesh: Mesh | None = None,
    axis_name: str = DATA_AXIS,
    weight_fn: Callable[[Any], jax.Array] | None = None,
    has_aux: bool = False,
    donate: bool = True,
) -> Callable[[Any, Any, Any], tuple[Any, Any, dict[str, jax.Array]]]:
    """A compiled `step(params, opt_state, batch) -> (params, opt_state, metrics)`.

    `loss_fn(params, batch)` returns the scalar loss of one device's batch, or `(loss, metrics)`
    with `has_aux` (metrics a dict of arrays). `metrics` is `{"loss": loss, **metrics}`.

    Modes: 'single' is `jit` on one device. 'pmap' is `jax.pmap` over the local devices: params and
    opt_state from `replicate(..., 'pmap')`, batch from `shard_batch` / `shard_device_batches`,
    outputs with a leading device axis (`unreplicate` gives one copy). 'mesh' is `jit` of a
    `shard_map` over `mesh` (default: all devices): params replicated, batch sharded, so each
    device runs `loss_fn` on its own block (graph indices stay local, no gather across devices).

    Across devices the loss and metrics are weighted means, the weight of a device being
    `weight_fn(batch)` (e.g. its number of real graphs) or 1; gradients are those of that mean,
    summed with one all-reduce. With a `loss_fn` that averages over real examples and `weight_fn`
    counting them, a step equals a single-device step on the union of the device batches.
    `donate` reuses the input params and opt_state buffers for the outputs.
    """
    _check_mode(mode)
    donate_argnums = (0, 1) if donate else ()

    def loss_and_metrics(params, batch):
        out = loss_fn(params, batch)
        return out if has_aux else (out, {})

    def update(params, opt_state, grads):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    if mode == "single":

        def single_step(params, opt_state, batch):
            (loss, metrics), grads = jax.value_and_grad(loss_and_metrics, has_aux=True)(
                params, batch
            )
            params, opt_state = update(params, opt_state, grads)
            return params, opt_state, {"loss": loss, **metrics}

        return jax.jit(single_step, donate_argnums=donate_argnums)

    def device_step(params, opt_state, batch):
        weight = 1.0 if weight_fn is None else weight_fn(batch)
        share = weight / jax.lax.psum(weight, axis_name)

        def weighted(local_params):
            loss, metrics = loss_and_metrics(local_params, batch)
            return loss * share, metrics

        local_params = jax.lax.pcast(params, axis_name, to="varying")
        (loss, metrics), grads = jax.value_and_grad(weighted, has_aux=True)(local_params)
        grads = jax.lax.psum(grads, axis_name)
        metrics = tree_map(lambda m: jax.lax.psum(m * share, axis_name), metrics)
        params, opt_state = update(params, opt_state, grads)
        return params, opt_state, {"loss": jax.lax.psum(loss, axis_name), **metrics}

    if mode == "pmap":
        return jax.pmap(device_step, axis_name=axis_name, donate_argnums=donate_argnums)
    sharded_step = jax.shard_map(
        device_step,
        mesh=mesh or make_mesh(axis_name),
        in_specs=(P(), P(), P(axis_name)),
        out_specs=(P(), P(), P()),
    )
    return jax.jit(sharded_step, donate_argnums=donate_argnums)


# ----------------------------------------------------------------------------------------------
# many hosts


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return None if value is None else int(value)


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids: int | Sequence[int] | None = None,
    cpu_collectives: str | None = "gloo",
    **kwargs: Any,
) -> tuple[int, int]:
    """Start `jax.distributed` and return `(process_index, process_count)`. Host.

    Each argument left None is read from `JAX_COORDINATOR_ADDRESS` (`host:port` of process 0),
    `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID`; still None, JAX detects it on Slurm, Open MPI, Cloud
    TPU and Kubernetes. `cpu_collectives` ('gloo' or 'mpi', None to leave JAX's default) lets CPU
    devices reduce across processes; it does not affect GPU or TPU. Other keyword arguments go to
    `jax.distributed.initialize`. Call before any other JAX call; a second call does nothing.
    """
    if jax.distributed.is_initialized():
        return jax.process_index(), jax.process_count()
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    jax.distributed.initialize(
        coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS"),
        num_processes if num_processes is not None else _env_int("JAX_NUM_PROCESSES"),
        process_id if process_id is not None else _env_int("JAX_PROCESS_ID"),
        local_device_ids=local_device_ids,
        **kwargs,
    )
    return jax.process_index(), jax.process_count()


def process_shard(
    data: Sequence[Any], process_index: int | None = None, process_count: int | None = None
) -> Sequence[Any]:
    """This process's contiguous part of `data` (a list, array, file list...): `data[start:stop]`.

    Parts are disjoint, cover `data`, and differ in length by at most one; only this process's
    part is sliced out, so a lazily loading sequence reads nothing else. Defaults: this process
    and the process count of `jax.distributed`. Host.
    """
    index = jax.process_index() if process_index is None else process_index
    count = jax.process_count() if process_count is None else process_count
    return data[index * len(data) // count : (index + 1) * len(data) // count]


# ----------------------------------------------------------------------------------------------
# edge-sharded message passing


def _varies(axis_name: str, *arrays: jax.Array) -> bool:
    """Whether any array holds different values on different devices of `axis_name`."""
    return any(axis_name in jax.typeof(x).mat.varying for x in arrays)


def _column(values: jax.Array, like: jax.Array) -> jax.Array:
    return values.reshape(values.shape + (1,) * (like.ndim - values.ndim)).astype(like.dtype)


def _needs_count(num_segments: int | None) -> int:
    if num_segments is None:
        raise ValueError("sharded reductions need a static num_segments (ids differ per shard).")
    return num_segments


def _sharded_sum(axis_name: str):
    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        n = _needs_count(num_segments)
        sums = segment.segment_sum(data, segment_ids, n, indices_are_sorted)
        return jax.lax.psum(sums, axis_name) if _varies(axis_name, data, segment_ids) else sums

    return aggregate


def _sharded_mean(axis_name: str):
    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        n = _needs_count(num_segments)
        sums = segment.segment_sum(data, segment_ids, n, indices_are_sorted)
        counts = segment.segment_count(segment_ids, n, indices_are_sorted)
        if _varies(axis_name, data, segment_ids):
            sums, counts = jax.lax.psum((sums, counts), axis_name)
        return sums / _column(jnp.maximum(counts, 1), sums)

    return aggregate


def _is_lowest(values: jax.Array) -> jax.Array:
    """Where `values` equal the identity of a max reduction (-inf, or the lowest integer)."""
    if jnp.issubdtype(values.dtype, jnp.floating):
        return jnp.isneginf(values)
    return values == jnp.iinfo(values.dtype).min


def _sharded_max(axis_name: str, empty_value: float | None):
    """Max across shards; differentiable: the gradient goes to the shard(s) holding the max."""

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        n = _needs_count(num_segments)
        maxima = segment.segment_max(data, segment_ids, n, indices_are_sorted)
        if _varies(axis_name, data, segment_ids):
            top = jax.lax.pmax(jax.lax.stop_gradient(maxima), axis_name)
            if jnp.issubdtype(maxima.dtype, jnp.floating):
                holders = maxima == top
                kept = jnp.where(holders, maxima, jnp.zeros_like(maxima))
                maxima, count = jax.lax.psum((kept, holders.astype(maxima.dtype)), axis_name)
                maxima = jnp.where(jnp.isneginf(top), top, maxima / count)
            else:
                maxima = top
        if empty_value is None:
            return maxima
        return jnp.where(_is_lowest(maxima), jnp.asarray(empty_value, maxima.dtype), maxima)

    return aggregate


def _sharded_min(axis_name: str, empty_value: float | None):
    largest = _sharded_max(axis_name, None if empty_value is None else -empty_value)

    def aggregate(data, segment_ids, num_segments=None, indices_are_sorted=False):
        return -largest(-data, segment_ids, num_segments, indices_are_sorted)

    return aggregate


_SHARDED_FORMS = {
    "sum": lambda axis: _sharded_sum(axis),
    "mean": lambda axis: _sharded_mean(axis),
    "max": lambda axis: _sharded_max(axis, 0.0),
    "min": lambda axis: _sharded_min(axis, 0.0),
    "jraph_max": lambda axis: _sharded_max(axis, None),
    "jraph_min": lambda axis: _sharded_min(axis, None),
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

    `aggregator` is a name ('sum', 'mean', 'max', 'min') or one of gnkit's / jraph's segment
    functions for those (`segment_sum`, `safe_segment_max`, `jax.ops.segment_max`, ...). The
    result has the aggregator signature `(data [E, ...], segment_ids [E], num_segments,
    indices_are_sorted=False) -> [S, ...]` and the same values as the original (safe forms: 0 on
    empty segments; jraph's `segment_max` / `segment_min`: -inf / +inf). Inside `edge_sharded`,
    when `data` or `segment_ids` differ across the devices of `axis_name` (edge data), it reduces
    the local chunk and combines across devices: sum `psum`, mean `psum` of sums and counts, max
    and min `pmax` / `pmin` (gradients to the holding shard). On replicated data, and outside
    `shard_map`, it is the plain reduction. `num_segments` must be static.
    """
    name = _KNOWN_FUNCTIONS.get(aggregator) if callable(aggregator) else aggregator
    if name not in _SHARDED_FORMS:
        raise ValueError(
            f"no edge-sharded form of aggregator {aggregator!r}; supported: 'sum', 'mean', "
            "'max', 'min' and gnkit's / jraph's segment_sum, segment_mean, segment_max, "
            "segment_min (and their safe_ forms)."
        )
    return _SHARDED_FORMS[name](axis_name)


def sharded_softmax(axis_name: str = EDGE_AXIS) -> Callable:
    """An edge-sharded `safe_segment_softmax`: `(logits [E, ...], segment_ids [E], num_segments,
    indices_are_sorted=False, mask=None) -> [E, ...]`. Jittable.

    Same values as `gnkit.segment.safe_segment_softmax` (invalid or masked logits get 0, an empty
    segment never gives NaN). On edge-sharded logits the segment maximum is combined with `pmax`
    and the sum of exponentials with `psum`, so each weight is normalised over the whole segment,
    across devices. Pass it as a GAT's softmax / jraph's `attention_normalize_fn`.
    """

    def softmax(logits, segment_ids, num_segments=None, indices_are_sorted=False, mask=None):
        n = _needs_count(num_segments)
        partial = _varies(axis_name, logits, segment_ids)
        valid = ~jnp.isneginf(logits)
        if mask is not None:
            valid = valid & _column(jnp.asarray(mask, bool), logits).astype(bool)
        maxima = segment.segment_max(
            jnp.where(valid, logits, -jnp.inf), segment_ids, n, indices_are_sorted
        )
        maxima = jax.lax.stop_gradient(maxima)
        if partial:
            maxima = jax.lax.pmax(maxima, axis_name)
        maxima = jnp.where(jnp.isneginf(maxima), 0.0, maxima)
        exps = jnp.where(valid, jnp.exp(jnp.where(valid, logits - maxima[segment_ids], 0.0)), 0.0)
        totals = segment.segment_sum(exps, segment_ids, n, indices_are_sorted)
        if partial:
            totals = jax.lax.psum(totals, axis_name)
        return exps / jnp.where(totals > 0, totals, 1.0)[segment_ids]

    return softmax


def edge_sharded_specs(axis_name: str = EDGE_AXIS) -> GraphsTuple:
    """The `PartitionSpec` of each field of an edge-sharded graph: edges, senders, receivers and
    per-shard `n_edge` split over `axis_name`; nodes, globals and `n_node` replicated."""
    split, whole = P(axis_name), P()
    return GraphsTuple(
        nodes=whole, edges=split, receivers=split, senders=split, globals=whole,
        n_node=whole, n_edge=split,
    )


def shard_edges(graph: GraphsTuple, mesh: Mesh, axis_name: str = EDGE_AXIS) -> GraphsTuple:
    """Split one (batched) graph's edges into equal contiguous chunks over `mesh`. Host.

    With `D` devices on `axis_name` and `E` edges (`E % D == 0`; pad the graph with
    `pad_with_graphs` to a multiple of `D` edges first, padding edges then belong to the padding
    graph), device `k` gets edges `k E / D .. (k + 1) E / D - 1` (receiver-sorted edges stay
    sorted in each chunk) and a full copy of nodes, globals and `n_node`. `n_edge` becomes the
    per-chunk edge count of each graph, `[D * G]`, so each device sees a valid graph of its own
    edges. Returns device arrays laid out as `edge_sharded_specs`.
    """
    count = mesh.shape[axis_name]
    total = num_edges(graph)
    if total % count:
        raise ValueError(
            f"{total} edges do not split evenly over {count} devices; pad the graph to a "
            f"multiple of {count} edges first (gnkit.batching.pad_with_graphs)."
        )
    graph = jax.device_get(graph)
    n_edge = np.asarray(graph.n_edge)
    edge_graph = np.repeat(np.arange(len(n_edge)), n_edge)
    per_chunk = [
        np.bincount(chunk, minlength=len(n_edge)) for chunk in np.split(edge_graph, count)
    ]
    graph = graph._replace(n_edge=np.concatenate(per_chunk).astype(n_edge.dtype))
    shardings = tree_map(lambda spec: NamedSharding(mesh, spec), edge_sharded_specs(axis_name))
    return jax.tree_util.tree_map(
        lambda sharding, field: tree_map(lambda x: jax.device_put(x, sharding), field),
        shardings,
        graph,
        is_leaf=lambda x: isinstance(x, NamedSharding),
    )


def edge_sharded(
    fn: Callable[[Any, GraphsTuple], Any],
    mesh: Mesh,
    axis_name: str = EDGE_AXIS,
    out_specs: Any = None,
) -> Callable[[Any, GraphsTuple], Any]:
    """Run `fn(params, graph)` on an edge-sharded graph (from `shard_edges`). Jittable.

    `fn` is an ordinary model function built from gnkit's blocks whose edge reductions are
    `sharded_aggregator(..., axis_name)` and whose attention softmax is `sharded_softmax(
    axis_name)`. It runs under `shard_map`: each device sees its chunk of edges, all nodes and
    globals, and `params` replicated. `out_specs` describes the output (default: a graph laid out
    as `edge_sharded_specs`; `P()` for a replicated array such as node features or a loss).
    Gradients with respect to `params` are summed over devices by `shard_map` itself.
    """
    specs = edge_sharded_specs(axis_name)
    return jax.shard_map(
        fn,
        mesh=mesh,
        in_specs=(P(), specs),
        out_specs=specs if out_specs is None else out_specs,
    )
