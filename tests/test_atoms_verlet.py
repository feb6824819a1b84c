"""gnkit.atoms Verlet lists: over a random-walk trajectory the pairs within the cutoff taken
from the reused skin list equal the host list (checked against ASE) at every step until
`needs_rebuild` fires, and again after the rebuild, in float64 and float32; the rebuild
threshold at half the skin, padding atoms ignored; argument errors."""

import jax
import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

from _neighbor_cases import away_from_cutoff, pair_set  # noqa: E402

from gnkit.atoms import (  # noqa: E402
    VerletList,
    build_verlet_list,
    image_ranges,
    needs_rebuild,
    neighbor_list,
    verlet_neighbors,
)

CUTOFF, SKIN = 2.4, 0.5


def found_pairs(found) -> set:
    count = int(found.n_pairs)
    return pair_set(found.senders[:count], found.receivers[:count], found.shifts[:count])


@pytest.mark.parametrize(
    "dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)]
)
def test_reused_list_equals_host_list_until_rebuild_and_after(dtype):
    rng = np.random.default_rng(0)
    cell = 4.0 * np.eye(3) + rng.uniform(-0.4, 0.4, (3, 3))
    pbc = np.array([True, True, False])  # a slab: mixed pbc, atoms also leave the cell
    n_atoms, n_real = 8, 7
    positions = np.vstack([rng.uniform(0, 1, (n_real, 3)) @ cell, np.full((1, 3), 50.0)])
    atom_mask = np.arange(n_atoms) < n_real
    images = image_ranges(cell, pbc, CUTOFF + SKIN)

    def build(positions):
        return build_verlet_list(positions, cell.astype(dtype), pbc, CUTOFF, SKIN,
                                 capacity=256, images=images, atom_mask=atom_mask)

    @jax.jit
    def step(verlet, positions):
        stale = verlet_neighbors(verlet, positions, cell.astype(dtype), CUTOFF)
        fire = needs_rebuild(verlet, positions)
        verlet = jax.lax.cond(fire, lambda: build(positions), lambda: verlet)
        return verlet, fire, stale, verlet_neighbors(verlet, positions, cell.astype(dtype),
                                                     CUTOFF)

    def host_pairs(positions):
        host = neighbor_list(positions[:n_real], cell, pbc, CUTOFF)
        return pair_set(host.senders, host.receivers, host.shifts)

    def near(pairs, positions):  # float32 may disagree within 1e-4 Å of the cutoff
        if dtype == np.float64:
            return pairs
        return away_from_cutoff(pairs, positions, cell, CUTOFF, 1e-4)

    verlet = jax.jit(build)(positions.astype(dtype))
    fires = []
    for _ in range(40):
        positions = positions + np.where(atom_mask[:, None],
                                         rng.normal(scale=0.04, size=positions.shape), 0.0)
        verlet, fire, stale, fresh = jax.device_get(step(verlet, positions.astype(dtype)))
        fires.append(bool(fire))
        expected = near(host_pairs(positions), positions)
        if not fire:
            assert near(found_pairs(stale), positions) == expected
        assert near(found_pairs(fresh), positions) == expected
        assert not fresh.overflow and not fresh.image_overflow
        assert np.all(fresh.senders[int(fresh.n_pairs):] == n_real)  # the padding atom
    assert 2 <= sum(fires) <= 30  # the list was rebuilt, and reused in between


def test_needs_rebuild_past_half_the_skin_of_a_real_atom():
    reference = np.zeros((3, 3))
    verlet = VerletList(None, reference, np.array([True, True, False]), np.float32(0.5))
    check = jax.jit(needs_rebuild)

    def moved(atom, distance):  # atom `atom` moved by `distance` along (1, 1, 1)
        positions = reference.copy()
        positions[atom] += distance / np.sqrt(3)
        return positions

    assert not check(verlet, moved(1, 0.24))
    assert check(verlet, moved(1, 0.26))
    assert not check(verlet, moved(2, 5.0))  # padding atoms do not count


def test_negative_skin_is_an_error():
    with pytest.raises(ValueError, match="non-negative skin, got skin=-0.1"):
        build_verlet_list(np.zeros((2, 3)), np.eye(3), True, 1.0, -0.1, capacity=4,
                          images=(1, 1, 1))
