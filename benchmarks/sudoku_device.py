"""One accelerator window turned into a Sudoku RRN result: probe, train, validate, save.

    pip install --no-deps --no-build-isolation -e . && \\
        python -m benchmarks.sudoku_device --out $OUT --budget-min 7

(or `python -m benchmarks.sudoku_device ...` from the source tree, without installing). It
downloads nothing. Beyond JAX, Flax, optax and NumPy, gnkit's demo framework needs three
pure-Python packages that an accelerator image may lack (tyro, typeguard, docstring-parser):
fetch their wheels beforehand where there is a network, into the checkout's `.wheels/`
(`pip download --no-deps -d .wheels tyro==1.0.17 typeguard==4.6.1 docstring-parser==0.18.0`),
carry that folder, and the script installs them from it (`pip install --no-index --no-deps`)
when they are missing. In order, each step printed as it ends:

1. the device, the JAX version and where gnkit is imported from;
2. training throughput (puzzles/s, forward + backward, batches made on the device) of the
   config for each `--probe-batches` size, about `--probe-s` seconds in all (a size that does
   not fit in memory is reported as such);
3. `train --config CONFIG` for `--budget-min` wall-clock minutes in `OUT/run` (checkpoints,
   metrics), its schedule sized from the probe (`updates` = the puzzles the budget should see
   at the config's batch size / batch size), then validation of the final state;
4. the best checkpoint on the whole validation set (or `--eval-per-level` puzzles of each
   level) at `--eval-steps` steps: puzzles solved per givens level at 32 and at 64 steps;
5. `OUT/results.json` (all of the above) and `OUT/model/` (an exported model: `config.json`,
   `params.msgpack`, `training.json`, loadable with `--checkpoint OUT/model`); the run itself
   (checkpoints, `metrics.jsonl`) is in `--run-dir`, by default `OUT/run`.

`--config tiny --set precision=bf16 --set symmetries=true --probe-batches 8 --budget-min 0.3
--eval-per-level 1` runs it end to end on a CPU in about a minute (a test does), so an
accelerator window is never spent on a bug. `--set KEY=VALUE` overrides config fields.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import numpy as np

import gnkit

if TYPE_CHECKING:
    from gnkit.demos.sudoku import SudokuConfig

# Seconds of the budget kept for compiling the training step and the final validation.
RESERVE_S = 60.0
# The demo framework's pure-Python dependencies that JAX images tend to lack: module -> wheel.
DEMO_PACKAGES = {"tyro": "tyro", "typeguard": "typeguard", "docstring_parser": "docstring_parser"}


def ensure_demo_packages(wheels: Path) -> None:
    """Install the missing `DEMO_PACKAGES` from the wheels in `wheels` (no index, no network);
    `SystemExit` with the command that fetches them if they are not there either."""
    missing = [name for name in DEMO_PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    files = [str(path) for name in missing for path in wheels.glob(f"{DEMO_PACKAGES[name]}-*.whl")]
    if len(files) < len(missing):
        raise SystemExit(
            f"missing {', '.join(missing)} and no wheels for them in {wheels}: run "
            "`pip download --no-deps -d .wheels tyro==1.0.17 typeguard==4.6.1 "
            "docstring-parser==0.18.0` where there is a network and carry .wheels"
        )
    command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", *files]
    subprocess.run(command, check=True)
    importlib.invalidate_caches()


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


def probe(config: SudokuConfig, pool, batch_sizes: Sequence[int], seconds: float) -> list:
    """Training puzzles/s of `config` at each batch size: compile, one warm step, then steps
    for about `seconds / len(batch_sizes)` each. `[{"batch_size", "compile_s",
    "puzzles_per_s"}]`, or `"error"` for a size that failed (out of memory), or `"skipped"`
    once `2 * seconds` have passed (compiling included)."""
    rows = []
    share = seconds / max(len(batch_sizes), 1)
    deadline = time.perf_counter() + 2 * seconds
    for batch_size in batch_sizes:
        sized = dataclasses.replace(config, batch_size=batch_size)
        row = {"batch_size": batch_size}
        if rows and time.perf_counter() > deadline:
            row["skipped"] = f"skipped, the probe's {2 * seconds:g} s are spent"
        else:
            _measure(row, sized, pool, share)
        print(f"  batch {batch_size:>5}: {_describe(row)}", flush=True)
        rows.append(row)
    return rows


def _measure(row: dict, config: SudokuConfig, pool, seconds: float) -> None:
    """Fill `row` with the compile time and puzzles/s of `config`'s device step (steps for about
    `seconds` after one compiling step), or the error that stopped it (out of memory)."""
    from gnkit.demos.sudoku.recipe import initial_state, make_device_train_step

    try:
        state = initial_state(config, None)
        step = make_device_train_step(config, pool)
        start = time.perf_counter()
        params, opt_state, metrics = step(state.params, state.opt_state, np.int32(0))
        jax.block_until_ready(metrics)
        row["compile_s"] = round(time.perf_counter() - start, 2)
        steps, start = 0, time.perf_counter()
        while steps < 2 or time.perf_counter() - start < seconds:
            params, opt_state, metrics = step(params, opt_state, np.int32(steps + 1))
            steps += 1
            if steps % 4 == 0:
                jax.block_until_ready(metrics)
        jax.block_until_ready(metrics)
        elapsed = time.perf_counter() - start
        row.update(steps=steps, puzzles_per_s=round(steps * config.batch_size / elapsed, 1))
    except Exception as error:  # noqa: BLE001 - an out-of-memory size is a result
        row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"


def _describe(row: dict) -> str:
    if "puzzles_per_s" not in row:
        return row.get("error") or row["skipped"]
    return f"{row['puzzles_per_s']:>10.1f} puzzles/s (compile {row['compile_s']:.1f} s)"


def planned_updates(config: SudokuConfig, rows: list, budget_s: float) -> int:
    """Updates the budget should hold at the config's batch size, by the probe's rate there
    (else the best measured rate), at least 1."""
    rates = {row["batch_size"]: row["puzzles_per_s"] for row in rows if "puzzles_per_s" in row}
    if not rates:
        return config.updates
    rate = rates.get(config.batch_size, max(rates.values()))
    return max(1, int(rate * max(budget_s - RESERVE_S, budget_s / 2) / config.batch_size))


def full_evaluation(model_dir: Path, per_level: int | None, steps: int, batch_size: int):
    """The model in `model_dir` on the validation set: `(per-givens table, overall, seconds)`."""
    from gnkit.demos import sudoku as demo
    from gnkit.demos.sudoku.evaluation import evaluate_puzzles, summarise
    from gnkit.tasks import sudoku

    config, params, _ = demo.load_model(model_dir)
    quizzes, solutions = demo.load_data("rrn_valid")
    if per_level:
        quizzes, solutions = demo.validation_slice((quizzes, solutions), per_level)
    start = time.perf_counter()
    batch_size = min(batch_size, len(quizzes))
    solved, cells = evaluate_puzzles(
        config.model(), params, quizzes, solutions, steps, batch_size=batch_size
    )
    seconds = time.perf_counter() - start
    table = summarise(sudoku.num_givens(quizzes), solved, cells)
    overall = {
        "puzzles": len(quizzes),
        "puzzle_accuracy": float(solved[-1].mean()),
        "cell_accuracy": float(cells[-1].mean()),
        "puzzle_accuracy_at_32": float(solved[min(32, steps) - 1].mean()),
    }
    return table, overall, seconds


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="results directory")
    parser.add_argument("--run-dir", type=Path, help="checkpoints and metrics (OUT/run)")
    parser.add_argument("--config", default="gpu", help="a preset: gpu, tiny, ...")
    parser.add_argument("--budget-min", type=float, default=7.0, help="training wall clock")
    parser.add_argument("--probe-batches", default="256,512,1024")
    parser.add_argument("--probe-s", type=float, default=30.0)
    parser.add_argument("--eval-per-level", type=int, help="default: all 1,000 per level")
    parser.add_argument("--eval-steps", type=int, default=64)
    parser.add_argument("--eval-batch", type=int, default=1000)
    parser.add_argument("--valid-per-level", type=int, default=50, help="for train's validation")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--wheels", type=Path, default=Path(".wheels"))
    args = parser.parse_args(argv)
    started = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {"device": device_description()}
    print(json.dumps(results["device"]), flush=True)
    ensure_demo_packages(args.wheels)
    from gnkit.demos import sudoku as demo
    from gnkit.demos.sudoku.evaluation import format_table

    results["config"] = args.config

    from gnkit.experiments import parse_override

    overrides = dict(parse_override(demo.SudokuConfig, text) for text in args.set)
    config = dataclasses.replace(demo.CONFIGS[args.config], **overrides, data="device")
    config.validate()
    pool = demo.load_data("royle17_train_pool")
    batch_sizes = [int(size) for size in args.probe_batches.split(",")]
    print(f"throughput, {args.config} config, {config.precision}, {config.steps} steps:")
    results["throughput"] = probe(config, pool, batch_sizes, args.probe_s)
    budget_s = args.budget_min * 60
    updates = planned_updates(config, results["throughput"], budget_s)
    run_dir = args.run_dir or args.out / "run"
    print(f"training for {args.budget_min:g} min, schedule {updates} updates", flush=True)
    status = demo.main(
        ["train", "--config", args.config, "--run-dir", str(run_dir), "--no-progress"]
        + [item for text in args.set for item in ("--set", text)]
        + ["--set", "data=device", "--set", f"updates={updates}"]
        + ["--budget-min", str(args.budget_min), "--log-every", "50"]
        + ["--valid-per-level", str(args.valid_per_level)]
        + ["--eval-every-min", str(10 * args.budget_min + 1)]
        + ["--json", str(args.out / "train.json")]
    )
    if status:
        raise SystemExit(f"train exited with status {status}")
    results["train"] = json.loads((args.out / "train.json").read_text())
    model_dir = args.out / "model"
    shutil.rmtree(model_dir, ignore_errors=True)
    results["model"] = demo.export(run_dir, model_dir)
    table, overall, seconds = full_evaluation(
        model_dir, args.eval_per_level, args.eval_steps, args.eval_batch
    )
    shown = [step for step in (1, 8, 16, 32) if step < args.eval_steps] + [args.eval_steps]
    print(format_table(table, shown))
    print(
        f"all {overall['puzzles']} puzzles at {args.eval_steps} steps: "
        f"{overall['puzzle_accuracy']:.1%} solved, {overall['cell_accuracy']:.1%} of cells "
        f"({seconds:.0f} s)",
        flush=True,
    )
    results["validation"] = {
        "steps": args.eval_steps,
        "seconds": round(seconds, 1),
        **overall,
        "per_givens": table,
    }
    results["wall_minutes"] = round((time.time() - started) / 60, 2)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
