"""gnkit.atoms.datasets: the EMT set written by its command reads back with read_graphs and
matches EMT recomputed by ASE, follows its recipe (strain bound, sizes) and reproduces by seed;
the shipped aspirin frames split 950 / 250 (or 1,000 / 200) disjointly and reproducibly."""

import io
import lzma

import ase.io
import numpy as np
import pytest
from ase.calculators.emt import EMT
from ase.stress import voigt_6_to_full_3x3_stress

from gnkit.atoms import load_aspirin, make_emt_dataset, read_graphs
from gnkit.atoms.datasets import EMT_LATTICE_CONSTANTS, aspirin_path
from gnkit.atoms.datasets.__main__ import main


def test_emt_command_writes_what_emt_computes(tmp_path, capsys):
    path = tmp_path / "emt.xyz.xz"
    assert main(["emt", "--out", str(path), "--n", "3", "--seed", "5", "--md-steps", "3",
                 "--no-progress"]) == 0
    assert "wrote 3 structures" in capsys.readouterr().out
    graphs = read_graphs(path, cutoff=3.0)
    frames = ase.io.read(path, index=":")
    assert len(graphs) == len(frames) == 3
    for graph, atoms in zip(graphs, frames, strict=True):
        assert atoms.pbc.all() and graph.globals["pbc"].all()
        np.testing.assert_allclose(graph.nodes["positions"], atoms.positions)
        repeat = np.array([int(n) for n in atoms.info["supercell"].split("x")])
        edges = EMT_LATTICE_CONSTANTS[atoms.info["element"]] * repeat[:, None]
        strain = atoms.cell[:] / edges - np.eye(3)
        np.testing.assert_allclose(strain, strain.T, atol=1e-12)
        assert np.abs(strain).max() <= 0.03
        assert len(atoms) == 4 * repeat.prod() - atoms.info["vacancy"]
        atoms.calc = EMT()
        np.testing.assert_allclose(graph.globals["energy"][0], atoms.get_potential_energy(),
                                   atol=1e-6)
        np.testing.assert_allclose(graph.nodes["forces"], atoms.get_forces(), atol=1e-5)
        np.testing.assert_allclose(graph.globals["stress"][0],
                                   voigt_6_to_full_3x3_stress(atoms.get_stress()), atol=1e-7)


def test_emt_seeds_reproduce():
    options = dict(sizes=((2, 2, 2),), md_fraction=1.0, md_steps=2)
    first = make_emt_dataset(2, seed=7, **options)
    again = make_emt_dataset(3, seed=7, **options)
    other = make_emt_dataset(1, seed=8, **options)
    for one, two in zip(first, again, strict=False):
        np.testing.assert_array_equal(one.positions, two.positions)
        np.testing.assert_array_equal(one.get_forces(), two.get_forces())
        assert one.info == two.info
    assert first[0].info["config_type"] == "md"
    assert 300 <= first[0].info["temperature_K"] <= 1200
    assert len(first[0]) != len(other[0]) or not np.allclose(first[0].positions,
                                                             other[0].positions)


def _frame_keys(frames):
    return [atoms.positions.round(6).tobytes() for atoms in frames]


def test_aspirin_splits_are_disjoint_reproducible_and_in_range():
    train, validation = load_aspirin("train"), load_aspirin("validation")
    assert (len(train), len(validation)) == (950, 250)
    with lzma.open(aspirin_path("train"), "rt") as stream:
        everything = _frame_keys(ase.io.read(io.StringIO(stream.read()), ":", format="extxyz"))
    assert len(set(everything)) == 1200
    assert set(_frame_keys(train)).isdisjoint(_frame_keys(validation))
    assert set(_frame_keys(train)) | set(_frame_keys(validation)) == set(everything)
    assert _frame_keys(load_aspirin("validation", seed=0)) == _frame_keys(validation)
    assert _frame_keys(load_aspirin("validation", seed=1)) != _frame_keys(validation)
    assert len(load_aspirin("train", n_validation=200)) == 1000
    energies = np.array([atoms.get_potential_energy() for atoms in train + validation])
    assert energies.min() > -17618.6 and energies.max() < -17616.6
    assert all(atoms.get_chemical_formula() == "C9H8O4" for atoms in validation)
    with pytest.raises(ValueError, match="split must be one of"):
        load_aspirin("valid")


def test_aspirin_test_split_as_graphs():
    graphs = load_aspirin("test", cutoff=5.0)
    assert len(graphs) == 1800
    assert all(int(graph.n_node[0]) == 21 for graph in graphs[:10])
    energies = np.array([graph.globals["energy"][0] for graph in graphs])
    assert energies.min() > -17618.6 and energies.max() < -17616.6
    assert graphs[0].nodes["forces"].shape == (21, 3)


@pytest.mark.parametrize("options, name", [
    (dict(n_structures=-1), "n_structures"),
    (dict(seed=1.5), "seed"),
    (dict(md_steps=-3), "md_steps"),
    (dict(elements=()), "elements"),
    (dict(sizes=((0, 2, 2),)), "sizes"),
    (dict(vacancy_fraction=2.0), "vacancy_fraction"),
    (dict(rattle=-0.1), "rattle"),
    (dict(temperature_range=(-300.0, -100.0)), "temperature_range"),
])
def test_emt_bad_arguments_are_named(options, name):
    options = dict(dict(n_structures=1), **options)
    with pytest.raises(ValueError, match=f"make_emt_dataset: {name} must be"):
        make_emt_dataset(**options)


def test_aspirin_bad_arguments_are_named():
    with pytest.raises(ValueError, match="aspirin_path: part must be one of"):
        aspirin_path("validation")
    with pytest.raises(ValueError, match="load_aspirin: seed must be an int >= 0"):
        load_aspirin("validation", seed=-1)
