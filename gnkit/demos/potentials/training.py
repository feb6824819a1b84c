"""How a potential trains on the comparison runner: its initial parameters, the weighted
energy / forces / stress loss, the optimiser, predictions on a split and the validation
metrics. Host drivers around jitted steps.

A potential's parameters are `{"model": ..., "average": ...}`: the variables Adam trains and
their exponential moving average (`config.ema_decay`), which validation, test and MD use.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.demos.potentials import metrics
from gnkit.demos.potentials.config import PotentialsConfig
from gnkit.demos.potentials.data import PotentialData, batch_of, make_batch
from gnkit.demos.potentials.models import build_model, make_predict
from gnkit.experiments import runner


def init(name: str, config: PotentialsConfig, data: PotentialData):
    """Model `name`'s initial parameters from `config.seed`, on the first training batch:
    `{"model": variables, "average": the same variables}`."""
    model = build_model(name, config, data)
    variables = jax.jit(model.init)(jax.random.key(config.seed), make_batch(config, data)(0))
    return {"model": variables, "average": variables}


def averaged(params):
    """The moving average of the trained variables (what `init`'s tree holds as "average"):
    the variables a potential is validated, tested and run with."""
    return params["average"]


def loss(name: str, config: PotentialsConfig, data: PotentialData):
    """`(params, batch) -> (loss, {})`: `gnkit.atoms.potential.loss` with the config's
    weights (energy per atom, forces, and stress on EMT), padding masked. Jittable."""
    from gnkit.atoms import potential

    predict = make_predict(build_model(name, config, data), data)

    def loss_fn(params, batch):
        return potential.loss(predict(params["model"], batch), batch, config.weights), {}

    return loss_fn


class AverageState(NamedTuple):
    """`with_moving_average`'s state: the inner optimiser's and the updates made so far."""

    inner: optax.OptState
    count: jax.Array


def with_moving_average(inner: optax.GradientTransformation,
                        decay: float) -> optax.GradientTransformation:
    """`inner` on the "model" variables of `init`'s tree, and their exponential moving average
    kept in "average": after update t, `average += (1 - d_t) (model - average)` with
    `d_t = min(decay, (1 + t) / (10 + t))` (the warm-up of the `torch_ema` package MACE
    trains with), so early averages are not dominated by the initial variables. `decay` 0:
    the average is the latest model. Gradients with respect to "average" are ignored."""

    def init_fn(params):
        return AverageState(inner.init(params["model"]), jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params):
        model_updates, inner_state = inner.update(updates["model"], state.inner, params["model"])
        model = optax.apply_updates(params["model"], model_updates)
        count = state.count + 1
        rate = 1.0 - jnp.minimum(decay, (1.0 + count) / (10.0 + count))
        average_updates = jax.tree.map(
            lambda new, old: (rate * (new - old)).astype(old.dtype), model, params["average"])
        return ({"model": model_updates, "average": average_updates},
                AverageState(inner_state, count))

    return optax.GradientTransformation(init_fn, update_fn)


def optimizer(config: PotentialsConfig):
    """Adam with a warm-up and cosine decay over the run's updates, norm-clipped, with the
    variables' moving average (`with_moving_average`, `config.ema_decay`)."""
    adam = runner.warmup_cosine_adam(config.learning_rate, config.updates, config.clip_norm)
    return with_moving_average(adam, config.ema_decay)


def predictor(name: str, config: PotentialsConfig, data: PotentialData):
    """Model `name`'s jitted `predict(params, graph)` (`models.make_predict`) on the averaged
    variables of `init`'s tree."""
    predict = make_predict(build_model(name, config, data), data)
    return jax.jit(lambda params, graph: predict(averaged(params), graph))


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
