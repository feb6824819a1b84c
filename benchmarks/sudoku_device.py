"""A Sudoku RRN on one accelerator: throughput probe, timed training, full validation.

    python -m benchmarks.sudoku_device --out OUT --budget-min 7 [--config gpu]

The pieces of the accelerator plan (`benchmarks/accelerator.py`, which also runs the benchmark
suite) and a script of their own. Everything here runs with what a JAX GPU image holds (jax,
flax, optax, numpy): no demo command line (tyro), no progress bars (rich), no plots
(matplotlib); the config comes from a preset by name, batches are made on the device
(`data=device`). In order, each printed as it ends:

1. the device, the JAX version and where gnkit is imported from;
2. training throughput (puzzles/s, forward + backward) at each `--probe-batches` size, about
   `--probe-s` seconds in all (a size that does not fit in memory is reported as such);
3. training in `OUT/run` (a run directory: `config.json`, `metrics.jsonl`, `checkpoints/`, one
   checkpoint a minute) for `--budget-min` wall-clock minutes, its schedule sized from the probe;
4. the last state exported to `OUT/model` (`--checkpoint OUT/model` loads it) and evaluated on the
   whole validation set (or `--eval-per-level` puzzles of each level) at `--eval-steps` steps;
5. `OUT/results.json` (all of the above).

`--costs` prints XLA's FLOP and byte counts per puzzle of the config's model instead (the numbers
behind the expected throughput in `benchmarks/README.md`).

`--config tiny --probe-batches 4,8 --budget-min 0.3 --eval-per-level 2` runs it end to end on a
CPU in under a minute (a test does, importing only the GPU image's packages). Host driver.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import gnkit
from gnkit import train as training
from gnkit.demos.sudoku.config import CONFIGS, SudokuConfig, init_state
from gnkit.demos.sudoku.data import load_data, validation_slice
from gnkit.demos.sudoku.evaluation import evaluate_puzzles, format_table, summarise
from gnkit.demos.sudoku.model_files import export, load_model
from gnkit.demos.sudoku.recipe import make_device_batches, make_device_train_step
from gnkit.experiments.config import config_dict
from gnkit.tasks import sudoku

# Seconds of the budget kept for compiling the training step and the final validation.
RESERVE_S = 60.0


def device_description() -> dict:
    """The first device, the backend, versions and where gnkit comes from."""
    device = jax.devices()[0]
    return {
        "device": str(getattr(device, "device_kind", device.platform)),
        "platform": device.platform,
        "device_count": jax.device_count(),
        "jax": jax.__version__,
        "python": platform.python_version(),
        "gnkit": str(Path(gnkit.__file__).parent),
    }


def device_config(name: str, **changes) -> SudokuConfig:
    """The preset `name` with batches made on the device (`data=device`) and `changes`."""
    if name not in CONFIGS:
        raise SystemExit(f"--config {name}: not a preset ({', '.join(CONFIGS)})")
    config = dataclasses.replace(CONFIGS[name], data="device", **changes)
    config.validate()
    return config


def time_steps(step: Callable, state: training.TrainingState, batch_size: int, seconds: float):
    """Compile `step` (a `make_device_train_step`), then run it for about `seconds` (at least 2
    steps) from `state`. `{"compile_s", "steps", "puzzles_per_s"}`; the state is not kept."""
    start = time.perf_counter()
    params, opt_state, metrics = step(state.params, state.opt_state, np.int32(0))
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    steps, start = 0, time.perf_counter()
    while steps < 2 or time.perf_counter() - start < seconds:
        params, opt_state, metrics = step(params, opt_state, np.int32(steps + 1))
        steps += 1
        if steps % 4 == 0:
            jax.block_until_ready(metrics)
    jax.block_until_ready(metrics)
    rate = steps * batch_size / (time.perf_counter() - start)
    return {"compile_s": round(compile_s, 2), "steps": steps, "puzzles_per_s": round(rate, 1)}


def probe(config: SudokuConfig, pool, batch_sizes: Sequence[int], seconds: float) -> list:
    """Training puzzles/s of `config` at each batch size, about `seconds / len(batch_sizes)`
    each after compiling. `[{"batch_size", "compile_s", "steps", "puzzles_per_s"}]`, or
    `"error"` for a size that failed (out of memory), or `"skipped"` once `2 * seconds` have
    passed (compiling included)."""
    rows = []
    share = seconds / max(len(batch_sizes), 1)
    deadline = time.perf_counter() + 2 * seconds
    for batch_size in batch_sizes:
        sized = dataclasses.replace(config, batch_size=batch_size)
        row = {"batch_size": batch_size}
        if rows and time.perf_counter() > deadline:
            row["skipped"] = f"skipped, the probe's {2 * seconds:g} s are spent"
        else:
            try:
                step = make_device_train_step(sized, pool)
                row.update(time_steps(step, init_state(sized), batch_size, share))
            except Exception as error:  # noqa: BLE001 - an out-of-memory size is a result
                row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        print(f"  batch {batch_size:>5}: {_describe(row)}", flush=True)
        rows.append(row)
    return rows


def _describe(row: dict) -> str:
    if "puzzles_per_s" not in row:
        return row.get("error") or row["skipped"]
    return f"{row['puzzles_per_s']:>10.1f} puzzles/s (compile {row['compile_s']:.1f} s)"


def planned_updates(config: SudokuConfig, rows: list, budget_s: float) -> int:
    """Updates the budget should hold at the config's batch size, by the probe's rate there
    (else the best measured rate), at least 1; `config.updates` if nothing was measured."""
    rates = {row["batch_size"]: row["puzzles_per_s"] for row in rows if "puzzles_per_s" in row}
    if not rates:
        return config.updates
    rate = rates.get(config.batch_size, max(rates.values()))
    return max(1, int(rate * max(budget_s - RESERVE_S, budget_s / 2) / config.batch_size))


class _Deadline:
    """`should_stop` for `fit`: true once `time.time()` reaches `deadline`; `reason` names it."""

    def __init__(self, deadline: float, reason: str):
        self.deadline = deadline
        self.reason = reason

    def __call__(self) -> bool:
        return time.time() >= self.deadline


def train_for(
    config: SudokuConfig,
    pool,
    run_dir: Path,
    seconds: float,
    step: Callable | None = None,
    checkpoint_every_s: float = 60.0,
) -> dict:
    """Train `config` (device data) in the run directory `run_dir` for `seconds` of wall time
    or `config.updates` updates, whichever ends first, resuming from its checkpoints.

    `run_dir` gets `config.json`, `metrics.jsonl` (train records every 50 updates) and
    `checkpoints/` (one every `checkpoint_every_s`, and the last state), so `load_model`,
    `export` and the demo's `eval --checkpoint` read it. `step` is a compiled
    `make_device_train_step(config, pool)` to reuse. A stop that is not the deadline (Ctrl-C)
    propagates as `training.TrainingStopped`. Returns updates, puzzles seen, wall seconds of
    this call and their puzzles/s, and the last logged loss and accuracies. Host driver.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config_dict(config), indent=2))
    checkpoints = run_dir / "checkpoints"
    template = init_state(config)
    state = training.resume_or(template, checkpoints)
    first = int(state.step)
    step = step or make_device_train_step(config, pool)
    start = time.time()
    stop = _Deadline(start + seconds, f"the {seconds:.0f} s training budget")
    try:
        state = training.fit(
            state,
            step,
            make_device_batches(config),
            config.updates,
            examples_per_step=config.batch_size,
            checkpoint_dir=checkpoints,
            checkpoint_every_s=checkpoint_every_s,
            metrics_path=run_dir / "metrics.jsonl",
            progress=False,
            should_stop=stop,
        )
    except training.TrainingStopped:
        if not stop():
            raise
        state = training.resume_or(template, checkpoints)
    wall_s = time.time() - start
    updates = int(state.step)
    records = training.read_metrics(run_dir / "metrics.jsonl")
    last = next((row for row in reversed(records) if row["kind"] == "train"), {})
    return {
        "updates": updates,
        "schedule_updates": config.updates,
        "puzzles_seen": updates * config.batch_size,
        "wall_s": round(wall_s, 1),
        "puzzles_per_s": round((updates - first) * config.batch_size / wall_s, 1),
        **{key: last[key] for key in ("loss", "solved", "cells") if key in last},
    }


def _cost(config: SudokuConfig, steps: int, train: bool, batch: int = 8) -> tuple[float, float]:
    """XLA's `(FLOPs, bytes accessed)` per puzzle of the unrolled model at `steps` steps, the
    forward pass or (`train`) the gradient of the loss on every step."""
    model = config.model()
    quizzes = jnp.zeros((batch, sudoku.NUM_CELLS), jnp.int32)

    def loss(params):
        logits = model.apply(params, quizzes, steps, scan=False)
        return jnp.mean(sudoku.cell_loss(logits, quizzes + 1))

    compiled = jax.jit(jax.grad(loss) if train else loss).lower(init_state(config).params)
    analysis = compiled.compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return analysis["flops"] / batch, analysis["bytes accessed"] / batch


def step_costs(config: SudokuConfig) -> dict:
    """Per puzzle and message-passing step, as XLA counts them on this backend: FLOPs forward,
    FLOPs and bytes accessed forward + backward (each the difference between 2 and 1 unrolled
    steps; a scan's body would be counted once), and the totals of one training puzzle at
    `config.steps` and of one evaluated puzzle at 64 steps."""
    (f1, _), (f2, _) = _cost(config, 1, False), _cost(config, 2, False)
    (g1, b1), (g2, b2) = _cost(config, 1, True), _cost(config, 2, True)
    return {
        "forward_flops_per_step": f2 - f1,
        "train_flops_per_step": g2 - g1,
        "train_bytes_per_step": b2 - b1,
        "train_flops_per_puzzle": (2 * g1 - g2) + config.steps * (g2 - g1),
        "train_bytes_per_puzzle": (2 * b1 - b2) + config.steps * (b2 - b1),
        "eval64_flops_per_puzzle": (2 * f1 - f2) + 64 * (f2 - f1),
    }


def full_evaluation(model_dir: Path, per_level: int | None, steps: int, batch_size: int) -> dict:
    """The model in `model_dir` on the validation set (all 1,000 puzzles of each givens level
    17-34, or the first `per_level`) at `steps` steps: overall and per-level accuracies, the
    puzzles solved at every step, and the seconds it took (compiling included)."""
    config, params, _ = load_model(model_dir)
    quizzes, solutions = load_data("rrn_valid")
    if per_level:
        quizzes, solutions = validation_slice((quizzes, solutions), per_level)
    start = time.perf_counter()
    solved, cells = evaluate_puzzles(
        config.model(), params, quizzes, solutions, steps, batch_size=min(batch_size, len(quizzes))
    )
    return {
        "steps": steps,
        "seconds": round(time.perf_counter() - start, 1),
        "puzzles": len(quizzes),
        "puzzle_accuracy": float(solved[-1].mean()),
        "cell_accuracy": float(cells[-1].mean()),
        "puzzle_accuracy_at_32": float(solved[min(32, steps) - 1].mean()),
        "per_givens": summarise(sudoku.num_givens(quizzes), solved, cells),
    }


def print_validation(validation: dict) -> None:
    """The per-givens table at a few steps and the overall line."""
    steps = validation["steps"]
    shown = [step for step in (1, 8, 16, 32) if step < steps] + [steps]
    print(format_table(validation["per_givens"], shown))
    print(
        f"all {validation['puzzles']} puzzles at {steps} steps: "
        f"{validation['puzzle_accuracy']:.1%} solved, {validation['cell_accuracy']:.1%} of "
        f"cells ({validation['seconds']:.0f} s)",
        flush=True,
    )


def export_model(run_dir: Path, model_dir: Path) -> dict:
    """The run's newest checkpoint as a model in `model_dir` (replaced): `training.json`."""
    shutil.rmtree(model_dir, ignore_errors=True)
    return export(run_dir, model_dir)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="results directory")
    parser.add_argument("--config", default="gpu", help=f"a preset: {', '.join(CONFIGS)}")
    parser.add_argument("--budget-min", type=float, default=7.0, help="training wall clock")
    parser.add_argument("--probe-batches", default="256,512,1024")
    parser.add_argument("--probe-s", type=float, default=30.0)
    parser.add_argument("--eval-per-level", type=int, help="default: all 1,000 per level")
    parser.add_argument("--eval-steps", type=int, default=64)
    parser.add_argument("--eval-batch", type=int, default=1000)
    parser.add_argument("--costs", action="store_true", help="print XLA's cost counts and stop")
    args = parser.parse_args(argv)
    if args.costs:
        costs = step_costs(device_config(args.config, precision="f32"))
        print(json.dumps(costs, indent=2))
        return costs
    started = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {"device": device_description(), "config": args.config}
    print(json.dumps(results["device"]), flush=True)
    config = device_config(args.config)
    pool = load_data("royle17_train_pool")
    batch_sizes = [int(size) for size in args.probe_batches.split(",")]
    print(f"throughput, {args.config} config, {config.precision}, {config.steps} steps:")
    results["throughput"] = probe(config, pool, batch_sizes, args.probe_s)
    budget_s = args.budget_min * 60
    updates = planned_updates(config, results["throughput"], budget_s)
    config = dataclasses.replace(config, updates=updates)
    print(f"training for {args.budget_min:g} min, schedule {updates} updates", flush=True)
    run_dir = args.out / "run"
    results["train"] = train_for(config, pool, run_dir, max(budget_s - RESERVE_S, budget_s / 2))
    results["model"] = export_model(run_dir, args.out / "model")
    results["validation"] = full_evaluation(
        args.out / "model", args.eval_per_level, args.eval_steps, args.eval_batch
    )
    print_validation(results["validation"])
    results["wall_minutes"] = round((time.time() - started) / 60, 2)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
