"""`EncodeProcessDecode`, the NNX twin of `gnkit.nn.EncodeProcessDecode`."""

from __future__ import annotations

from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn import encode_process_decode
from gnkit.nnx.twin import Twin, sample_graph


class EncodeProcessDecode(Twin, linen=encode_process_decode.EncodeProcessDecode):
    """graph_nets' encode-process-decode network (`gnkit.nn.EncodeProcessDecode`).

    `__call__(graph, num_processing_steps, scan=True)` returns one decoded graph per step, as
    the linen twin does. Jittable (`num_processing_steps` static).

    Args:
      in_node_features: the input graph's node width.
      in_edge_features: its edge width.
      in_global_features: its global width.
      rngs: initialises the parameters.
      **options: the linen twin's attributes (`node_output_size`, `latent_size`, ...).
    """

    def __init__(
        self,
        *,
        in_node_features: int,
        in_edge_features: int,
        in_global_features: int,
        rngs: nnx.Rngs,
        **options,
    ):
        sample = sample_graph(nodes=in_node_features, edges=in_edge_features,
                              globals_=in_global_features)
        self._build(encode_process_decode.EncodeProcessDecode, options, rngs, (sample, 1))

    def __call__(
        self, graph: GraphsTuple, num_processing_steps: int, scan: bool = True
    ) -> list[GraphsTuple]:
        """The decoded graph after each of the `num_processing_steps` core steps."""
        return self._apply(graph, num_processing_steps, scan)
