"""Training one replicate (resumable, best validated state kept) and predicting with it."""

from __future__ import annotations

import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.molecules import models
from gnkit.demos.molecules.config import MoleculesConfig
from gnkit.demos.molecules.data import MoleculeData, eval_batches, steps_per_epoch, train_batches


def replicate_name(seed: int) -> str:
    """The checkpoint folder and metrics name of replicate `seed`."""
    return f"seed{seed}"


def predict_rows(config, predict, params, data: MoleculeData, seed: int, rows, graphs=None):
    """Replicate `seed`'s predictions `[len(rows)]` in target units for the molecules at
    positions `rows` of `graphs` (default: the data set's own)."""
    graphs = data.graphs if graphs is None else graphs
    mean, std = data.scaling(seed)
    reference = data.descriptor_reference[seed] if data.descriptor_reference else None
    outputs = [
        np.asarray(predict(params, batch["graph"]))[: len(chunk)]
        for chunk, batch in eval_batches(config, graphs, rows, reference)
    ]
    return np.concatenate(outputs) * std + mean


def errors(predictions: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """RMSE and MAE of `predictions` against `targets`."""
    difference = predictions - targets
    return {
        "rmse": float(np.sqrt(np.mean(difference**2))),
        "mae": float(np.mean(np.abs(difference))),
    }


def initial_state(config: MoleculesConfig, data: MoleculeData, seed: int):
    """Replicate `seed`'s untrained `TrainingState`, and its optimiser."""
    per_epoch = steps_per_epoch(len(data.splits[seed]["train"]), config.batch_size)
    tx = models.optimizer(config, per_epoch)
    example = train_batches(config, data, seed)(0)
    params = models.init_params(config, example, seed)
    return training.TrainingState(params=params, opt_state=tx.init(params)), tx


def train_replicate(config, data: MoleculeData, seed: int, run_dir, options):
    """Train replicate `seed` for `config.epochs` epochs in `run_dir/checkpoints/seed<seed>`
    (resuming), validating every epoch; the state with the lowest validation RMSE is kept as
    its best. Raises `gnkit.train.TrainingStopped` after a stop request, once saved."""
    name = replicate_name(seed)
    per_epoch = steps_per_epoch(len(data.splits[seed]["train"]), config.batch_size)
    state, tx = initial_state(config, data, seed)
    checkpoints = run_dir.checkpoint_dir / name
    state = training.resume_or(state, checkpoints)
    predict = models.make_predict(config)
    valid = data.splits[seed]["val"]

    def evaluate(params):
        predictions = predict_rows(config, predict, params, data, seed, valid)
        metrics = errors(predictions, data.targets[valid])
        return {"val_rmse": metrics["rmse"], "val_mae": metrics["mae"], "score": -metrics["rmse"]}

    if options.progress:
        print(f"{name}: training from epoch {int(state.step) // per_epoch} of {config.epochs}")
    return training.fit(
        state,
        models.make_train_step(config, tx),
        train_batches(config, data, seed),
        config.epochs * per_epoch,
        examples_per_step=config.batch_size,
        evaluate=evaluate,
        eval_every_steps=per_epoch,
        checkpoint_dir=checkpoints,
        metrics_path=run_dir.file(f"metrics_{name}.jsonl"),
        log_every_steps=per_epoch,
        progress=options.progress,
        should_stop=options.should_stop,
    )


def trained_params(config, data: MoleculeData, seed: int, run_dir):
    """Replicate `seed`'s best validated parameters (`UsageError` if it has no checkpoint)."""
    template, _ = initial_state(config, data, seed)
    return experiments.load_model_state(run_dir, replicate_name(seed), template)
