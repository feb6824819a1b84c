"""How a potential trains on the comparison runner: its initial parameters, the weighted
energy / forces / stress loss, the optimiser, predictions on a split and the validation
metrics. Host drivers around jitted steps."""

from __future__ import annotations

import jax
import numpy as np

from gnkit.demos.potentials import metrics
from gnkit.demos.potentials.config import PotentialsConfig
from gnkit.demos.potentials.data import PotentialData, batch_of, make_batch
from gnkit.demos.potentials.models import build_model, make_predict
from gnkit.experiments import runner


def init(name: str, config: PotentialsConfig, data: PotentialData):
    """Model `name`'s initial parameters from `config.seed`, on the first training batch."""
    model = build_model(name, config, data)
    return jax.jit(model.init)(jax.random.key(config.seed), make_batch(config, data)(0))


def loss(name: str, config: PotentialsConfig, data: PotentialData):
    """`(params, batch) -> (loss, {})`: `gnkit.atoms.potential.loss` with the config's
    weights (energy per atom, forces, and stress on EMT), padding masked. Jittable."""
    from gnkit.atoms import potential

    predict = make_predict(build_model(name, config, data), data)

    def loss_fn(params, batch):
        return potential.loss(predict(params, batch), batch, config.weights), {}

    return loss_fn


def optimizer(config: PotentialsConfig):
    """Adam with a warm-up and cosine decay over the run's updates, norm-clipped."""
    return runner.warmup_cosine_adam(config.learning_rate, config.updates, config.clip_norm)


def predictor(name: str, config: PotentialsConfig, data: PotentialData):
    """Model `name`'s jitted `predict(params, graph)` (`models.make_predict`)."""
    return jax.jit(make_predict(build_model(name, config, data), data))


def predict_split(predict, config: PotentialsConfig, data: PotentialData, params,
                  split: str) -> dict[str, np.ndarray]:
    """`predict`'s (`predictor`) answers and the references on every structure of `split`, in
    `config.eval_batch_size` chunks padded to one bucket ladder. Host driver.

    Returns:
      float64 arrays: `energy` and `energy_ref` `[S]` (total energies, eV, the E0s added back),
      `n_atoms` int `[S]`, `forces` and `forces_ref` `[atoms of all S, 3]` (eV/Å), and on EMT
      `stress` and `stress_ref` `[S, 3, 3]` (eV/Å^3).
    """
    graphs = data.splits[split]
    policy = data.policy(config.eval_batch_size)
    parts: dict[str, list] = {key: [] for key in ("energy", "forces", "stress")}
    for start in range(0, len(graphs), config.eval_batch_size):
        rows = np.arange(start, min(start + config.eval_batch_size, len(graphs)))
        batch = batch_of(graphs, rows, policy)
        prediction = jax.device_get(predict(params, batch))
        atoms = int(np.sum(batch.n_node[: len(rows)]))
        parts["energy"].append(np.asarray(prediction["energy"][: len(rows)], np.float64))
        parts["forces"].append(np.asarray(prediction["forces"][:atoms], np.float64))
        if data.stress:
            parts["stress"].append(np.asarray(prediction["stress"][: len(rows)], np.float64))
    reference = data.reference[split]
    result = {
        "energy": np.concatenate(parts["energy"]) + reference,
        "energy_ref": np.array([float(g.globals["energy"][0]) for g in graphs]) + reference,
        "n_atoms": data.n_atoms(split),
        "forces": np.concatenate(parts["forces"]),
        "forces_ref": np.concatenate([g.nodes["forces"] for g in graphs]).astype(np.float64),
    }
    if data.stress:
        result["stress"] = np.concatenate(parts["stress"])
        result["stress_ref"] = np.concatenate(
            [g.globals["stress"] for g in graphs]).astype(np.float64)
    return result


def validate(name: str, config: PotentialsConfig, data: PotentialData):
    """`params -> metrics`: the validation errors (`metrics.errors`, meV) and `score`, minus
    the weighted loss on the validation split (energy per atom, forces, stress in eV)."""

    predict = predictor(name, config, data)

    def evaluate(params):
        errors = metrics.errors(predict_split(predict, config, data, params, "validation"))
        weighted = sum(
            weight * (errors[f"{term}_rmse"] / 1000.0) ** 2
            for term, weight in metrics.loss_terms(config.weights).items()
        )
        return {**{f"val_{key}": value for key, value in errors.items()}, "score": -weighted}

    return evaluate
