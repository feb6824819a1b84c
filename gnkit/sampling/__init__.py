"""Fixed-shape sampling of graphs too large for one step. Host NumPy.

A `CSRGraph` stores each node's incoming edges (sorted by time where there is time). On it,
`NeighborSampler` draws multi-hop neighbourhoods of seed nodes (disjoint trees per seed, or one
shared deduplicated subgraph; temporal with no sampled node or edge later than its seed),
`LinkNeighborSampler` the neighbourhoods of edges and uniform negatives, and `khop_subgraph` the
induced k-hop subgraph of seeds. Each returns a `SampledSubgraph`: a `GraphsTuple` padded to a
budget fixed by the fanouts and batch size (so a jitted step compiles once), seeds in its first
rows, with every row's id in the source graph. `prefetch` / `prefetch_per_device` make batches
ahead of the step on threads, one per device for data parallelism. `TypedNeighborSampler` samples
a `TypedGraph` with fanouts per edge set, into a padded `TypedGraph`.
"""

from gnkit.sampling.csr import CSRGraph
from gnkit.sampling.expansion import pair_keys
from gnkit.sampling.khop import khop_subgraph
from gnkit.sampling.link import LinkNeighborSampler, LinkSample
from gnkit.sampling.neighbor import NeighborSampler, tree_sizes
from gnkit.sampling.one_hop import sample_one_hop
from gnkit.sampling.prefetch import Prefetcher, prefetch, prefetch_per_device
from gnkit.sampling.subgraph import SampledSubgraph
from gnkit.sampling.typed import TypedNeighborSampler, TypedSample

__all__ = [
    "CSRGraph",
    "LinkNeighborSampler",
    "LinkSample",
    "NeighborSampler",
    "Prefetcher",
    "SampledSubgraph",
    "TypedNeighborSampler",
    "TypedSample",
    "khop_subgraph",
    "pair_keys",
    "prefetch",
    "prefetch_per_device",
    "sample_one_hop",
    "tree_sizes",
]
