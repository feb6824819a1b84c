"""Molecular property regression on MoleculeNet's ESOL, FreeSolv and Lipophilicity, and
regression or (multi-task) classification on one's own CSV.

    gnkit molecules train --data esol --split scaffold --model dmpnn --seeds 5
    gnkit molecules train --config quick --set data=freesolv --run-dir runs/freesolv
    gnkit molecules train --data my.csv --smiles-column smiles --target-columns a,b
    gnkit molecules eval --run-dir runs/molecules
    gnkit molecules predict --run-dir runs/molecules --smiles CCO --smiles c1ccccc1O
    gnkit molecules predict --run-dir runs/molecules --input new.csv --output preds.csv

`train` featurises the data set (cached in the run directory), makes one split per replicate
(`--split random` or `scaffold`, equal to chemprop v2's for the same seed; or
`--set splits_file=PATH`, a chemprop splits file) and writes them as chemprop's `splits.json`,
then trains each replicate in turn on the comparison runner (`gnkit.experiments.runner`:
replicate `seed<s>` is a model with its own split, batches and initial weights; resumable; the
epoch with the lowest validation RMSE is kept) and tests it: per-seed and mean +- std test RMSE
and MAE, a parity plot (`parity.png`) and learning curves (`curves.png`). The default sizes and
schedule are chemprop's (see `MoleculesConfig`); models: `dmpnn` (chemprop's D-MPNN), `gine`,
`gcn`, `gat`, `gps` (a GPS graph transformer with random-walk or Laplacian positional
encodings, computed once and cached beside the graphs). A CSV's task is
inferred from its labels (all 0 or 1: classification, binary cross-entropy, test AUROC and
PRC-AUC) unless `--task` sets it; empty cells are missing labels, masked per task; rows RDKit
rejects are reported and skipped (`--invalid-smiles raise` refuses them). `predict` prints
each replicate's prediction for new SMILES and their mean, or writes an `--input` CSV's rows
with one column per task and `<task>_std` (`predict_csv` from Python). `--data`,
`--smiles-column`, `--target-columns`, `--task`, `--invalid-smiles`, `--split`, `--model` and
`--seeds` are short for `--set data=...` etc. Host driver around jitted steps.
"""

from __future__ import annotations

from gnkit.demos.molecules.config import CONFIGS, MoleculesConfig
from gnkit.demos.molecules.verbs import DEMO, main, predict_csv

__all__ = ["CONFIGS", "DEMO", "MoleculesConfig", "main", "predict_csv"]
