"""The WordNet demo's data: gloss features, class labels, node splits, the graphs of both
variants, the held-out hypernyms, and each model's batch of every update.

Synsets are split 80 / 10 / 10 at random (`config.seed`); every graph holds all synsets, so
models see the held-out synsets' features and edges but never their labels (transductive, as
on Planetoid and OGB node tasks). `subset` keeps a random part of WordNet (its induced
pointers) for quick tests. Link prediction holds out hypernym pointers
(`gnkit.tasks.wordnet.hypernym_split`): its graph is every other pointer, and its node features
are the gloss features beside three structural columns of that graph (`structural_features`).
Host NumPy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from gnkit.demos.wordnet.config import LINK, WordNetConfig, family, variant
from gnkit.graph import GraphsTuple
from gnkit.sampling import LinkNeighborSampler, NeighborSampler
from gnkit.tasks import wordnet as task
from gnkit.typed_graph import TypedGraph

HYPERNYM = task.POINTERS.index("@")


@dataclasses.dataclass(frozen=True)
class LinkData:
    """The hypernym task: the graph without the held-out pairs, and the held-out pointers.

    Attributes:
      graph: `GraphsTuple` of the kept pointers; nodes float32 `[N, F + 3]` (gloss features,
        then `structural_features`), edges the pointer types.
      valid: int `[2, n_valid]`, the (synset, hypernym) pairs held out for validation.
      test: int `[2, n_test]`, those held out for test.
      known: `(indptr, targets)`, every hypernym pointer of WordNet by synset (the filter).
    """

    graph: GraphsTuple
    valid: np.ndarray
    test: np.ndarray
    known: tuple[np.ndarray, np.ndarray]


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
      graphs: `{variant: GraphsTuple}`, one graph over all synsets per variant.
      typed: `{variant: TypedGraph}`, the same pointers in the edge sets of
        `gnkit.tasks.wordnet.EDGE_SETS`.
      link: the `LinkData` of the hypernym task.
    """

    wordnet: task.WordNet
    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    graphs: dict[str, GraphsTuple]
    typed: dict[str, TypedGraph]
    link: LinkData


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


def variant_mask(wordnet: task.WordNet, name: str) -> np.ndarray:
    """bool `[E]`: the pointers of graph variant `name` ('all_pointers' or 'no_taxonomy')."""
    if name == "all_pointers":
        return np.ones(wordnet.num_edges, bool)
    return ~task.pointer_mask(wordnet, task.TAXONOMY_POINTERS)


def structural_features(wordnet: task.WordNet, keep: np.ndarray) -> np.ndarray:
    """float32 `[N, 3]`: `log(1 + count)` of each synset's kept hyponyms (hypernym pointers
    into it), kept hypernyms (out of it) and kept pointers of any type into it.

    A mean-aggregating GNN cannot count neighbours, and a synset's hyponym count (is it a hub
    of the taxonomy?) is most of what ranks a hypernym.
    """
    hypernym = keep & (wordnet.pointer == HYPERNYM)
    n = wordnet.num_nodes
    counts = np.stack([np.bincount(wordnet.receivers[hypernym], minlength=n),
                       np.bincount(wordnet.senders[hypernym], minlength=n),
                       np.bincount(wordnet.receivers[keep], minlength=n)], axis=1)
    return np.log1p(counts).astype(np.float32)


def link_data(wordnet: task.WordNet, features: np.ndarray, config: WordNetConfig) -> LinkData:
    """The hypernym task of `config` (`link_held_out`, `seed`) on `wordnet`."""
    kept, valid, test = task.hypernym_split(wordnet, config.seed, config.link_held_out)
    nodes = np.concatenate([features, structural_features(wordnet, kept)], axis=1)

    def pairs(mask):
        return np.stack([wordnet.senders[mask], wordnet.receivers[mask]])

    return LinkData(task.to_graph(wordnet, nodes, kept), pairs(valid), pairs(test),
                    task.known_targets(wordnet, "@"))


def build_data(config: WordNetConfig, wordnet: task.WordNet) -> Data:
    """The features, labels, splits and graphs of `config` on `wordnet`."""
    features = task.gloss_features(wordnet, config.feature_dim)
    train, valid, test = task.node_split(wordnet.num_nodes, config.seed)
    masks = {name: variant_mask(wordnet, name) for name in ("all_pointers", "no_taxonomy")}
    graphs = {name: task.to_graph(wordnet, features, mask) for name, mask in masks.items()}
    typed = {name: task.to_typed_graph(wordnet, features, mask) for name, mask in masks.items()}
    return Data(wordnet, features, wordnet.lexname.astype(np.int32), train, valid, test,
                graphs, typed, link_data(wordnet, features, config))


def load_data(config: WordNetConfig, run_dir=None, progress: bool = True) -> Data:
    """`build_data` on the shipped WordNet (or its `subset`); nothing is cached in `run_dir`."""
    del run_dir, progress
    wordnet = task.load()
    if config.subset:
        wordnet = subset(wordnet, config.subset, config.seed)
    return build_data(config, wordnet)


def full_batch(name: str, data: Data) -> dict:
    """The one batch of every update of full-batch classifier `name`: its graph (typed for
    `rgcn`), the labels and the training mask, float32 `[N]`."""
    graphs = data.typed if family(name) == "rgcn" else data.graphs
    mask = np.zeros(data.labels.shape[0], np.float32)
    mask[data.train] = 1.0
    return {"graph": graphs[variant(name)], "labels": data.labels, "mask": mask}


def neighbor_sampler(config: WordNetConfig, data: Data, name: str) -> NeighborSampler:
    """GraphSAGE's sampler of the training synsets on model `name`'s graph."""
    return NeighborSampler(data.graphs[variant(name)], config.fanouts, config.batch_size,
                           seeds=data.train, seed=config.seed)


def link_sampler(config: WordNetConfig, data: Data) -> LinkNeighborSampler:
    """The link sampler over the kept hypernym pointers, `link_negatives` uniform negatives
    each, the batch's own pairs out of message passing."""
    graph = data.link.graph
    return LinkNeighborSampler(graph, config.link_fanouts, config.link_batch_size,
                               edges=np.flatnonzero(np.asarray(graph.edges) == HYPERNYM),
                               num_negatives=config.link_negatives, seed=config.seed)


def sampled_batch(sample, labels: np.ndarray) -> dict:
    """A GraphSAGE batch from a `SampledSubgraph`: the subgraph, the seed slots' labels (0 for
    empty slots) and their mask."""
    seeds = sample.global_id[: sample.seed_mask.shape[0]]
    return {"graph": sample.graph, "labels": labels[np.maximum(seeds, 0)],
            "mask": sample.seed_mask.astype(np.float32)}


def link_batch(sample) -> dict:
    """A link batch from a `LinkSample`: the subgraph, the pairs, their labels and mask."""
    return {"graph": sample.subgraph.graph, "pairs": sample.pairs, "labels": sample.labels,
            "mask": sample.pair_mask.astype(np.float32)}


def make_batch(name: str, config: WordNetConfig, data: Data) -> Callable[[int], dict]:
    """`update -> batch` of model `name`, a pure function of the update: update `u` is batch
    `u % len` of epoch `u // len` of the model's sampler (GraphSAGE, `link`), or the whole
    graph at every update (the full-batch classifiers)."""
    if name == LINK:
        sampler = link_sampler(config, data)
        return lambda update: link_batch(sampler.batch(*divmod(update, len(sampler))))
    if family(name) == "sage":
        sampler = neighbor_sampler(config, data, name)
        return lambda update: sampled_batch(sampler.batch(*divmod(update, len(sampler))),
                                            data.labels)
    batch = full_batch(name, data)
    return lambda update: batch


def steps_per_epoch(name: str, config: WordNetConfig, data: Data) -> int:
    """Updates in one pass over model `name`'s training examples (1 for full batch)."""
    if name == LINK:
        count = int(np.sum(np.asarray(data.link.graph.edges) == HYPERNYM))
        return -(-count // config.link_batch_size)
    if family(name) == "sage":
        return -(-data.train.size // config.batch_size)
    return 1
