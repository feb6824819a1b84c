"""Trained models on disk: the shipped one, exported ones and training runs; `export`. Host.

Nothing is ever written into the gnkit package (`gnkit.experiments.check_writable` refuses it).
"""

from __future__ import annotations

import json
import os
import platform
from importlib import resources
from pathlib import Path

import flax.serialization
import jax
import numpy as np

from gnkit import experiments
from gnkit import train as training
from gnkit.demos.sudoku.config import SudokuConfig, init_state
from gnkit.experiments.config import config_dict, config_from_dict, read_config_json
from gnkit.experiments.run_dir import check_writable

PRETRAINED = "pretrained"


def pretrained_dir() -> Path:
    """Where the shipped checkpoint lives: `gnkit/pretrained/sudoku_rrn/`."""
    return Path(str(resources.files("gnkit") / "pretrained" / "sudoku_rrn"))


def read_config(path: Path) -> SudokuConfig:
    """The `SudokuConfig` saved in `path` (a `config.json`)."""
    return config_from_dict(SudokuConfig, read_config_json(path), path)


def _restore(template, path: Path, flag: str, expected: str):
    """`template`'s structure read from the msgpack file `path`; every leaf of its shape."""
    with experiments.reading_file(path, expected, flag):
        restored = flax.serialization.from_bytes(template, path.read_bytes())
    for got, want in zip(jax.tree.leaves(restored), jax.tree.leaves(template), strict=True):
        experiments.check_shape(np.shape(got), np.shape(want), path, flag)
    return restored


def load_model(source: str | Path, flag: str = "--checkpoint") -> tuple[SudokuConfig, object, dict]:
    """`(config, params, info)` from `"pretrained"`, an exported directory, or a training run.

    An exported directory (`gnkit/pretrained/sudoku_rrn/` is one) holds `config.json`,
    `params.msgpack` and `training.json`. A run directory (`train --run-dir`) holds `config.json`
    and `checkpoints/`; its best validated checkpoint is used, else its latest. A `.msgpack`
    file inside a run's `checkpoints/` works too. Anything unreadable, or parameters that do not
    fit the config, is a `UsageError` naming `flag` and the file.
    """
    path = pretrained_dir() if str(source) == PRETRAINED else Path(source)
    checkpoint, model_dir = (path, path.parent.parent) if path.is_file() else (None, path)
    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise experiments.UsageError(
            f"{flag} {source}: no config.json in {model_dir}; expected '{PRETRAINED}', an "
            "exported model or a training run"
        )
    config = read_config(config_path)
    expected = f"parameters of the model in {config_path}"
    if checkpoint is None and (model_dir / "params.msgpack").exists():
        params = _restore(init_state(config).params, model_dir / "params.msgpack", flag, expected)
        info_path = model_dir / "training.json"
        info = json.loads(info_path.read_text()) if info_path.exists() else {}
        return config, params, info
    if checkpoint is None:
        best = model_dir / "checkpoints" / training.BEST_CHECKPOINT
        latest = training.latest_checkpoint(model_dir / "checkpoints")
        checkpoint = best if best.exists() else latest
        if checkpoint is None:
            raise experiments.UsageError(f"{flag} {source}: the run has no checkpoints yet")
    state = _restore(init_state(config), checkpoint, flag, f"a training checkpoint, {expected}")
    info = {
        "checkpoint": str(checkpoint),
        "updates": int(state.step),
        "puzzles_seen": int(state.step) * config.batch_size,
        "cpu_hours": round(float(state.cpu_seconds) / 3600, 3),
        "wall_hours": round(float(state.wall_seconds) / 3600, 3),
    }
    return config, state.params, info


def final_validation(run_dir: Path, updates: int) -> dict | None:
    """The validation record of `run_dir/metrics.jsonl` at `updates`, if there is one."""
    metrics_path = run_dir / "metrics.jsonl"
    if not metrics_path.exists():
        return None
    rows = training.read_metrics(metrics_path)
    evals = [row for row in rows if row["kind"] == "eval" and row["step"] == updates]
    if not evals:
        return None
    keys = ("puzzle_accuracy", "cell_accuracy", "eval_steps", "per_givens")
    return {key: evals[-1][key] for key in keys}


def export(run_dir: str | Path, target: str | Path) -> dict:
    """Write a run's model to `target` as `config.json`, `params.msgpack` and `training.json`.

    The model is the run's best validated checkpoint, else its latest (`load_model`);
    `training.json` records its updates, puzzles seen, CPU-hours, validation metrics and the
    machine. `target` must lie outside the gnkit package; files already in `target` are
    replaced. Returns the `training.json` record.
    """
    run_dir = Path(run_dir)
    target = Path(target)
    check_writable(target, "--to", directory=True)
    config, params, info = load_model(run_dir, "--from")
    if "updates" not in info:
        raise experiments.UsageError(
            f"--from {run_dir}: an exported model, not a training run (train --run-dir)"
        )
    validation = final_validation(run_dir, info["updates"])
    if validation is not None:
        info["validation"] = validation
    info["checkpoint"] = Path(info["checkpoint"]).name
    info["machine"] = _machine()
    target.mkdir(parents=True, exist_ok=True)
    (target / "params.msgpack").write_bytes(flax.serialization.to_bytes(jax.device_get(params)))
    (target / "config.json").write_text(json.dumps(config_dict(config), indent=2))
    (target / "training.json").write_text(json.dumps(info, indent=2))
    return info


def _machine() -> str:
    return f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPU cores".strip()
