"""One's own CSV for the molecules demo (`data=PATH.csv`): its columns checked, rows RDKit
rejects reported (line, string, RDKit's reason) and skipped or refused, and the task kind taken
from `task` or inferred from the labels. Host."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gnkit import experiments
from gnkit.demos.molecules.config import MoleculesConfig


def target_columns(config: MoleculesConfig) -> tuple[str, ...]:
    """The `target_columns` setting as names (empty: every column but the SMILES one)."""
    return tuple(name.strip() for name in config.target_columns.split(",") if name.strip())


def _read(config: MoleculesConfig):
    from gnkit import chem

    path = Path(config.data)
    if not path.is_file():
        raise experiments.UsageError(f"--data {config.data}: no such file")
    try:
        with experiments.reading_file(path, "a CSV of SMILES and targets", "--data"):
            try:
                return chem.read_csv(path, config.smiles_column, target_columns(config))
            except KeyError as error:  # a missing column: its own one-line message
                raise experiments.UsageError(f"--data {error.args[0]}") from None
    except UnicodeDecodeError as error:
        raise experiments.UsageError(f"--data {path}: not a UTF-8 CSV ({error})") from None


def load(config: MoleculesConfig, cache_dir, progress: bool):
    """The CSV's data set and graphs, the molecules RDKit reads only (in file order), after
    `max_molecules`; prints each rejected row and the task line.

    Returns:
      `(dataset, graphs)`: the `chem.MoleculeDataset` of the kept rows (targets
      `[kept, tasks]`) and their `chem.MoleculeGraphs`.
    """
    from gnkit import chem

    dataset = _read(config).take(slice(config.max_molecules or None))
    graphs = chem.molecule_graphs(
        dataset.smiles,
        config.features,
        on_invalid="skip",
        descriptors=config.descriptors,
        cache_dir=cache_dir,
        progress=progress,
    )
    if graphs.skipped and config.invalid_smiles == "raise":
        row, text = graphs.skipped[0]
        raise experiments.UsageError(
            f"--data {config.data} line {row + 2}: {rejection_line(text)} "
            f"({len(graphs.skipped)} such rows; --set invalid_smiles=skip leaves them out)"
        )
    for row, text in graphs.skipped:
        print(f"{config.data} line {row + 2}: {rejection_line(text)}: skipped")
    if graphs.skipped:
        print(
            f"skipped {len(graphs.skipped)} of {len(dataset)} rows that RDKit rejects "
            "(--set invalid_smiles=raise refuses them)"
        )
    if not len(graphs):
        raise experiments.UsageError(f"--data {config.data}: no molecule RDKit can read")
    dataset = dataset.take(np.asarray(graphs.rows, np.int64))
    task = task_of(config, dataset)
    if config.task != "auto":
        why = f"task={config.task}"
    elif task == "classification":
        why = "inferred: every label is 0 or 1; --set task=regression to fit them as numbers"
    else:
        why = "inferred: not every label is 0 or 1"
    print(f"{task} of {', '.join(dataset.tasks)} on {len(dataset)} molecules ({why})")
    return dataset, graphs


def rejection_line(smiles: str) -> str:
    """`invalid SMILES '...' (RDKit's reason)` for a string RDKit rejects."""
    from gnkit import chem

    try:
        chem.parse_smiles(smiles)
    except (chem.InvalidSmilesError, TypeError) as error:
        return str(error)
    return f"invalid SMILES {smiles!r}"


def task_of(config: MoleculesConfig, dataset) -> str:
    """`config.task`, or with `task=auto` classification when every known label of every task
    is 0 or 1 and regression otherwise. Raises `UsageError` for a task without any label, and
    for `task=classification` with a label other than 0 or 1 (naming its column)."""
    targets = np.asarray(dataset.targets, np.float64).reshape(len(dataset), -1)
    binary = []
    for name, column in zip(dataset.tasks, targets.T, strict=True):
        known = column[np.isfinite(column)]
        if not len(known):
            raise experiments.UsageError(f"--data {config.data}: column {name!r} has no labels")
        is_binary = bool(np.isin(known, (0.0, 1.0)).all())
        if config.task == "classification" and not is_binary:
            other = known[~np.isin(known, (0.0, 1.0))][0]
            raise experiments.UsageError(
                f"--data {config.data}: task=classification needs labels 0 or 1; column "
                f"{name!r} has {other:g}"
            )
        binary.append(is_binary)
    if config.task != "auto":
        return config.task
    return "classification" if all(binary) else "regression"
