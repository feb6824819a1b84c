"""The particles demo's data: a shipped dataset's trajectories, normalisation, capacities, and
the training windows of each update. Host-side (NumPy)."""

from __future__ import annotations

import dataclasses

import numpy as np

from gnkit.demos.particles.config import ParticlesConfig


@dataclasses.dataclass(frozen=True)
class ParticlesData:
    """What the model trains and is tested on.

    Attributes:
      metadata: the dataset's `metadata.json`.
      splits: `{"train" | "valid" | "test": [positions float32 [T, N, dim]]}`.
      stats: the `Normalisation` of the metadata.
      isotropic_stats: `stats.isotropic()`, made once (rollouts compile once per `stats`
        object).
      box: box lengths, a tuple `[dim]`.
      radius: the connectivity radius.
      capacity: edge slots of the training graphs (`capacity_growth` times the most pairs of
        any training frame).
      external_force: RPF's body force (`gnkit.particles.rollout.EXTERNAL_FORCES`) or None.
    """

    metadata: dict
    splits: dict[str, list[np.ndarray]]
    stats: object
    isotropic_stats: object
    box: tuple[float, ...]
    radius: float
    capacity: int
    external_force: object

    @property
    def dim(self) -> int:
        return len(self.box)

    @property
    def frame_dt(self) -> float:
        return float(self.metadata["dt"]) * int(self.metadata["write_every"])

    def windows(self, split: str, history: int) -> list[tuple[int, int]]:
        """Every `(trajectory, frame)` of `split` with `history` frames before `frame` and one
        after it: the one-step samples."""
        return [(index, frame) for index, positions in enumerate(self.splits[split])
                for frame in range(history, positions.shape[0] - 1)]

    def window(self, split: str, trajectory: int, frame: int, history: int) -> np.ndarray:
        """Frames `frame - history .. frame + 1` `[history + 2, N, dim]` of a trajectory."""
        return self.splits[split][trajectory][frame - history: frame + 2]


def load_data(config: ParticlesConfig, run_dir, progress: bool) -> ParticlesData:
    """The shipped dataset of `config.case`, its normalisation and the training capacity.

    Args:
      config: the run's config.
      run_dir: the run directory (unused: nothing is cached).
      progress: print the sizes.
    """
    from gnkit.experiments import UsageError
    from gnkit.particles import load_particle_dataset
    from gnkit.particles.gns import Normalisation
    from gnkit.particles.rollout import EXTERNAL_FORCES, edge_capacity

    dataset = load_particle_dataset(config.case)
    splits = {split: [t.positions for t in items] for split, items in dataset.splits.items()}
    for split, trajectories in splits.items():
        frames = min(positions.shape[0] for positions in trajectories)
        if frames < config.history + 2:
            raise UsageError(f"--set history={config.history}: the {split} trajectories of "
                             f"{config.case} have {frames} frames, below history + 2")
    box = tuple(float(b) for b in dataset.box)
    radius = float(dataset.metadata["default_connectivity_radius"])
    frames = [positions[t] for positions in splits["train"]
              for t in range(0, positions.shape[0], 5)]
    capacity = max(edge_capacity(frame, box, radius, config.capacity_growth) for frame in frames)
    stats = Normalisation.from_metadata(dataset.metadata)
    data = ParticlesData(
        metadata=dataset.metadata, splits=splits, stats=stats,
        isotropic_stats=stats.isotropic(), box=box, radius=radius,
        capacity=capacity, external_force=EXTERNAL_FORCES.get(dataset.metadata["case"]),
    )
    if progress:
        sizes = ", ".join(f"{split} {len(items)} x {items[0].shape[0]} frames"
                          for split, items in splits.items())
        particles = splits["train"][0].shape[1]
        print(f"{config.case}: {sizes}; {particles} particles, {capacity} edge slots",
              flush=True)
    return data


def make_batch(config: ParticlesConfig, data: ParticlesData):
    """`batch(update)`: `batch_size` training windows and their noise draws, a pure function
    of `(seed, update)`. Host.

    Returns:
      `batch(update) -> {"window": float32 [B, history + 2, N, dim], "normal": float32
      [B, history, N, dim]}` (standard normals for `one_step.random_walk_noise`).
    """
    windows = data.windows("train", config.history)

    def batch(update: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([config.seed, update])
        rows = rng.integers(len(windows), size=config.batch_size)
        stacked = np.stack([data.window("train", *windows[row], config.history)
                            for row in rows])
        normal = rng.standard_normal(
            (config.batch_size, config.history, *stacked.shape[2:]), dtype=np.float32)
        return {"window": stacked.astype(np.float32), "normal": normal}

    return batch
