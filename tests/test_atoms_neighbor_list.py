"""gnkit.atoms neighbour lists: the host list (vesin) against ASE's `neighbor_list`, as sets of
(i, j, S), on random triclinic cells, cutoffs above half the cell, mixed pbc, isolated atoms,
1-atom cells and molecules."""

import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

from _neighbor_cases import KINDS, pair_set, random_case  # noqa: E402
from ase import Atoms  # noqa: E402
from ase.neighborlist import neighbor_list as ase_neighbor_list  # noqa: E402

from gnkit.atoms import neighbor_list  # noqa: E402
from gnkit.atoms.neighbor_list import completed_cell  # noqa: E402


def test_host_list_equals_ases_on_240_random_cases():
    rng = np.random.default_rng(0)
    counts = dict.fromkeys(KINDS, 0)
    for case in range(240):
        kind = KINDS[case % len(KINDS)]
        positions, cell, pbc, cutoff = random_case(rng, kind)
        atoms = Atoms(numbers=[1] * len(positions), positions=positions, cell=cell, pbc=pbc)
        expected = pair_set(*ase_neighbor_list("ijS", atoms, cutoff))
        found = neighbor_list(positions, cell, pbc, cutoff)
        assert pair_set(found.senders, found.receivers, found.shifts) == expected, (case, kind)
        vectors = positions[found.receivers] - positions[found.senders] + found.shifts @ cell
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), found.distances, atol=1e-9)
        counts[kind] += len(expected)
    # every kind but the isolated atoms had pairs; one-atom cells only self-image pairs
    assert counts["isolated"] == 0 and min(counts[kind] for kind in KINDS[:-1]) > 0


def test_one_atom_cubic_cell_has_its_six_images_as_neighbours():
    found = neighbor_list(np.zeros((1, 3)), 2.0 * np.eye(3), True, 2.5)
    expected = {(0, 0, tuple(shift)) for shift in np.vstack([np.eye(3), -np.eye(3)]).astype(int)}
    assert pair_set(found.senders, found.receivers, found.shifts) == expected
    np.testing.assert_allclose(found.distances, 2.0)


def test_pairs_are_sorted_by_receiver_and_both_directions_present():
    rng = np.random.default_rng(1)
    positions = rng.uniform(0, 4, (6, 3))
    found = neighbor_list(positions, 4 * np.eye(3), True, 2.5)
    assert np.all(np.diff(found.receivers) >= 0)
    pairs = pair_set(found.senders, found.receivers, found.shifts)
    assert pairs == {(j, i, tuple(-np.array(s))) for i, j, s in pairs}


def test_completed_cell_keeps_periodic_rows_and_fills_open_axes_with_normal_unit_rows():
    slab = np.array([[3.0, 0, 0], [1.0, 2.0, 0], [0, 0, 0]])
    completed = completed_cell(slab, [True, True, False])
    np.testing.assert_array_equal(completed[:2], slab[:2])
    np.testing.assert_allclose(np.abs(completed[2]), [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(completed_cell(np.zeros((3, 3)), False) @ completed_cell(
        np.zeros((3, 3)), False).T, np.eye(3), atol=1e-12)


def test_non_positive_cutoff_is_an_error():
    with pytest.raises(ValueError, match="neighbor_list needs a positive cutoff, got cutoff=0"):
        neighbor_list(np.zeros((2, 3)), np.zeros((3, 3)), False, 0.0)
