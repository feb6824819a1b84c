"""Host-side batching: batch / unbatch, padding and masks, bucketed budgets and conversions.

Anything whose output shape depends on the values of `n_node` / `n_edge` runs on the host in
NumPy, with no device round trip: `batch_np`, `unbatch_np`, `pad_with_graphs`,
`unpad_with_graphs`, the streaming batchers and the conversions. The jraph names keep jraph's
meaning, so `import gnkit as jraph` works: `batch` and `unbatch` return `jnp` arrays (`batch` is
jittable, as in jraph), the padding masks and padding counts are jittable `jnp` functions, and
errors start with jraph's text.

Modules: `batch_unbatch` (batch / unbatch), `padding` (padding with graphs, padding counts and
masks), `bucketing` (`BucketPolicy`, `pad_to_bucket`, `dynamically_batch`, `batch_stream`) and
`conversions` (edge order, self-edges, complete graphs, edge lists, dense adjacency, networkx).
Every public name is re-exported here.
"""

from gnkit.batching.batch_unbatch import batch, batch_np, unbatch, unbatch_np
from gnkit.batching.bucketing import BucketPolicy, batch_stream, dynamically_batch, pad_to_bucket
from gnkit.batching.conversions import (
    add_self_edges,
    dense_adjacency,
    edge_list,
    from_dense_adjacency,
    from_edge_list,
    from_networkx,
    fully_connected_graph,
    get_fully_connected_graph,
    sort_edges_by_receiver,
    to_networkx,
)
from gnkit.batching.padding import (
    get_edge_padding_mask,
    get_graph_padding_mask,
    get_node_padding_mask,
    get_number_of_padding_with_graphs_edges,
    get_number_of_padding_with_graphs_graphs,
    get_number_of_padding_with_graphs_nodes,
    pad_with_graphs,
    unpad_with_graphs,
    with_zero_out_padding_outputs,
    zero_out_padding,
)

__all__ = [
    "BucketPolicy",
    "add_self_edges",
    "batch",
    "batch_np",
    "batch_stream",
    "dense_adjacency",
    "dynamically_batch",
    "edge_list",
    "from_dense_adjacency",
    "from_edge_list",
    "from_networkx",
    "fully_connected_graph",
    "get_edge_padding_mask",
    "get_fully_connected_graph",
    "get_graph_padding_mask",
    "get_node_padding_mask",
    "get_number_of_padding_with_graphs_edges",
    "get_number_of_padding_with_graphs_graphs",
    "get_number_of_padding_with_graphs_nodes",
    "pad_to_bucket",
    "pad_with_graphs",
    "sort_edges_by_receiver",
    "to_networkx",
    "unbatch",
    "unbatch_np",
    "unpad_with_graphs",
    "with_zero_out_padding_outputs",
    "zero_out_padding",
]
