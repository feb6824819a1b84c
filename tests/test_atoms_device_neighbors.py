"""gnkit.atoms device neighbour lists: the jittable list against the host list (itself checked
against ASE) as sets of (i, j, S) on 240 random cases of every kind, padded to one atom count so
the list compiles once; overflow reported with the true count; the growth policy's one
recompile; the padded-batch form against per-structure ASE lists, with gradients through its edges;
argument errors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

import ase  # noqa: E402
from _atoms_graphs import graph_of  # noqa: E402
from _neighbor_cases import (  # noqa: E402
    KINDS,
    MAX_ATOMS,
    away_from_cutoff,
    pair_set,
    random_case,
)
from ase.neighborlist import neighbor_list as ase_neighbor_list  # noqa: E402

import gnkit as gn  # noqa: E402
from gnkit.atoms import (  # noqa: E402
    GrowingNeighborList,
    device_neighbor_list,
    graph_with_device_neighbors,
    image_ranges,
    neighbor_list,
)
from gnkit.atoms.features import edge_vectors  # noqa: E402

STATIC = ("capacity", "images")
# cutoff traced: one compile for many cutoffs; the argument checks see concrete values only
SEARCH = jax.jit(device_neighbor_list, static_argnames=STATIC)


def padded(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions padded to `MAX_ATOMS` rows with far-away padding atoms, and the atom mask."""
    rows = np.full((MAX_ATOMS, 3), 1e3)
    rows[: len(positions)] = positions
    return rows, np.arange(MAX_ATOMS) < len(positions)


def real_pairs(found) -> set:
    found = jax.device_get(found)
    count = int(found.n_pairs)
    return pair_set(found.senders[:count], found.receivers[:count], found.shifts[:count])


def test_device_list_equals_host_list_on_240_random_cases_in_float64_with_one_compile():
    rng = np.random.default_rng(0)
    cases = [random_case(rng, KINDS[case % len(KINDS)]) for case in range(240)]
    hosts = [neighbor_list(*case) for case in cases]
    images = tuple(np.max([image_ranges(cell, pbc, cut) for _, cell, pbc, cut in cases], 0))
    capacity = max(len(host.senders) for host in hosts)
    traces = []

    def search(positions, cell, pbc, cutoff, atom_mask, capacity, images):
        traces.append(positions.dtype)
        return device_neighbor_list(
            positions, cell, pbc, cutoff, capacity=capacity, images=images, atom_mask=atom_mask
        )

    jitted = jax.jit(search, static_argnames=STATIC)
    with jax.enable_x64(True):
        for case, ((positions, cell, pbc, cutoff), host) in enumerate(
            zip(cases, hosts, strict=True)
        ):
            rows, mask = padded(positions)
            found = jax.device_get(jitted(
                rows, cell, pbc, np.float64(cutoff), mask, capacity=capacity,
                images=tuple(int(count) for count in images),
            ))
            assert not found.overflow and not found.image_overflow, case
            assert found.shifts.dtype == np.float64
            assert real_pairs(found) == pair_set(host.senders, host.receivers, host.shifts), case
            count, padding_atom = int(found.n_pairs), min(len(positions), MAX_ATOMS - 1)
            assert count == len(host.senders)
            assert np.all(found.senders[count:] == padding_atom)
            assert np.all(found.receivers[count:] == padding_atom)
            assert np.all(found.shifts[count:] == 0)
            assert np.all(np.diff(found.receivers) >= 0)  # sorted by receiver, padding last
    assert traces == [np.float64]


def test_device_list_in_float32_equals_host_list_away_from_the_cutoff():
    rng = np.random.default_rng(1)
    cases = [random_case(rng, KINDS[case % len(KINDS)]) for case in range(60)]
    images = tuple(np.max([image_ranges(cell, pbc, cut) for _, cell, pbc, cut in cases], 0))
    for case, (positions, cell, pbc, cutoff) in enumerate(cases):
        host = neighbor_list(positions, cell, pbc, cutoff)
        rows, mask = padded(positions)
        found = SEARCH(
            rows.astype(np.float32), cell.astype(np.float32), pbc, np.float32(cutoff),
            capacity=2560, images=tuple(int(count) for count in images), atom_mask=mask,
        )
        assert found.shifts.dtype == np.float32
        assert not found.overflow and not found.image_overflow
        expected = pair_set(host.senders, host.receivers, host.shifts)
        assert away_from_cutoff(real_pairs(found), positions, cell, cutoff, 1e-4) == (
            away_from_cutoff(expected, positions, cell, cutoff, 1e-4)
        ), case


def test_image_ranges_are_the_cutoff_over_the_lattice_plane_spacing():
    # cubic 2 Å cell, cutoff 4.5: 2.25 spacings -> 3 images; open axes scan none
    assert image_ranges(2.0 * np.eye(3), True, 4.5) == (3, 3, 3)
    assert image_ranges(2.0 * np.eye(3), [True, False, True], 4.5) == (3, 0, 3)
    assert image_ranges(np.zeros((3, 3)), False, 4.5) == (0, 0, 0)
    # a batch takes the largest per axis: 1 Å along x in the second cell
    cells = np.stack([2.0 * np.eye(3), np.diag([1.0, 4.0, 4.0])])
    assert image_ranges(cells, np.ones((2, 3), bool), 1.5) == (2, 1, 1)


def test_overflow_reports_the_true_count_and_keeps_the_first_pairs():
    positions = np.random.default_rng(2).uniform(0, 4, (6, 3))
    cell, pbc, cutoff = 4.0 * np.eye(3), np.ones(3, bool), 3.0
    host = neighbor_list(positions, cell, pbc, cutoff)
    expected = pair_set(host.senders, host.receivers, host.shifts)
    capacity = len(expected) - 7
    found = jax.device_get(SEARCH(
        positions, cell, pbc, cutoff, capacity=capacity, images=(1, 1, 1)
    ))
    assert found.overflow and int(found.n_pairs) == len(expected)
    kept = pair_set(found.senders, found.receivers, found.shifts)
    assert len(kept) == capacity and kept <= expected
    # the kept ones are the lowest receivers: host order is receiver-major
    assert np.array_equal(found.receivers, host.receivers[:capacity])
    # a 2 Å cell needs 3 / 2 -> 2 images per axis: one is reported as too few
    smaller = SEARCH(positions / 2, cell / 2, pbc, cutoff, capacity=capacity, images=(1, 1, 1))
    assert bool(smaller.image_overflow)


def test_growth_policy_grows_the_capacity_once_reuses_the_compile_and_adds_images():
    rng = np.random.default_rng(3)
    cell, pbc, cutoff = 5.0 * np.eye(3) + rng.uniform(-0.5, 0.5, (3, 3)), np.ones(3, bool), 3.0
    growing = GrowingNeighborList(cutoff, capacity=16, growth=1.25, multiple=32)
    positions = rng.uniform(0, 5, (8, 3))
    host = neighbor_list(positions, cell, pbc, cutoff)
    found = growing(positions, cell, pbc)
    assert real_pairs(found) == pair_set(host.senders, host.receivers, host.shifts)
    assert not found.overflow
    # 1.25 x n_pairs rounded up to a multiple of 32
    assert growing.capacity == 32 * math.ceil(1.25 * len(host.senders) / 32)
    assert growing.traces == 2  # the first capacity, then the grown one
    for _ in range(3):  # nearby positions: the same count, no recompile
        moved = positions + rng.normal(scale=0.01, size=positions.shape)
        host = neighbor_list(moved, cell, pbc, cutoff)
        assert real_pairs(growing(moved, cell, pbc)) == pair_set(
            host.senders, host.receivers, host.shifts
        )
    assert growing.traces == 2
    # a cell half as large needs 2 images per axis where 1 sufficed: the policy adds them
    host = neighbor_list(positions / 2, cell / 2, pbc, cutoff)
    found = growing(positions / 2, cell / 2, pbc)
    assert growing.images == image_ranges(cell / 2, pbc, cutoff) == (2, 2, 2)
    assert real_pairs(found) == pair_set(host.senders, host.receivers, host.shifts)
    assert not found.overflow and not found.image_overflow


def test_padded_batch_form_equals_per_structure_ase_lists():
    rng = np.random.default_rng(4)
    cutoff = 2.6
    crystal = ase.Atoms("H4", cell=3.0 * np.eye(3) + rng.uniform(-0.3, 0.3, (3, 3)), pbc=True,
                        scaled_positions=rng.uniform(-0.2, 1.2, (4, 3)))
    slab = ase.Atoms("H3", cell=[[2.5, 0, 0], [0.8, 2.7, 0], [0, 0, 0]], pbc=[True, True, False],
                     positions=rng.uniform(0, 2.5, (3, 3)))
    molecule = ase.Atoms("H5", positions=rng.normal(scale=1.2, size=(5, 3)))
    structures = [crystal, slab, molecule]
    batch = gn.batch_np([graph_of(atoms, cutoff) for atoms in structures])
    graph = gn.pad_with_graphs(batch, n_node=15, n_edge=int(batch.n_edge.sum()) + 1, n_graph=5)
    images = image_ranges(graph.globals["cell"], graph.globals["pbc"], cutoff)
    capacity = int(batch.n_edge.sum()) + 9

    def squared_lengths(positions, graph):  # a toy energy: the sum of |vector|^2 over edges
        graph = graph._replace(nodes=graph.nodes | {"positions": positions})
        rebuilt, found = graph_with_device_neighbors(
            graph, cutoff, capacity=capacity, images=images
        )
        vectors = edge_vectors(rebuilt)
        return jnp.sum(vectors**2), (rebuilt, found, vectors)

    with jax.enable_x64(True):
        (_, (rebuilt, found, vectors)), gradient = jax.device_get(
            jax.jit(jax.value_and_grad(squared_lengths, has_aux=True))(
                graph.nodes["positions"], graph
            )
        )
    # its gradient from ASE's pairs: d|D|^2 / d positions = +2 D at j, -2 D at i
    expected_gradient, first_atom = np.zeros((15, 3)), 0
    for atoms in structures:
        senders, receivers, vectors_ase = ase_neighbor_list("ijD", atoms, cutoff)
        np.add.at(expected_gradient, first_atom + receivers, 2 * vectors_ase)
        np.add.at(expected_gradient, first_atom + senders, -2 * vectors_ase)
        first_atom += len(atoms)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-9)
    assert not found.overflow and not found.image_overflow
    assert np.array_equal(rebuilt.n_edge, np.append(batch.n_edge, [9, 0]))
    assert np.all(rebuilt.senders[-9:] == 12) and np.all(rebuilt.receivers[-9:] == 12)
    assert np.all(np.diff(rebuilt.receivers) >= 0)
    assert np.all(np.linalg.norm(vectors[:-9], axis=1) < cutoff)
    for atoms, one in zip(structures, gn.unbatch_np(gn.unpad_with_graphs(rebuilt)), strict=True):
        assert pair_set(one.senders, one.receivers, one.edges["shifts"]) == pair_set(
            *ase_neighbor_list("ijS", atoms, cutoff)
        )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"cutoff": 0.0}, "positive finite cutoff, got 0.0"),
        ({"cutoff": float("nan")}, "positive finite cutoff, got nan"),
        ({"capacity": 0}, "capacity must be an int of at least 1"),
        ({"images": (1, 1)}, "images must be 3 non-negative ints"),
        ({"atom_mask": np.ones(3, bool)}, r"atom_mask must be bool \[n_atoms\] = \[4\]"),
        ({"positions": np.zeros((4, 2))}, r"positions must be \[n_atoms, 3\]"),
    ],
)
def test_bad_arguments_are_clear_errors(arguments, message):
    call = {"positions": np.zeros((4, 3)), "cell": np.eye(3), "pbc": True, "cutoff": 1.0,
            "capacity": 8, "images": (1, 1, 1)} | arguments
    with pytest.raises(ValueError, match=message):
        jax.jit(device_neighbor_list, static_argnames=("cutoff",) + STATIC)(**call)


def test_graph_form_needs_a_padded_graph_whose_counts_match():
    graph = graph_of(ase.Atoms("H2", positions=[[0, 0, 0], [0, 0, 1.0]]), 2.0)
    with pytest.raises(ValueError, match="needs a padded graph: its last graph with atoms"):
        graph_with_device_neighbors(graph, 2.0, capacity=4, images=(0, 0, 0))
    padded = gn.pad_with_graphs(graph, n_node=3, n_edge=2)
    wrong = padded._replace(n_node=np.array([2, 2]))
    with pytest.raises(ValueError, match=r"sum\(n_node\) = 4 does not match the 3 rows"):
        graph_with_device_neighbors(wrong, 2.0, capacity=4, images=(0, 0, 0))
