"""A test-only `jraph` module made of gnkit's names, so code written for jraph runs on gnkit.

`install()` puts a module named `jraph` into `sys.modules` before the code under test is
imported; from then on `import jraph` and `from jraph import GraphsTuple` give gnkit's objects.
The module holds exactly jraph 0.0.6's public top-level names (`JRAPH_NAMES`), each taken from
gnkit's top level under the same name. A name gnkit lacks fails when the shim is built; a name
outside jraph's public namespace fails on access with an error naming it; jraph's submodules
(`jraph._src`, `jraph.experimental`, ...) are not provided, so importing one fails too. Nothing of
the real jraph is imported. Host-side; the objects it hands out are gnkit's own.
"""

import sys
import types

import gnkit

# jraph 0.0.6's public top-level names: `dir(jraph)` less dunders (its `__all__` plus
# segment_mean / segment_min / segment_normalize / segment_variance, exported but unlisted).
JRAPH_NAMES = (
    "AggregateEdgesToGlobalsFn", "AggregateEdgesToNodesFn", "AggregateNodesToGlobalsFn",
    "ArrayTree", "AttentionLogitFn", "AttentionReduceFn", "DeepSets", "EmbedEdgeFn",
    "EmbedGlobalFn", "EmbedNodeFn", "GAT", "GATAttentionLogitFn", "GATAttentionQueryFn",
    "GATNodeUpdateFn", "GNUpdateEdgeFn", "GNUpdateGlobalFn", "GNUpdateNodeFn",
    "GraphConvolution", "GraphMapFeatures", "GraphNetGAT", "GraphNetwork", "GraphsTuple",
    "InteractionNetwork", "InteractionUpdateEdgeFn", "InteractionUpdateNodeFn", "NodeFeatures",
    "RelationNetwork", "batch", "batch_np", "concatenated_args", "dynamically_batch",
    "get_edge_padding_mask", "get_fully_connected_graph", "get_graph_padding_mask",
    "get_node_padding_mask", "get_number_of_padding_with_graphs_edges",
    "get_number_of_padding_with_graphs_graphs", "get_number_of_padding_with_graphs_nodes",
    "pad_with_graphs", "partition_softmax", "segment_max", "segment_max_or_constant",
    "segment_mean", "segment_min", "segment_min_or_constant", "segment_normalize",
    "segment_softmax", "segment_sum", "segment_variance", "unbatch", "unbatch_np",
    "unpad_with_graphs", "with_zero_out_padding_outputs", "zero_out_padding",
)

SHIM_MARKER = "__gnkit_jraph_shim__"


def _missing_name(name: str):
    raise AttributeError(
        f"the gnkit jraph shim maps jraph 0.0.6's public names only; jraph.{name} is not one "
        "of them"
    )


def make_module() -> types.ModuleType:
    """The shim module: every name of `JRAPH_NAMES` bound to gnkit's object of that name.

    Returns:
        A module named `jraph` (not registered anywhere).

    Raises:
        ImportError: naming every jraph name that gnkit's top level lacks.
    """
    lacking = [name for name in JRAPH_NAMES if not hasattr(gnkit, name)]
    if lacking:
        raise ImportError(f"gnkit lacks jraph's public names {lacking}")
    module = types.ModuleType("jraph", "jraph's public names, served by gnkit (test-only shim).")
    for name in JRAPH_NAMES:
        setattr(module, name, getattr(gnkit, name))
    module.__all__ = list(JRAPH_NAMES)
    module.__getattr__ = _missing_name
    setattr(module, SHIM_MARKER, True)
    return module


def install() -> types.ModuleType:
    """Register the shim as `sys.modules["jraph"]` and return it.

    Call it before importing the code under test: modules that already imported the real jraph
    keep it, so installing after the real jraph is loaded is refused.

    Raises:
        RuntimeError: when a real jraph is already imported in this process.
    """
    loaded = [name for name in sys.modules if name == "jraph" or name.startswith("jraph.")]
    if any(not getattr(sys.modules[name], SHIM_MARKER, False) for name in loaded):
        raise RuntimeError(f"the real jraph is already imported ({sorted(loaded)}); install the "
                           "shim in a fresh process before anything imports jraph")
    module = sys.modules.get("jraph") or make_module()
    sys.modules["jraph"] = module
    return module
