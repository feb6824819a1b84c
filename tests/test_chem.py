"""gnkit.chem: featurisers against hand-checked tables, data sets, splits, splits files, cache."""

import json
import re

import numpy as np
import pytest

pytest.importorskip("rdkit")

from rdkit import rdBase  # noqa: E402

from gnkit import chem  # noqa: E402
from gnkit.batching import get_edge_padding_mask, get_node_padding_mask  # noqa: E402

# OGB features worked out by hand from OGB's allowed-value lists: [atomic number - 1, chirality,
# total degree, formal charge + 5, total hydrogens, radical electrons, hybridisation (SP=0, SP2=1,
# SP3=2), aromatic, in ring]; bonds [type (single 0, double 1, aromatic 3), stereo (none 0, E 2),
# conjugated].
OGB_TABLE = {
    "CCO": (
        [[5, 0, 4, 5, 3, 0, 2, 0, 0], [5, 0, 4, 5, 2, 0, 2, 0, 0], [7, 0, 2, 5, 1, 0, 2, 0, 0]],
        [[0, 0, 0]] * 4,
    ),
    "c1ccccc1": ([[5, 0, 3, 5, 1, 0, 1, 1, 1]] * 6, [[3, 0, 1]] * 12),
    "[NH4+]": ([[6, 0, 4, 6, 4, 0, 2, 0, 0]], []),
    "F/C=C/F": (
        [[8, 0, 1, 5, 0, 0, 2, 0, 0], [5, 0, 3, 5, 1, 0, 1, 0, 0]]
        + [[5, 0, 3, 5, 1, 0, 1, 0, 0], [8, 0, 1, 5, 0, 0, 2, 0, 0]],
        [[0, 0, 0]] * 2 + [[1, 2, 0]] * 2 + [[0, 0, 0]] * 2,
    ),
    "C[C@H](N)O": (
        [[5, 0, 4, 5, 3, 0, 2, 0, 0], [5, 2, 4, 5, 1, 0, 2, 0, 0]]
        + [[6, 0, 3, 5, 2, 0, 2, 0, 0], [7, 0, 2, 5, 1, 0, 2, 0, 0]],
        [[0, 0, 0]] * 6,
    ),
}


@pytest.mark.parametrize("smiles", sorted(OGB_TABLE))
def test_ogb_features_match_the_hand_checked_table(smiles):
    nodes, edges = OGB_TABLE[smiles]
    graph = chem.smiles_to_graph(smiles, "ogb")
    np.testing.assert_array_equal(graph.nodes, np.asarray(nodes).reshape(-1, 9))
    np.testing.assert_array_equal(graph.edges, np.asarray(edges).reshape(-1, 3))


def test_chemprop_features_of_ethanol_set_the_hand_checked_slots():
    # Slots: atomic number 1-36, 53 (0-37), degree 0-5 (38-44), charge -1,-2,1,2,0 (45-50),
    # chiral tag (51-55), hydrogens 0-4 (56-61), hybridisation S..SP3D2 (62-69), aromatic 70,
    # mass / 100 at 71. Bonds: null 0, single 1, ..., conjugated 5, ring 6, stereo 7-13.
    graph = chem.smiles_to_graph("CCO", "chemprop")
    hot = [np.flatnonzero(row[:71]).tolist() for row in graph.nodes]
    assert hot == [[5, 42, 49, 51, 59, 66], [5, 42, 49, 51, 58, 66], [7, 40, 49, 51, 57, 66]]
    np.testing.assert_allclose(graph.nodes[:, 71], [0.12011, 0.12011, 0.15999], rtol=1e-4)
    assert [np.flatnonzero(row).tolist() for row in graph.edges] == [[1, 7]] * 4
    assert chem.features.feature_widths("chemprop") == (72, 14)


def test_graph_layout_each_bond_two_directed_edges_reverse_is_xor_one():
    graph = chem.smiles_to_graph("CC(=O)N")
    assert graph.n_node.tolist() == [4] and graph.n_edge.tolist() == [6]
    np.testing.assert_array_equal(graph.senders, [0, 1, 1, 2, 1, 3])
    np.testing.assert_array_equal(graph.receivers, [1, 0, 2, 1, 3, 1])
    reverse = np.arange(6) ^ 1
    np.testing.assert_array_equal(graph.senders[reverse], graph.receivers)
    assert graph.globals.shape == (1, 1)


def test_invalid_smiles_error_names_the_row_and_the_string():
    with pytest.raises(chem.InvalidSmilesError, match=r"row 2: invalid SMILES 'C1CC\(' "):
        chem.molecule_graphs(["CCO", "c1ccccc1", "C1CC(", "CN"])
    with pytest.raises(chem.InvalidSmilesError, match="row 0: invalid SMILES ''.*no atoms"):
        chem.molecule_graphs([""])
    with pytest.raises(ValueError, match="features must be one of"):
        chem.smiles_to_graph("CCO", "morgan")


@pytest.mark.parametrize(
    "smiles, reason",
    [
        ("C(C)(C)(C)(C)C", "Explicit valence for atom # 0 C, 5, is greater than permitted"),
        ("c1cccc1", "Can't kekulize mol.  Unkekulized atoms: 0 1 2 3 4"),
    ],
)
def test_invalid_smiles_error_carries_rdkits_reason_at_every_entry_point(smiles, reason):
    expected = re.escape(f"invalid SMILES {smiles!r} (RDKit: {reason})")
    with pytest.raises(chem.InvalidSmilesError, match=expected):
        chem.smiles_to_graph(smiles)
    with pytest.raises(chem.InvalidSmilesError, match=expected):
        chem.parse_smiles(smiles)
    with pytest.raises(chem.InvalidSmilesError, match="^row 1: " + expected):
        chem.molecule_graphs(["CCO", smiles])
    with pytest.raises(chem.InvalidSmilesError, match=expected):
        chem.murcko_scaffold(smiles)
    with pytest.raises(chem.InvalidSmilesError, match="^row 2: " + expected):
        chem.scaffold_split(["CCO", "CCN", smiles, "CCC"])


@pytest.mark.skipif(
    not hasattr(rdBase, "CaptureErrorLog"), reason="RDKit < 2026.03 cannot capture its log"
)
def test_unparsable_smiles_error_carries_rdkits_parse_error():
    with pytest.raises(
        chem.InvalidSmilesError,
        match=re.escape(
            "invalid SMILES 'C1CC(' (RDKit cannot parse it: syntax error while parsing: C1CC(; "
            "check for mistakes around position 5)"
        ),
    ):
        chem.smiles_to_graph("C1CC(")
    with pytest.raises(chem.InvalidSmilesError, match="unclosed ring for input: 'C1CC'"):
        chem.smiles_to_graph("C1CC")


def test_without_rdkits_log_capture_a_parse_error_still_names_the_string(monkeypatch):
    monkeypatch.delattr(rdBase, "CaptureErrorLog", raising=False)
    with pytest.raises(
        chem.InvalidSmilesError, match=re.escape("invalid SMILES 'C1CC(' (RDKit cannot parse it)")
    ):
        chem.smiles_to_graph("C1CC(")
    with pytest.raises(chem.InvalidSmilesError, match="RDKit: Explicit valence for atom # 0 C"):
        chem.smiles_to_graph("C(C)(C)(C)(C)C")


@pytest.mark.parametrize("value", [None, 42, b"CCO", float("nan")])
def test_smiles_that_are_not_strings_are_a_type_error(value):
    found = re.escape(f"got {type(value).__name__} ({value!r})")
    with pytest.raises(TypeError, match="^smiles must be a str, " + found):
        chem.smiles_to_graph(value)
    with pytest.raises(TypeError, match="^smiles must be a str, " + found):
        chem.parse_smiles(value)
    for on_invalid in ("raise", "skip"):
        with pytest.raises(TypeError, match="^row 1: smiles must be a str, " + found):
            chem.molecule_graphs(["CCO", value], on_invalid=on_invalid)
    expected = "must be a SMILES str or an RDKit Mol, " + found
    with pytest.raises(TypeError, match="^smiles_or_molecule " + expected):
        chem.murcko_scaffold(value)
    with pytest.raises(TypeError, match=re.escape("molecules[1] ") + expected):
        chem.scaffold_split(["CCO", value, "CCC"])


def test_invalid_smiles_skipped_with_a_count_when_asked():
    graphs = chem.molecule_graphs(["CCO", "xyz", "CN", "C1CC("], on_invalid="skip")
    assert len(graphs) == 2 and graphs.rows.tolist() == [0, 2]
    assert graphs.skipped == ((1, "xyz"), (3, "C1CC("))
    assert graphs.n_node.tolist() == [3, 2]


def test_batch_and_padding_match_the_molecules_one_by_one():
    smiles = ["CCO", "c1ccccc1", "[NH4+]", "CC(=O)N"]
    graphs = chem.molecule_graphs(smiles)
    batch = graphs.batch([3, 0, 2])
    singles = [chem.smiles_to_graph(smiles[i]) for i in (3, 0, 2)]
    np.testing.assert_array_equal(batch.nodes, np.concatenate([g.nodes for g in singles]))
    np.testing.assert_array_equal(batch.edges, np.concatenate([g.edges for g in singles]))
    np.testing.assert_array_equal(batch.senders, [0, 1, 1, 2, 1, 3, 4, 5, 5, 6])
    padded = graphs.padded_batch([3, 0, 2], n_node=12, n_edge=14, n_graph=4)
    assert padded.nodes.shape == (12, 72) and padded.senders.shape == (14,)
    assert np.asarray(get_node_padding_mask(padded)).sum() == 8
    assert np.asarray(get_edge_padding_mask(padded)).sum() == 10
    with pytest.raises(ValueError, match="n_edge must be even"):
        graphs.padded_batch([0], n_node=5, n_edge=7, n_graph=2)


def test_conversion_is_cached_where_asked_and_never_inside_the_package(tmp_path):
    smiles = ["CCO", "bad", "c1ccccc1"]
    first = chem.molecule_graphs(smiles, on_invalid="skip", cache_dir=tmp_path)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1
    np.savez(files[0], **{**dict(np.load(files[0])), "n_node": np.array([7, 7])})
    second = chem.molecule_graphs(smiles, on_invalid="skip", cache_dir=tmp_path)
    assert second.n_node.tolist() == [7, 7]  # read from the file, not recomputed
    assert second.skipped == first.skipped == ((1, "bad"),)
    other = chem.molecule_graphs(smiles[:1], cache_dir=tmp_path)
    assert other.n_node.tolist() == [3] and len(list(tmp_path.glob("*.npz"))) == 2
    with pytest.raises(ValueError, match="inside the gnkit package"):
        chem.molecule_graphs(smiles[:1], cache_dir=chem.datasets.DATA_DIR)


def test_shipped_data_sets_have_moleculenet_sizes_and_values():
    sizes = {"esol": 1128, "freesolv": 642, "lipophilicity": 4200}
    for name, size in sizes.items():
        data = chem.load_dataset(name)
        assert len(data) == len(data.targets) == size
    esol = chem.load_dataset("esol")
    assert esol.targets[0] == -0.77 and esol.smiles[0].startswith("OCC3OC(OCC2OC")
    assert chem.load_dataset("freesolv").targets[0] == -11.01
    with pytest.raises(ValueError, match="unknown data set 'qm7'"):
        chem.load_dataset("qm7")


def test_random_split_sizes_disjoint_and_seeded():
    split = chem.random_split(1128, seed=0)
    assert [len(split[k]) for k in ("train", "val", "test")] == [902, 112, 114]
    joined = np.concatenate(list(split.values()))
    assert sorted(joined.tolist()) == list(range(1128))
    # astartes' order: the permutation rotated left by one.
    permutation = np.random.RandomState(0).permutation(1128)
    assert split["train"][0] == permutation[1] and split["test"][-1] == permutation[0]
    assert not np.array_equal(chem.random_split(1128, seed=1)["test"], split["test"])
    assert [len(part) for part in chem.random_split(4200).values()] == [3360, 420, 420]


def test_scaffold_split_keeps_each_scaffold_in_one_part():
    data = chem.load_dataset("freesolv")
    split = chem.scaffold_split(data.smiles, seed=0)
    part_of = {}
    for name, indices in split.items():
        for index in indices:
            scaffold = chem.murcko_scaffold(data.smiles[index])
            assert part_of.setdefault(scaffold, name) == name
    assert len(split["test"]) <= 64 and len(split["val"]) <= 64
    assert sorted(np.concatenate(list(split.values())).tolist()) == list(range(642))
    assert chem.murcko_scaffold("c1ccccc1CCO") == "c1ccccc1"
    assert chem.murcko_scaffold("CCO") == ""


def test_splits_file_round_trip_and_chemprop_index_strings(tmp_path):
    splits = [chem.random_split(50, seed=seed) for seed in (0, 1)]
    path = chem.write_splits_file(tmp_path / "splits.json", splits)
    records = json.loads(path.read_text())
    assert list(records[0]) == ["train", "val", "test"] and len(records) == 2
    for read, written in zip(chem.read_splits_file(path), splits, strict=True):
        for name in ("train", "val", "test"):
            np.testing.assert_array_equal(read[name], written[name])
    (tmp_path / "strings.json").write_text(json.dumps([{"train": "0-3,7", "test": [5]}]))
    (read,) = chem.read_splits_file(tmp_path / "strings.json")
    assert read["train"].tolist() == [0, 1, 2, 3, 7] and read["val"].tolist() == []
    (tmp_path / "bad.json").write_text(json.dumps({"train": [1]}))
    with pytest.raises(ValueError, match="JSON list of objects"):
        chem.read_splits_file(tmp_path / "bad.json")
