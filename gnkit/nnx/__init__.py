"""Flax NNX modules built on gnkit's functional blocks: the twins of `gnkit.nn`'s modules.

Every module of `gnkit.nn` has an NNX twin here with the same name, the same parameters (the
linen `params` layout, as `nnx.Param`) and the same numbers: a twin runs its linen module's pure
`apply` on its parameters, so there is one implementation of each layer. NNX conventions: input
sizes at construction (`in_features`, or `in_node_features` / `in_edge_features` /
`in_global_features`), then the linen twin's attributes, and `rngs=nnx.Rngs(...)`; the methods
take and return what the linen twin's do. `from_linen` and `to_linen_variables` move weights
between the two APIs (see `gnkit.nnx.twin`). The typed-graph twins (`HeteroConv`, `to_hetero`,
`TypedGraphNetwork`, `TypedRGCN`) take the schema instead of input sizes (`gnkit.nnx.typed`).
"""

from gnkit.nnx.dmpnn import DMPNN
from gnkit.nnx.encode_process_decode import EncodeProcessDecode
from gnkit.nnx.gps import GPS, GPSLayer, GraphMultiheadAttention
from gnkit.nnx.graph_network import FactorisedDense, GraphIndependent, GraphNetwork
from gnkit.nnx.kg import RGCN, KGEmbedding, RGCNEncoder
from gnkit.nnx.layers import GAT, GCN, GIN, GINE, GATv2, GraphSAGE
from gnkit.nnx.lcm import LCMAggregation
from gnkit.nnx.mlp import MLP
from gnkit.nnx.relation_network import RelationNetwork
from gnkit.nnx.relational_memory import RelationalMemory
from gnkit.nnx.rrn import RecurrentRelationalNetwork
from gnkit.nnx.twin import Twin, from_linen, to_linen_variables
from gnkit.nnx.typed import HeteroConv, TypedGraphNetwork, TypedRGCN, to_hetero

__all__ = [
    "DMPNN",
    "EncodeProcessDecode",
    "FactorisedDense",
    "GAT",
    "GATv2",
    "GCN",
    "GIN",
    "GINE",
    "GPS",
    "GPSLayer",
    "GraphIndependent",
    "GraphMultiheadAttention",
    "GraphNetwork",
    "GraphSAGE",
    "HeteroConv",
    "KGEmbedding",
    "LCMAggregation",
    "MLP",
    "RGCN",
    "RGCNEncoder",
    "RecurrentRelationalNetwork",
    "RelationNetwork",
    "RelationalMemory",
    "Twin",
    "TypedGraphNetwork",
    "TypedRGCN",
    "from_linen",
    "to_hetero",
    "to_linen_variables",
]
