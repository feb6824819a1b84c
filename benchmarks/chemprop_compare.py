"""gnkit vs chemprop v2: the same D-MPNN trained on the very same split files, in one process.

    python -m benchmarks.chemprop_compare [--data esol,freesolv | solubility_classes]
        [--splits random,scaffold]
        [--seeds 0,1,2] [--epochs 50] [--default-epochs N] [--threads 1,2]
        [--probe-epochs 3] [--json PATH] [--no-chemprop] [--no-default] [--max-molecules N]
    python -m benchmarks.chemprop_compare --merge A.json B.json ... --json PATH

For each data set and split kind, the splits of `--seeds` are made with `gnkit.chem` (equal to
chemprop's own `make_split_indices`), written as chemprop's splits file, and read back by both
sides. Both train chemprop's default recipe at the issue's sizes: bond message passing of width
300 and depth 3 (no bias), the "norm" readout (sum / 100), one FFN layer of 300, batch 64, 50
epochs, Adam with the Noam-like schedule (1e-4 -> 1e-3 over 2 epochs, then down to 1e-4), the
epoch with the lowest validation loss tested. Regression (esol, freesolv, lipophilicity):
targets standardised on the training rows, squared error. Classification (`solubility_classes`,
`gnkit/data/molecules/solubility_classes.csv.xz`: two binary tasks): chemprop's
`BinaryClassificationFFN`, binary cross-entropy on the logits, the validation loss the mean
cross-entropy over the known labels; both sides' test probabilities are scored by the same
`gnkit.demos.molecules.metrics` (AUROC and PRC-AUC of each task, then their mean over the
tasks, as MoleculeNet reports them; chemprop's own metrics pool the tasks). gnkit is `gnkit
molecules train --config chemprop` (the same functions); chemprop is its Python API as its CLI
builds it (cached featurisation, Lightning trainer on the CPU, `ModelCheckpoint` on
`val_loss`). chemprop 2.3.1 pins its own RDKit: `benchmarks/make_chemprop_venv.sh` makes an
environment with it beside gnkit's packages, and the script runs there.

Timed (wall, per epoch, training only: from an epoch's first batch to its last update, validation
excluded), reported as the median over epochs 2..N (the first holds gnkit's compilation).
chemprop runs at each torch thread count of `--threads` for `--probe-epochs` epochs on each data
set's first split first (unless `--threads` names one count); that data set's runs use the
fastest. Both run under the allocator settings `import gnkit` makes (process-wide). Printed: test
RMSE and MAE (classification: AUROC and PRC-AUC) per seed, mean +- std (population), seconds
per epoch and their ratio (chemprop / gnkit), CPU-minutes of each side.
Beside them, `gnkit_default`: gnkit's default recipe (the same model with RDKit descriptors
beside the pooled atoms, at the recipe's own epochs unless `--default-epochs`) on the same
splits (left out with `--no-default`).
`--merge` joins the records of earlier runs on other seeds (same epochs) into one: each row of
the `--data` sets, its seeds in order and its summaries over all of them, without a speed ratio
(runs at different times saw different loads). Host.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import lzma
import statistics
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import optax

from gnkit import chem
from gnkit.demos.molecules import models
from gnkit.demos.molecules.config import CONFIGS
from gnkit.demos.molecules.data import molecule_data, steps_per_epoch, train_batches
from gnkit.demos.molecules.metrics import errors, mean_metrics, task_metrics
from gnkit.demos.molecules.training import predict_rows

# The tools a row compares (a row's other keys are summaries of them).
SIDES = ("gnkit", "gnkit_default", "chemprop")
# The test metrics a run may hold, in the order they are summarised and printed.
METRICS = ("rmse", "mae", "auroc", "prc_auc")
_LABELS = {"rmse": "RMSE", "mae": "MAE", "auroc": "AUROC", "prc_auc": "PRC-AUC"}
# Classification sets shipped in gnkit/data/molecules (benchmarks/make_solubility_classes.py).
CLASSIFICATION_SETS = {"solubility_classes": ("soluble", "highly_soluble")}


def shipped_dataset(name: str, max_molecules: int = 0) -> chem.MoleculeDataset:
    """The shipped data set `name` (a regression set of `gnkit.chem.load_dataset` or one of
    `CLASSIFICATION_SETS`, read as a CSV with one task per column), its first `max_molecules`
    molecules only when nonzero. Host."""
    if name in CLASSIFICATION_SETS:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{name}.csv"
            path.write_bytes(lzma.decompress((chem.datasets.DATA_DIR / f"{path.name}.xz")
                                             .read_bytes()))
            dataset = chem.read_csv(path, "smiles", CLASSIFICATION_SETS[name])
    else:
        dataset = chem.load_dataset(name)
    return dataset.take(slice(max_molecules or None))


def _train_step(config, tx, tasks: int, classification: bool):
    """Jitted `step(params, opt_state, batch)` of the demo's masked loss (squared error, or
    binary cross-entropy on the logits for `classification`) and `tx`."""
    loss_fn = models.make_loss(config, 0, tasks, classification)

    @jax.jit
    def step(params, opt_state, batch):
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def cross_entropy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Mean binary cross-entropy `[n, tasks]` over the known (finite) labels, each log clamped
    at -100 as torch's `binary_cross_entropy` does. Host."""
    known = np.isfinite(labels)
    p, y = probabilities[known], labels[known]
    with np.errstate(divide="ignore"):
        logs = np.maximum(np.log(p), -100.0), np.maximum(np.log1p(-p), -100.0)
    return float(-np.mean(y * logs[0] + (1 - y) * logs[1]))


def score_predictions(predictions: np.ndarray, targets: np.ndarray, classification: bool) -> dict:
    """Test metrics of `predictions` `[n, tasks]` against `targets`: RMSE and MAE, or each
    task's AUROC and PRC-AUC (`tasks`) and their means over the tasks."""
    if not classification:
        return errors(predictions, targets)
    per_task = task_metrics(predictions, targets, "classification")
    return {**mean_metrics(per_task), "tasks": per_task}


def run_gnkit(config, dataset, graphs, split, seed: int) -> dict:
    """Train and test one replicate with the demo's recipe; per-epoch training times. The
    epoch tested is the one with the lowest validation RMSE (classification: cross-entropy)."""
    data = molecule_data(config, dataset, graphs, {seed: split})
    tasks = len(data.tasks)
    per_epoch = steps_per_epoch(len(split["train"]), config.batch_size)
    tx = models.optimizer(config, per_epoch)
    batches = train_batches(config, data, seed)
    params = models.init_params(config, batches(0), seed, 0, tasks)
    opt_state = tx.init(params)
    step = _train_step(config, tx, tasks, data.classification)
    predict = models.make_predict(config, 0, tasks)
    best, best_loss, epoch_seconds = params, np.inf, []
    cpu_start = time.process_time()
    for epoch in range(config.epochs):
        start = time.perf_counter()
        for update in range(epoch * per_epoch, (epoch + 1) * per_epoch):
            params, opt_state, loss = step(params, opt_state, batches(update))
        jax.block_until_ready(loss)
        epoch_seconds.append(time.perf_counter() - start)
        valid = predict_rows(config, predict, params, data, seed, split["val"])
        labels = data.targets[split["val"]]
        if data.classification:
            valid_loss = cross_entropy(valid, labels)
        else:
            valid_loss = errors(valid, labels)["rmse"]
        if valid_loss < best_loss:
            best, best_loss = params, valid_loss
    test = predict_rows(config, predict, best, data, seed, split["test"])
    return {
        **score_predictions(test, data.targets[split["test"]], data.classification),
        "epoch_seconds": epoch_seconds,
        "cpu_minutes": (time.process_time() - cpu_start) / 60,
    }


class _EpochTimer:
    """Lightning callback: wall seconds from each training epoch's first batch to its last."""

    def __init__(self):
        self.seconds: list[float] = []
        self._start = self._last = None

    def on_train_epoch_start(self, trainer, module):
        self._start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_index):
        self._last = time.perf_counter()

    def on_train_epoch_end(self, trainer, module):
        self.seconds.append(self._last - self._start)


def run_chemprop(csv_path: Path, split, seed: int, epochs: int, threads: int, work: Path,
                 classification: bool = False):
    """chemprop's default MPNN (sizes as gnkit's) on the same split; test RMSE/MAE (chemprop's
    own), or for `classification` (every column after the SMILES one a binary task) AUROC and
    PRC-AUC of its test probabilities (`score_predictions`); times."""
    import lightning.pytorch as pl
    import torch
    from chemprop import data, featurizers, nn
    from chemprop.models import MPNN
    from lightning.pytorch.callbacks import Callback, ModelCheckpoint

    torch.set_num_threads(threads)
    rows = [line.split(",") for line in csv_path.read_text().splitlines()[1:]]
    points = [
        data.MoleculeDatapoint.from_smi(s, [float(y) if y else np.nan for y in ys])
        for s, *ys in rows
    ]
    featurizer = featurizers.SimpleMoleculeMolGraphFeaturizer()
    parts = {name: [points[i] for i in split[name]] for name in ("train", "val", "test")}
    sets = {name: data.MoleculeDataset(part, featurizer) for name, part in parts.items()}
    for dataset in sets.values():
        dataset.cache = True
    pl.seed_everything(seed, verbose=False)
    loaders = {
        "train": data.build_dataloader(sets["train"], num_workers=0, seed=seed),
        "val": data.build_dataloader(sets["val"], num_workers=0, shuffle=False),
        "test": data.build_dataloader(sets["test"], num_workers=0, shuffle=False),
    }
    if classification:
        ffn = nn.BinaryClassificationFFN(
            n_tasks=len(rows[0]) - 1, input_dim=300, hidden_dim=300, n_layers=1
        )
        metrics = [nn.metrics.BinaryAUROC(), nn.metrics.BinaryAUPRC()]
    else:
        scaler = sets["train"].normalize_targets()
        sets["val"].normalize_targets(scaler)
        ffn = nn.RegressionFFN(
            input_dim=300,
            hidden_dim=300,
            n_layers=1,
            output_transform=nn.UnscaleTransform.from_standard_scaler(scaler),
        )
        metrics = [nn.metrics.RMSE(), nn.metrics.MAE()]
    model = MPNN(nn.BondMessagePassing(d_h=300, depth=3), nn.NormAggregation(), ffn,
                 metrics=metrics)
    timer = type("EpochTimer", (_EpochTimer, Callback), {})()
    checkpoint = ModelCheckpoint(dirpath=work, monitor="val_loss", mode="min")
    trainer = pl.Trainer(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
        max_epochs=epochs,
        callbacks=[checkpoint, timer],
    )
    cpu_start = time.process_time()
    trainer.fit(model, loaders["train"], loaders["val"])
    # The checkpoint was written by this process a moment ago, so unpickling it is safe.
    best = torch.load(checkpoint.best_model_path, weights_only=False)
    model.load_state_dict(best["state_dict"])
    if classification:
        predicted = torch.cat(trainer.predict(model, loaders["test"])).numpy()
        targets = np.array([point.y for point in parts["test"]], np.float64)
        scores = score_predictions(predicted.astype(np.float64), targets, True)
    else:
        (tested,) = trainer.test(model, dataloaders=loaders["test"], verbose=False)
        scores = {"rmse": float(tested["test/rmse"]), "mae": float(tested["test/mae"])}
    return {
        **scores,
        "epoch_seconds": timer.seconds,
        "cpu_minutes": (time.process_time() - cpu_start) / 60,
        "threads": threads,
    }


def _summary(runs: list[dict]) -> dict:
    seconds = [statistics.median(run["epoch_seconds"][1:] or run["epoch_seconds"]) for run in runs]
    spreads = {}
    for name in (name for name in METRICS if name in runs[0]):
        values = np.array([run[name] for run in runs])
        spreads[name] = {"mean": float(values.mean()), "std": float(values.std())}
    return {
        **spreads,
        "seconds_per_epoch": float(statistics.median(seconds)),
        "cpu_minutes": float(sum(run["cpu_minutes"] for run in runs)),
        "per_seed": runs,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="esol,freesolv")
    parser.add_argument("--splits", default="random,scaffold")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--default-epochs", type=int, default=CONFIGS["default"].epochs)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--probe-epochs", type=int, default=3)
    parser.add_argument("--max-molecules", type=int, default=0)
    parser.add_argument("--no-chemprop", action="store_true")
    parser.add_argument("--no-default", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--merge", nargs="+", metavar="RECORD")
    args = parser.parse_args(argv)
    if args.merge:
        records = [json.loads(Path(path).read_text()) for path in args.merge]
        results = merge(records, args.data.split(","))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
        for key, summary in results["rows"].items():
            print(format_row(*key.rsplit("_", 1), summary))
        return results
    seeds = [int(s) for s in args.seeds.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    recipes = {"gnkit": dataclasses.replace(CONFIGS["chemprop"], epochs=args.epochs)}
    if not args.no_default:
        recipes["gnkit_default"] = dataclasses.replace(
            CONFIGS["default"], epochs=args.default_epochs
        )
    results: dict = {
        "epochs": args.epochs,
        "default_epochs": None if args.no_default else args.default_epochs,
        "seeds": seeds,
        "rows": {},
    }
    work = Path(tempfile.mkdtemp(prefix="chemprop_compare_"))
    for name in args.data.split(","):
        best_threads = threads[0] if len(threads) == 1 else None
        dataset = shipped_dataset(name, args.max_molecules)
        graphs = chem.molecule_graphs(dataset.smiles, "chemprop", descriptors=True)
        csv_path = dataset.to_csv(work / f"{name}.csv")
        classification = name in CLASSIFICATION_SETS
        for kind in args.splits.split(","):
            make = chem.random_split if kind == "random" else chem.scaffold_split
            source = len(dataset) if kind == "random" else dataset.smiles
            splits_path = chem.write_splits_file(
                work / f"{name}_{kind}_splits.json", [make(source, seed=s) for s in seeds]
            )
            splits = chem.read_splits_file(splits_path)
            row = {side: [] for side in (*recipes, "chemprop")}
            for seed, split in zip(seeds, splits, strict=True):
                for side, config in recipes.items():
                    row[side].append(run_gnkit(config, dataset, graphs, split, seed))
                    print(f"{name} {kind} seed {seed}: {side} {_headline(row[side][-1])}")
                if not args.no_chemprop:
                    if best_threads is None:
                        probes = {
                            count: statistics.median(
                                run_chemprop(
                                    csv_path, split, seed, args.probe_epochs, count,
                                    work / "probe", classification,
                                )["epoch_seconds"][1:]
                            )
                            for count in threads
                        }
                        best_threads = min(probes, key=probes.get)
                        results.setdefault("chemprop_thread_probe_seconds_per_epoch", {})[
                            name
                        ] = probes
                        print(f"chemprop seconds per epoch by torch threads: {probes}")
                    run = run_chemprop(
                        csv_path,
                        split,
                        seed,
                        args.epochs,
                        best_threads,
                        work / f"{name}_{kind}_{seed}",
                        classification,
                    )
                    row["chemprop"].append(run)
                    print(f"{name} {kind} seed {seed}: chemprop {_headline(run)}")
                results["rows"][f"{name}_{kind}"] = summary = _row_summary(row)
                if args.json:  # after every seed, so a long run that is cut short keeps its rows
                    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
            print(format_row(name, kind, summary))
    return results


def merge(records: list[dict], data: list[str] | None = None) -> dict:
    """One record of several runs' records (same epochs): each row (of the data sets `data`,
    default all) joins the runs that hold it, on disjoint seeds, with its seeds in order and its
    summaries over all of them; no speed ratio."""
    epochs = {record["epochs"] for record in records}
    default_epochs = {record.get("default_epochs") for record in records} - {None}
    if len(epochs) > 1 or len(default_epochs) > 1:
        raise ValueError(f"the records trained different epochs: {epochs}, {default_epochs}")
    keys = dict.fromkeys(key for record in records for key in record["rows"])
    rows = {}
    for key in keys:
        if data is not None and key.rsplit("_", 1)[0] not in data:
            continue
        parts = [(record["seeds"], record["rows"][key]) for record in records
                 if key in record["rows"]]
        seeds = [seed for part_seeds, _ in parts for seed in part_seeds]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"row {key}: the records share seeds: {sorted(seeds)}")
        sides = [side for side in SIDES if side in parts[0][1]]
        if any([side for side in SIDES if side in part] != sides for _, part in parts):
            raise ValueError(f"row {key}: the records ran different sides")
        order = np.argsort(seeds, kind="stable")
        row = {}
        for side in sides:
            runs = [run for _, part in parts for run in part[side]["per_seed"]]
            row[side] = [runs[i] for i in order]
        rows[key] = {**_row_summary(row, speed=False), "seeds": sorted(seeds),
                     "seeds_finished": len(seeds)}
    return {"epochs": epochs.pop(),
            "default_epochs": default_epochs.pop() if default_epochs else None,
            "seeds": sorted({seed for row in rows.values() for seed in row["seeds"]}),
            "rows": rows}


def _row_summary(row: dict, speed: bool = True) -> dict:
    summary = {side: _summary(runs) for side, runs in row.items() if runs}
    if speed and "chemprop" in summary:
        summary["speedup"] = (
            summary["chemprop"]["seconds_per_epoch"] / summary["gnkit"]["seconds_per_epoch"]
        )
    return summary


def _headline(run: dict) -> str:
    """`RMSE 0.612` (classification: `AUROC 0.912`) of one run."""
    name = "auroc" if "auroc" in run else "rmse"
    return f"{_LABELS[name]} {run[name]:.3f}"


def format_row(name: str, kind: str, summary: dict) -> str:
    """One line: both sides' test RMSE (classification: AUROC) mean +- std, seconds per epoch,
    the speed ratio."""
    parts = [f"{name:<19}{kind:<9}"]
    for side in ("gnkit", "chemprop", "gnkit_default"):
        if side in summary:
            entry = summary[side]
            metric = "auroc" if "auroc" in entry else "rmse"
            parts.append(
                f"{side} {_LABELS[metric]} {entry[metric]['mean']:.3f} +- "
                f"{entry[metric]['std']:.3f} ({entry['seconds_per_epoch']:.2f} s/epoch)"
            )
    if "speedup" in summary:
        parts.append(f"gnkit {summary['speedup']:.1f}x faster per epoch")
    return "  ".join(parts)


if __name__ == "__main__":
    main()
