"""gnkit.atoms structures: ASE `Atoms` to graphs (edges and shifts against ASE's distances,
targets against ase.io's values on the rMD17 aspirin file), bucketed batches, and the errors for
bad structures."""

import io
import lzma
import pathlib

import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

import ase.io  # noqa: E402
from ase import Atoms  # noqa: E402
from ase.build import bulk, molecule  # noqa: E402
from ase.calculators.singlepoint import SinglePointCalculator  # noqa: E402
from ase.neighborlist import neighbor_list as ase_neighbor_list  # noqa: E402

import gnkit as gn  # noqa: E402
from gnkit.atoms import (  # noqa: E402
    StructureError,
    atoms_bucket_policy,
    atoms_to_graph,
    atoms_to_graphs,
    check_structure,
    read_graphs,
)
from gnkit.atoms.datasets import aspirin_path  # noqa: E402

ASPIRIN = pathlib.Path(str(aspirin_path("train")))  # the 1,200 frames shipped in gnkit


def edge_vectors(graph):
    nodes, cell = graph.nodes, graph.globals["cell"]
    edge_graph = np.repeat(np.arange(len(graph.n_edge)), graph.n_edge)
    shifts = np.einsum("ei,eij->ej", graph.edges["shifts"], cell[edge_graph])
    return nodes["positions"][graph.receivers] - nodes["positions"][graph.senders] + shifts


def structures():
    rng = np.random.default_rng(0)
    triclinic = bulk("Cu", "fcc", a=3.6) * (2, 1, 1)
    triclinic.positions += rng.normal(scale=0.1, size=triclinic.positions.shape)
    slab = bulk("Si", "diamond", a=5.43)
    slab.pbc = (True, True, False)
    return [triclinic, slab, molecule("CH3CH2OH"), bulk("Na", "bcc", a=4.2)]  # 1-atom cell


@pytest.mark.parametrize("index", range(4))
def test_edges_are_ases_pairs_and_their_vectors_ases_distance_vectors(index):
    atoms, cutoff = structures()[index], 4.5
    graph = atoms_to_graph(atoms, cutoff)
    i, j, shifts, vectors = ase_neighbor_list("ijSD", atoms, cutoff)
    expected = {(a, b, tuple(s)): v
                for a, b, s, v in zip(i, j, shifts.tolist(), vectors, strict=True)}
    found = edge_vectors(graph)
    keys = list(zip(graph.senders.tolist(), graph.receivers.tolist(),
                    map(tuple, graph.edges["shifts"].astype(int).tolist()), strict=True))
    assert set(keys) == set(expected) and len(keys) == len(expected)
    np.testing.assert_allclose(found, np.array([expected[key] for key in keys]), atol=1e-10)
    assert graph.senders.dtype == graph.receivers.dtype == graph.n_edge.dtype == np.int32
    assert graph.edges["shifts"].dtype == graph.nodes["positions"].dtype == np.float64
    np.testing.assert_array_equal(graph.nodes["atomic_numbers"], atoms.numbers)
    np.testing.assert_array_equal(graph.globals["pbc"], [atoms.pbc])


def test_molecule_has_zero_cell_and_no_shifts():
    atoms = molecule("H2O")
    atoms.cell = 10 * np.eye(3)  # a box without pbc is not a lattice
    graph = atoms_to_graph(atoms, 3.0, dtype=np.float32)
    np.testing.assert_array_equal(graph.globals["cell"], np.zeros((1, 3, 3)))
    np.testing.assert_array_equal(graph.edges["shifts"], 0)
    assert graph.n_edge.tolist() == [6] and graph.nodes["positions"].dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(edge_vectors(graph), axis=1),
                               atoms.get_distances(graph.senders, graph.receivers), rtol=1e-6)


def first_frame_from_text():
    """Energy and forces of the file's first frame, parsed from its text without ASE."""
    with lzma.open(ASPIRIN, "rt") as stream:
        n_atoms = int(stream.readline())
        header = stream.readline()
        rows = [stream.readline().split() for _ in range(n_atoms)]
    energy = float(header.split("energy=")[1].split()[0])
    return energy, np.array([[float(x) for x in row[4:7]] for row in rows])


def test_aspirin_targets_are_the_files_energy_and_forces():
    graphs = read_graphs(ASPIRIN, 5.0, index=":4")
    with lzma.open(ASPIRIN, "rt") as stream:  # ase.io.read on the .xz itself takes minutes
        first = ase.io.read(io.StringIO(stream.read()), index=0, format="extxyz")
    energy, forces = first_frame_from_text()
    assert len(graphs) == 4 and graphs[0].n_node.tolist() == [21]
    assert graphs[0].globals["energy"].tolist() == [energy] == [first.get_potential_energy()]
    np.testing.assert_array_equal(graphs[0].nodes["forces"], forces)
    np.testing.assert_array_equal(graphs[0].nodes["forces"], first.get_forces())
    assert "stress" not in graphs[0].globals and not graphs[0].globals["pbc"].any()


def test_aspirin_batches_of_one_size_pad_to_one_shape():
    graphs = read_graphs(ASPIRIN, 5.0, index=":48")
    policy = atoms_bucket_policy(graphs, batch_size=8)
    shapes = set()
    for start in range(0, 48, 8):
        batch = gn.pad_to_bucket(gn.batch_np(graphs[start : start + 8]), policy)
        gn.validate(batch)
        shapes.add((batch.nodes["positions"].shape, batch.senders.shape, batch.n_node.shape))
        padding = ~np.asarray(gn.get_edge_padding_mask(batch))
        np.testing.assert_array_equal(edge_vectors(batch)[padding], 0.0)
        assert (batch.nodes["atomic_numbers"][~np.asarray(gn.get_node_padding_mask(batch))]
                == 0).all()
    assert len(shapes) == 1
    assert policy.min_graphs == 9 and policy.min_nodes == 8 * 21 + 1


def test_targets_from_info_and_arrays_under_given_keys_and_voigt_stress_from_calculator():
    atoms = bulk("Cu", "fcc", a=3.6)
    atoms.info["dft_energy"] = -3.5
    atoms.arrays["dft_forces"] = np.array([[0.1, 0.2, 0.3]])
    graph = atoms_to_graph(atoms, 3.0, energy_key="dft_energy", forces_key="dft_forces")
    assert graph.globals["energy"].tolist() == [-3.5]
    np.testing.assert_array_equal(graph.nodes["forces"], [[0.1, 0.2, 0.3]])
    voigt = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # xx yy zz yz xz xy
    atoms.calc = SinglePointCalculator(atoms, energy=-1.25, stress=voigt)
    graph = atoms_to_graph(atoms, 3.0)
    assert graph.globals["energy"].tolist() == [-1.25] and "forces" not in graph.nodes
    np.testing.assert_array_equal(graph.globals["stress"][0], [[1, 6, 5], [6, 2, 4], [5, 4, 3]])


def test_requested_target_that_is_missing_names_the_structure_and_key():
    with pytest.raises(StructureError, match="structure 1: no forces found under key 'forces'"):
        atoms_to_graphs([_with_forces(molecule("H2O")), molecule("H2O")], 3.0,
                        targets=["forces"])


def _with_forces(atoms):
    atoms.arrays["forces"] = np.zeros((len(atoms), 3))
    return atoms


def test_target_in_some_structures_only_is_an_error_naming_both():
    with pytest.raises(StructureError, match="structure 2 has no forces but structure 0 has"):
        atoms_to_graphs([_with_forces(molecule("H2O")), _with_forces(molecule("H2O")),
                         molecule("H2O")], 3.0)


def test_forces_of_the_wrong_shape_are_an_error():
    atoms = molecule("H2O")
    atoms.info["forces"] = 0  # not looked at: forces are per atom
    atoms.calc = SinglePointCalculator(atoms, forces=np.zeros((2, 3)))
    with pytest.raises(StructureError, match=r"forces from the calculator's 'forces' has shape "
                                             r"\(2, 3\), expected \(3, 3\)"):
        atoms_to_graph(atoms, 3.0)


def test_nan_position_names_structure_and_atom():
    bad = molecule("CH4")
    bad.positions[3, 1] = np.nan
    with pytest.raises(StructureError, match=r"structure 1: atom 3 has a non-finite position "
                                             r"\[.*nan.*\] \(1 atoms in all\)"):
        atoms_to_graphs([molecule("CH4"), bad], 3.0)


def test_zero_volume_periodic_cell_is_an_error():
    atoms = Atoms("H2", positions=[[0, 0, 0], [1, 0, 0]], cell=[[2, 0, 0], [4, 0, 0], [0, 0, 3]],
                  pbc=True)
    with pytest.raises(StructureError, match=r"structure 0: the periodic lattice vectors \(cell "
                                             r"rows \[0, 1, 2\]\) span a volume of 0 Å\^3"):
        atoms_to_graphs([atoms], 3.0)
    atoms.pbc = (False, True, True)  # rows 1 and 2 span an area: fine
    assert atoms_to_graph(atoms, 3.0).n_node.tolist() == [2]


def test_overlapping_atoms_name_the_pair_and_distance():
    atoms = molecule("H2O")
    atoms.positions[2] = atoms.positions[0] + [0.05, 0, 0]
    with pytest.raises(StructureError, match=r"structure 0: atoms 0 and 2 \(shift \[0, 0, 0\]\) "
                                             r"are 0.05 Å apart, closer than min_distance=0.1"):
        atoms_to_graphs([atoms], 3.0)
    assert atoms_to_graph(atoms, 3.0, min_distance=0.01).n_node.tolist() == [3]


def test_atom_too_close_to_its_own_image_is_an_error():
    atoms = Atoms("H", positions=[[0, 0, 0]], cell=[0.05, 3, 3], pbc=True)
    with pytest.raises(StructureError, match=r"structure: atom 0 and its periodic image at shift "
                                             r"\[-?1, 0, 0\] are 0.05 Å apart"):
        check_structure(atoms)


def test_atomic_number_zero_is_an_error():
    atoms = Atoms("XH", positions=[[0, 0, 0], [1, 0, 0]])
    with pytest.raises(StructureError, match="structure 0: atom 0 has atomic number 0, expected "
                                             "1 or more"):
        atoms_to_graphs([atoms], 3.0)
