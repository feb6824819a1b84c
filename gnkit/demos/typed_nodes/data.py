"""The typed-nodes demo's data: UMLS as a typed graph, each entity's branch, and a node split.

UMLS (`gnkit.kg.load_graph('umls')`, 135 biomedical semantic types, 46 relations) places every
type under one of two roots along `isa`: *entity* or *event*. The roots are the two node sets;
a node's label is the root's child it lies under (*physical object* or *conceptual entity*;
*activity* or *phenomenon or process*), so two classes per node set; the roots themselves are
unlabelled. `isa` holds the answer and is dropped: the other relations become one edge set per
(relation, sender set, receiver set), the `edge_sets` largest kept, each with its inverse
(`rev_<relation>`, receiver to sender), as PyTorch Geometric's `ToUndirected` does. Nodes carry
no features of their own: every node's feature is the one-hot of its node set (a constant
within a set). The homogeneous twin is the same nodes and edges in one node set and one edge
set, the relation forgotten. Labelled nodes are split 50 / 20 / 30 (train / valid / test) from
`seed`. Rows of the homogeneous graph, of the labels and of every model's logits are the
entities in node-set order (`NODE_SETS`), by entity id within a set. Host NumPy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.kg import KnowledgeGraph, load_graph
from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph, validate

NODE_SETS = ("entity", "event")
BRANCHES = {"entity": ("physical_object", "conceptual_entity"),
            "event": ("activity", "phenomenon_or_process")}
NUM_CLASSES = 2
TRAIN_FRACTION, VALID_FRACTION = 0.5, 0.2


@dataclasses.dataclass(frozen=True)
class Data:
    """Everything a run trains and tests on; every `[N]` array is in row order.

    Attributes:
      entity: int `[N]`, the UMLS entity id of each row.
      node_set: int `[N]`, each row's index into `NODE_SETS`.
      labels: int32 `[N]`, the branch (index into the node set's `BRANCHES`), -1 for the two
        roots.
      graph: the `TypedGraph`, every kept edge set and its inverse.
      homogeneous: its homogeneous twin `GraphsTuple`, the same rows and edges, no relations.
      splits: `{"train", "valid", "test": bool [N]}`, the labelled rows of each split.
    """

    entity: np.ndarray
    node_set: np.ndarray
    labels: np.ndarray
    graph: TypedGraph
    homogeneous: GraphsTuple
    splits: dict[str, np.ndarray]


def ancestors(kg: KnowledgeGraph) -> np.ndarray:
    """bool `[n_entity, n_entity]`: `[i, j]` when `j` is `i` or lies above `i` along `isa`."""
    triples = kg.known()
    isa = triples[triples[:, 1] == kg.relations.index("isa")]
    above = np.eye(kg.num_entities, dtype=bool)
    above[isa[:, 0], isa[:, 2]] = True
    while True:
        closed = above | ((above.astype(np.int32) @ above.astype(np.int32)) > 0)
        if (closed == above).all():
            return above
        above = closed


def entity_types(kg: KnowledgeGraph) -> tuple[np.ndarray, np.ndarray]:
    """Each entity's node set (index into `NODE_SETS`) and label (index into its
    `BRANCHES`, -1 for a root): two int `[n_entity]`."""
    above = ancestors(kg)
    index = {name: i for i, name in enumerate(kg.entities)}
    node_set = np.full(kg.num_entities, -1)
    labels = np.full(kg.num_entities, -1)
    for s, root in enumerate(NODE_SETS):
        node_set[above[:, index[root]]] = s
        for k, child in enumerate(BRANCHES[root]):
            labels[above[:, index[child]]] = k
    if (node_set < 0).any():
        raise ValueError(f"entities under neither root: {np.flatnonzero(node_set < 0)}")
    return node_set, labels


def relation_edges(kg: KnowledgeGraph, node_set: np.ndarray, edge_sets: int
                   ) -> dict[EdgeSetKey, np.ndarray]:
    """`{key: (head, tail) entity ids [E_k, 2]}`: the `edge_sets` largest (relation, sender set,
    receiver set) groups of the non-`isa` triples (0: all), largest first, ties by key."""
    triples = kg.known()
    triples = triples[triples[:, 1] != kg.relations.index("isa")]
    groups: dict[EdgeSetKey, list] = {}
    for head, relation, tail in triples:
        key = EdgeSetKey(kg.relations[relation],
                         (NODE_SETS[node_set[head]], NODE_SETS[node_set[tail]]))
        groups.setdefault(key, []).append((head, tail))
    keys = sorted(groups, key=lambda key: (-len(groups[key]), key))
    return {key: np.array(groups[key]) for key in keys[: edge_sets or None]}


def build_graphs(node_set: np.ndarray, edges: dict[EdgeSetKey, np.ndarray]
                 ) -> tuple[TypedGraph, GraphsTuple, np.ndarray]:
    """The typed graph (every edge set and its inverse), its homogeneous twin, and the entity
    id of each row. Features: the one-hot of the node set, float32 `[rows, 2]`."""
    entity = np.argsort(node_set, kind="stable")
    row = np.empty_like(entity)
    row[entity] = np.arange(entity.size)
    start = {name: int(np.sum(node_set < s)) for s, name in enumerate(NODE_SETS)}
    one_hot = np.eye(len(NODE_SETS), dtype=np.float32)
    nodes = {name: NodeSet(np.array([np.sum(node_set == s)]),
                           np.repeat(one_hot[s:s + 1], np.sum(node_set == s), axis=0))
             for s, name in enumerate(NODE_SETS)}
    typed_edges = {}
    for key, pairs in edges.items():
        sender, receiver = key.node_sets
        local = row[pairs] - np.array([start[sender], start[receiver]])
        typed_edges[key] = EdgeSet(np.array([len(pairs)]), local[:, 0], local[:, 1])
        typed_edges[EdgeSetKey(f"rev_{key.name}", (receiver, sender))] = EdgeSet(
            np.array([len(pairs)]), local[:, 1], local[:, 0])
    graph = validate(TypedGraph(Context(np.ones(1, np.int32)), nodes, typed_edges))
    pairs = np.concatenate(list(edges.values()))
    senders = np.concatenate([row[pairs[:, 0]], row[pairs[:, 1]]])
    receivers = np.concatenate([row[pairs[:, 1]], row[pairs[:, 0]]])
    homogeneous = GraphsTuple(
        nodes=one_hot[node_set[entity]], edges=None, senders=senders, receivers=receivers,
        globals=None, n_node=np.array([entity.size]), n_edge=np.array([senders.size]))
    return graph, homogeneous, entity


def split(labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """bool `[N]` masks of the labelled rows: train, valid and test, drawn from `seed`."""
    labelled = np.random.default_rng(seed).permutation(np.flatnonzero(labels >= 0))
    cut = np.round(np.array([TRAIN_FRACTION, TRAIN_FRACTION + VALID_FRACTION])
                   * labelled.size).astype(int)
    masks = {}
    for name, rows in zip(("train", "valid", "test"), np.split(labelled, cut), strict=True):
        masks[name] = np.zeros(labels.size, bool)
        masks[name][rows] = True
    return masks


def load_data(config, run_dir=None, progress: bool = True) -> Data:
    """The graphs, labels and split of `config` (a `TypedNodesConfig`); nothing is cached in
    `run_dir`."""
    del run_dir, progress
    kg = load_graph("umls")
    node_set, labels = entity_types(kg)
    graph, homogeneous, entity = build_graphs(node_set, relation_edges(kg, node_set,
                                                                       config.edge_sets))
    labels = labels[entity].astype(np.int32)
    return Data(entity, node_set[entity], labels, graph, homogeneous,
                split(labels, config.seed))


def full_batch(data: Data) -> dict:
    """The one batch of every update: both graphs, the labels (roots as class 0) and the
    training mask, float32 `[N]`."""
    return {"graph": data.graph, "homogeneous": data.homogeneous,
            "labels": np.maximum(data.labels, 0), "mask": data.splits["train"].astype(np.float32)}


def make_batch(config, data: Data) -> Callable[[int], dict]:
    """`update -> batch`: full-batch training, the same batch at every update."""
    del config
    batch = full_batch(data)
    return lambda update: batch
