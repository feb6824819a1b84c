"""gnkit.atoms' public functions refuse bad arguments with one error naming the argument."""

import numpy as np
import pytest

pytest.importorskip("ase")
pytest.importorskip("vesin")

from ase.build import bulk  # noqa: E402

import gnkit.atoms as ga  # noqa: E402

CELL, PBC = np.eye(3) * 4.0, np.ones(3, bool)
POSITIONS = np.random.default_rng(0).uniform(0, 3, (4, 3))


@pytest.mark.parametrize("make, message", [
    (lambda: ga.device_neighbor_list(np.ones((4, 3), int), CELL, PBC, 2.0, capacity=64,
                                     images=(1, 1, 1)), "positions must be floats"),
    (lambda: ga.grown_capacity(-5), "n_pairs must be a non-negative int"),
    (lambda: ga.grown_capacity(1.5), "n_pairs must be a non-negative int"),
    (lambda: ga.NeighborSettings(cutoff=2.0, skin=-1.0, cell=CELL, pbc=PBC, capacity=64),
     "skin must be >= 0"),
    (lambda: ga.NeighborSettings(cutoff=-2.0, skin=0.5, cell=CELL, pbc=PBC, capacity=64),
     "positive finite cutoff"),
    (lambda: ga.NeighborSettings(cutoff=2.0, skin=0.5, cell=CELL, pbc=PBC, capacity=2.5),
     "capacity must be an int"),
    (lambda: ga.VelocityVerlet(-1.0), "timestep must be positive"),
    (lambda: ga.Langevin(1.0, temperature=-5.0, friction=0.01), "temperature must be >= 0"),
    (lambda: ga.Langevin(1.0, temperature=300.0, friction=-1.0), "friction must be >= 0"),
    (lambda: ga.load_aspirin("train", n_validation=2.5), "n_validation must be between"),
    (lambda: ga.make_emt_dataset(2.5, 0), "n_structures must be an int"),
    (lambda: ga.Calculator(None, {}, -1.0), r"cutoff \(Å\) must be a positive"),
    (lambda: ga.atoms_to_graph(bulk("Cu", "fcc", a=3.6), 0.0), "cutoff must be a positive"),
    (lambda: ga.atoms_to_graph(bulk("Cu", "fcc", a=3.6), 3.0, min_distance=-1.0),
     "min_distance must be >= 0"),
])
def test_bad_arguments_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()
