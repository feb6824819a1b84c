"""Particle fluids: LagrangeBench-layout datasets made with JAX-SPH, read into NumPy.

Needs the `particles` extra (`pip install "gnkit[particles]"`: h5py, and ASE, vesin and
e3nn-jax as in the `atoms` extra). Nothing here is imported by `import gnkit`.

- `load_particle_dataset`, `read_split`, `ParticleDataset`, `ParticleTrajectory`: a dataset
  folder (train / valid / test HDF5 and `metadata.json`) as positions [T, N, dim], particle
  types [N] and the metadata;
- `particle_dataset_path`: the shipped TGV 2D and reverse-Poiseuille 2D sets;
- `periodic_displacements`, `finite_difference_velocities`, `kinetic_energy`: per-frame
  displacements, velocities and mean kinetic energy with the periodic wrap;
- `python -m gnkit.particles DIR_OR_NAME ... [--json OUT]`: splits, frames, particles, kinetic
  energy, and for Taylor-Green the fitted decay rate against the analytic one.

Imported on their own:

- `gnkit.particles.gns`: GNS (encoder, residual interaction blocks, decoder) with
  LagrangeBench's one-step target, on `gnkit.atoms`' periodic neighbour list;
- `gnkit.particles.segnn`: SEGNN, the steerable E(3)-equivariant simulator (e3nn-jax) on the
  same input graphs, its outputs rotating and reflecting with its inputs;
- `gnkit.particles.nnx`: the NNX twins of both;
- `gnkit.particles.one_step`: GNS's random-walk input noise and the one-step loss;
- `gnkit.particles.rollout`: the model's input graph built on device by the cell list at a
  fixed capacity, a `lax.scan` rollout that raises on neighbour-list overflow, and
  LagrangeBench's position MSE and kinetic-energy error (`gnkit.particles.sinkhorn`: the
  Sinkhorn divergence).

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
