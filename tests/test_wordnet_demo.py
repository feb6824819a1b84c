"""The WordNet demo: label propagation and the filtered ranking against NumPy by hand, the
subset keeps exactly the induced pointers, and the tiny preset runs end to end."""

import jax.numpy as jnp
import numpy as np
import pytest

import gnkit as gn
from gnkit.demos.wordnet import data, models, training
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


def test_ranking_is_filtered_by_the_other_known_targets():
    embeddings = np.array([[1.0, 0.0], [0.9, 0.0], [0.5, 0.0], [0.2, 0.0], [-1.0, 0.0]])
    # Scores of source 0: node0 1.0, node1 0.9, node2 0.5, node3 0.2, node4 -1.0.
    known = {0: [(0, 1), (0, 3)]}
    metrics = training.ranking_metrics(embeddings, np.array([0, 0]), np.array([3, 2]), known)
    # Target 3: node 1 (another known target) is left out; nodes 0 and 2 score above: rank 3.
    # Target 2: nodes 1 and 3 are left out; node 0 scores above: rank 2.
    assert metrics["mrr"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert metrics["hits_at_10"] == 1.0


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
    from gnkit import experiments
    from gnkit.demos.wordnet import DEMO

    results = experiments.run_verb(DEMO, "train", DEMO.presets["tiny"], tmp_path / "run",
                                   progress=False)
    rows = results["classification"]
    assert set(rows) == {"all_pointers", "no_taxonomy"}
    assert set(rows["all_pointers"]) == {"sage", "gcn", "mlp", "label_propagation"}
    assert "mlp" not in rows["no_taxonomy"]
    for variant in rows.values():
        for row in variant.values():
            assert 0.0 <= row["test"] <= 1.0 and row["step_memory_mib"] > 0
    assert 0 < results["link"]["sage"]["mrr"] <= 1
