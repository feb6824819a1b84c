"""WordNet 3.0 as one graph: 117,659 synsets joined by 377,592 typed pointers.

The copy shipped in `gnkit/data/wordnet/` (made by `make_wordnet.py` beside it from Debian's
`wordnet-base`; WordNet's licence notice in `LICENSE` there) holds each synset's lexicographer
file (45 classes: `noun.animal`, `verb.motion`, ...), part of speech, every pointer with its
type (hypernym `@`, hyponym `~`, meronyms, antonyms, derivations, ...) and its gloss as a hashed
bag of words. Tasks: predict the lexicographer class of held-out synsets (node classification);
predict held-out hypernym edges (link prediction). Host NumPy.
"""

from __future__ import annotations

import dataclasses
import io
import lzma
from pathlib import Path

import numpy as np

from gnkit.graph import GraphsTuple
from gnkit.typed_graph import Context, EdgeSet, EdgeSetKey, NodeSet, TypedGraph

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "wordnet" / "wordnet.npz.xz"
LICENSE_FILE = DATA_FILE.with_name("LICENSE")
HASH_BUCKETS = 4096
NUM_CLASSES = 45
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl",
)
# WordNet's pointer symbols (wninput(5WN)); "\\" is a pertainym for adjectives and "derived from
# adjective" for adverbs, kept as one symbol as in the files.
POINTERS = (
    "@", "@i", "~", "~i", "#m", "#s", "#p", "%m", "%s", "%p", "=", "+", ";c", "-c", ";r", "-r",
    ";u", "-u", "!", "&", "<", "\\", "*", ">", "^", "$",
)
TAXONOMY_POINTERS = ("@", "@i", "~", "~i")
# The edge sets of the typed graph: pointer symbols grouped by what they relate. Hypernyms and
# hyponyms keep their direction; meronymy and domains hold both directions of their pairs.
EDGE_SETS = {
    "hypernym": ("@", "@i"),
    "hyponym": ("~", "~i"),
    "derivation": ("+",),
    "meronymy": ("#m", "#s", "#p", "%m", "%s", "%p"),
    "domain": (";c", "-c", ";r", "-r", ";u", "-u"),
    "lexical": ("=", "!", "&", "<", "\\", "*", ">", "^", "$"),
}


@dataclasses.dataclass(frozen=True)
class WordNet:
    """The WordNet graph as arrays. Host NumPy.

    Attributes:
      lexname: int64 `[N]`, the class (index into `LEXNAMES`).
      pos: int64 `[N]`, 0 noun, 1 verb, 2 adjective, 3 adverb.
      offset: int64 `[N]`, WordNet's synset offset in its data file.
      senders: int64 `[E]`, the synset listing each pointer.
      receivers: int64 `[E]`, each pointer's target.
      pointer: int64 `[E]`, the pointer type (index into `POINTERS`).
      gloss_indptr: int64 `[N + 1]`, the CSR row starts of the glosses' hashed bags of words.
      gloss_bucket: int64, each entry's hash bucket (in `[0, HASH_BUCKETS)`).
      gloss_count: int64, each entry's word count.
    """

    lexname: np.ndarray
    pos: np.ndarray
    offset: np.ndarray
    senders: np.ndarray
    receivers: np.ndarray
    pointer: np.ndarray
    gloss_indptr: np.ndarray
    gloss_bucket: np.ndarray
    gloss_count: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.lexname.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.senders.shape[0])


def load(path: Path | str = DATA_FILE) -> WordNet:
    """Reads the shipped WordNet arrays (a few seconds: xz decompression)."""
    with np.load(io.BytesIO(lzma.decompress(Path(path).read_bytes()))) as arrays:
        return WordNet(**{
            field.name: arrays[field.name].astype(np.int64)
            for field in dataclasses.fields(WordNet)
        })


def gloss_features(wordnet: WordNet, dim: int = 256) -> np.ndarray:
    """float32 `[N, dim]`: `log(1 + count)` of each hashed gloss word, rows of unit L2 norm.

    `dim` must divide `HASH_BUCKETS` (4096): bucket `b` folds into column `b % dim`.
    """
    if dim < 1 or HASH_BUCKETS % dim:
        raise ValueError(f"dim must divide {HASH_BUCKETS}; got {dim}.")
    rows = np.repeat(np.arange(wordnet.num_nodes), np.diff(wordnet.gloss_indptr))
    features = np.zeros((wordnet.num_nodes, dim), np.float32)
    np.add.at(features, (rows, wordnet.gloss_bucket % dim), wordnet.gloss_count)
    features = np.log1p(features)
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features / np.maximum(norms, 1e-12)


def pointer_mask(wordnet: WordNet, symbols) -> np.ndarray:
    """bool `[E]`: True for the pointers whose symbol is in `symbols` (e.g. `("@", "~")`)."""
    unknown = sorted(set(symbols) - set(POINTERS))
    if unknown:
        raise ValueError(f"unknown pointer symbols {unknown}; known: {POINTERS}.")
    return np.isin(wordnet.pointer, [POINTERS.index(symbol) for symbol in symbols])


def to_graph(wordnet: WordNet, nodes: np.ndarray | None, keep: np.ndarray | None = None):
    """The pointers (those where `keep` `[E]` is True; all by default) as one `GraphsTuple`.

    `nodes` `[N, ...]` become the node features; the edge features are the pointer types
    (int32 `[E']`).
    """
    keep = np.ones(wordnet.num_edges, bool) if keep is None else np.asarray(keep, bool)
    return GraphsTuple(
        nodes=nodes,
        edges=wordnet.pointer[keep].astype(np.int32),
        senders=wordnet.senders[keep].astype(np.int32),
        receivers=wordnet.receivers[keep].astype(np.int32),
        globals=None,
        n_node=np.array([wordnet.num_nodes], np.int32),
        n_edge=np.array([int(keep.sum())], np.int32),
    )


def to_typed_graph(wordnet: WordNet, nodes: np.ndarray, keep: np.ndarray | None = None):
    """The pointers (those where `keep` `[E]` is True) as a `gnkit.TypedGraph`: one node set
    `"synset"` with features `nodes` `[N, F]`, one edge set per group of `EDGE_SETS` that has a
    kept pointer (named by the group, `("synset", "synset")`)."""
    keep = np.ones(wordnet.num_edges, bool) if keep is None else np.asarray(keep, bool)
    edges = {}
    for name, symbols in EDGE_SETS.items():
        inside = keep & pointer_mask(wordnet, symbols)
        if inside.any():
            edges[EdgeSetKey(name, ("synset", "synset"))] = EdgeSet(
                np.array([int(inside.sum())], np.int32), wordnet.senders[inside].astype(np.int32),
                wordnet.receivers[inside].astype(np.int32))
    nodes_set = NodeSet(np.array([wordnet.num_nodes], np.int32), nodes)
    return TypedGraph(Context(np.ones(1, np.int32)), {"synset": nodes_set}, edges)


def node_split(
    num_nodes: int, seed: int = 0, valid: float = 0.1, test: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random split of the node ids into three disjoint, sorted sets. Host.

    Args:
      num_nodes: node ids are `0 .. num_nodes - 1`.
      seed: seeds the permutation.
      valid: the fraction of nodes in the validation split.
      test: the fraction in the test split (`valid + test < 1`).

    Returns:
      `(train, valid, test)`, int `[n]` node ids each.
    """
    if not (0 < valid and 0 < test and valid + test < 1):
        raise ValueError(f"valid and test must be positive fractions summing below 1; got "
                         f"{valid}, {test}.")
    order = np.random.default_rng(seed).permutation(num_nodes)
    n_valid, n_test = int(round(valid * num_nodes)), int(round(test * num_nodes))
    return (np.sort(order[n_valid + n_test :]), np.sort(order[:n_valid]),
            np.sort(order[n_valid : n_valid + n_test]))


def hypernym_split(
    wordnet: WordNet, seed: int = 0, held_out: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out hypernym edges for link prediction: `(kept, valid, test)` edge masks `[E]`.

    A fraction `held_out` of the hypernym pointers (`@`) goes to each of valid and test; every
    pointer between a held-out pair, either way and of any type (the reverse hyponym `~`, and
    the rare second pointer), is left out of `kept`, so the graph a model trains on does not hold
    the answer.
    """
    hypernyms = np.flatnonzero(wordnet.pointer == POINTERS.index("@"))
    order = np.random.default_rng(seed).permutation(hypernyms)
    count = int(round(held_out * hypernyms.size))
    valid, test = np.zeros(wordnet.num_edges, bool), np.zeros(wordnet.num_edges, bool)
    valid[order[:count]] = True
    test[order[count : 2 * count]] = True
    n = wordnet.num_nodes
    low = np.minimum(wordnet.senders, wordnet.receivers)
    pair = low * n + np.maximum(wordnet.senders, wordnet.receivers)
    kept = ~np.isin(pair, pair[valid | test])
    return kept, valid, test


def known_targets(wordnet: WordNet, symbol: str = "@") -> tuple[np.ndarray, np.ndarray]:
    """Every pointer `symbol` as CSR rows by sender: `(indptr [N + 1], targets)`, each row's
    targets sorted. The filter of `filtered_ranks`."""
    inside = wordnet.pointer == POINTERS.index(symbol)
    order = np.lexsort((wordnet.receivers[inside], wordnet.senders[inside]))
    counts = np.bincount(wordnet.senders[inside], minlength=wordnet.num_nodes)
    return np.concatenate([[0], np.cumsum(counts)]), wordnet.receivers[inside][order]


def filtered_ranks(scores, sources, targets, known) -> np.ndarray:
    """The filtered rank of each `targets[i]` among all nodes for query `sources[i]`. Host NumPy.

    Candidates are every node but the source itself and the source's other known targets
    (`known`, what `known_targets` returns). A candidate scoring above the target counts one, one
    scoring the same counts a half (the mean of the optimistic and pessimistic ranks), so a
    score that ties everything ranks in the middle.

    Args:
      scores: `sources [c] -> float [c, N]`, the score of every node for a chunk of queries.
      sources: int `[P]`, the query nodes.
      targets: int `[P]`, the node to rank for each query.
      known: `(indptr [N + 1], targets)`, each node's known targets.

    Returns:
      float `[P]`, ranks from 1.
    """
    sources, targets = np.asarray(sources, np.int64), np.asarray(targets, np.int64)
    indptr, known_targets_ = known
    ranks = np.empty(sources.size)
    for start in range(0, sources.size, 256):
        rows, answers = sources[start : start + 256], targets[start : start + 256]
        block = np.array(scores(rows), np.float64)
        for row, (source, target) in enumerate(zip(rows, answers, strict=True)):
            others = known_targets_[indptr[source] : indptr[source + 1]]
            others = np.append(others[others != target], source)
            target_score = block[row, target]
            block[row, others] = np.nan
            greater = np.sum(block[row] > target_score)
            ties = np.sum(block[row] == target_score) - 1
            ranks[start + row] = 1 + greater + ties / 2
    return ranks


def ranking_metrics(ranks) -> dict[str, float]:
    """`{"mrr", "hits_at_10"}`: the mean reciprocal rank and the share of ranks `<= 10`."""
    ranks = np.asarray(ranks, np.float64)
    return {"mrr": float(np.mean(1.0 / ranks)), "hits_at_10": float(np.mean(ranks <= 10))}
