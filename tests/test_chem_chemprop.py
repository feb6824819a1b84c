"""gnkit.chem against chemprop v2 and OGB themselves (bench extra): features and split indices."""

import numpy as np
import pytest

pytest.importorskip("rdkit")
chemprop_data = pytest.importorskip("chemprop.data")

from chemprop.featurizers import SimpleMoleculeMolGraphFeaturizer  # noqa: E402
from chemprop.utils import make_mol  # noqa: E402

from gnkit import chem  # noqa: E402


def _molecules(count):
    lipophilicity = chem.load_dataset("lipophilicity").smiles
    return list(chem.load_dataset("freesolv").smiles[: count // 4]) + list(
        lipophilicity[: count - count // 4]
    )


def test_chemprop_features_equal_chemprops_featuriser_on_200_molecules():
    featurizer = SimpleMoleculeMolGraphFeaturizer()
    for smiles in _molecules(200):
        ours = chem.smiles_to_graph(smiles, "chemprop")
        theirs = featurizer(make_mol(smiles))
        np.testing.assert_array_equal(ours.nodes, theirs.V, err_msg=smiles)
        np.testing.assert_array_equal(ours.edges, theirs.E, err_msg=smiles)
        np.testing.assert_array_equal(ours.senders, theirs.edge_index[0])
        np.testing.assert_array_equal(ours.receivers, theirs.edge_index[1])
        np.testing.assert_array_equal(np.arange(len(ours.senders)) ^ 1, theirs.rev_edge_index)


def test_ogb_features_equal_ogbs_smiles2graph_on_200_molecules():
    smiles2graph = pytest.importorskip("ogb.utils").smiles2graph
    for smiles in _molecules(200):
        ours = chem.smiles_to_graph(smiles, "ogb")
        theirs = smiles2graph(smiles)
        np.testing.assert_array_equal(ours.nodes, theirs["node_feat"], err_msg=smiles)
        np.testing.assert_array_equal(ours.edges.reshape(-1, 3), theirs["edge_feat"])
        np.testing.assert_array_equal(
            np.stack([ours.senders, ours.receivers]), theirs["edge_index"]
        )


def _chemprop_split(molecules, kind, seed):
    parts = chemprop_data.make_split_indices(molecules, kind, (0.8, 0.1, 0.1), seed)
    return {name: list(part[0]) for name, part in zip(("train", "val", "test"), parts, strict=True)}


@pytest.mark.parametrize("name", ["esol", "freesolv"])
@pytest.mark.parametrize("seed", [0, 4])
def test_random_and_scaffold_splits_equal_chemprops_index_for_index(name, seed):
    data = chem.load_dataset(name)
    theirs = _chemprop_split(list(range(len(data))), "random", seed)
    ours = chem.random_split(len(data), seed=seed)
    assert {key: value.tolist() for key, value in ours.items()} == theirs
    molecules = [make_mol(smiles) for smiles in data.smiles]
    theirs = _chemprop_split(molecules, "scaffold_balanced", seed)
    ours = chem.scaffold_split(data.smiles, seed=seed)
    assert {key: value.tolist() for key, value in ours.items()} == theirs
