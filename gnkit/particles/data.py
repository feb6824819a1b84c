"""Particle-fluid datasets in LagrangeBench's layout, read into NumPy (host-side).

A dataset folder holds `train.h5`, `valid.h5`, `test.h5` and `metadata.json` (and `force.py`
where the case has a body force), as LagrangeBench's `gen_dataset.py` writes them and as
`benchmarks/sph_data.py` makes them with JAX-SPH. Each HDF5 file has one group per trajectory,
`"00000"`, `"00001"`, ..., holding `position` float32 [T, N, dim] and `particle_type` int [N]
(0 = fluid). `metadata.json` carries the case's settings: `dt` (solver step), `write_every`
(solver steps between frames), `dx`, `bounds` [[low, high]] * dim,
`periodic_boundary_conditions`, `default_connectivity_radius`, `vel_mean` / `vel_std` /
`acc_mean` / `acc_std` (per-frame displacement units), `sequence_length_train` / `_test`,
`num_trajs_train` / `_test`, `num_particles_max`, `case`.

gnkit ships small sets made with the generator (`gnkit/data/particles/`, see its SOURCES.md):
`particle_dataset_path("tgv2d")`, `particle_dataset_path("rpf2d")`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import h5py
import numpy as np

SPLITS = ("train", "valid", "test")
SHIPPED = pathlib.Path(__file__).resolve().parents[1] / "data" / "particles"


@dataclasses.dataclass(frozen=True)
class ParticleTrajectory:
    """One trajectory: positions float32 [T, N, dim] and particle types int [N]."""

    positions: np.ndarray
    particle_type: np.ndarray


@dataclasses.dataclass(frozen=True)
class ParticleDataset:
    """A dataset folder read into memory.

    Attributes:
        metadata: `metadata.json` as a dict.
        splits: {"train" | "valid" | "test": [ParticleTrajectory, ...]} in key order.
    """

    metadata: dict
    splits: dict[str, list[ParticleTrajectory]]

    @property
    def box(self) -> np.ndarray:
        """Box lengths [dim] from `bounds`."""
        bounds = np.asarray(self.metadata["bounds"], dtype=np.float64)
        return bounds[:, 1] - bounds[:, 0]

    @property
    def frame_dt(self) -> float:
        """Physical time between frames: `dt * write_every`."""
        return float(self.metadata["dt"]) * int(self.metadata["write_every"])


def particle_dataset_path(name: str) -> pathlib.Path:
    """The folder of a shipped dataset: "tgv2d" or "rpf2d"."""
    path = SHIPPED / name
    if not (path / "metadata.json").is_file():
        shipped = sorted(p.name for p in SHIPPED.iterdir() if (p / "metadata.json").is_file())
        raise ValueError(f"no shipped particle dataset {name!r}; shipped: {', '.join(shipped)}")
    return path


def read_split(path: str | pathlib.Path, split: str) -> list[ParticleTrajectory]:
    """The trajectories of `<path>/<split>.h5` in key order.

    Args:
        path: the dataset folder.
        split: "train", "valid" or "test".

    Returns:
        A list of `ParticleTrajectory` (positions float32 [T, N, dim], particle_type [N]).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    file = pathlib.Path(path) / f"{split}.h5"
    if not file.is_file():
        raise FileNotFoundError(f"no {split}.h5 in {path}")
    with h5py.File(file, "r") as handle:
        return [
            ParticleTrajectory(
                positions=np.asarray(handle[key]["position"], dtype=np.float32),
                particle_type=np.asarray(handle[key]["particle_type"]),
            )
            for key in sorted(handle.keys())
        ]


def load_particle_dataset(path: str | pathlib.Path) -> ParticleDataset:
    """Read a LagrangeBench-layout folder: metadata and every split (host, NumPy).

    Args:
        path: a dataset folder, or a shipped name ("tgv2d", "rpf2d").

    Raises:
        TypeError: `path` is not a string or path.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"load_particle_dataset: path must be a dataset folder (str or path) or "
                        f"a shipped name ('tgv2d', 'rpf2d'), got {type(path).__name__} {path!r}")
    folder = pathlib.Path(path)
    if not folder.is_dir() and isinstance(path, str) and "/" not in path:
        folder = particle_dataset_path(path)
    metadata_file = folder / "metadata.json"
    if not metadata_file.is_file():
        raise FileNotFoundError(f"no metadata.json in {folder}")
    metadata = json.loads(metadata_file.read_text())
    return ParticleDataset(metadata, {split: read_split(folder, split) for split in SPLITS})


def periodic_displacements(positions: np.ndarray, box: np.ndarray,
                           periodic: np.ndarray | bool = True) -> np.ndarray:
    """Frame-to-frame displacements with the minimum-image wrap (host, NumPy).

    Args:
        positions: [T, N, dim].
        box: box lengths [dim].
        periodic: bool or bool [dim]; wrapped dimensions.

    Returns:
        [T - 1, N, dim]: positions[t + 1] - positions[t], wrapped into [-box / 2, box / 2] in
        the periodic dimensions (LagrangeBench's velocity, in length per frame).
    """
    positions = np.asarray(positions, dtype=np.float64)
    box = np.asarray(box, dtype=np.float64)
    delta = positions[1:] - positions[:-1]
    wrapped = delta - box * np.round(delta / box)
    return np.where(np.broadcast_to(periodic, box.shape), wrapped, delta)


def finite_difference_velocities(positions: np.ndarray, box: np.ndarray, frame_dt: float,
                                 periodic: np.ndarray | bool = True) -> np.ndarray:
    """Velocities [T - 1, N, dim] between frames: wrapped displacements over `frame_dt`."""
    return periodic_displacements(positions, box, periodic) / frame_dt


def kinetic_energy(positions: np.ndarray, box: np.ndarray, frame_dt: float,
                   periodic: np.ndarray | bool = True) -> np.ndarray:
    """Mean kinetic energy per unit mass, `|v|^2 / 2` averaged over particles, per frame pair.

    Args:
        positions: [T, N, dim].
        box: box lengths [dim].
        frame_dt: time between frames.
        periodic: bool or bool [dim]; wrapped dimensions.

    Returns:
        [T - 1], at the midpoints (t + 1/2) * frame_dt of the frame pairs (host, NumPy).
    """
    velocities = finite_difference_velocities(positions, box, frame_dt, periodic)
    return 0.5 * np.mean(np.sum(velocities**2, axis=-1), axis=-1)
