"""gnkit: graph networks in JAX.

The public API, flat. jraph 0.0.6's public names are all here with jraph's meaning, so
`import gnkit as jraph` is a migration path; gnkit's own additions sit beside them.

`import gnkit` itself imports nothing heavy: each name loads its submodule (and JAX) on first
use, and the Flax modules, `gnkit.nn` and `gnkit.nnx`, load on first use too. So the `gnkit`
command lists its demos without starting JAX, and `import gnkit` alone never imports Flax.

On Linux with glibc, `import gnkit` sets glibc's `malloc` to reuse freed memory, so XLA's CPU
steps stop page-faulting on their large buffers (`gnkit.tuning`; `GNKIT_SYSTEM_MALLOC=1` in the
environment keeps the system's settings), and adds one XLA CPU flag that leaves reductions to
XLA's own loops, several times faster for message passing's gradients on jaxlib 0.10-0.11
(`GNKIT_SYSTEM_XLA_FLAGS=1` keeps `XLA_FLAGS` as it is).
"""

import typing as _typing

from gnkit import tuning as _tuning

__version__ = "0.1.0"

_tuning.apply_default_allocator()
_tuning.apply_default_xla_flags()

# Each public name and the submodule of gnkit that defines it (what `gnkit.NAME` imports).
_ORIGIN = {
    "AggregateEdgesToGlobalsFn": "models",
    "AggregateEdgesToNodesFn": "models",
    "AggregateNodesToGlobalsFn": "models",
    "ArrayTree": "graph",
    "AttentionLogitFn": "models",
    "AttentionNormalizeFn": "models",
    "AttentionReduceFn": "models",
    "BucketPolicy": "batching",
    "DeepSets": "models",
    "EmbedEdgeFn": "models",
    "EmbedGlobalFn": "models",
    "EmbedNodeFn": "models",
    "GAT": "models",
    "GATAttentionLogitFn": "models",
    "GATAttentionQueryFn": "models",
    "GATNodeUpdateFn": "models",
    "GNUpdateEdgeFn": "models",
    "GNUpdateGlobalFn": "models",
    "GNUpdateNodeFn": "models",
    "GraphConvolution": "models",
    "GraphMapFeatures": "models",
    "GraphNetGAT": "models",
    "GraphNetwork": "models",
    "GraphsTuple": "graph",
    "TypedGraph": "typed_graph",
    "InteractionNetwork": "models",
    "InteractionUpdateEdgeFn": "models",
    "InteractionUpdateNodeFn": "models",
    "NodeFeatures": "models",
    "RelationNetwork": "models",
    "aggregate_edges_to_globals": "blocks",
    "aggregate_nodes_to_globals": "blocks",
    "aggregate_received_edges": "blocks",
    "aggregate_sent_edges": "blocks",
    "add_self_edges": "batching",
    "batch": "batching",
    "batch_np": "batching",
    "batch_stream": "batching",
    "broadcast_globals_to_edges": "blocks",
    "broadcast_globals_to_nodes": "blocks",
    "broadcast_receiver_nodes_to_edges": "blocks",
    "broadcast_sender_nodes_to_edges": "blocks",
    "check_graph": "validation",
    "checked": "validation",
    "comm_net": "blocks",
    "concatenated_args": "blocks",
    "deep_sets": "blocks",
    "dense_adjacency": "batching",
    "dynamically_batch": "batching",
    "edge_block": "blocks",
    "edge_graph_index": "graph",
    "edge_list": "batching",
    "from_dense_adjacency": "batching",
    "from_dense_batch": "graph_transformer",
    "from_edge_list": "batching",
    "from_networkx": "batching",
    "fully_connected_graph": "batching",
    "gat": "attention",
    "gcn": "convolutions",
    "get_edge_padding_mask": "batching",
    "get_fully_connected_graph": "batching",
    "get_graph_padding_mask": "batching",
    "get_node_padding_mask": "batching",
    "get_number_of_padding_with_graphs_edges": "batching",
    "get_number_of_padding_with_graphs_graphs": "batching",
    "get_number_of_padding_with_graphs_nodes": "batching",
    "gin": "convolutions",
    "gine": "convolutions",
    "global_block": "blocks",
    "graph_attention": "attention",
    "graph_independent": "blocks",
    "graph_network": "blocks",
    "graph_sage": "convolutions",
    "interaction_network": "blocks",
    "laplacian_pe": "positional",
    "masked_attention": "graph_transformer",
    "node_block": "blocks",
    "node_graph_index": "graph",
    "num_edges": "graph",
    "num_graphs": "graph",
    "num_nodes": "graph",
    "pad_to_bucket": "batching",
    "pad_with_graphs": "batching",
    "partition_softmax": "segment",
    "random_sign_flip": "positional",
    "random_walk_pe": "positional",
    "relation_network": "blocks",
    "rgcn": "convolutions",
    "safe_segment_max": "segment",
    "safe_segment_mean": "segment",
    "safe_segment_min": "segment",
    "safe_segment_normalize": "segment",
    "safe_segment_softmax": "segment",
    "safe_segment_std": "segment",
    "safe_segment_sum": "segment",
    "safe_segment_variance": "segment",
    "segment_count": "segment",
    "segment_max": "segment",
    "segment_max_or_constant": "segment",
    "segment_mean": "segment",
    "segment_min": "segment",
    "segment_min_or_constant": "segment",
    "segment_normalize": "segment",
    "segment_softmax": "segment",
    "segment_sum": "segment",
    "segment_variance": "segment",
    "sort_edges_by_receiver": "batching",
    "to_dense_batch": "graph_transformer",
    "to_networkx": "batching",
    "unbatch": "batching",
    "unbatch_np": "batching",
    "unpad_with_graphs": "batching",
    "validate": "validation",
    "with_zero_out_padding_outputs": "batching",
    "within_graph_attention": "graph_transformer",
    "zero_out_padding": "batching",
}
# Subpackages that are public names themselves.
_SUBPACKAGES = ("aggregators", "nn", "nnx", "parallel", "typed_graph")
# Submodules reachable as attributes (`gnkit.batching`), as when they were imported eagerly.
_SUBMODULES = frozenset(_ORIGIN.values()) | frozenset(_SUBPACKAGES)

__all__ = [*_ORIGIN, *_SUBPACKAGES]

if _typing.TYPE_CHECKING:  # the same names for type checkers and IDEs (a test keeps them equal)
    from gnkit import aggregators, nn, nnx, parallel, typed_graph  # noqa: F401
    from gnkit.attention import (  # noqa: F401
        gat,
        graph_attention,
    )
    from gnkit.batching import (  # noqa: F401
        BucketPolicy,
        add_self_edges,
        batch,
        batch_np,
        batch_stream,
        dense_adjacency,
        dynamically_batch,
        edge_list,
        from_dense_adjacency,
        from_edge_list,
        from_networkx,
        fully_connected_graph,
        get_edge_padding_mask,
        get_fully_connected_graph,
        get_graph_padding_mask,
        get_node_padding_mask,
        get_number_of_padding_with_graphs_edges,
        get_number_of_padding_with_graphs_graphs,
        get_number_of_padding_with_graphs_nodes,
        pad_to_bucket,
        pad_with_graphs,
        sort_edges_by_receiver,
        to_networkx,
        unbatch,
        unbatch_np,
        unpad_with_graphs,
        with_zero_out_padding_outputs,
        zero_out_padding,
    )
    from gnkit.blocks import (  # noqa: F401
        aggregate_edges_to_globals,
        aggregate_nodes_to_globals,
        aggregate_received_edges,
        aggregate_sent_edges,
        broadcast_globals_to_edges,
        broadcast_globals_to_nodes,
        broadcast_receiver_nodes_to_edges,
        broadcast_sender_nodes_to_edges,
        comm_net,
        concatenated_args,
        deep_sets,
        edge_block,
        global_block,
        graph_independent,
        graph_network,
        interaction_network,
        node_block,
        relation_network,
    )
    from gnkit.convolutions import (  # noqa: F401
        gcn,
        gin,
        gine,
        graph_sage,
        rgcn,
    )
    from gnkit.graph import (  # noqa: F401
        ArrayTree,
        GraphsTuple,
        edge_graph_index,
        node_graph_index,
        num_edges,
        num_graphs,
        num_nodes,
    )
    from gnkit.graph_transformer import (  # noqa: F401
        from_dense_batch,
        masked_attention,
        to_dense_batch,
        within_graph_attention,
    )
    from gnkit.models import (  # noqa: F401
        GAT,
        AggregateEdgesToGlobalsFn,
        AggregateEdgesToNodesFn,
        AggregateNodesToGlobalsFn,
        AttentionLogitFn,
        AttentionNormalizeFn,
        AttentionReduceFn,
        DeepSets,
        EmbedEdgeFn,
        EmbedGlobalFn,
        EmbedNodeFn,
        GATAttentionLogitFn,
        GATAttentionQueryFn,
        GATNodeUpdateFn,
        GNUpdateEdgeFn,
        GNUpdateGlobalFn,
        GNUpdateNodeFn,
        GraphConvolution,
        GraphMapFeatures,
        GraphNetGAT,
        GraphNetwork,
        InteractionNetwork,
        InteractionUpdateEdgeFn,
        InteractionUpdateNodeFn,
        NodeFeatures,
        RelationNetwork,
    )
    from gnkit.positional import (  # noqa: F401
        laplacian_pe,
        random_sign_flip,
        random_walk_pe,
    )
    from gnkit.segment import (  # noqa: F401
        partition_softmax,
        safe_segment_max,
        safe_segment_mean,
        safe_segment_min,
        safe_segment_normalize,
        safe_segment_softmax,
        safe_segment_std,
        safe_segment_sum,
        safe_segment_variance,
        segment_count,
        segment_max,
        segment_max_or_constant,
        segment_mean,
        segment_min,
        segment_min_or_constant,
        segment_normalize,
        segment_softmax,
        segment_sum,
        segment_variance,
    )
    from gnkit.typed_graph import TypedGraph  # noqa: F401
    from gnkit.validation import (  # noqa: F401
        check_graph,
        checked,
        validate,
    )


def __getattr__(name: str):
    import importlib

    if name in _ORIGIN:
        value = getattr(importlib.import_module(f"gnkit.{_ORIGIN[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"gnkit.{name}")
    else:
        raise AttributeError(f"module 'gnkit' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    dunders = {name for name in globals() if name.startswith("__")}
    return sorted(dunders | set(__all__) | _SUBMODULES)
