"""The WordNet demo: label propagation and the filtered ranking against NumPy references, the
link predictor's ranking is its training score, a sampled link predictor finds a planted
hypernym structure that neither floor finds, the typed graph's edge sets partition the
pointers, and a tiny run trains, resumes to the uninterrupted result and reads back in `eval`.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import gnkit as gn
from gnkit import experiments
from gnkit import train as gn_train
from gnkit.demos.wordnet import DEMO, data, models, report, training
from gnkit.demos.wordnet.config import CONFIGS, WordNetConfig
from gnkit.tasks import wordnet as task


def test_label_propagation_matches_a_numpy_loop():
    rng = np.random.default_rng(0)
    senders, receivers = rng.integers(0, 12, 40), rng.integers(0, 12, 40)
    graph = gn.GraphsTuple(nodes=None, edges=None, senders=senders, receivers=receivers,
                           globals=None, n_node=np.array([12]), n_edge=np.array([40]))
    seeds = np.zeros((12, 3), np.float32)
    seeds[[0, 4, 7], [0, 1, 2]] = 1.0
    expected = seeds.copy()
    for _ in range(4):
        spread = np.zeros_like(seeds)
        np.add.at(spread, receivers, expected[senders])
        degree = np.maximum(np.bincount(receivers, minlength=12), 1)[:, None]
        expected = 0.8 * spread / degree + 0.2 * seeds
    got = models.label_propagation(graph, jnp.asarray(seeds), 4, 0.8)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _known(pairs, n):
    """`known_targets`' CSR layout, by hand."""
    rows = [sorted(t for s, t in pairs if s == node) for node in range(n)]
    return (np.concatenate([[0], np.cumsum([len(row) for row in rows])]),
            np.array([t for row in rows for t in row], np.int64))


def test_filtered_ranks_by_hand():
    scores = np.array([[9.0, 5.0, 4.0, 5.0, 1.0, 5.0],
                       [2.0, 8.0, 3.0, 3.0, 3.0, 0.0]])
    known = _known([(0, 1), (0, 3), (1, 2)], 6)
    ranks = task.filtered_ranks(lambda rows: scores[rows], np.array([0, 1]), np.array([3, 4]),
                                known)
    # Query 0 -> 3 (score 5): node 0 is the source, node 1 another known target; node 5 ties
    # (a half): rank 1.5. Query 1 -> 4 (score 3): the source (8) and known 2 left out, node 3
    # ties, nothing above: rank 1.5.
    np.testing.assert_array_equal(ranks, [1.5, 1.5])
    ranks = task.filtered_ranks(lambda rows: scores[rows], np.array([0, 1]), np.array([4, 0]),
                                known)
    # 0 -> 4 (score 1): nodes 2 and 5 above: 3. 1 -> 0 (score 2): nodes 3, 4 above: 3.
    np.testing.assert_array_equal(ranks, [3.0, 3.0])
    assert task.ranking_metrics([1, 2, 10, 40]) == pytest.approx(
        {"mrr": (1 + 1 / 2 + 1 / 10 + 1 / 40) / 4, "hits_at_10": 0.75})


def test_filtered_ranks_match_a_numpy_reference_with_ties():
    rng = np.random.default_rng(4)
    n, count = 30, 200
    scores = rng.integers(0, 6, (count, n)).astype(np.float32)  # many ties
    sources, targets = rng.integers(0, n, count), rng.integers(0, n, count)
    targets = np.where(targets == sources, (targets + 1) % n, targets)
    pairs = {(int(s), int(t)) for s, t in zip(rng.integers(0, n, 90), rng.integers(0, n, 90),
                                                 strict=True)}
    known = _known(pairs, n)
    # The scores depend on the query, not only its source: row i is query i's.
    rows_seen = []

    def score_rows(rows):
        start = sum(len(r) for r in rows_seen)
        rows_seen.append(rows)
        return scores[start : start + len(rows)]

    got = task.filtered_ranks(score_rows, sources, targets, known)
    expected = []
    for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
        others = [c for c in range(n) if c != t and (c == s or (s, c) in pairs)]
        candidates = np.delete(scores[i], others)
        target = scores[i, t]
        expected.append(1 + np.sum(candidates > target) + (np.sum(candidates == target) - 1) / 2)
    np.testing.assert_array_equal(got, expected)
    metrics = task.ranking_metrics(got)
    assert metrics["mrr"] == pytest.approx(np.mean(1 / np.array(expected)))
    assert metrics["hits_at_10"] == pytest.approx(np.mean(np.array(expected) <= 10))


def planted_wordnet(clusters: int = 24, members: int = 5, seed: int = 0) -> task.WordNet:
    """Clusters of `members` synsets on a ring of derivation pointers (`+` both ways), each
    member's hypernym (`@`, hyponym `~` back) the cluster's hub; random glosses. Every hub has
    the same hyponym count and glosses say nothing: only the neighbourhood tells which hub."""
    rng = np.random.default_rng(seed)
    senders, receivers, pointer = [], [], []
    for c in range(clusters):
        hub = c * (members + 1)
        ring = hub + 1 + np.arange(members)
        for i, member in enumerate(ring):
            after = ring[(i + 1) % members]
            senders += [member, hub, member, after]
            receivers += [hub, member, after, member]
            pointer += [task.POINTERS.index(symbol) for symbol in ("@", "~", "+", "+")]
    n = clusters * (members + 1)
    words = 6
    return task.WordNet(
        lexname=np.repeat(np.arange(clusters) % task.NUM_CLASSES, members + 1),
        pos=np.zeros(n, np.int64), offset=np.arange(n), senders=np.array(senders),
        receivers=np.array(receivers), pointer=np.array(pointer),
        gloss_indptr=np.arange(0, words * n + 1, words),
        gloss_bucket=rng.integers(0, task.HASH_BUCKETS, words * n),
        gloss_count=np.ones(words * n, np.int64))


PLANTED = WordNetConfig(models=("link",), feature_dim=64, hidden=32, link_fanouts=(5, 5),
                        link_batch_size=16, link_negatives=8, link_held_out=0.15, updates=300,
                        learning_rate=0.01)


@pytest.fixture(scope="module")
def planted():
    return data.build_data(PLANTED, planted_wordnet())


def test_the_link_graph_hides_the_held_out_pairs_and_keeps_every_other_pointer(planted):
    wordnet, link = planted.wordnet, planted.link
    held_out = {tuple(sorted(pair)) for pair in np.concatenate([link.valid, link.test], 1).T}
    graph_pairs = {tuple(sorted(pair)) for pair in zip(link.graph.senders, link.graph.receivers,
                                                       strict=True)}
    assert not held_out & graph_pairs and link.test.shape[1] > 0
    all_pairs = [tuple(sorted(pair)) for pair in zip(wordnet.senders, wordnet.receivers,
                                                     strict=True)]
    assert link.graph.senders.size == sum(pair not in held_out for pair in all_pairs)
    # A batch's own positives are out of its message passing too.
    batch = data.link_sampler(PLANTED, planted).batch(0, 0)
    ids = batch.subgraph.global_id
    positives = {tuple(sorted(ids[row])) for row in batch.pairs[: PLANTED.link_batch_size]}
    edges = batch.subgraph.edge_id[batch.subgraph.edge_id >= 0]
    sampled = {tuple(sorted(pair)) for pair in zip(link.graph.senders[edges],
                                                   link.graph.receivers[edges], strict=True)}
    assert sampled and not positives & sampled


def test_the_ranking_scores_are_the_training_decoders(planted):
    config = PLANTED
    params = training.init("link", config, planted)
    heads = training.whole_graph_outputs("link", config, planted, params)
    pairs = planted.link.test
    n = planted.wordnet.num_nodes
    ranks = training.link_ranks(heads, pairs, planted.link.known)
    sources, candidates = np.repeat(pairs[0], n), np.tile(np.arange(n), pairs.shape[1])
    scores = np.asarray(models.pair_scores(heads, jnp.stack([sources, candidates], axis=1)),
                        np.float64).reshape(-1, n)
    indptr, targets = planted.link.known
    for i, (source, target) in enumerate(pairs.T):
        known = targets[indptr[source] : indptr[source + 1]]
        others = [c for c in range(n) if c == source or (c != target and c in known)]
        rest = np.delete(scores[i], others)
        assert ranks[i] == (1 + np.sum(rest > scores[i, target])
                            + (np.sum(rest == scores[i, target]) - 1) / 2)


def test_a_sampled_link_predictor_finds_the_planted_hubs(planted):
    config = PLANTED
    params = training.init("link", config, planted)
    loss_fn = training.loss("link", config)
    tx = training.optimizer(config)
    opt_state = tx.init(params)
    batches = data.make_batch("link", config, planted)

    @jax.jit
    def step(params, opt_state, batch):
        (value, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    losses = []
    for update in range(config.updates):
        params, opt_state, value = step(params, opt_state, batches(update))
        losses.append(float(value))
    assert np.mean(losses[-30:]) < 0.5 * np.mean(losses[:30])
    heads = training.whole_graph_outputs("link", config, planted, params)
    learned = task.ranking_metrics(training.link_ranks(heads, planted.link.test,
                                                       planted.link.known))
    floors = report.link_floors(planted)
    # 144 candidates: 24 hubs tie on hyponym count (rank about 12), glosses are random, chance
    # is an MRR near 0.04. The trained predictor ranks the hub first or second most of the time.
    assert floors["hyponym_count"]["mrr"] < 0.1 and floors["gloss_cosine"]["mrr"] < 0.1
    assert learned["mrr"] > 0.4 and learned["hits_at_10"] >= 0.8


def test_typed_edge_sets_partition_the_pointers():
    wordnet = planted_wordnet(clusters=3)
    grouped = [symbol for symbols in task.EDGE_SETS.values() for symbol in symbols]
    assert sorted(grouped) == sorted(task.POINTERS)
    typed = task.to_typed_graph(wordnet, np.zeros((wordnet.num_nodes, 2), np.float32))
    assert sorted(key.name for key in typed.edges) == ["derivation", "hypernym", "hyponym"]
    hypernym = typed.edges[typed.edge_key_by_name("hypernym")]
    is_up = wordnet.pointer == task.POINTERS.index("@")
    np.testing.assert_array_equal(hypernym.senders, wordnet.senders[is_up])
    np.testing.assert_array_equal(hypernym.receivers, wordnet.receivers[is_up])
    assert sum(int(edges.n_edge[0]) for edges in typed.edges.values()) == wordnet.num_edges


def test_seconds_per_update_skips_intervals_that_hold_an_evaluation():
    records = [{"kind": "train", "step": 2, "wall_minutes": 1.0},
               {"kind": "eval", "step": 2, "wall_minutes": 3.0},
               {"kind": "train", "step": 4, "wall_minutes": 3.1},
               {"kind": "train", "step": 6, "wall_minutes": 3.2},
               {"kind": "train", "step": 8, "wall_minutes": 3.4}]
    # Intervals 4-6 (0.1 min over 2 updates) and 6-8 (0.2 min): 3 s and 6 s an update.
    assert report.seconds_per_update(records) == pytest.approx(4.5)
    assert report.seconds_per_update(records[:2]) is None


def _scores(results):
    """Every model's test metrics: the run record without its clocks."""
    rows = {f"{graph}/{name}": row for graph, models_of_graph in results["classification"].items()
            for name, row in models_of_graph.items()}
    rows["link"] = results["link"]["predictor"]
    return {name: {key: row[key] for key in ("valid", "test", "mrr", "hits_at_10") if key in row}
            for name, row in rows.items()}


@pytest.mark.slow
def test_tiny_run_resumes_to_the_uninterrupted_result_and_eval_reads_it_back(tmp_path):
    config = dataclasses.replace(CONFIGS["tiny"], models=("sage", "link"))
    whole = experiments.run_verb(DEMO, "train", config, tmp_path / "whole", progress=False)
    rows = whole["classification"]
    assert list(rows) == ["all_pointers"] and set(rows["all_pointers"]) == {
        "sage", "label_propagation"}
    assert rows["all_pointers"]["sage"]["updates"] == 4
    assert rows["all_pointers"]["sage"]["step_memory_mib"] > 0
    assert set(whole["link"]) == {"predictor", "gloss_cosine", "hyponym_count", "test_pairs"}
    assert experiments.run_verb(DEMO, "eval", None, tmp_path / "whole") == whole
    stops = iter([False, False, True])  # a stop request during GraphSAGE's third update
    with pytest.raises(gn_train.TrainingStopped):
        experiments.run_verb(DEMO, "train", config, tmp_path / "cut", progress=False,
                             should_stop=lambda: next(stops, True))
    resumed = experiments.run_verb(DEMO, "train", config, tmp_path / "cut", progress=False)
    assert _scores(resumed) == _scores(whole)


def test_subset_keeps_the_induced_pointers_and_glosses():
    wordnet = task.load()
    part = data.subset(wordnet, 2000, seed=1)
    keep = np.sort(np.random.default_rng(1).permutation(wordnet.num_nodes)[:2000])
    inside = np.isin(wordnet.senders, keep) & np.isin(wordnet.receivers, keep)
    assert part.num_nodes == 2000 and part.num_edges == inside.sum()
    np.testing.assert_array_equal(keep[part.senders], wordnet.senders[inside])
    np.testing.assert_array_equal(part.lexname, wordnet.lexname[keep])
    np.testing.assert_allclose(task.gloss_features(part, 64),
                               task.gloss_features(wordnet, 64)[keep])


@pytest.mark.slow
def test_tiny_preset_runs_every_model_and_the_link_task(tmp_path):
    results = experiments.run_verb(DEMO, "train", DEMO.presets["tiny"], tmp_path / "run",
                                   progress=False)
    rows = results["classification"]
    assert set(rows["all_pointers"]) == {"sage", "gcn", "rgcn", "mlp", "label_propagation"}
    assert set(rows["no_taxonomy"]) == {"sage", "gcn", "rgcn", "label_propagation"}
    for graph in rows.values():
        for row in graph.values():
            assert 0.0 <= row["test"] <= 1.0 and row["step_memory_mib"] > 0
    assert results["link"]["predictor"]["updates"] == 4
    assert 0 < results["link"]["predictor"]["mrr"] <= 1
