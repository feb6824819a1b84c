"""The molecules demo's verbs (`train`, `eval`, `predict`) and its entry point."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from gnkit import chem, experiments
from gnkit.demos.molecules import models
from gnkit.demos.molecules.config import CONFIGS
from gnkit.demos.molecules.data import load_data
from gnkit.demos.molecules.report import report
from gnkit.demos.molecules.training import predict_rows, train_replicate, trained_params

# `--data esol` is short for `--set data=esol`, and so on.
SHORT_FLAGS = ("data", "split", "model", "seeds")


def train(config, run_dir: experiments.RunDir, options: experiments.Options) -> dict:
    """Train every replicate in turn (resuming), then test them all."""
    data = load_data(config, run_dir, options.progress)
    for seed in config.replicate_seeds:
        train_replicate(config, data, seed, run_dir, options)
    return report(config, run_dir, options, data)


def evaluate(config, run_dir: experiments.RunDir, options: experiments.Options) -> dict:
    """Test the replicates of a finished run again."""
    return report(config, run_dir, options, load_data(config, run_dir, options.progress))


def predict(config, run_dir: experiments.RunDir, options: experiments.Options) -> dict:
    """Each replicate's prediction (target units) for the `--smiles` strings, and their mean."""
    smiles = options.flags.smiles
    try:
        graphs = chem.molecule_graphs(smiles, config.features, descriptors=config.descriptors)
    except chem.InvalidSmilesError as error:
        raise experiments.UsageError(f"--smiles: {error}".replace("row ", "string ")) from None
    data = load_data(config, run_dir, progress=False)
    step = models.make_predict(config)
    rows = np.arange(len(smiles))
    per_seed = {}
    for seed in config.replicate_seeds:
        params = trained_params(config, data, seed, run_dir).params
        per_seed[seed] = predict_rows(config, step, params, data, seed, rows, graphs)
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
    "Molecular property regression (ESOL, FreeSolv, Lipophilicity): D-MPNN, GINE, GCN, GAT.",
    presets=CONFIGS,
    verbs=[
        experiments.Verb(
            "train", train, "train each replicate (resumes from --run-dir), then test"
        ),
        experiments.Verb(
            "eval", evaluate, "test the replicates of a finished run", run_dir="existing"
        ),
        experiments.Verb(
            "predict",
            predict,
            "predict new molecules with a finished run",
            run_dir="existing",
            add_flags=_predict_flags,
        ),
    ],
)


def expand_short_flags(argv: Sequence[str]) -> list[str]:
    """`--data X` (and `--split`, `--model`, `--seeds`; also `--data=X`) as `--set data=X`."""
    expanded, items = [], list(argv)
    while items:
        item = items.pop(0)
        name, equals, value = item.removeprefix("--").partition("=")
        if item.startswith("--") and name in SHORT_FLAGS:
            if not equals:
                if not items:
                    raise SystemExit(f"gnkit molecules: error: --{name} needs a value")
                value = items.pop(0)
            expanded += ["--set", f"{name}={value}"]
        else:
            expanded.append(item)
    return expanded


def main(argv: Sequence[str] | None = None) -> int:
    """`gnkit molecules train|eval|predict ...`; returns the exit status."""
    import sys

    return experiments.run(DEMO, expand_short_flags(sys.argv[1:] if argv is None else argv))
