"""How a replicate trains and predicts on the comparison runner: its view of the run
(`Replicate`: its seed and its epoch length), initialisation, loss, chemprop's schedule, its
batches and its validation metrics (RMSE, or AUROC for classification). Host drivers around
jitted steps."""

from __future__ import annotations

import dataclasses

import numpy as np

from gnkit.demos.molecules import metrics, models
from gnkit.demos.molecules.config import MoleculesConfig
from gnkit.demos.molecules.data import MoleculeData, eval_batches, steps_per_epoch, train_batches


def replicate_name(seed: int) -> str:
    """The model name (checkpoint folder, metrics file) of replicate `seed`: `seed<seed>`."""
    return f"seed{seed}"


@dataclasses.dataclass(frozen=True)
class Replicate:
    """The config one replicate trains under on the runner: the run's `config`, the
    replicate's `seed` (its split's and its initial weights') and its `steps_per_epoch` (its
    own training split's batches), so that `updates` (`epochs x steps_per_epoch`), validation
    every epoch and chemprop's per-epoch schedule count the replicate's own epochs (a scaffold
    split's training part differs in size from seed to seed)."""

    config: MoleculesConfig
    seed: int
    steps_per_epoch: int

    @property
    def updates(self) -> int:
        return self.config.epochs * self.steps_per_epoch

    @property
    def eval_every_updates(self) -> int:
        return self.steps_per_epoch


def replicate(config: MoleculesConfig, data: MoleculeData, name: str) -> Replicate:
    """Replicate `name`'s (`seed<s>`) `Replicate` of the run `config`."""
    seed = config.replicate_seed(name)
    per_epoch = steps_per_epoch(len(data.splits[seed]["train"]), config.batch_size)
    return Replicate(config, seed, per_epoch)


def init(name: str, run: Replicate, data: MoleculeData):
    """The replicate's initial parameters, from its seed."""
    example = train_batches(run.config, data, run.seed)(0)
    return models.init_params(run.config, example, run.seed, data.max_atoms, len(data.tasks))


def loss(name: str, run: Replicate, data: MoleculeData):
    """`(params, batch) -> (loss, {})`, the standardised mean squared error (classification:
    binary cross-entropy) over the known labels. Jittable."""
    return models.make_loss(run.config, data.max_atoms, len(data.tasks), data.classification)


def optimizer(run: Replicate):
    """Adam with chemprop's schedule over the replicate's epochs."""
    return models.optimizer(run.config, run.steps_per_epoch)


def make_batch(name: str, run: Replicate, data: MoleculeData):
    """`batch(update)`: the replicate's training batches, shuffled from its seed each epoch."""
    return train_batches(run.config, data, run.seed)


def predict_rows(
    config, predict, params, data: MoleculeData, seed: int, rows, graphs=None, encodings=None
):
    """Replicate `seed`'s predictions `[len(rows), tasks]` in target units (classification:
    probabilities) for the molecules at positions `rows` of `graphs` (default: the data set's
    own, with its encodings; other graphs with their `encodings` for model=gps)."""
    if graphs is None:
        graphs, encodings = data.graphs, data.positional
    mean, std = data.scaling(seed)
    reference = data.descriptor_reference[seed] if data.descriptor_reference else None
    outputs = [
        np.asarray(predict(params, batch["graph"], batch.get("positional")))[: len(chunk)]
        for chunk, batch in eval_batches(config, graphs, rows, reference, encodings)
    ]
    outputs = np.concatenate(outputs).reshape(len(rows), -1)
    if data.classification:
        return 1.0 / (1.0 + np.exp(-outputs.astype(np.float64)))
    return outputs * std + mean


def validate(name: str, run: Replicate, data: MoleculeData):
    """`params -> metrics`: the validation metrics (`metrics.metric_names`) in target units,
    each the mean over the tasks; score minus the RMSE, or the AUROC (-inf where no task's
    validation labels hold both classes)."""
    predict = models.make_predict(run.config, data.max_atoms, len(data.tasks))
    valid = data.splits[run.seed]["val"]
    first = metrics.metric_names(data.task)[0]

    def evaluate(params):
        predictions = predict_rows(run.config, predict, params, data, run.seed, valid)
        means = metrics.mean_metrics(
            metrics.task_metrics(predictions, data.targets[valid], data.task)
        )
        score = means[first] if data.classification else -means[first]
        score = score if np.isfinite(score) else -np.inf
        return {**{f"val_{k}": v for k, v in means.items()}, "score": score}

    return evaluate
