"""Particle fluids: LagrangeBench-layout datasets made with JAX-SPH, read into NumPy.

Needs the `particles` extra (`pip install "gnkit[particles]"`: h5py). Nothing here is imported
by `import gnkit`.

- `load_particle_dataset`, `read_split`, `ParticleDataset`, `ParticleTrajectory`: a dataset
  folder (train / valid / test HDF5 and `metadata.json`) as positions [T, N, dim], particle
  types [N] and the metadata;
- `particle_dataset_path`: the shipped TGV 2D and reverse-Poiseuille 2D sets;
- `periodic_displacements`, `finite_difference_velocities`, `kinetic_energy`: per-frame
  displacements, velocities and mean kinetic energy with the periodic wrap;
- `python -m gnkit.particles DIR_OR_NAME ... [--json OUT]`: splits, frames, particles, kinetic
  energy, and for Taylor-Green the fitted decay rate against the analytic one.

`gnkit.particles.gns` (imported on its own; it also needs the `atoms` extra for the periodic
neighbour list): GNS (encoder, residual interaction blocks, decoder) with LagrangeBench's
one-step target.
`gnkit.particles.segnn` (imported on its own; also e3nn-jax, the `atoms` extra): SEGNN, the
steerable E(3)-equivariant simulator on the same input graphs, its outputs rotating and
reflecting with its inputs.
`gnkit.particles.rollout` (imported on its own, same extras): the model's input graph built on
device by the cell list at a fixed capacity, a `lax.scan` rollout that raises on neighbour-list
overflow, and LagrangeBench's position MSE and kinetic-energy error.

The data is made by `benchmarks/sph_data.py` inside the JAX-SPH venv of
`benchmarks/make_sph_venv.sh`; gnkit's own environment does not need JAX-SPH.
"""

from gnkit.extras import require

require("particles", "gnkit.particles")

from gnkit.particles.data import (  # noqa: E402
    ParticleDataset,
    ParticleTrajectory,
    finite_difference_velocities,
    kinetic_energy,
    load_particle_dataset,
    particle_dataset_path,
    periodic_displacements,
    read_split,
)

__all__ = [
    "ParticleDataset",
    "ParticleTrajectory",
    "finite_difference_velocities",
    "kinetic_energy",
    "load_particle_dataset",
    "particle_dataset_path",
    "periodic_displacements",
    "read_split",
]
