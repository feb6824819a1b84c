"""Scale-out: data-parallel training over devices and hosts, and edge-sharded message passing.

Data parallelism (`batches`, `placement`, `step`). The host splits a list of graphs into one padded
batch per device, whole graphs kept together, nodes and edges balanced, one padded shape for all
(`device_batches`). `shard_device_batches` (or `shard_batch` for plain arrays) puts them on the
devices in the layout of the mode: stacked on a leading device axis for `jax.pmap` ('pmap'), or
one global array sharded over a `Mesh` axis for `jax.jit` ('mesh', the style current JAX
recommends). `make_train_step(loss_fn, optimizer, mode)` builds the step for 'single', 'pmap' or
'mesh': parameters replicated (`replicate`), each device differentiates its own batch, gradients
summed across devices, so one step equals a single-device step on the union of the batches.

Many hosts (`distributed`): `initialize()` starts `jax.distributed`; `process_shard` gives each
process its part of the data; the same steps then reduce across every device of every process.

Edge sharding (`edges`), for one graph too large for one device: `shard_edges` splits its edges
over a mesh axis, nodes replicated, and `edge_sharded` runs a model built from the ordinary
blocks with `sharded_aggregator` / `sharded_softmax` in place of its edge reductions.
"""

from gnkit.parallel.batches import device_batches, iterate_device_batches, split_graphs
from gnkit.parallel.distributed import initialize, process_shard
from gnkit.parallel.edges import (
    EDGE_AXIS,
    edge_sharded,
    edge_sharded_specs,
    shard_edges,
    sharded_aggregator,
    sharded_softmax,
    split_edges,
)
from gnkit.parallel.placement import (
    DATA_AXIS,
    MODES,
    make_mesh,
    replicate,
    shard_batch,
    shard_device_batches,
    unreplicate,
)
from gnkit.parallel.step import make_train_step

__all__ = [
    "DATA_AXIS",
    "EDGE_AXIS",
    "MODES",
    "device_batches",
    "edge_sharded",
    "edge_sharded_specs",
    "initialize",
    "iterate_device_batches",
    "make_mesh",
    "make_train_step",
    "process_shard",
    "replicate",
    "shard_batch",
    "shard_device_batches",
    "shard_edges",
    "sharded_aggregator",
    "sharded_softmax",
    "split_edges",
    "split_graphs",
    "unreplicate",
]
