"""Typed (heterogeneous) graphs: the `TypedGraph` pytree, per-set host tools, typed blocks.

A `TypedGraph` has GraphCast's layout: a `Context`, node sets by name (`NodeSet`) and edge sets
by `EdgeSetKey(name, (sender set, receiver set))` (`EdgeSet`). Modules: `types` (the pytree),
`batching` (batch / unbatch), `padding` (padding to a budget, masks per set), `sizes` and
`budgets` (budgets per set, buckets, tight budgets, fit-or-skip), `validation` (host and
checked `jit`), `conversions` (`GraphsTuple`, PyG's `HeteroData`, networkx), `message_passing`
(typed graph network, `hetero_conv`, R-GCN over edge sets) and `parallel` (per-device
batches). Host tools use NumPy; the masks and the message passing are jittable. The Flax
modules live in `gnkit.nn` (`TypedGraphNetwork`, `HeteroConv`, `to_hetero`, `TypedRGCN`).
"""

from gnkit.typed_graph.batching import batch, unbatch
from gnkit.typed_graph.budgets import BucketPolicy, FitOrSkip, batch_stream, tight_budget
from gnkit.typed_graph.conversions import (
    from_graphs_tuple,
    from_hetero_data,
    from_networkx,
    to_graphs_tuple,
    to_hetero_data,
    to_networkx,
)
from gnkit.typed_graph.message_passing import (
    edge_set_graph,
    hetero_conv,
    rgcn,
    typed_graph_network,
)
from gnkit.typed_graph.padding import edge_mask, graph_mask, node_mask, pad_to_budget, unpad
from gnkit.typed_graph.parallel import device_batches
from gnkit.typed_graph.sizes import Budget, sizes_of
from gnkit.typed_graph.types import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph
from gnkit.typed_graph.validation import check_typed_graph, checked, validate

__all__ = [
    "BucketPolicy",
    "Budget",
    "Context",
    "EdgeSet",
    "EdgeSetKey",
    "FitOrSkip",
    "NodeSet",
    "TypedGraph",
    "batch",
    "batch_stream",
    "check_typed_graph",
    "checked",
    "device_batches",
    "edge_mask",
    "edge_set_graph",
    "from_graphs_tuple",
    "from_hetero_data",
    "from_networkx",
    "graph_mask",
    "hetero_conv",
    "node_mask",
    "pad_to_budget",
    "rgcn",
    "sizes_of",
    "tight_budget",
    "to_graphs_tuple",
    "to_hetero_data",
    "to_networkx",
    "typed_graph_network",
    "unbatch",
    "unpad",
    "validate",
]
