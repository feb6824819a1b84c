"""Flax linen modules built on gnkit's functional blocks."""

from gnkit.nn.dmpnn import DMPNN, graph_readout
from gnkit.nn.encode_process_decode import EncodeProcessDecode
from gnkit.nn.gps import GPS, GPSLayer, GraphMultiheadAttention
from gnkit.nn.graph_network import FactorisedDense, GraphIndependent, GraphNetwork
from gnkit.nn.kg import RGCN, KGEmbedding, RGCNEncoder
from gnkit.nn.layers import GAT, GCN, GIN, GINE, GATv2, GraphSAGE
from gnkit.nn.lcm import LCMAggregation
from gnkit.nn.mlp import MLP
from gnkit.nn.relation_network import RelationNetwork
from gnkit.nn.relational_memory import RelationalMemory
from gnkit.nn.rrn import RecurrentRelationalNetwork
from gnkit.nn.typed import HeteroConv, TypedGraphNetwork, TypedRGCN, to_hetero

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
    "TypedGraphNetwork",
    "TypedRGCN",
    "graph_readout",
    "to_hetero",
]
