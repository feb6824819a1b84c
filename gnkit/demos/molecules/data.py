"""The molecules demo's data: a shipped data set or one's own CSV (`own_csv`) featurised once
(cached in the run directory), one split per replicate (written as chemprop's `splits.json`),
standardised targets, the GPS model's positional encodings (cached beside the graphs), and
padded batches. Host NumPy."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gnkit import experiments, positional
from gnkit.demos.molecules.config import SHIPPED_DATA, MoleculesConfig

if TYPE_CHECKING:  # gnkit.chem needs the chem extra; the functions import it when they run
    from gnkit import chem

# Padded batch sizes are rounded up to these multiples, so the steps compile a few times only.
NODE_BUCKET = 128
EDGE_BUCKET = 256


@dataclasses.dataclass(frozen=True)
class MoleculeData:
    """A data set's molecules, targets `[M, tasks]` (NaN: a missing label), graphs, one split
    per replicate seed, (with descriptors) each replicate's training descriptors sorted by
    column (`descriptor_reference`, `[n_train, D]`), the distribution that maps descriptors to
    [0, 1], (model=gps) each atom's positional encoding (`positional`, `[sum N, k]`, in the
    graphs' atom order), the `tasks`' names and the `task` kind (regression or
    classification)."""

    dataset: chem.MoleculeDataset
    graphs: chem.MoleculeGraphs
    targets: np.ndarray
    splits: dict[int, chem.splits.Split]
    descriptor_reference: dict[int, np.ndarray] | None = None
    positional: np.ndarray | None = None
    tasks: tuple[str, ...] = ("target",)
    task: str = "regression"

    @property
    def classification(self) -> bool:
        return self.task == "classification"

    @property
    def max_atoms(self) -> int:
        """The most atoms of any molecule (the GPS attention's bucket)."""
        return int(self.graphs.n_node.max())

    def scaling(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation `[tasks]` (float32) of each task's known training labels
        of replicate `seed` (classification: 0 and 1, labels are not scaled)."""
        if self.classification:
            return np.zeros(len(self.tasks), np.float32), np.ones(len(self.tasks), np.float32)
        train = self.targets[self.splits[seed]["train"]]
        columns = [column[np.isfinite(column)] for column in train.T]
        mean = [float(column.mean()) if len(column) else 0.0 for column in columns]
        std = [float(column.std()) if len(column) > 1 else 1.0 for column in columns]
        return np.asarray(mean, np.float32), np.where(np.asarray(std) > 0, std, 1.0).astype(
            np.float32
        )


def _splits(config: MoleculesConfig, smiles) -> dict[int, chem.splits.Split]:
    from gnkit import chem

    if config.splits_file:
        with experiments.reading_file(Path(config.splits_file), "a chemprop splits file"):
            loaded = chem.read_splits_file(config.splits_file)
        if len(loaded) < config.seeds:
            raise experiments.UsageError(
                f"--set splits_file={config.splits_file}: {len(loaded)} splits for "
                f"{config.seeds} seeds"
            )
        for split in loaded:
            if max(int(np.max(part, initial=-1)) for part in split.values()) >= len(smiles):
                raise experiments.UsageError(
                    f"--set splits_file={config.splits_file}: an index past row {len(smiles) - 1}"
                )
        return dict(zip(config.replicate_seeds, loaded, strict=False))
    if config.split == "random":
        return {s: chem.random_split(len(smiles), config.sizes, s) for s in config.replicate_seeds}
    return {s: chem.scaffold_split(smiles, config.sizes, s) for s in config.replicate_seeds}


def load_data(config: MoleculesConfig, run_dir: experiments.RunDir, progress: bool):
    """The data of a run: graphs cached under `run_dir/features/`, splits in
    `run_dir/splits.json` (chemprop's format, one entry per replicate, in seed order)."""
    from gnkit import chem
    from gnkit.demos.molecules import own_csv

    if config.data not in SHIPPED_DATA:
        dataset, graphs = own_csv.load(config, run_dir.file("features"), progress)
    else:
        dataset = chem.load_dataset(config.data).take(slice(config.max_molecules or None))
        graphs = chem.molecule_graphs(
            dataset.smiles,
            config.features,
            descriptors=config.descriptors,
            cache_dir=run_dir.file("features"),
            progress=progress,
        )
    splits = _splits(config, dataset.smiles)
    chem.write_splits_file(run_dir.file("splits.json"), list(splits.values()))
    return molecule_data(config, dataset, graphs, splits, cache_dir=run_dir.file("features"))


def molecule_data(config: MoleculesConfig, dataset, graphs, splits, cache_dir=None):
    """`MoleculeData` of featurised `graphs` and `splits` (`{seed: split}`); with model=gps,
    the positional encodings (kept in `cache_dir` when given). The task is the dataset's own
    (`own_csv.task_of`: given or inferred from its labels) for a CSV, else regression."""
    from gnkit.demos.molecules import own_csv

    reference = None
    if config.descriptors:
        reference = {
            seed: np.sort(_finite(graphs.globals[split["train"]]), axis=0)
            for seed, split in splits.items()
        }
    encodings = positional_encodings(config, graphs, cache_dir)
    targets = dataset.targets.astype(np.float32)
    if targets.ndim == 1:
        targets = targets[:, None]
    if dataset.tasks:
        tasks, task = dataset.tasks, own_csv.task_of(config, dataset)
    else:
        tasks = (dataset.info.target_column if dataset.info else "target",)
        task = "regression"
    return MoleculeData(dataset, graphs, targets, splits, reference, encodings, tasks, task)


def positional_encodings(config: MoleculesConfig, graphs, cache_dir=None) -> np.ndarray | None:
    """Each atom's positional encoding for model=gps, `[sum N, k]` float32 in the graphs' atom
    order (None for the other models): `gnkit.random_walk_pe` over `rwse_steps` steps or
    `gnkit.laplacian_pe` with `lappe_vectors` vectors, molecule by molecule. Computed once and
    kept in `cache_dir` (a file named by the encoding and a hash of the molecules' bonds)."""
    if config.model != "gps":
        return None
    kind, size = (
        ("rwse", config.rwse_steps)
        if config.positional == "rwse"
        else ("lappe", config.lappe_vectors)
    )
    digest = hashlib.sha256()
    for array in (graphs.n_node, graphs.n_edge, graphs.senders, graphs.receivers):
        digest.update(np.ascontiguousarray(array, np.int64).tobytes())
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"positional_{kind}{size}_{digest.hexdigest()[:16]}.npy"
        if path.exists():
            return np.load(path)
    graph = graphs.batch(np.arange(len(graphs)))
    if kind == "rwse":
        encodings = positional.random_walk_pe(graph, size)
    else:
        encodings = positional.laplacian_pe(graph, size)
    encodings = encodings.astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".partial.npy")
        np.save(temporary, encodings)
        temporary.replace(path)
    return encodings


def _finite(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values, nan=0.0, posinf=np.finfo(np.float64).max)


def empirical_cdf(reference: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each column of `values` `[n, D]` mapped to the fraction of the sorted `reference`
    `[m, D]` column at or below it: float32 in [0, 1] (NaN counts as 0)."""
    values = _finite(values)
    columns = [
        np.searchsorted(reference[:, column], values[:, column], side="right")
        for column in range(values.shape[1])
    ]
    return (np.stack(columns, axis=1) / len(reference)).astype(np.float32)


def steps_per_epoch(n_train: int, batch_size: int) -> int:
    """Batches per epoch; a last batch of a single molecule is dropped, as chemprop does."""
    return n_train // batch_size + (1 if n_train % batch_size > 1 else 0)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def make_batch(
    graphs, molecules, targets, n_graph: int, reference=None, encodings=None, flip=None
) -> dict:
    """Molecules at positions `molecules` as a padded batch.

    Args:
      graphs: the `chem.MoleculeGraphs` the molecules are in.
      molecules: positions of the batch's molecules in `graphs`.
      targets: `[M]` or `[M, tasks]`, the targets of each molecule of `graphs` (NaN: missing).
      n_graph: graphs of the padded batch (one more than the molecules at least).
      reference: the sorted training descriptors (`MoleculeData.descriptor_reference`), or None.
      encodings: `[sum N, k]` positional encodings of the atoms of `graphs`, or None.
      flip: a `numpy.random.Generator` for a random sign of each molecule's encoding columns
        (Laplacian eigenvectors in training), or None.

    Returns:
      `graph` (padded to bucketed sizes and `n_graph` graphs; globals the descriptors through
      `empirical_cdf(reference, .)`, or zeros `[n_graph, 1]` without a reference), `targets`
      `[n_graph]` or `[n_graph, tasks]` as `targets` (0 on padding and missing labels), `mask`
      of the same shape (true on the real molecules' known labels) and, with `encodings`,
      `positional`
      `[n_node, k]` (the batch's atoms in order, 0 on padding).
    """
    molecules = np.asarray(molecules, np.int64)
    n_node = _round_up(int(graphs.n_node[molecules].sum()) + 1, NODE_BUCKET)
    n_edge = _round_up(int(graphs.n_edge[molecules].sum()) + 2, EDGE_BUCKET)
    padded = np.zeros((n_graph, *targets.shape[1:]), np.float32)
    padded[: len(molecules)] = targets[molecules]
    mask = (np.arange(n_graph) < len(molecules)).reshape(-1, *[1] * (targets.ndim - 1))
    mask = mask & np.isfinite(padded)
    padded = np.where(mask, padded, 0.0).astype(np.float32)
    graph = graphs.padded_batch(molecules, n_node, n_edge, n_graph)
    if reference is None:
        graph = graph._replace(globals=np.zeros((n_graph, 1), np.float32))
    else:
        graph = graph._replace(globals=empirical_cdf(reference, graph.globals))
    batch = {"graph": graph, "targets": padded, "mask": mask}
    if encodings is not None:
        counts = graphs.n_node[molecules]
        starts = graphs.node_offsets[molecules]
        rows = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, counts, strict=True)])
        atoms = encodings[rows]
        if flip is not None:
            atoms = positional.random_sign_flip(atoms, counts, flip)
        batch["positional"] = np.zeros((n_node, encodings.shape[1]), np.float32)
        batch["positional"][: len(rows)] = atoms
    return batch


def train_batches(config: MoleculesConfig, data: MoleculeData, seed: int):
    """`batch(update)`: the training batch of update `update` of replicate `seed`, standardised
    targets; each epoch a fresh shuffle from `(seed, epoch)`, so a resumed run sees the same
    (Laplacian encodings get random signs from `(seed, update)`)."""
    train = data.splits[seed]["train"]
    mean, std = data.scaling(seed)
    scaled = (data.targets - mean) / std
    per_epoch = steps_per_epoch(len(train), config.batch_size)
    reference = data.descriptor_reference[seed] if data.descriptor_reference else None
    lappe = data.positional is not None and config.positional == "lappe"

    def batch(update: int) -> dict:
        epoch, index = divmod(update, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(train)
        rows = order[index * config.batch_size : (index + 1) * config.batch_size]
        flip = np.random.default_rng([seed, update, 1]) if lappe else None
        return make_batch(
            data.graphs, rows, scaled, config.batch_size + 1, reference, data.positional, flip
        )

    return batch


def eval_batches(config: MoleculesConfig, graphs, molecules, reference=None, encodings=None):
    """The molecules at `molecules` in order, `batch_size` at a time (targets left 0), with
    their atoms' positional `encodings` (`[sum N, k]` of `graphs`) when given."""
    molecules = np.asarray(molecules)
    zeros = np.zeros(len(graphs), np.float32)
    for start in range(0, len(molecules), config.batch_size):
        rows = molecules[start : start + config.batch_size]
        yield rows, make_batch(graphs, rows, zeros, config.batch_size + 1, reference, encodings)
