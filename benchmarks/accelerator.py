"""One accelerator window, planned: the device, Sudoku throughput against its expectation, the
benchmark suite against PyG and jraph, MACE and NequIP energy + forces, Sudoku training for the
rest of the budget, validation.

    pip install --no-deps -e . && python -m benchmarks.accelerator --out OUT --budget-min 11

Stages, in order (`STAGES`); after each, `OUT/results.json` and `OUT/results.md` are rewritten,
so a window cut short keeps everything measured so far:

1. `device`: the device, JAX version, where gnkit comes from;
2. `throughput`: the Sudoku config's training step (batches made on the device) compiled and
   timed for `--probe-s` seconds, printed beside the expected rate (`EXPECTED_PUZZLES_PER_S`,
   derived in `benchmarks/README.md`), within the first minute;
3. `benchmarks`: `python -m benchmarks.device OUT/benchmarks --only BENCH_WORKLOADS` in a child
   process, stopped after `--bench-s` seconds (it rewrites its own results after each workload;
   torch shares the GPU, so JAX is told not to preallocate);
4. `atoms`: `python -m benchmarks.atoms_potentials --no-peers` on aspirin8 and the 500-atom
   copper cell, MACE and NequIP at the CPU table's sizes, in a child process stopped after
   `--atoms-s` seconds (gnkit only: mace-torch and nequip are not in the image);
5. `train`: the config trained in `OUT/run` until the time kept for validation, a checkpoint every
   `--checkpoint-every-s` and the model exported to `OUT/model` at the end; the schedule's length
   comes from the measured rate (the step compiled in stage 2 is reused when the length that
   stage assumed is within 20%);
6. `validation`: all 18,000 validation puzzles (or `--eval-per-level` of each level) at
   `--eval-steps` steps, per givens level.

Imports only what a JAX + torch GPU image holds (no tyro, rich or matplotlib; where the image
lacks jraph or the atoms extra (e3nn-jax, ASE, vesin), the children get them from the wheels
in `--wheels`, unpacked into their stage's `site` folder). On a CPU, `--config tiny
--bench-quick --bench-only w1 --atoms-quick --budget-min 0.4 --eval-per-level 1` runs every
stage in a few minutes (a test does, importing only the GPU image's packages). Host driver.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks import sudoku_device as sd  # noqa: E402
from gnkit.demos.sudoku.config import init_state  # noqa: E402
from gnkit.demos.sudoku.data import load_data  # noqa: E402
from gnkit.demos.sudoku.recipe import make_device_train_step  # noqa: E402

STAGES = ("device", "throughput", "benchmarks", "atoms", "train", "validation")
# In the order they run until --bench-s: W1 last of the five, its torch.compile row compiles long.
BENCH_WORKLOADS = "w2,w3,w5,w4,w1,w1x8,probe,rrn"
# Expected training puzzles/s of a preset on a device kind (benchmarks/README.md, "Budgets for an
# accelerator window"): the memory-bound estimate from XLA's byte count of the training step.
EXPECTED_PUZZLES_PER_S = {("gpu", "H200"): 7_500}
# Forward cost of one puzzle at 64 steps over one training puzzle at 32 steps (forward +
# backward), from XLA's FLOP counts (52 M per step forward, 156 M forward + backward).
EVAL_COST_PER_TRAINING_PUZZLE = (64 * 52) / (32 * 156)


def expected_rate(config_name: str, device_kind: str) -> float | None:
    """`EXPECTED_PUZZLES_PER_S` for the preset on a device whose kind names the key's device."""
    for (name, device), rate in EXPECTED_PUZZLES_PER_S.items():
        if name == config_name and device in device_kind:
            return rate
    return None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}"


def _child_table(name: str, stage: dict, key: str, header: tuple, cells) -> list[str]:
    """A child stage's rows (`stage[key]`, each through `cells`) as a Markdown table, then its
    status line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, cells(row))) + " |" for row in stage.get(key, [])]
    return lines + ["", f"{name}: {stage['status']} ({stage['seconds']:.0f} s).", ""]


def markdown(results: dict) -> str:
    """The results so far as Markdown: one section per stage that ran, then the stages left."""
    lines = [f"# Accelerator plan, `{results['command']}`", ""]
    device = results.get("device")
    if device:
        lines += [
            f"Device: {device['device']} ({device['platform']} x {device['device_count']}), "
            f"jax {device['jax']}, Python {device['python']}.",
            "",
        ]
    throughput = results.get("throughput")
    if throughput:
        expected = throughput.get("expected_puzzles_per_s")
        against = f", expected {expected:,.0f}" if expected else ", no expectation for it"
        lines += [
            f"Throughput, `{results['config']}` config, batch {throughput['batch_size']}: "
            f"{throughput['puzzles_per_s']:,.1f} puzzles/s{against} "
            f"(compile {throughput['compile_s']:.1f} s).",
            "",
        ]
    bench = results.get("benchmarks")
    if bench:
        lines += _child_table(
            "Benchmarks", bench, "summary",
            ("workload", "peer", "gnkit ms", "peer best ms", "peer's best setting", "speed-up"),
            lambda row: (row["workload"], row["peer"], _ms(row["gnkit_best_s"]),
                         _ms(row["peer_best_s"]), row["peer_best_setting"],
                         f"{row['speedup']:.2f}"),
        )
    atoms = results.get("atoms")
    if atoms:
        lines += _child_table(
            "Atoms", atoms, "pairs",
            ("model", "workload", "atoms", "edges", "energy + forces ms", "atoms/s", "compile s"),
            lambda row: (row["model"], row["workload"], row["n_atoms"], row["n_edges"],
                         _ms(row["best_s"]), f"{row['atoms_per_s']:,.0f}",
                         f"{row['compile_s']:.1f}"),
        )
    train = results.get("train")
    if train:
        lines += [
            f"Training: {train['updates']:,} updates of {train['schedule_updates']:,} planned, "
            f"{train['puzzles_seen']:,} puzzles in {train['wall_s']:.0f} s "
            f"({train['puzzles_per_s']:,.1f} puzzles/s, compiling included), last loss "
            f"{train.get('loss', float('nan')):.4g}.",
            "",
        ]
    validation = results.get("validation")
    if validation:
        lines += [
            f"Validation at {validation['steps']} steps, {validation['puzzles']:,} puzzles: "
            f"{validation['puzzle_accuracy']:.1%} solved, {validation['cell_accuracy']:.1%} of "
            "empty cells right.",
            "",
            "| givens | puzzles | solved | cells right | solved at 32 steps |",
            "|---|---|---|---|---|",
        ]
        for level, row in validation["per_givens"].items():
            curve = row["puzzle_accuracy_per_step"]
            lines.append(
                f"| {level} | {row['puzzles']} | {row['puzzle_accuracy']:.1%} | "
                f"{row['cell_accuracy']:.1%} | {curve[min(32, len(curve)) - 1]:.1%} |"
            )
        lines.append("")
    left = [stage for stage in STAGES if stage not in results["done"]]
    lines.append(f"Stages left: {', '.join(left)}." if left else "All stages done.")
    return "\n".join(lines) + "\n"


def write(out: Path, results: dict) -> None:
    """Rewrite `OUT/results.json` and `OUT/results.md`."""
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "results.md").write_text(markdown(results))


def bench_environment(wheels: Path, site: Path) -> dict:
    """This process's environment for a child. The wheels in `wheels` whose package the image
    lacks (the package named by the file name's first field: `jraph`, `e3nn_jax`, `ase`,
    `vesin`, whose `py3-none` wheel loads its library through ctypes) are unpacked into
    `site` (a wheel is a zip of its files), and `site` goes first on `PYTHONPATH`: nothing is
    installed into the image."""
    env = dict(os.environ)
    missing = [wheel for wheel in sorted(wheels.glob("*.whl"))
               if importlib.util.find_spec(wheel.name.split("-")[0]) is None]
    if missing:
        for wheel in missing:
            zipfile.ZipFile(wheel).extractall(site)
        env["PYTHONPATH"] = os.pathsep.join([str(site.resolve()), env.get("PYTHONPATH", "")])
        env["PYTHONPATH"] = env["PYTHONPATH"].strip(os.pathsep)
    return env


def run_child(command: list[str], site: Path, seconds: float, wheels: Path) -> dict:
    """`command` in the repository root with the carried wheels (`bench_environment`), stopped
    after `seconds`; `{"status", "seconds"}`."""
    start = time.perf_counter()
    try:
        env = bench_environment(wheels, site)
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run(command, env=env, cwd=root, timeout=seconds)
        status = "finished" if done.returncode == 0 else f"exit status {done.returncode}"
    except subprocess.TimeoutExpired:
        status = f"stopped at the {seconds:g} s limit"
    return {"status": status, "seconds": round(time.perf_counter() - start, 1)}


def run_atoms(out: Path, quick: bool, seconds: float, wheels: Path) -> dict:
    """`benchmarks.atoms_potentials --no-peers` in a child process for at most `seconds`.

    Returns `{"status", "seconds", "pairs"}`, one pair per model and workload it finished (it
    rewrites its record after each): `model`, `workload`, `n_atoms`, `n_edges` and gnkit's
    `best_s`, `atoms_per_s`, `compile_s`, `compiles_of_the_step`, `peak_rss_mb`."""
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "benchmarks.atoms_potentials", "--no-peers", "--reps", "5",
               "--steps", "1", "--malloc", "default", "--json",
               str((out / "record.json").resolve()), "--workloads"]
    command += ["aspirin8", "--quick"] if quick else ["aspirin8,cu500"]
    record = {**run_child(command, out / "site", seconds, wheels), "pairs": []}
    path = out / "record.json"
    if path.is_file():
        for pair in json.loads(path.read_text())["pairs"]:
            (row,) = (row for row in pair["rows"].values() if row["side"] == "gnkit")
            record["pairs"].append({
                key: pair[key] for key in ("model", "workload", "n_atoms", "n_edges")
            } | {key: row[key] for key in ("best_s", "atoms_per_s", "compile_s",
                                           "compiles_of_the_step", "peak_rss_mb")})
    return record


def run_benchmarks(out: Path, only: str, quick: bool, seconds: float, wheels: Path) -> dict:
    """`benchmarks.device` in a child process for at most `seconds`; what it finished.

    Returns `{"status", "seconds", "summary", "workloads", "errors"}` from its `results.json`
    (`summary`: the best-vs-best rows); a child stopped at the limit keeps the workloads it
    finished."""
    command = [sys.executable, "-m", "benchmarks.device", str(out.resolve()), "--only", only]
    command += ["--quick"] if quick else []
    record = run_child(command, out / "site", seconds, wheels)
    path = out / "results.json"
    if path.is_file():
        suite = json.loads(path.read_text())
        record["summary"] = suite.get("summary", [])
        record["workloads"] = list(suite.get("timed", {}))
        record["errors"] = suite.get("errors", {})
    return record


def measure_throughput(config, pool, seconds: float):
    """`(config, step, timing)`: `config`'s device step compiled and timed (`time_steps`); if
    that fails (out of memory: the `gpu` config keeps every step's activations), the same recipe
    with `remat="block"` (a fraction of the memory, about a third more compute), the failure in
    `timing["first_error"]`."""
    step = make_device_train_step(config, pool)
    try:
        return config, step, sd.time_steps(step, init_state(config), config.batch_size, seconds)
    except Exception as error:  # noqa: BLE001 - out of memory has no portable exception type
        if config.remat:
            raise
        failure = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        print(f"throughput: {failure}; again with remat=block", flush=True)
    config = dataclasses.replace(config, remat="block")
    step = make_device_train_step(config, pool)
    timing = sd.time_steps(step, init_state(config), config.batch_size, seconds)
    return config, step, {**timing, "first_error": failure}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="results directory")
    parser.add_argument("--budget-min", type=float, required=True, help="the whole plan")
    parser.add_argument("--config", default="gpu", help="the Sudoku preset (gpu; tiny in tests)")
    parser.add_argument("--probe-s", type=float, default=15.0, help="throughput timing")
    parser.add_argument("--bench-s", type=float, default=120.0, help="benchmark suite limit")
    parser.add_argument("--bench-only", default=BENCH_WORKLOADS, help="its workloads, in order")
    parser.add_argument("--bench-quick", action="store_true", help="tiny suite sizes (tests)")
    parser.add_argument("--atoms-s", type=float, default=90.0, help="atoms benchmark limit")
    parser.add_argument("--atoms-quick", action="store_true", help="tiny atoms sizes (tests)")
    parser.add_argument("--checkpoint-every-s", type=float, default=60.0)
    parser.add_argument("--eval-per-level", type=int, help="default: all 1,000 per level")
    parser.add_argument("--eval-steps", type=int, default=64)
    parser.add_argument("--eval-batch", type=int, default=1000)
    parser.add_argument("--wheels", type=Path, default=Path(".wheels"),
                        help="jraph's and the atoms extra's wheels")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the stages within `--budget-min` minutes; returns the results."""
    args = _parse(argv)
    deadline = time.time() + args.budget_min * 60
    if isinstance(sys.stdout, io.TextIOWrapper):  # a window's log is read as it is written
        sys.stdout.reconfigure(line_buffering=True)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.accelerator " + " ".join(sys.argv[1:] if argv is None else argv)
    results: dict = {"command": command, "config": args.config, "done": []}

    def finish(stage: str) -> None:
        results["done"].append(stage)
        results["minutes"] = round(args.budget_min - (deadline - time.time()) / 60, 2)
        write(out, results)

    results["device"] = sd.device_description()
    print(json.dumps(results["device"]), flush=True)
    finish("device")

    config = sd.device_config(args.config)
    pool = load_data("royle17_train_pool")
    expected = expected_rate(args.config, results["device"]["device"])
    if expected:  # the stages before training take about --probe-s and --bench-s
        ahead = _training_s(deadline, expected, 0.0, args) - args.probe_s - args.bench_s
        ahead -= args.atoms_s
        config = dataclasses.replace(config, updates=_updates(config, expected, ahead))
    config, step, measured = measure_throughput(config, pool, args.probe_s)
    rate = measured["puzzles_per_s"]
    results["throughput"] = {
        "batch_size": config.batch_size,
        "remat": config.remat,
        **measured,
        "expected_puzzles_per_s": expected,
    }
    ratio = f"{rate / expected:.2f}x the expected {expected:,}" if expected else "no expectation"
    print(
        f"throughput: {rate:,.1f} puzzles/s, {ratio} (compile {measured['compile_s']} s)",
        flush=True,
    )
    finish("throughput")

    results["benchmarks"] = run_benchmarks(
        out / "benchmarks", args.bench_only, args.bench_quick, args.bench_s, args.wheels
    )
    print(f"benchmarks: {results['benchmarks']['status']}", flush=True)
    finish("benchmarks")

    results["atoms"] = run_atoms(out / "atoms", args.atoms_quick, args.atoms_s, args.wheels)
    print(f"atoms: {results['atoms']['status']}", flush=True)
    finish("atoms")

    # At least a compile and a few seconds of steps, however late the earlier stages ran.
    seconds = max(
        _training_s(deadline, rate, measured["compile_s"], args), measured["compile_s"] + 5
    )
    updates = _updates(config, rate, seconds)
    if abs(updates / config.updates - 1) > 0.2:
        config, step = dataclasses.replace(config, updates=updates), None
    print(f"training {seconds:.0f} s, schedule {config.updates:,} updates", flush=True)
    results["train"] = sd.train_for(
        config, pool, out / "run", seconds, step, checkpoint_every_s=args.checkpoint_every_s
    )
    results["model"] = sd.export_model(out / "run", out / "model")
    finish("train")

    results["validation"] = sd.full_evaluation(
        out / "model", args.eval_per_level, args.eval_steps, args.eval_batch
    )
    sd.print_validation(results["validation"])
    finish("validation")
    return results


def _eval_puzzles(args: argparse.Namespace) -> int:
    return 18 * (args.eval_per_level or 1000)


def _training_s(deadline: float, rate: float, compile_s: float, args) -> float:
    """Seconds left for training: the budget less the validation's expected time (twice its
    compile and puzzles at `rate` training puzzles/s) and 10 s for export and writing."""
    eval_s = _eval_puzzles(args) * EVAL_COST_PER_TRAINING_PUZZLE / max(rate, 1e-9)
    return deadline - time.time() - 2 * (compile_s + eval_s) - 10


def _updates(config, rate: float, seconds: float) -> int:
    """The schedule's length: the updates `rate` puzzles/s fill in `seconds`, at least 1."""
    return max(1, int(rate * max(seconds, 1.0) / config.batch_size))


if __name__ == "__main__":
    main()
