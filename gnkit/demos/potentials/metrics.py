"""Test and validation errors of a potential: energy per structure and per atom, force
components and stress components, MAE and RMSE in meV units. Host NumPy."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: The error of each loss term (`PotentialsConfig.weights`) among `errors`' keys.
_LOSS_TERM_ERRORS = {"energy": "energy_per_atom", "forces": "forces", "stress": "stress"}

#: The unit of each error of `errors`.
UNITS = {
    "energy": "meV",
    "energy_per_atom": "meV/atom",
    "forces": "meV/Å",
    "stress": "meV/Å^3",
}


def _mae_rmse(name: str, difference: np.ndarray) -> dict[str, float]:
    """`{name}_mae` and `{name}_rmse` of `difference` (eV units), in meV."""
    difference = np.asarray(difference, np.float64) * 1000.0
    return {
        f"{name}_mae": float(np.mean(np.abs(difference))),
        f"{name}_rmse": float(np.sqrt(np.mean(difference**2))),
    }


def errors(predictions: Mapping[str, np.ndarray]) -> dict[str, float]:
    """MAE and RMSE of `training.predict_split`'s predictions against their references.

    Energy per structure (meV) and per atom (`|dE| / n_atoms`, meV/atom), every force
    component (meV/Å) and, where there is stress, every stress component (meV/Å^3).
    """
    energy_error = predictions["energy"] - predictions["energy_ref"]
    result = {
        **_mae_rmse("energy", energy_error),
        **_mae_rmse("energy_per_atom", energy_error / predictions["n_atoms"]),
        **_mae_rmse("forces", predictions["forces"] - predictions["forces_ref"]),
    }
    if "stress" in predictions:
        result.update(_mae_rmse("stress", predictions["stress"] - predictions["stress_ref"]))
    return result


def loss_terms(weights: Mapping[str, float]) -> dict[str, float]:
    """`{error name: weight}` for the loss weights (`energy` weighs `energy_per_atom`)."""
    return {_LOSS_TERM_ERRORS[term]: weight for term, weight in weights.items()}
