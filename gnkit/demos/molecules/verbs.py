"""The molecules demo on the comparison runner: its `Comparison`, its verbs (`train`, `eval`,
`predict`) and its entry point."""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gnkit import experiments
from gnkit.demos.molecules import models, training
from gnkit.demos.molecules.config import CONFIGS, PRESET_NOTES
from gnkit.demos.molecules.data import load_data, positional_encodings
from gnkit.demos.molecules.report import report
from gnkit.demos.molecules.training import predict_rows, replicate
from gnkit.experiments import runner

# The runner's callables take each replicate's `training.Replicate` as their config
# (`model_config`). `log_every` is capped at a replicate's epoch: one log an epoch.
COMPARISON = runner.Comparison(
    load_data=load_data,
    init=training.init,
    loss=training.loss,
    optimizer=training.optimizer,
    make_batch=training.make_batch,
    validate=training.validate,
    report=report,
    examples_per_step=lambda run: run.config.batch_size,
    log_every=2**62,
    model_config=lambda name, config, data: replicate(config, data, name),
)


def replicate_predictions(config, run_dir: experiments.RunDir, graphs):
    """Every replicate's predictions for the molecules of `graphs` (a `chem.MoleculeGraphs`
    featurised as the run's): `({seed: [M, tasks]}, data)`, target units (classification:
    probabilities), `data` the run's `MoleculeData`. Host driver around jitted steps."""
    data = load_data(config, run_dir, progress=False)
    encodings = positional_encodings(config, graphs)
    # The attention's slots do not change the parameters: room for the largest new molecule.
    atoms = max(data.max_atoms, int(graphs.n_node.max(initial=1)))
    step = models.make_predict(config, atoms, len(data.tasks))
    rows = np.arange(len(graphs))
    states = runner.trained_states(COMPARISON, config, run_dir, data)
    per_seed = {
        seed: predict_rows(config, step, states[name].params, data, seed, rows, graphs, encodings)
        for seed, name in zip(config.replicate_seeds, config.models, strict=True)
    }
    return per_seed, data


def predict(config, run_dir: experiments.RunDir, options: experiments.Options) -> dict:
    """`--input CSV --output CSV`: the input's columns and one column per task (the mean over
    the replicates; probabilities for classification), `<task>_std` beside each with several
    replicates, empty cells on rows RDKit rejects (each reported). `--smiles`: each replicate's
    prediction for each string, and their mean."""
    flags = {name: getattr(options.flags, name, None) for name in _PREDICT_FLAGS}
    if flags["input"] is not None:
        return _predict_csv(
            config, run_dir, flags["input"], flags["output"], flags["input_smiles_column"]
        )
    if not flags["smiles"]:
        raise experiments.UsageError("predict needs --input CSV or --smiles SMILES")
    from gnkit import chem  # the chem extra (the demo's `--help` works without it)

    smiles = flags["smiles"]
    try:
        graphs = chem.molecule_graphs(smiles, config.features, descriptors=config.descriptors)
    except chem.InvalidSmilesError as error:
        raise experiments.UsageError(f"--smiles: {error}".replace("row ", "string ")) from None
    per_seed, data = replicate_predictions(config, run_dir, graphs)
    stacked = np.stack(list(per_seed.values()))  # [seeds, M, tasks]
    info = data.dataset.info
    what = f"{info.target} ({info.unit})" if info.unit else info.target
    print(f"{config.model} trained on {config.data}: {what}")
    results = {"smiles": list(smiles), "predictions": []}
    for index, text in enumerate(smiles):
        entry = _summary(stacked[:, index], per_seed, index, data.tasks)
        print(f"{text}: {_spoken(entry, data.tasks)} over {len(per_seed)} replicates")
        results["predictions"].append(entry)
    return results


def _summary(values: np.ndarray, per_seed: dict, index: int, tasks) -> dict:
    """One molecule's mean, std and per-seed predictions: floats for one task, else per task."""
    if len(tasks) == 1:
        return {
            "mean": float(values[:, 0].mean()),
            "std": float(values[:, 0].std()),
            "per_seed": {str(s): float(v[index, 0]) for s, v in per_seed.items()},
        }
    return {
        "mean": dict(zip(tasks, values.mean(axis=0).tolist(), strict=True)),
        "std": dict(zip(tasks, values.std(axis=0).tolist(), strict=True)),
        "per_seed": {
            str(s): dict(zip(tasks, v[index].tolist(), strict=True)) for s, v in per_seed.items()
        },
    }


def _spoken(entry: dict, tasks) -> str:
    if len(tasks) == 1:
        return f"{entry['mean']:.3f} +- {entry['std']:.3f}"
    return ", ".join(f"{t} {entry['mean'][t]:.3f} +- {entry['std'][t]:.3f}" for t in tasks)


def _predict_csv(config, run_dir, input_path, output_path, smiles_column) -> dict:
    """Writes `--input`'s rows with the predictions (see `predict`); returns the summary."""
    from gnkit import chem
    from gnkit.demos.molecules.own_csv import rejection_line

    path = Path(input_path)
    output = Path(output_path) if output_path else path.with_name(f"{path.stem}_preds.csv")
    if not output.parent.is_dir():
        raise experiments.UsageError(f"--output {output}: no folder {output.parent}")
    if output.resolve() == path.resolve():
        raise experiments.UsageError(f"--output {output}: the --input file itself")
    column = smiles_column or config.smiles_column
    with experiments.reading_file(path, "a CSV with a SMILES column", "--input"):
        with path.open(newline="", encoding="utf-8-sig") as file:
            reader = csv.DictReader(file)
            header, rows = list(reader.fieldnames or []), list(reader)
    if column not in header:
        raise experiments.UsageError(
            f"--input {path}: no column {column!r}; its columns: {', '.join(header)}"
        )
    smiles = [row[column] or "" for row in rows]
    graphs = chem.molecule_graphs(
        smiles, config.features, on_invalid="skip", descriptors=config.descriptors
    )
    for row, text in graphs.skipped:
        print(f"--input {path} line {row + 2}: {rejection_line(text)}: no prediction")
    if not len(graphs):
        raise experiments.UsageError(f"--input {path}: no molecule RDKit can read")
    per_seed, data = replicate_predictions(config, run_dir, graphs)
    stacked = np.stack(list(per_seed.values()))  # [seeds, kept, tasks]
    new_columns = []
    for task in data.tasks:
        new_columns += [task, f"{task}_std"] if len(per_seed) > 1 else [task]
    clash = sorted(set(new_columns) & set(header))
    if clash:
        raise experiments.UsageError(f"--input {path}: already has the columns {clash}")
    for row in rows:
        row.update(dict.fromkeys(new_columns, ""))
    for position, row in enumerate(graphs.rows):
        for column_index, task in enumerate(data.tasks):
            rows[row][task] = repr(float(stacked[:, position, column_index].mean()))
            if len(per_seed) > 1:
                rows[row][f"{task}_std"] = repr(float(stacked[:, position, column_index].std()))
    with output.open("w", newline="") as file:
        writer = csv.DictWriter(file, [*header, *new_columns])
        writer.writeheader()
        writer.writerows(rows)
    print(
        f"{config.model} trained on {config.data}: {len(graphs)} of {len(rows)} rows predicted "
        f"({data.task}: {', '.join(data.tasks)}), written to {output}"
    )
    return {
        "input": str(path),
        "output": str(output),
        "columns": new_columns,
        "predicted_rows": len(graphs),
        "skipped_rows": [row for row, _ in graphs.skipped],
    }


def predict_csv(run_dir, input_path, output_path=None, smiles_column: str | None = None):
    """The library call of `gnkit molecules predict --run-dir RUN --input IN --output OUT`:
    writes `output_path` (default `<input stem>_preds.csv` beside it) and returns its summary
    (`output`, the added `columns`, `predicted_rows`, `skipped_rows`). Host."""
    return experiments.run_verb(
        DEMO,
        "predict",
        None,
        run_dir,
        progress=False,
        input=str(input_path),
        output=None if output_path is None else str(output_path),
        input_smiles_column=smiles_column,
    )


_PREDICT_FLAGS = ("smiles", "input", "output", "input_smiles_column")


def _predict_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smiles", action="append", help="a molecule (repeat for more)")
    parser.add_argument(
        "--input", metavar="CSV", help="a CSV of molecules to predict (instead of --smiles)"
    )
    parser.add_argument(
        "--output",
        metavar="CSV",
        help="where --input's predictions go (default: <input stem>_preds.csv beside it)",
    )
    parser.add_argument(
        "--input-smiles-column",
        metavar="COLUMN",
        help="--input's SMILES column (default: the run's smiles_column)",
    )


DEMO = experiments.Demo(
    "molecules",
    "Molecular property regression and classification (ESOL, FreeSolv, Lipophilicity or your "
    "own CSV): D-MPNN, GINE, GCN, GAT, GPS.",
    presets=CONFIGS,
    verbs=[
        *runner.comparison_verbs(COMPARISON),
        experiments.Verb(
            "predict",
            predict,
            "predict new molecules with a finished run",
            run_dir="existing",
            add_flags=_predict_flags,
        ),
    ],
    preset_notes=PRESET_NOTES,
    # `--data esol` is short for `--set data=esol`, and so on.
    flag_fields=(
        "data",
        "smiles_column",
        "target_columns",
        "task",
        "invalid_smiles",
        "split",
        "model",
        "seeds",
    ),
    extra="chem",
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit molecules train|eval|predict ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
