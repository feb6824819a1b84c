"""Loading a demo's trained models back from its run directory. Host."""

from __future__ import annotations

import jax
import numpy as np

from gnkit import train as training
from gnkit.experiments.errors import UsageError, file_error, reading_file
from gnkit.experiments.run_dir import RunDir


def load_model_state(run_dir: RunDir, name: str, template: training.TrainingState):
    """Model `name`'s best validated state in `run_dir/checkpoints/name` (else its latest).

    `template` is a freshly initialised state of the model and config (the structure to read
    into). `UsageError` if there is no checkpoint, the file cannot be read, or its parameter
    shapes differ from the template's (a checkpoint of another config).
    """
    checkpoints = run_dir.path / "checkpoints" / name
    best = checkpoints / training.BEST_CHECKPOINT
    path = best if best.exists() else training.latest_checkpoint(checkpoints)
    if path is None:
        raise UsageError(f"--run-dir {run_dir.path}: no checkpoint of model {name}")
    expected = f"a checkpoint of model {name} of this config"
    with reading_file(path, expected):
        state = training.load_checkpoint(path, template)
    shapes = jax.tree_util.tree_map(np.shape, state.params)
    if shapes != jax.tree_util.tree_map(np.shape, template.params):
        raise file_error(path, f"{expected} (parameter shapes differ)")
    return state
