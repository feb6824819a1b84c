"""The WordNet demo's data: gloss features, class labels, node splits and one graph per variant.

Synsets are split 80 / 10 / 10 at random (`config.seed`); every graph holds all synsets, so
models see the held-out synsets' features and edges but never their labels (transductive, as
on Planetoid and OGB node tasks). `subset` keeps a random part of WordNet (its induced
pointers) for quick tests. Host NumPy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.tasks import wordnet as task


@dataclasses.dataclass(frozen=True)
class Data:
    """Everything a run trains and tests on, for `N` synsets.

    Attributes:
      wordnet: the `WordNet` (or its `subset`).
      features: float32 `[N, F]`, the hashed gloss features.
      labels: int32 `[N]`, each synset's lexicographer file (its class).
      train: int `[n_train]`, sorted ids of the training synsets.
      valid: int `[n_valid]`, sorted ids of the validation synsets.
      test: int `[n_test]`, sorted ids of the test synsets.
      graphs: `{variant: GraphsTuple}`, one graph over all synsets per `config.variants`.
    """

    wordnet: task.WordNet
    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    graphs: dict[str, GraphsTuple]


def subset(wordnet: task.WordNet, count: int, seed: int) -> task.WordNet:
    """`count` random synsets of `wordnet` (renumbered in their original order) and the pointers
    among them; glosses kept."""
    keep = np.sort(np.random.default_rng(seed).permutation(wordnet.num_nodes)[:count])
    new_id = np.full(wordnet.num_nodes, -1)
    new_id[keep] = np.arange(keep.size)
    inside = (new_id[wordnet.senders] >= 0) & (new_id[wordnet.receivers] >= 0)
    starts, ends = wordnet.gloss_indptr[keep], wordnet.gloss_indptr[keep + 1]
    positions = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
    return task.WordNet(
        lexname=wordnet.lexname[keep], pos=wordnet.pos[keep], offset=wordnet.offset[keep],
        senders=new_id[wordnet.senders[inside]], receivers=new_id[wordnet.receivers[inside]],
        pointer=wordnet.pointer[inside],
        gloss_indptr=np.concatenate([[0], np.cumsum(ends - starts)]),
        gloss_bucket=wordnet.gloss_bucket[positions], gloss_count=wordnet.gloss_count[positions],
    )


def variant_mask(wordnet: task.WordNet, variant: str) -> np.ndarray:
    """bool `[E]`: the pointers of graph `variant` ('all_pointers' or 'no_taxonomy')."""
    if variant == "all_pointers":
        return np.ones(wordnet.num_edges, bool)
    return ~task.pointer_mask(wordnet, task.TAXONOMY_POINTERS)


def load_data(config) -> Data:
    """The features, labels, splits and graphs of `config` (a `WordNetConfig`)."""
    wordnet = task.load()
    if config.subset:
        wordnet = subset(wordnet, config.subset, config.seed)
    features = task.gloss_features(wordnet, config.feature_dim)
    train, valid, test = task.node_split(wordnet.num_nodes, config.seed)
    graphs = {variant: task.to_graph(wordnet, features, variant_mask(wordnet, variant))
              for variant in config.variants}
    return Data(wordnet, features, wordnet.lexname.astype(np.int32), train, valid, test, graphs)
