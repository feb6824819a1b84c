"""The shipped WordNet: WordNet 3.0's counts, known synsets and pointers read off the database
lines, gloss features by hand, and splits that hide held-out hypernyms in both directions."""

import pathlib
import re
import zlib

import numpy as np
import pytest

from gnkit.tasks import wordnet as wn


@pytest.fixture(scope="module")
def wordnet():
    return wn.load()


def test_counts_are_wordnet_3_0s(wordnet):
    assert wordnet.num_nodes == 117_659 and wordnet.num_edges == 377_592
    np.testing.assert_array_equal(np.bincount(wordnet.pos), [82_115, 13_767, 18_156, 3_621])
    assert np.unique(wordnet.lexname).size == wn.NUM_CLASSES == len(wn.LEXNAMES)
    assert (wn.LICENSE_FILE.read_text().count("WordNet 3.0 Copyright 2006 by Princeton") == 1)


def test_known_synsets_and_their_pointers(wordnet):
    # data.noun: "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 ~ 00002137 n 0000 ~ 04424418 n
    # 0000 | that which is perceived ..." and "00001930 03 n 01 physical_entity 0 007 @ 00001740".
    entity = int(np.flatnonzero((wordnet.offset == 1740) & (wordnet.pos == 0))[0])
    physical = int(np.flatnonzero((wordnet.offset == 1930) & (wordnet.pos == 0))[0])
    assert wn.LEXNAMES[wordnet.lexname[entity]] == "noun.Tops"
    out = wordnet.senders == entity
    assert sorted(wordnet.offset[wordnet.receivers[out]]) == [1930, 2137, 4424418]
    assert set(wordnet.pointer[out]) == {wn.POINTERS.index("~")}
    hypernym = (wordnet.senders == physical) & (wordnet.pointer == wn.POINTERS.index("@"))
    assert list(wordnet.receivers[hypernym]) == [entity]


def test_gloss_features_by_hand(wordnet):
    gloss = ("that which is perceived or known or inferred to have its own distinct existence "
             "(living or nonliving)")
    expected = np.zeros(256)
    for word in re.findall(r"[a-z]+", gloss):
        expected[zlib.crc32(word.encode()) % 4096 % 256] += 1
    expected = np.log1p(expected)
    expected /= np.linalg.norm(expected)
    entity = int(np.flatnonzero((wordnet.offset == 1740) & (wordnet.pos == 0))[0])
    np.testing.assert_allclose(wn.gloss_features(wordnet, 256)[entity], expected, rtol=1e-6)
    with pytest.raises(ValueError, match="dim must divide"):
        wn.gloss_features(wordnet, 100)


def test_hypernym_split_hides_held_out_pairs_both_ways(wordnet):
    kept, valid, test = wn.hypernym_split(wordnet, held_out=0.05)
    assert not (valid & test).any() and not (kept & (valid | test)).any()
    n = wordnet.num_nodes
    kept_keys = set(wordnet.senders[kept] * n + wordnet.receivers[kept])
    for mask in (valid, test):
        assert mask.sum() == round(0.05 * (wordnet.pointer == 0).sum())
        forward = wordnet.senders[mask] * n + wordnet.receivers[mask]
        backward = wordnet.receivers[mask] * n + wordnet.senders[mask]
        assert not kept_keys & set(forward) and not kept_keys & set(backward)
    graph = wn.to_graph(wordnet, None, kept)
    assert int(graph.n_edge[0]) == kept.sum() == graph.senders.shape[0]


def test_node_split_is_a_disjoint_cover():
    train, valid, test = wn.node_split(1000, seed=3)
    assert (train.size, valid.size, test.size) == (800, 100, 100)
    assert sorted(np.concatenate([train, valid, test])) == list(range(1000))


@pytest.mark.slow
@pytest.mark.skipif(not pathlib.Path("/usr/share/wordnet/data.noun").exists(),
                    reason="needs Debian's wordnet-base")
def test_shipped_file_is_what_the_script_makes(wordnet):
    import importlib.util

    script = wn.DATA_FILE.parent / "make_wordnet.py"
    spec = importlib.util.spec_from_file_location("make_wordnet", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arrays = module.convert(pathlib.Path("/usr/share/wordnet"))
    for name, values in arrays.items():
        np.testing.assert_array_equal(getattr(wordnet, name), values, err_msg=name)
