"""gnkit.atoms cell lists: the same pairs as the host list (checked against ASE) on random
triclinic cells with positions outside the cell and padding atoms, in one compile; a bin that
overflows and bins that became too thin are reported; bins from the plane spacing."""

import jax
import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

from _neighbor_cases import pair_set  # noqa: E402

from gnkit.atoms import cell_list_bins, cell_list_neighbor_list, neighbor_list  # noqa: E402

TRACES = []  # one entry per trace of SEARCH: a new trace is a new compilation


def _traced_search(*args, **kwargs):
    TRACES.append(kwargs.get("capacity"))
    return cell_list_neighbor_list(*args, **kwargs)


SEARCH = jax.jit(_traced_search, static_argnames=("capacity", "bins", "bin_capacity"))


def test_cell_list_equals_host_list_on_random_triclinic_cells():
    rng = np.random.default_rng(0)
    n_atoms, n_real, cutoff = 48, 45, 2.8
    traces_before = len(TRACES)
    with jax.enable_x64(True):
        for case in range(12):
            cell = 10.0 * np.eye(3) + rng.uniform(-1.0, 1.0, (3, 3))
            assert cell_list_bins(cell, cutoff) == (3, 3, 3)
            positions = rng.uniform(-0.3, 1.3, (n_atoms, 3)) @ cell
            host = neighbor_list(positions[:n_real], cell, True, cutoff)
            found, bin_overflow = jax.device_get(SEARCH(
                positions, cell, cutoff, capacity=1024, bins=(3, 3, 3), bin_capacity=12,
                atom_mask=np.arange(n_atoms) < n_real,
            ))
            assert not (bin_overflow or found.overflow or found.image_overflow), case
            count = int(found.n_pairs)
            assert count == len(host.senders), case
            assert pair_set(found.senders[:count], found.receivers[:count],
                            found.shifts[:count]) == pair_set(host.senders, host.receivers,
                                                              host.shifts), case
            assert np.all(np.diff(found.receivers) >= 0)
            assert np.all(found.senders[count:] == n_real)  # the first padding atom
    assert len(TRACES) - traces_before == 1  # twelve cells, one compilation


def test_full_bins_and_too_thin_bins_are_reported():
    positions = np.random.default_rng(1).uniform(0, 9.0, (20, 3))
    _, bin_overflow = SEARCH(positions, 9.0 * np.eye(3), 2.8, capacity=64, bins=(3, 3, 3),
                             bin_capacity=1)
    assert bool(bin_overflow)  # 20 atoms in 27 bins: some bin holds two
    thin, _ = SEARCH(positions, 8.0 * np.eye(3), 2.8, capacity=64, bins=(3, 3, 3),
                     bin_capacity=1)
    assert bool(thin.image_overflow)  # 8 / 3 Å bins are thinner than the 2.8 Å cutoff


def test_bins_are_the_plane_spacing_over_the_cutoff():
    assert cell_list_bins(np.diag([9.0, 12.5, 30.0]), 3.0) == (3, 4, 10)
    assert cell_list_bins(np.diag([8.0, 12.0, 30.0]), 3.0) is None  # 2 bins: use the dense list
