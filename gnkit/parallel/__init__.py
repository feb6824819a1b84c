"""Scale-out: data-parallel training over devices and hosts, and edge-sharded message passing.

Data parallelism (`strategy`, `batches`, `placement`, `step`). A strategy object,
`data_parallel('mesh' | 'pmap' | 'single')`, is the one place where the modes differ: it
replicates parameters, lays batches out over the devices and builds the step ('mesh', the style
current JAX recommends: one global array per leaf over a `Mesh` axis and `jit` of a `shard_map`;
'single' is its one-device case; 'pmap': a leading device axis and `jax.pmap`). `placement` and
`step` offer the same operations as functions of a mode string. The host splits a list of graphs
into one padded batch per device, whole graphs kept together, nodes and edges balanced, one padded
shape for all (`device_batches`); `shard_device_batches` (or `shard_batch` for plain arrays) puts
them on the devices. Each device differentiates its own batch and the gradients are summed across
devices, so one step equals a single-device step on the union of the batches.

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
from gnkit.parallel.strategy import MeshStrategy, PmapStrategy, Strategy, data_parallel

__all__ = [
    "DATA_AXIS",
    "EDGE_AXIS",
    "MODES",
    "MeshStrategy",
    "PmapStrategy",
    "Strategy",
    "data_parallel",
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
