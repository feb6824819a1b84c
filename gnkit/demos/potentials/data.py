"""The potentials demo's data: aspirin or EMT splits as graphs, E0s, scale / shift, batches.

Energies are fitted relative to each structure's reference energy `sum_atoms E0[species]`
(E0s by least squares on the training structures, in float64 on the host): aspirin's total
energies (about -17,617 eV) would lose meV in float32, the relative ones (about 1 eV) do not.
The graphs hold the relative energy in `globals["energy"]`; `PotentialData.reference` gives
back each structure's reference energy to add. Host-side (NumPy, ASE).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from gnkit.batching import BucketPolicy, batch_np, pad_to_bucket
from gnkit.demos.potentials.config import EMT_SEED, PotentialsConfig
from gnkit.graph import GraphsTuple

SPLITS = ("train", "validation", "test")


@dataclasses.dataclass(frozen=True)
class PotentialData:
    """The graphs of each split and what the models are built from.

    Attributes:
      splits: `{"train" | "validation" | "test": [single-structure GraphsTuple]}`, float32,
        `globals["energy"]` the energy relative to the structure's reference energy.
      reference: `{split: float64 [n_structures]}`, each structure's `sum_atoms E0` (eV).
      species: the atomic numbers, in the models' order.
      reference_energies: float64 `[len(species)]`, each species' E0 (eV).
      scale: the models' output scale (the RMS training force component, eV/Å).
      shift: the mean per-atom training energy after the E0s (eV).
      avg_num_neighbors: the training structures' mean number of edges into an atom.
      mean_min_distance: the training structures' mean shortest edge (Å).
      stress: whether the graphs carry stress (EMT).
    """

    splits: dict[str, list[GraphsTuple]]
    reference: dict[str, np.ndarray]
    species: tuple[int, ...]
    reference_energies: np.ndarray
    scale: float
    shift: float
    avg_num_neighbors: float
    mean_min_distance: float
    stress: bool

    def n_atoms(self, split: str) -> np.ndarray:
        """int `[n_structures]`: the atoms of each structure of `split`."""
        return np.array([int(graph.n_node[0]) for graph in self.splits[split]])

    def policy(self, batch_size: int) -> BucketPolicy:
        """The bucket ladder for `batch_size` training structures (`atoms_bucket_policy`)."""
        from gnkit.atoms import atoms_bucket_policy

        return atoms_bucket_policy(self.splits["train"], batch_size)


def _emt_structures(config: PotentialsConfig, run_dir, progress: bool) -> list:
    """The EMT structures, made once and cached as extended XYZ in the run directory."""
    import ase.io

    from gnkit.atoms.datasets import write_emt_dataset

    total = sum(config.emt_sizes)
    path = Path(run_dir.file(f"emt_seed{EMT_SEED}_{total}.xyz"))
    if not path.exists():
        if progress:
            print(f"making {total} EMT structures (seed {EMT_SEED}) into {path}", flush=True)
        partial = path.with_name(f".{path.name}.tmp")
        write_emt_dataset(partial, total, EMT_SEED, progress=progress)
        partial.replace(path)
    return ase.io.read(path, index=":", format="extxyz")


def _structures(config: PotentialsConfig, run_dir, progress: bool) -> dict[str, list]:
    """`{split: [ase.Atoms]}` of the config's data, before `max_train` / `test_frames`."""
    if config.data == "aspirin":
        from gnkit.atoms.datasets import load_aspirin

        return {
            split: load_aspirin(split, n_validation=config.n_validation, seed=config.seed)
            for split in SPLITS
        }
    structures = _emt_structures(config, run_dir, progress)
    n_train, n_validation, _ = config.emt_sizes
    order = np.random.default_rng(config.seed).permutation(n_train + n_validation)
    return {
        "train": [structures[i] for i in np.sort(order[n_validation:])],
        "validation": [structures[i] for i in np.sort(order[:n_validation])],
        "test": structures[n_train + n_validation:],
    }


def split_structures(config: PotentialsConfig, run_dir, progress: bool) -> dict[str, list]:
    """`{split: [ase.Atoms]}`, the structures of each split the models train, validate and test
    on: the config's data cut to `max_train` training structures and `test_frames` evenly spaced
    test structures. Host.

    Args:
      config: the run's config.
      run_dir: the run directory (holds the cached EMT structures; unused for aspirin).
      progress: print what is being made.
    """
    structures = _structures(config, run_dir, progress)
    if config.max_train:
        structures["train"] = structures["train"][: config.max_train]
    if config.test_frames and config.test_frames < len(structures["test"]):
        rows = np.linspace(0, len(structures["test"]) - 1, config.test_frames).round()
        structures["test"] = [structures["test"][int(row)] for row in rows]
    return structures


def _counts(graphs: list[GraphsTuple], species: tuple[int, ...]) -> np.ndarray:
    """`[n_structures, n_species]` atom counts."""
    return np.array(
        [[np.sum(graph.nodes["atomic_numbers"] == z) for z in species] for graph in graphs],
        np.float64,
    )


def _relative(graph: GraphsTuple, reference: float) -> GraphsTuple:
    """`graph` in float32 with its energy minus `reference` (computed in float64 first)."""
    energy = np.asarray(graph.globals["energy"], np.float64) - reference
    globals_ = dict(graph.globals, energy=energy)
    graph = graph._replace(globals=globals_)
    return GraphsTuple(
        *(
            {key: _float32(value) for key, value in field.items()}
            if isinstance(field, dict) else field
            for field in graph
        )
    )


def _float32(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype == np.float64 else array


def load_data(config: PotentialsConfig, run_dir, progress: bool) -> PotentialData:
    """The run's `PotentialData` (see the module docstring). Host.

    Args:
      config: the run's config.
      run_dir: the run directory (holds the cached EMT structures).
      progress: print what is being made.

    Returns:
      The `PotentialData`.
    """
    from gnkit.atoms import atoms_to_graphs
    from gnkit.atoms.equivariant import average_min_distance, average_num_neighbors
    from gnkit.atoms.potential import ScaleShift

    structures = split_structures(config, run_dir, progress)
    targets = ("energy", "forces", "stress") if config.data == "emt" else ("energy", "forces")
    graphs = {
        split: atoms_to_graphs(frames, config.cutoff, targets=targets)
        for split, frames in structures.items()
    }
    species = tuple(
        int(z) for z in np.unique(np.concatenate(
            [graph.nodes["atomic_numbers"] for split in graphs.values() for graph in split]
        ))
    )
    fitted = ScaleShift.fit(graphs["train"], species)
    reference_energies = np.asarray(fitted.reference_energies, np.float64)
    reference = {
        split: _counts(split_graphs, species) @ reference_energies
        for split, split_graphs in graphs.items()
    }
    relative = {
        split: [_relative(graph, float(e0)) for graph, e0 in zip(split_graphs, reference[split],
                                                                   strict=True)]
        for split, split_graphs in graphs.items()
    }
    if progress:
        sizes = ", ".join(f"{split} {len(relative[split])}" for split in SPLITS)
        print(f"{config.data}: {sizes} structures, species {species}", flush=True)
    return PotentialData(
        splits=relative,
        reference=reference,
        species=species,
        reference_energies=reference_energies,
        scale=fitted.scale,
        shift=fitted.shift,
        avg_num_neighbors=average_num_neighbors(batch_np(relative["train"])),
        mean_min_distance=average_min_distance(relative["train"]),
        stress=config.data == "emt",
    )


def batch_of(graphs: list[GraphsTuple], rows, policy: BucketPolicy) -> GraphsTuple:
    """The structures at `rows` of `graphs`, batched and padded to `policy`'s bucket. Host."""
    return pad_to_bucket(batch_np([graphs[int(row)] for row in rows]), policy)


def make_batch(config: PotentialsConfig, data: PotentialData):
    """`batch(update)`: the training structures of update `update`, a pure function of it.

    Each epoch visits every training structure once, in an order drawn from `(seed, epoch)`;
    the last batch of an epoch holds the remainder. Batches are padded to the bucket ladder of
    `batch_size` structures, so training compiles once per rung. Host.
    """
    graphs = data.splits["train"]
    policy = data.policy(config.batch_size)
    per_epoch = config.steps_per_epoch

    def batch(update: int) -> GraphsTuple:
        epoch, position = divmod(update, per_epoch)
        order = np.random.default_rng([config.seed, epoch]).permutation(len(graphs))
        start = position * config.batch_size
        return batch_of(graphs, order[start:start + config.batch_size], policy)

    return batch
