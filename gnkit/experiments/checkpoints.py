"""Loading a demo's trained models back from its run directory, and naming what a report uses.

The checkpoint a report uses is the model's best validated state (`best.msgpack`), else its
latest; `report_checkpoints` finds it for every model of a run (one model in `checkpoints/`,
several in `checkpoints/<name>/`) with its update, so the entry point can say which state a
verb evaluates and refuse an untrained one. Host.
"""

from __future__ import annotations

from pathlib import Path

import flax.serialization
import jax
import numpy as np

from gnkit import train as training
from gnkit.experiments.errors import UsageError, file_error, reading_file
from gnkit.experiments.run_dir import CHECKPOINT_DIR, RunDir


def report_checkpoint(directory: str | Path) -> Path | None:
    """`directory/best.msgpack` if it exists, else the latest numbered checkpoint, else None."""
    best = Path(directory) / training.BEST_CHECKPOINT
    return best if best.exists() else training.latest_checkpoint(directory)


def checkpoint_step(path: str | Path) -> int | None:
    """The update a checkpoint file holds (read without a template), None if unreadable."""
    try:
        return int(flax.serialization.msgpack_restore(Path(path).read_bytes())["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def report_checkpoints(run_path: str | Path) -> dict[str, tuple[Path, int | None]]:
    """`{model: (checkpoint, update)}` of the checkpoints a report of the run at `run_path`
    uses: `""` for a single model in `checkpoints/`, else one entry per `checkpoints/<name>/`
    holding a checkpoint. Empty when the run has none."""
    root = Path(run_path) / CHECKPOINT_DIR
    folders = {"": root}
    if root.is_dir():
        folders.update({child.name: child for child in sorted(root.iterdir()) if child.is_dir()})
    found = {}
    for name, folder in folders.items():
        path = report_checkpoint(folder)
        if path is not None:
            found[name] = (path, checkpoint_step(path))
    return found


def trained_updates(run_path: str | Path, name: str) -> int | None:
    """The update of model `name`'s latest checkpoint in the run at `run_path` (`""`: the single
    model in `checkpoints/`): how far it was trained, whichever state a report uses. None when
    it has no readable checkpoint."""
    latest = training.latest_checkpoint(Path(run_path) / CHECKPOINT_DIR / name)
    return None if latest is None else checkpoint_step(latest)


def load_model_state(run_dir: RunDir, name: str, template: training.TrainingState):
    """Model `name`'s best validated state in `run_dir/checkpoints/name` (else its latest).

    `template` is a freshly initialised state of the model and config (the structure to read
    into). `UsageError` if there is no checkpoint, the file cannot be read, or its parameter
    shapes differ from the template's (a checkpoint of another config).
    """
    path = report_checkpoint(run_dir.path / CHECKPOINT_DIR / name)
    if path is None:
        raise UsageError(f"--run-dir {run_dir.path}: no checkpoint of model {name}")
    expected = f"a checkpoint of model {name} of this config"
    with reading_file(path, expected):
        state = training.load_checkpoint(path, template)
    shapes = jax.tree_util.tree_map(np.shape, state.params)
    if shapes != jax.tree_util.tree_map(np.shape, template.params):
        raise file_error(path, f"{expected} (parameter shapes differ)")
    return state
