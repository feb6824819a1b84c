"""The molecules demo on the comparison runner: its `Comparison`, its verbs (`train`, `eval`,
`predict`) and its entry point."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

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


def predict(config, run_dir: experiments.RunDir, options: experiments.Options) -> dict:
    """Each replicate's prediction (target units) for the `--smiles` strings, and their mean."""
    from gnkit import chem  # the chem extra (the demo's `--help` works without it)

    smiles = options.flags.smiles
    try:
        graphs = chem.molecule_graphs(smiles, config.features, descriptors=config.descriptors)
    except chem.InvalidSmilesError as error:
        raise experiments.UsageError(f"--smiles: {error}".replace("row ", "string ")) from None
    data = load_data(config, run_dir, progress=False)
    encodings = positional_encodings(config, graphs)
    # The attention's slots do not change the parameters: room for the largest new molecule.
    step = models.make_predict(config, max(data.max_atoms, int(graphs.n_node.max())))
    rows = np.arange(len(smiles))
    states = runner.trained_states(COMPARISON, config, run_dir, data)
    per_seed = {}
    for seed, name in zip(config.replicate_seeds, config.models, strict=True):
        per_seed[seed] = predict_rows(
            config, step, states[name].params, data, seed, rows, graphs, encodings
        )
    stacked = np.stack(list(per_seed.values()))
    info = data.dataset.info
    print(f"{config.model} trained on {config.data}: {info.target} ({info.unit})")
    results = {"smiles": list(smiles), "predictions": []}
    for index, text in enumerate(smiles):
        mean, std = float(stacked[:, index].mean()), float(stacked[:, index].std())
        print(f"{text}: {mean:.3f} +- {std:.3f} over {len(per_seed)} replicates")
        results["predictions"].append(
            {
                "mean": mean,
                "std": std,
                "per_seed": {str(s): float(v[index]) for s, v in per_seed.items()},
            }
        )
    return results


def _predict_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--smiles", action="append", required=True, help="a molecule (repeat for more)"
    )


DEMO = experiments.Demo(
    "molecules",
    "Molecular property regression (ESOL, FreeSolv, Lipophilicity): D-MPNN, GINE, GCN, GAT, GPS.",
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
    flag_fields=("data", "split", "model", "seeds"),
    extra="chem",
)


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit molecules train|eval|predict ...`; returns the exit status."""
    return experiments.run(DEMO, argv)
