"""Tests of gnkit.kg: scorers against NumPy references, all-entity scoring against one-by-one
scoring, filtered ranks on a hand-built graph, chunked evaluation, losses, negative sampling,
epochs and triple files."""

import lzma

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gnkit import kg

RNG = np.random.default_rng(0)
DIM = 6


def _as_complex(x):
    half = x.shape[-1] // 2
    return x[..., :half].astype(np.float64) + 1j * x[..., half:].astype(np.float64)


def _reference(name, h, r, t):
    """Scores of triples `[B, W]` written from the papers' formulas in NumPy (float64)."""
    h, r, t = (np.asarray(x, np.float64) for x in (h, r, t))
    if name == "transe":
        return -np.abs(h + r - t).sum(-1)
    if name == "transe_l2":
        return -np.sqrt(((h + r - t) ** 2).sum(-1))
    if name == "distmult":
        return (h * r * t).sum(-1)
    if name == "complex":
        return np.real((_as_complex(h) * _as_complex(r) * np.conj(_as_complex(t))).sum(-1))
    difference = _as_complex(h) * np.exp(1j * r) - _as_complex(t)
    if name == "rotate_l2":
        return -np.sqrt((np.abs(difference) ** 2).sum(-1))
    assert name == "rotate"
    return -np.abs(difference).sum(-1)


def _embeddings(name, count, dim=DIM, rng=RNG):
    scorer = kg.get_scorer(name)
    entities = rng.normal(size=(count, scorer.entity_width(dim))).astype(np.float32)
    relations = rng.normal(size=(count, scorer.relation_width(dim))).astype(np.float32)
    return entities, relations


@pytest.mark.parametrize("name", list(kg.SCORERS))
def test_scorer_matches_numpy_reference(name):
    entities, relations = _embeddings(name, 9)
    tails = np.roll(entities, 3, axis=0)
    scores = kg.get_scorer(name).score(entities, relations, tails)
    np.testing.assert_allclose(scores, _reference(name, entities, relations, tails), rtol=1e-5,
                               atol=1e-5)


def test_scorers_on_hand_computed_values():
    h, r, t = np.array([[1.0, 2.0]]), np.array([[0.5, -1.0]]), np.array([[2.0, 0.0]])
    assert kg.transe(h, r, t)[0] == pytest.approx(-(0.5 + 1.0))
    assert kg.transe(h, r, t, norm=2)[0] == pytest.approx(-np.sqrt(0.25 + 1.0))
    assert kg.distmult(h, r, t)[0] == pytest.approx(1.0)
    # ComplEx, dim 1: h = 1 + 2i, r = 0.5 - i, t = 2: Re((1 + 2i)(0.5 - i) * 2) = Re(5 - 1.5i) = 5.
    assert kg.complex_score(h, r, t)[0] == pytest.approx(5.0)
    # RotatE, dim 1: h = 1 + 2i rotated by pi/2 is -2 + i; its distance to t = 2 is sqrt(17).
    assert kg.rotate(h, np.array([[np.pi / 2]]), t)[0] == pytest.approx(-np.sqrt(17.0), rel=1e-6)
    # dim 2: h = (1, i), both rotated by pi/2 -> (i, -1); t = (0, 0): moduli 1 and 1, so the sum
    # of moduli is 2 and the Euclidean norm sqrt(2).
    h2, phases, t2 = np.array([[1.0, 0.0, 0.0, 1.0]]), np.full((1, 2), np.pi / 2), np.zeros((1, 4))
    assert kg.rotate(h2, phases, t2)[0] == pytest.approx(-2.0, rel=1e-6)
    assert kg.rotate_l2(h2, phases, t2)[0] == pytest.approx(-np.sqrt(2.0), rel=1e-6)


@pytest.mark.parametrize("name", list(kg.SCORERS))
def test_all_entity_scores_equal_scoring_each_triple(name):
    scorer = kg.get_scorer(name)
    entities, relations = _embeddings(name, 11)
    batch_heads, batch_tails = entities[[0, 4, 7]], entities[[2, 2, 9]]
    batch_relations = relations[[1, 5, 3]]
    tail_scores = np.asarray(scorer.score_tails(batch_heads, batch_relations, entities))
    head_scores = np.asarray(scorer.score_heads(batch_relations, batch_tails, entities))
    assert tail_scores.shape == head_scores.shape == (3, 11)
    for b in range(3):
        for e in range(11):
            head, tail = batch_heads[b:b + 1], batch_tails[b:b + 1]
            relation = batch_relations[b:b + 1]
            one_tail = scorer.score(head, relation, entities[e:e + 1])
            one_head = scorer.score(entities[e:e + 1], relation, tail)
            assert tail_scores[b, e] == pytest.approx(float(one_tail[0]), rel=1e-4, abs=1e-4)
            assert head_scores[b, e] == pytest.approx(float(one_head[0]), rel=1e-4, abs=1e-4)


def test_rotate_relations_have_modulus_one_and_keep_moduli():
    phases = RNG.uniform(-10, 10, size=(5, DIM)).astype(np.float32)
    rotations = _as_complex(np.asarray(kg.rotation(phases)))
    np.testing.assert_allclose(np.abs(rotations), 1.0, rtol=1e-6)
    heads = RNG.normal(size=(5, 2 * DIM)).astype(np.float32)
    # The head rotated is the tail that scores 0; it keeps the head's moduli coordinate-wise.
    rotated = np.concatenate([np.real(_as_complex(heads) * rotations),
                              np.imag(_as_complex(heads) * rotations)], -1).astype(np.float32)
    np.testing.assert_allclose(kg.rotate(heads, phases, rotated), 0.0, atol=1e-3)
    np.testing.assert_allclose(np.abs(_as_complex(rotated)), np.abs(_as_complex(heads)), rtol=1e-5)


def test_scores_have_finite_gradients_at_zero_distance():
    for name in ("transe_l2", "rotate", "rotate_l2"):
        scorer = kg.get_scorer(name)
        x = jnp.ones((2, scorer.entity_width(DIM)))
        relation = jnp.zeros((2, scorer.relation_width(DIM)))
        grads = jax.grad(lambda e, s=scorer, r=relation: s.score(e, r, e).sum())(x)
        assert np.all(np.isfinite(grads))


# Filtered ranking on a hand-built graph.


def _fixed_scores(scores):
    """A scorer whose tail and head scores are the rows of fixed tables, whatever the input:
    `tails_table[relation]` and `heads_table[relation]` (each [R, E]), relations as one-hot."""
    tails_table, heads_table = (jnp.asarray(table, jnp.float32) for table in scores)
    return kg.Scorer(
        "fixed",
        score=lambda h, r, t: jnp.zeros(h.shape[0]),
        score_tails=lambda h, r, e: r @ tails_table,
        score_heads=lambda r, t, e: r @ heads_table,
    )


def test_filtered_ranks_on_a_hand_built_graph():
    # 5 entities, 1 relation. Scores of every entity as tail and as head (the same for all
    # queries, since they depend on the relation only).
    tail_scores = [[0.9, 0.5, 0.7, 0.5, 0.1]]
    head_scores = [[0.2, 0.8, 0.8, 0.4, 0.3]]
    scorer = _fixed_scores((tail_scores, head_scores))
    entities, relations = jnp.zeros((5, 1)), jnp.eye(1)
    test = np.array([[0, 0, 1], [3, 0, 4]])
    known = np.array([[0, 0, 1], [3, 0, 4], [0, 0, 2], [2, 0, 4]])
    task = kg.ranking_task(test, known, num_relations=1, chunk_size=4)
    ranks = np.asarray(kg.filtered_ranks(scorer, entities, relations, task))[:2]
    # (0, r, 1): tail 1 scores 0.5; higher among the rest: 0 (0.9), 2 (0.7, but known: filtered);
    #   tie: 3 (0.5) -> 1 + 1 + 0.5 = 2.5.
    # head 0 scores 0.2; higher: 1, 2, 3, 4 (0.8, 0.8, 0.4, 0.3), none known as (?, r, 1) -> 5.
    # (3, r, 4): tail 4 scores 0.1, the lowest; nothing of (3, r, ?) else known -> 5.
    # head 3 scores 0.4; higher: 1 (0.8), 2 (0.8, known (2, r, 4): filtered) -> 2.
    np.testing.assert_array_equal(ranks, [[2.5, 5.0], [5.0, 2.0]])
    raw = kg.ranking_task(test, None, num_relations=1, chunk_size=4)
    raw_ranks = np.asarray(kg.filtered_ranks(scorer, entities, relations, raw))[:2]
    np.testing.assert_array_equal(raw_ranks, [[3.5, 5.0], [5.0, 3.0]])
    metrics = kg.evaluate(scorer, entities, relations, task)
    assert metrics["mrr"] == pytest.approx((1 / 2.5 + 1 / 5 + 1 / 5 + 1 / 2) / 4)
    assert metrics["hits@1"] == 0.0 and metrics["hits@3"] == 0.5 and metrics["hits@10"] == 1.0
    assert metrics["mean_rank"] == pytest.approx(14.5 / 4)


def _numpy_filtered_ranks(scores_tail, scores_head, test, known):
    """Filtered mean ranks written plainly: loops and sets."""
    tails_of, heads_of = {}, {}
    for h, r, t in known.tolist():
        tails_of.setdefault((h, r), set()).add(t)
        heads_of.setdefault((r, t), set()).add(h)
    ranks = []
    for row, (h, r, t) in enumerate(test.tolist()):
        pair = []
        for scores, true, others in ((scores_tail[row], t, tails_of[(h, r)]),
                                     (scores_head[row], h, heads_of[(r, t)])):
            keep = np.ones(len(scores), bool)
            keep[list(others)] = False
            higher = np.sum(scores[keep] > scores[true])
            equal = np.sum(scores[keep] == scores[true])
            pair.append(1 + higher + equal / 2)
        ranks.append(pair)
    return np.array(ranks)


def _random_graph(num_entities, num_relations, num_train, num_test, seed):
    rng = np.random.default_rng(seed)
    def triples(count):
        return np.stack([rng.integers(0, num_entities, count),
                         rng.integers(0, num_relations, count),
                         rng.integers(0, num_entities, count)], -1)

    return triples(num_train), triples(num_test)


@pytest.mark.parametrize("name", ["distmult", "rotate"])
def test_chunked_evaluation_equals_unchunked(name):
    train, test = _random_graph(40, 3, 400, 53, seed=1)
    known = np.concatenate([train, test])
    entities, relations = _embeddings(name, 40, rng=np.random.default_rng(2))
    relations = relations[:3]
    whole = kg.ranking_task(test, known, 3, chunk_size=len(test))
    assert whole.triples.shape[0] == 1
    reference = np.asarray(kg.filtered_ranks(name, entities, relations, whole))
    for chunk_size in (1, 7, 16):
        task = kg.ranking_task(test, known, 3, chunk_size=chunk_size)
        ranks = np.asarray(kg.filtered_ranks(name, entities, relations, task))
        ranks = ranks[task.valid.reshape(-1)]
        np.testing.assert_array_equal(ranks, reference)
    scorer = kg.get_scorer(name)
    expected = _numpy_filtered_ranks(
        np.asarray(scorer.score_tails(entities[test[:, 0]], relations[test[:, 1]], entities)),
        np.asarray(scorer.score_heads(relations[test[:, 1]], entities[test[:, 2]], entities)),
        test, known)
    np.testing.assert_array_equal(reference, expected)


def test_evaluation_of_a_large_graph_in_chunks_matches_numpy_on_a_sample():
    num_entities, num_relations = 15_000, 20
    train, test = _random_graph(num_entities, num_relations, 100_000, 20_000, seed=3)
    # Some test queries share their (h, r) with many known tails, so the filter matters.
    test[:50, :2] = train[0, :2]
    known = np.concatenate([train, test])
    rng = np.random.default_rng(4)
    entities = rng.normal(size=(num_entities, 8)).astype(np.float32)
    relations = rng.normal(size=(num_relations, 8)).astype(np.float32)
    task = kg.ranking_task(test, known, num_relations, chunk_size=512)
    ranks = np.asarray(jax.jit(kg.filtered_ranks, static_argnums=0)(
        "distmult", entities, relations, task))[task.valid.reshape(-1)]
    assert ranks.shape == (20_000, 2)
    sample = np.concatenate([np.arange(50), rng.choice(np.arange(50, 20_000), 150, replace=False)])
    e64, r64 = entities.astype(np.float64), relations.astype(np.float64)
    tail_scores = (e64[test[sample, 0]] * r64[test[sample, 1]]) @ e64.T
    head_scores = (r64[test[sample, 1]] * e64[test[sample, 2]]) @ e64.T
    expected = _numpy_filtered_ranks(tail_scores, head_scores, test[sample], known)
    # float32 scores against float64: a near-tie may flip; allow a rank of slack.
    np.testing.assert_allclose(ranks[sample], expected, atol=1.0)
    assert np.mean(ranks[sample] == expected) > 0.95


def test_ranking_task_layout_and_errors():
    task = kg.ranking_task(np.array([[0, 0, 1]] * 5), np.array([[0, 0, 1], [0, 0, 2]]), 1, 2)
    assert task.triples.shape == (3, 2, 3) and task.num_triples == 5
    np.testing.assert_array_equal(task.valid.reshape(-1), [1, 1, 1, 1, 1, 0])
    with pytest.raises(ValueError, match="chunk_size"):
        kg.ranking_task(np.array([[0, 0, 1]]), None, 1, 0)


# Training pieces.


def test_corrupt_uniform_changes_exactly_head_or_tail_to_another_entity():
    triples = jnp.array([[0, 1, 2], [3, 0, 4], [5, 2, 5]])
    negatives = np.asarray(kg.corrupt_uniform(jax.random.key(0), triples, 2000, 6))
    assert negatives.shape == (3, 2000, 3)
    original = np.asarray(triples)[:, None, :]
    changed = negatives != original
    assert np.all(changed[..., 1] == 0) and np.all(changed.sum(-1) == 1)
    tail_share = changed[..., 2].mean()
    assert 0.45 < tail_share < 0.55
    for b in range(3):
        for column in (0, 2):
            drawn = negatives[b][changed[b, :, column], column]
            assert set(drawn.tolist()) == set(range(6)) - {int(triples[b, column])}


def test_corrupt_uniform_same_side_corrupts_one_side_per_triple():
    triples = jnp.tile(jnp.array([[0, 1, 2]]), (400, 1))
    negatives = np.asarray(kg.corrupt_uniform(jax.random.key(1), triples, 8, 6, same_side=True))
    changed = negatives != np.asarray(triples)[:, None, :]
    assert np.all(changed.sum(-1) == 1)
    tail_rows = changed[..., 2].all(-1)
    head_rows = changed[..., 0].all(-1)
    # Every triple's 8 corruptions replace the same side; about half the triples each side.
    assert np.all(tail_rows ^ head_rows)
    assert 0.4 < tail_rows.mean() < 0.6


def test_make_epoch_applies_the_constraint_after_every_update():
    # One parameter vector pulled away from the unit circle by the loss, projected back onto it
    # after each update: it ends on the circle.
    def loss(params, triples, weights, key):
        return -jnp.sum(params["relations"] * 3.0)

    def constrain(params):
        return {"relations": params["relations"] / jnp.linalg.norm(params["relations"])}

    optimizer = optax.sgd(0.5)
    epoch = kg.make_epoch(loss, optimizer, jnp.zeros((8, 3), jnp.int32), 2, constrain=constrain)
    params = {"relations": jnp.array([1.0, 0.0])}
    params, _, _ = epoch(params, optimizer.init(params), jax.random.key(0))
    assert float(jnp.linalg.norm(params["relations"])) == pytest.approx(1.0, rel=1e-6)
    # Each update adds (1.5, 1.5) then renormalises: 4 updates from (1, 0).
    expected = np.array([1.0, 0.0])
    for _ in range(4):
        expected = expected + 1.5
        expected = expected / np.linalg.norm(expected)
    np.testing.assert_allclose(params["relations"], expected, rtol=1e-5)


def test_self_adversarial_loss_matches_numpy():
    positive = np.array([1.0, -2.0])
    negative = np.array([[0.5, -1.0, 2.0], [-3.0, 0.0, 1.0]])
    margin, temperature, weights = 4.0, 0.7, np.array([1.0, 0.5])
    log_sigmoid = lambda x: -np.log1p(np.exp(-x))  # noqa: E731
    p = np.exp(temperature * negative)
    p /= p.sum(-1, keepdims=True)
    per = (-log_sigmoid(margin + positive) - (p * log_sigmoid(-margin - negative)).sum(-1)) / 2
    loss = kg.self_adversarial_loss(positive, negative, margin, temperature, weights)
    assert float(loss) == pytest.approx((per * weights).sum() / weights.sum(), rel=1e-5)
    uniform = kg.self_adversarial_loss(positive, negative, margin, 0.0)
    per = (-log_sigmoid(margin + positive) - log_sigmoid(-margin - negative).mean(-1)) / 2
    assert float(uniform) == pytest.approx(per.mean(), rel=1e-5)
    # The adversarial weights carry no gradient: d/ds_neg is p * sigmoid(margin + s_neg) / 2.
    grad = jax.grad(lambda n: kg.self_adversarial_loss(positive, n, margin, temperature))(negative)
    sigmoid = 1 / (1 + np.exp(-(margin + negative)))
    np.testing.assert_allclose(grad, p * sigmoid / 2 / 2, rtol=1e-5)


def test_margin_and_one_to_n_losses_match_numpy():
    positive, negative = np.array([1.0, 0.0]), np.array([[0.5, 2.0], [-3.0, 0.5]])
    hinge = np.maximum(0, 1.0 - positive[:, None] + negative).mean(-1).mean()
    assert float(kg.margin_ranking_loss(positive, negative, 1.0)) == pytest.approx(hinge)
    tail_scores = RNG.normal(size=(3, 5))
    head_scores = RNG.normal(size=(3, 5))
    triples = np.array([[0, 0, 1], [4, 1, 2], [3, 0, 3]])
    log_softmax = lambda s: s - np.log(np.exp(s).sum(-1, keepdims=True))  # noqa: E731
    rows = np.arange(3)
    expected = -(log_softmax(tail_scores)[rows, triples[:, 2]]
                 + log_softmax(head_scores)[rows, triples[:, 0]]) / 2
    loss = kg.one_to_n_loss(tail_scores, head_scores, triples)
    assert float(loss) == pytest.approx(expected.mean(), rel=1e-5)


def test_penalty_matches_numpy():
    x = RNG.normal(size=(4, 6))
    y = RNG.normal(size=(4, 6))
    assert float(kg.penalty([x, y], "n3")) == pytest.approx(
        (np.abs(x) ** 3).sum() / 4 + (np.abs(y) ** 3).sum() / 4, rel=1e-5)
    assert float(kg.penalty([x], "l2")) == pytest.approx((x**2).sum() / 4, rel=1e-5)
    modulus = np.abs(_as_complex(x))
    assert float(kg.penalty([x], "n3", complex_entities=True)) == pytest.approx(
        (modulus**3).sum() / 4, rel=1e-5)


def test_epoch_batches_visit_every_triple_once():
    indices, weights = kg.epoch_batches(jax.random.key(1), 10, 4)
    assert indices.shape == weights.shape == (3, 4)
    real = np.asarray(indices)[np.asarray(weights) > 0]
    assert sorted(real.tolist()) == list(range(10))
    np.testing.assert_array_equal(np.asarray(weights).reshape(-1), [1] * 10 + [0, 0])


def test_make_epoch_equals_the_updates_done_one_by_one():
    triples = jnp.array([[0, 0, 1], [1, 1, 2], [2, 0, 0], [1, 0, 2], [0, 1, 0]])
    params = {"entities": jnp.asarray(RNG.normal(size=(3, 4)), jnp.float32),
              "relations": jnp.asarray(RNG.normal(size=(2, 4)), jnp.float32)}

    def loss(p, batch, weights, key):
        tails = kg.distmult_tails(p["entities"][batch[:, 0]], p["relations"][batch[:, 1]],
                                  p["entities"])
        heads = kg.distmult_heads(p["relations"][batch[:, 1]], p["entities"][batch[:, 2]],
                                  p["entities"])
        return kg.one_to_n_loss(tails, heads, batch, weights)

    optimizer = optax.sgd(0.1)
    epoch = kg.make_epoch(loss, optimizer, triples, batch_size=2)
    key = jax.random.key(7)
    new_params, _, metrics = epoch(params, optimizer.init(params), key)
    shuffle_key, _ = jax.random.split(key)
    indices, weights = kg.epoch_batches(shuffle_key, 5, 2)
    manual, losses = params, []
    for batch_indices, batch_weights in zip(indices, weights, strict=True):
        value, grads = jax.value_and_grad(loss)(manual, triples[batch_indices], batch_weights, None)
        manual = jax.tree.map(lambda p, g: p - 0.1 * g, manual, grads)
        losses.append(value)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 new_params, manual)
    assert float(metrics["loss"]) == pytest.approx(float(np.mean(losses)), rel=1e-5)


# Triple files.


def test_shipped_graphs_have_the_published_sizes():
    sizes = {"kinships": (104, 25, 8544, 1068, 1074), "umls": (135, 46, 5216, 652, 661),
             "nations": (14, 55, 1592, 199, 201)}
    for name, expected in sizes.items():
        graph = kg.load_graph(name)
        found = (graph.num_entities, graph.num_relations, len(graph.train), len(graph.valid),
                 len(graph.test))
        assert found == expected
    graph = kg.load_graph("umls")
    head, relation, tail = graph.train[0]
    assert (graph.entities[head], graph.relations[relation], graph.entities[tail]) == (
        "acquired_abnormality", "location_of", "experimental_model_of_disease")


def _write_graph(directory, train, valid, test, compress_test=False):
    directory.mkdir()
    (directory / "train.txt").write_text(train)
    (directory / "valid.txt").write_text(valid)
    if compress_test:
        (directory / "test.txt.xz").write_bytes(lzma.compress(test.encode()))
    else:
        (directory / "test.txt").write_text(test)
    return directory


def test_load_graph_from_files_numbers_by_first_appearance(tmp_path):
    directory = _write_graph(tmp_path / "g", "b\tlikes\ta\na\tknows\tc\n\n", "a\tlikes\tb\n",
                             "c\tknows\tb\n", compress_test=True)
    graph = kg.load_graph(directory)
    assert graph.entities == ("b", "a", "c") and graph.relations == ("likes", "knows")
    np.testing.assert_array_equal(graph.train, [[0, 0, 1], [1, 1, 2]])
    np.testing.assert_array_equal(graph.test, [[2, 1, 0]])
    assert graph.known().shape == (4, 3)


def test_malformed_lines_and_unknown_entities_are_named(tmp_path):
    bad = _write_graph(tmp_path / "bad", "a\tr\tb\na r b\n", "a\tr\tb\n", "a\tr\tb\n")
    with pytest.raises(kg.TripleFileError, match=r"train.txt:2: expected head<TAB>relation"):
        kg.load_graph(bad)
    unknown = _write_graph(tmp_path / "unknown", "a\tr\tb\n", "a\tr\tb\n", "a\tr\tb\nz\tr\ta\n")
    with pytest.raises(kg.TripleFileError, match=r"test.txt: triple 2 \(z, r, a\) names the"):
        kg.load_graph(unknown)
    with pytest.raises(kg.TripleFileError, match="no valid.txt"):
        (tmp_path / "partial").mkdir()
        (tmp_path / "partial" / "train.txt").write_text("a\tr\tb\n")
        kg.load_graph(tmp_path / "partial")
    with pytest.raises(kg.TripleFileError, match="not a directory"):
        kg.load_graph(tmp_path / "missing")
