"""Small random typed graphs for the typed-graph tests: papers, authors, three edge sets."""

import numpy as np

from gnkit import typed_graph as tg

CITES = tg.EdgeSetKey("cites", ("paper", "paper"))
WRITES = tg.EdgeSetKey("writes", ("author", "paper"))
WRITTEN_BY = tg.EdgeSetKey("written_by", ("paper", "author"))
WIDTH = 3


def make_graph(rng, n_paper, n_author, n_cites, n_writes, edge_width=2):
    """One graph: `n_paper` papers and `n_author` authors with `WIDTH` features, time and ids;
    random cites, writes and the reversed writes."""
    writes_senders = rng.integers(0, n_author, n_writes)
    writes_receivers = rng.integers(0, n_paper, n_writes)

    def edge_set(senders, receivers):
        count = len(senders)
        return tg.EdgeSet(
            n_edge=np.array([count], np.int32),
            senders=np.asarray(senders, np.int32),
            receivers=np.asarray(receivers, np.int32),
            features=rng.normal(size=(count, edge_width)).astype(np.float32),
            time=rng.integers(0, 100, count).astype(np.int32),
        )

    def node_set(count):
        return tg.NodeSet(
            n_node=np.array([count], np.int32),
            features=rng.normal(size=(count, WIDTH)).astype(np.float32),
            time=rng.integers(0, 100, count).astype(np.int32),
            global_id=rng.permutation(1000)[:count].astype(np.int64),
        )

    return tg.TypedGraph(
        context=tg.Context(np.ones(1, np.int32), rng.normal(size=(1, 2)).astype(np.float32)),
        nodes={"paper": node_set(n_paper), "author": node_set(n_author)},
        edges={
            CITES: edge_set(rng.integers(0, n_paper, n_cites), rng.integers(0, n_paper, n_cites)),
            WRITES: edge_set(writes_senders, writes_receivers),
            WRITTEN_BY: edge_set(writes_receivers, writes_senders),
        },
    )


def random_graphs(seed, count, max_paper=6, max_author=4):
    rng = np.random.default_rng(seed)
    return [
        make_graph(rng, int(rng.integers(1, max_paper + 1)), int(rng.integers(1, max_author + 1)),
                   int(rng.integers(0, 8)), int(rng.integers(1, 6)))
        for _ in range(count)
    ]
