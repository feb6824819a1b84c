"""The molecules demo's data: a shipped data set featurised once (cached in the run directory),
one split per replicate (written as chemprop's `splits.json`), standardised targets, and padded
batches. Host NumPy."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from gnkit import chem, experiments
from gnkit.demos.molecules.config import MoleculesConfig

# Padded batch sizes are rounded up to these multiples, so the steps compile a few times only.
NODE_BUCKET = 128
EDGE_BUCKET = 256


@dataclasses.dataclass(frozen=True)
class MoleculeData:
    """A data set's molecules, targets `[M]`, graphs, one split per replicate seed, and (with
    descriptors) each replicate's training descriptors sorted by column (`descriptor_reference`,
    `[n_train, D]`), the distribution that maps descriptors to [0, 1]."""

    dataset: chem.MoleculeDataset
    graphs: chem.MoleculeGraphs
    targets: np.ndarray
    splits: dict[int, chem.splits.Split]
    descriptor_reference: dict[int, np.ndarray] | None = None

    def scaling(self, seed: int) -> tuple[float, float]:
        """Mean and standard deviation of the training targets of replicate `seed`."""
        train = self.targets[self.splits[seed]["train"]]
        return float(train.mean()), float(train.std())


def _splits(config: MoleculesConfig, smiles) -> dict[int, chem.splits.Split]:
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
    dataset = chem.load_dataset(config.data)
    if config.max_molecules:
        dataset = dataclasses.replace(
            dataset,
            smiles=dataset.smiles[: config.max_molecules],
            targets=dataset.targets[: config.max_molecules],
        )
    graphs = chem.molecule_graphs(
        dataset.smiles,
        config.features,
        descriptors=config.descriptors,
        cache_dir=run_dir.file("features"),
        progress=progress,
    )
    splits = _splits(config, dataset.smiles)
    chem.write_splits_file(run_dir.file("splits.json"), list(splits.values()))
    return molecule_data(config, dataset, graphs, splits)


def molecule_data(config: MoleculesConfig, dataset, graphs, splits) -> MoleculeData:
    """`MoleculeData` of featurised `graphs` and `splits` (`{seed: split}`)."""
    reference = None
    if config.descriptors:
        reference = {
            seed: np.sort(_finite(graphs.globals[split["train"]]), axis=0)
            for seed, split in splits.items()
        }
    return MoleculeData(dataset, graphs, dataset.targets.astype(np.float32), splits, reference)


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


def make_batch(graphs, molecules, targets, n_graph: int, reference=None) -> dict:
    """Molecules at positions `molecules` as a padded batch: `graph` (padded to bucketed sizes
    and `n_graph` graphs; globals the descriptors through `empirical_cdf(reference, .)`, or
    zeros `[n_graph, 1]` without a reference), `targets` `[n_graph]` (0 on padding) and `mask`
    `[n_graph]`."""
    molecules = np.asarray(molecules)
    n_node = _round_up(int(graphs.n_node[molecules].sum()) + 1, NODE_BUCKET)
    n_edge = _round_up(int(graphs.n_edge[molecules].sum()) + 2, EDGE_BUCKET)
    padded = np.zeros(n_graph, np.float32)
    padded[: len(molecules)] = targets[molecules]
    graph = graphs.padded_batch(molecules, n_node, n_edge, n_graph)
    if reference is None:
        graph = graph._replace(globals=np.zeros((n_graph, 1), np.float32))
    else:
        graph = graph._replace(globals=empirical_cdf(reference, graph.globals))
    return {
        "graph": graph,
        "targets": padded,
        "mask": np.arange(n_graph) < len(molecules),
    }


def train_batches(config: MoleculesConfig, data: MoleculeData, seed: int):
    """`batch(update)`: the training batch of update `update` of replicate `seed`, standardised
    targets; each epoch a fresh shuffle from `(seed, epoch)`, so a resumed run sees the same."""
    train = data.splits[seed]["train"]
    mean, std = data.scaling(seed)
    scaled = (data.targets - mean) / std
    per_epoch = steps_per_epoch(len(train), config.batch_size)
    reference = data.descriptor_reference[seed] if data.descriptor_reference else None

    def batch(update: int) -> dict:
        epoch, index = divmod(update, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(train)
        rows = order[index * config.batch_size : (index + 1) * config.batch_size]
        return make_batch(data.graphs, rows, scaled, config.batch_size + 1, reference)

    return batch


def eval_batches(config: MoleculesConfig, graphs, molecules, reference=None):
    """The molecules at `molecules` in order, `batch_size` at a time (targets left 0)."""
    molecules = np.asarray(molecules)
    zeros = np.zeros(len(graphs), np.float32)
    for start in range(0, len(molecules), config.batch_size):
        rows = molecules[start : start + config.batch_size]
        yield rows, make_batch(graphs, rows, zeros, config.batch_size + 1, reference)
