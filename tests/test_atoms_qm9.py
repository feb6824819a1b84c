"""gnkit.atoms.datasets.qm9: qm9pack's 130,831 molecules, read with the right elements (RDKit's
formula of each SMILES), geometries (methane's and water's hand values) and U0 in eV (QM9's
Hartree value times 27.211386); seeded subsets reproduce, splits are disjoint, and bad
arguments get one-line errors naming the argument."""

import importlib.util

import numpy as np
import pytest

pytest.importorskip("pandas")
if importlib.util.find_spec("qm9pack") is None:
    pytest.skip("the qm9 extra (qm9pack) is not installed", allow_module_level=True)

from gnkit.atoms.datasets import (  # noqa: E402
    HARTREE_EV,
    QM9_MOLECULES,
    load_qm9,
    qm9_data_folder,
    qm9_molecules,
)

SIZES = {"n_train": 40, "n_validation": 10, "n_test": 20}


@pytest.fixture(scope="module")
def smiles_by_index():
    """QM9 number -> SMILES, read straight from qm9pack's CSVs (not through the loader)."""
    import pandas as pd

    frames = [pd.read_csv(qm9_data_folder() / f"qm9_part{part}.csv", usecols=["Index", "SMILES"])
              for part in (1, 2, 3)]
    table = pd.concat(frames)
    return dict(zip(table["Index"], table["SMILES"], strict=True))


def test_counts_and_methane_water_by_hand(smiles_by_index):
    assert len(smiles_by_index) == QM9_MOLECULES == 130_831
    assert min(smiles_by_index) == 1 and max(smiles_by_index) == 133_885
    methane, ammonia, water = qm9_molecules([1, 2, 3])
    assert methane.get_chemical_formula() == "CH4" and len(methane) == 5
    assert methane.info["qm9_index"] == 1 and methane.pbc.tolist() == [False] * 3
    # QM9's U0 of methane is -40.47893 Ha (dsgdb9nsd_000001.xyz); 1 Ha = 27.211386 eV.
    assert methane.get_potential_energy() == pytest.approx(-40.47893 * 27.211386, abs=1e-4)
    assert HARTREE_EV == pytest.approx(27.211386, abs=1e-6)
    assert ammonia.get_chemical_formula() == "H3N"
    assert ammonia.get_potential_energy() == pytest.approx(-56.525887 * 27.211386, abs=1e-4)
    # Methane's four C-H bonds are 1.0919 Å at B3LYP/6-31G(2df,p), its H-C-H angles tetrahedral.
    bonds = methane.get_distances(0, [1, 2, 3, 4])
    np.testing.assert_allclose(bonds, 1.0919, atol=2e-4)
    assert methane.get_angle(1, 0, 2) == pytest.approx(np.degrees(np.arccos(-1 / 3)), abs=0.05)
    assert water.get_chemical_formula() == "H2O"
    assert water.get_distance(0, 1) == pytest.approx(0.9614, abs=1e-3)
    assert 103.0 < water.get_angle(1, 0, 2) < 106.0


def test_elements_match_rdkit_formula_of_each_smiles(smiles_by_index):
    rdkit = pytest.importorskip("rdkit")
    from rdkit.Chem import AddHs, MolFromSmiles
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula

    del rdkit
    molecules = load_qm9("validation", n_train=1, n_validation=60, n_test=0, seed=3)
    for atoms in molecules:
        smiles = smiles_by_index[atoms.info["qm9_index"]]
        formula = CalcMolFormula(AddHs(MolFromSmiles(smiles)))
        assert atoms.get_chemical_formula(mode="hill") == formula, smiles
        assert set(atoms.numbers) <= {1, 6, 7, 8, 9} and len(atoms) <= 29


def test_seeded_subsets_reproduce_and_splits_are_disjoint():
    splits = {split: load_qm9(split, seed=5, **SIZES) for split in ("train", "validation", "test")}
    numbers = {split: [a.info["qm9_index"] for a in frames] for split, frames in splits.items()}
    assert [len(numbers[s]) for s in ("train", "validation", "test")] == [40, 10, 20]
    assert all(sorted(found) == found for found in numbers.values())
    union = set().union(*numbers.values())
    assert len(union) == 70
    again = [a.info["qm9_index"] for a in load_qm9("train", seed=5, **SIZES)]
    assert again == numbers["train"]
    other = [a.info["qm9_index"] for a in load_qm9("train", seed=6, **SIZES)]
    assert other != numbers["train"]
    # A larger training set keeps the test and validation molecules of the same seed.
    larger = dict(SIZES, n_train=80)
    assert [a.info["qm9_index"] for a in load_qm9("test", seed=5, **larger)] == numbers["test"]
    grown = {a.info["qm9_index"] for a in load_qm9("train", seed=5, **larger)}
    assert set(numbers["train"]) < grown and not grown & set(numbers["test"])


def test_graphs_carry_u0_in_ev_and_every_pair_within_the_cutoff():
    atoms = load_qm9("test", seed=1, **SIZES)
    graphs = load_qm9("test", seed=1, cutoff=4.0, **SIZES)
    for molecule, graph in zip(atoms, graphs, strict=True):
        np.testing.assert_allclose(graph.globals["energy"][0], molecule.get_potential_energy())
        distances = molecule.get_all_distances()
        pairs = int(np.sum((distances < 4.0) & (distances > 0)))
        assert int(graph.n_edge[0]) == pairs
        np.testing.assert_array_equal(graph.nodes["atomic_numbers"], molecule.numbers)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: load_qm9("valid"), "split"),
        (lambda: load_qm9(n_train=0), "n_train"),
        (lambda: load_qm9(n_validation=-1), "n_validation"),
        (lambda: load_qm9(n_test=2.5), "n_test"),
        (lambda: load_qm9(seed=True), "seed"),
        (lambda: load_qm9(n_train=QM9_MOLECULES, n_validation=1, n_test=0), "n_train + "),
        (lambda: qm9_molecules([1, 58]), "58"),
    ],
)
def test_bad_arguments_get_one_line_errors(call, named):
    with pytest.raises(ValueError) as error:
        call()
    assert named in str(error.value) and "\n" not in str(error.value)


def test_command_writes_the_split_as_extended_xyz(tmp_path, capsys):
    import ase.io

    from gnkit.atoms.datasets.__main__ import main

    path = tmp_path / "qm9_test.xyz.gz"
    assert main(["qm9", "--out", str(path), "--split", "test", "--n-train", "40",
                 "--n-validation", "10", "--n-test", "20", "--seed", "5"]) == 0
    assert "wrote 20 structures" in capsys.readouterr().out
    written = ase.io.read(path, index=":")
    expected = load_qm9("test", seed=5, **SIZES)
    assert [a.info["qm9_index"] for a in written] == [a.info["qm9_index"] for a in expected]
    for read, molecule in zip(written, expected, strict=True):
        assert read.get_potential_energy() == pytest.approx(molecule.get_potential_energy())
        np.testing.assert_allclose(read.positions, molecule.positions, atol=1e-8)


@pytest.mark.slow
def test_u0_benchmark_fits_e0s_by_least_squares_and_writes_its_record(tmp_path):
    import json

    from benchmarks.qm9_u0 import SPECIES, main

    path = tmp_path / "run.json"
    assert main(["--model", "schnet", "--n-train", "40", "--n-validation", "8", "--n-test", "8",
                 "--epochs", "2", "--batch-size", "16", "--features", "8", "--interactions",
                 "1", "--seed", "2", "--json", str(path)]) == 0
    record = json.loads(path.read_text())
    train = load_qm9("train", n_train=40, n_validation=8, n_test=8, seed=2)
    counts = np.array([[np.sum(a.numbers == z) for z in SPECIES] for a in train], np.float64)
    energies = np.array([a.get_potential_energy() for a in train])
    e0, *_ = np.linalg.lstsq(counts, energies, rcond=None)
    np.testing.assert_allclose([record["e0_ev"][str(z)] for z in SPECIES], e0, rtol=1e-9)
    assert record["finished"] and [row["epoch"] for row in record["curve"]] == [1, 2]
    assert np.isfinite(record["test_mae_mev"]) and record["train_cpu_minutes"] > 0
