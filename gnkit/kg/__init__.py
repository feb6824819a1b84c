"""Knowledge-graph embeddings: scorers, training losses, filtered ranking, triple files.

- `gnkit.kg.scorers`: TransE (L1 / L2), DistMult, ComplEx and RotatE (L1 / L2) as pure functions of
  embedding arrays, each also scoring all entities as head or tail at once (`Scorer`);
- `gnkit.kg.training`: uniform negative sampling, RotatE's self-adversarial loss, the margin
  loss, 1-N cross-entropy, and epochs as one jitted scan over device-side batches;
- `gnkit.kg.evaluation`: filtered ranks (ties counted half), MRR and Hits@1/3/10 in one jitted
  pass over chunks of test triples;
- `gnkit.kg.triples`: `head<TAB>relation<TAB>tail` files and the graphs shipped with gnkit.

The Flax module holding the embeddings is `gnkit.nn.KGEmbedding`; the R-GCN encoder is
`gnkit.nn.RGCN` over `gnkit.convolutions.rgcn`. Nothing here imports Flax.
"""

from gnkit.kg.evaluation import (
    HITS_AT,
    RankingTask,
    evaluate,
    filtered_ranks,
    rank_metrics,
    ranking_task,
)
from gnkit.kg.scorers import (
    SCORERS,
    Scorer,
    complex_heads,
    complex_score,
    complex_tails,
    distmult,
    distmult_heads,
    distmult_tails,
    get_scorer,
    rotate,
    rotate_heads,
    rotate_l2,
    rotate_l2_heads,
    rotate_l2_tails,
    rotate_tails,
    rotation,
    transe,
    transe_heads,
    transe_tails,
)
from gnkit.kg.training import (
    corrupt_uniform,
    epoch_batches,
    make_epoch,
    margin_ranking_loss,
    one_to_n_loss,
    penalty,
    self_adversarial_loss,
)
from gnkit.kg.triples import (
    SHIPPED,
    KnowledgeGraph,
    TripleFileError,
    from_arrays,
    graph_directory,
    load_graph,
    read_triples,
)

__all__ = [
    "HITS_AT",
    "SCORERS",
    "SHIPPED",
    "KnowledgeGraph",
    "RankingTask",
    "Scorer",
    "TripleFileError",
    "complex_heads",
    "complex_score",
    "complex_tails",
    "corrupt_uniform",
    "distmult",
    "distmult_heads",
    "distmult_tails",
    "epoch_batches",
    "evaluate",
    "filtered_ranks",
    "from_arrays",
    "get_scorer",
    "graph_directory",
    "load_graph",
    "make_epoch",
    "margin_ranking_loss",
    "one_to_n_loss",
    "penalty",
    "rank_metrics",
    "ranking_task",
    "read_triples",
    "rotate",
    "rotate_heads",
    "rotate_l2",
    "rotate_l2_heads",
    "rotate_l2_tails",
    "rotate_tails",
    "rotation",
    "self_adversarial_loss",
    "transe",
    "transe_heads",
    "transe_tails",
]
