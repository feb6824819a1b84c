"""The knowledge-graph demo's model: a `KGEmbedding` scorer, with an optional R-GCN encoder."""

from __future__ import annotations

from gnkit import kg as kgraph
from gnkit.demos.kg.config import KGConfig
from gnkit.nn import KGEmbedding, RGCNEncoder


def build_model(config: KGConfig, model: str, graph: kgraph.KnowledgeGraph) -> KGEmbedding:
    """The `KGEmbedding` of `model` for `graph` (with its R-GCN encoder if configured)."""
    encoder = None
    if config.encoder == "rgcn":
        width = kgraph.get_scorer(model).entity_width(config.dim)
        encoder = RGCNEncoder(
            (width,) * config.encoder_layers,
            2 * graph.num_relations,
            num_bases=config.encoder_bases,
        )
    return KGEmbedding(
        graph.num_entities,
        graph.num_relations,
        config.dim,
        scorer=model,
        initializer=config.init,
        init_scale=config.init_scale,
        encoder=encoder,
    )
