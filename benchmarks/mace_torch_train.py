"""gnkit's MACE beside mace-torch, both trained on the same rMD17 aspirin split and budget.

    bash benchmarks/make_atoms_peers_venv.sh      # once: ~/.cache/gnkit-atoms-peers
    python -m benchmarks.mace_torch_train [--config quick] [--seeds 0,1,2] [--threads 1,2]
        [--probe-epochs 2] [--set KEY=VALUE ...] [--sides gnkit,mace] [--peers-python PATH]
        [--work DIR] [--json PATH]
    python -m benchmarks.mace_torch_train --config default --seeds 0 --sides mace

For each seed, the split of `gnkit potentials train --config CONFIG --set seed=SEED` (the
demo's `split_structures`: the seeded train / validation split, the first `max_train` training
frames, `test_frames` evenly spaced test frames) is written to `train.xyz`, `valid.xyz` and
`test.xyz` (extended XYZ, the shipped frames' energies and forces as `REF_energy` and
`REF_forces`). gnkit trains through the demo (`gnkit.experiments.run_verb` on the demo with one
log record per epoch); mace-torch trains on the files through `mace_run_train`'s own `run(args)`
and predicts the test file with `mace_eval_configs` (in `--peers-python`, the peers' venv). Both
sides' test predictions are scored by one NumPy function, `test_errors`, against the references
in `test.xyz`.

Settings, gnkit's preset field against the `mace_run_train` flag it maps to
(`mace_arguments`):

| gnkit (`PotentialsConfig`, `gnkit.atoms.nn.MACE`) | `mace_run_train` (mace-torch 0.3.14) |
|---|---|
| `cutoff` 5 Å | `--r_max 5.0` |
| `mace_interactions` | `--num_interactions` |
| `mace_features` C: hidden `Cx0e + Cx1o` | `--hidden_irreps "Cx0e + Cx1o"` (`max_L` 1) |
| `mace_max_l` (edge harmonics) | `--max_ell` |
| `mace_correlation` | `--correlation` |
| 8 Bessel functions, envelope p = 5 | `--num_radial_basis 8 --num_cutoff_basis 5` |
| radial MLP [64, 64, 64] | `--radial_MLP "[64, 64, 64]"` |
| last readout of 16 scalars | `--MLP_irreps 16x0e` |
| first layer without residual | `--interaction_first RealAgnosticInteractionBlock` |
| `ScaleShift` (RMS force, mean energy) | `--model ScaleShiftMACE --std SCALE --mean SHIFT` |
| E0s by least squares (training frames) | `--E0s "{1: ..., 6: ..., 8: ...}"`, the same |
| `avg_num_neighbors` (training graphs) | `--avg_num_neighbors`, not computed again |
| loss: `w_E` MSE(dE / n_atoms) + `w_F` MSE(dF) | `--loss weighted`: the same formula |
| `energy_weight`, `forces_weight` | `--energy_weight`, `--forces_weight` |
| `batch_size`, `eval_batch_size` | `--batch_size`, `--valid_batch_size` |
| `epochs` | `--max_num_epochs` |
| Adam at `learning_rate` | `--optimizer adam --lr`, AMSGrad off (1) |
| no weight decay | `--weight_decay 0` |
| gradient norm clipped at `clip_norm` | `--clip_grad` |
| `ema_decay` d > 0: the variables' moving average tested | `--ema_decay d --ema` (no `--swa`) |
| float32 | `--default_dtype float32` |
| `seed` | `--seed` |

(1) `args.amsgrad = False` on the parsed arguments: the flag can only turn AMSGrad on.

Differences left, none removable through mace's flags: gnkit's learning rate warms up over a
tenth of the updates and decays by a cosine to 1/20 within epochs; mace's `ExponentialLR` changes
it once an epoch, with `--lr_scheduler_gamma` chosen so that the mean learning rate over the run
equals gnkit's (`exponential_gamma`). Both validate after every epoch (gnkit's
`eval_every_epochs` is set to 1, mace's `--eval_interval 1`: with 2 its epochs 0, 2, ... would be
checked and the last one never) and test the state of the lowest weighted validation loss (the
same loss formula and weights). gnkit's MACE scales its radial features to unit mean square
from the training set's mean shortest edge to the cutoff (`mean_min_distance`, as mlip's MACE);
mace-torch's has no such factor. Batch orders (gnkit: a permutation from
`(seed, epoch)`; mace: torch's shuffling from its seed) and initial weights are each library's
own. mace's symmetric contraction has more weights than gnkit's at equal sizes (the parameter
counts are printed). mace trains on total energies in float32 (about -17,617 eV, 2 meV apart)
while gnkit trains on energies minus the E0s; mace predicts the test file with its trained
weights cast to float64 (`mace_eval_configs --default_dtype float64`), gnkit in float32 with
the E0s added in float64.

Timing: wall seconds of each epoch's updates only (validation and test excluded): for mace,
around `mace.tools.train.train_one_epoch`; for gnkit, between the demo's per-epoch log records,
less the evaluations' wall time (its checkpoint written after each validation stays in).
gnkit's first epoch holds its one compilation of the training step (every aspirin batch has
one padded shape), so speed is the median over epochs 2..N and the first epoch is reported on
its own. mace-torch first runs `--probe-epochs` epochs at
each torch thread count of `--threads` (`torch.set_num_threads` and `OMP_NUM_THREADS`) on the
first seed, and trains every seed at the fastest. CPU-minutes: each run's process CPU time
(`getrusage` of the child), data loading, validation and test included. Both sides use glibc's
allocator as `import gnkit` sets it for gnkit and as torch finds it for mace. Host
orchestration; the training runs in child processes.

`--sides mace` trains mace-torch alone: at the default preset its run takes hours on this CPU,
and gnkit's side is the demo's own run of the same preset and seed (`gnkit potentials train
--data aspirin --model mace`, the same split files, validated every `eval_every_epochs` epochs
rather than every epoch).

The worker half (`--mace-worker`) imports only the standard library at module level, so the
peers' venv runs this file as a script.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.provenance import git_commit

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PEERS_PYTHON = Path.home() / ".cache" / "gnkit-atoms-peers" / "bin" / "python"
ENERGY_KEY = "REF_energy"
FORCES_KEY = "REF_forces"
SPLIT_FILES = {"train": "train.xyz", "validation": "valid.xyz", "test": "test.xyz"}
MACE_NAME = "mace"
SIDES = ("gnkit", "mace")


# ------------------------------------------------------------------ the split and the settings


def run_config(preset: str, seed: int, overrides: dict | None = None):
    """The demo's config for one run: `preset` with `seed`, MACE only, validated every epoch
    (as mace's `--eval_interval 1`), and `overrides`.

    Raises:
      ValueError: `overrides` sets `eval_every_epochs` to another value than 1.
    """
    import dataclasses

    from gnkit.demos.potentials.config import CONFIGS

    settings = {"model": ("mace",), **(overrides or {})}
    if settings.setdefault("eval_every_epochs", 1) != 1:
        raise ValueError("run_config: both sides validate every epoch; eval_every_epochs must "
                         f"be 1, got {settings['eval_every_epochs']!r}")
    config = dataclasses.replace(CONFIGS[preset], seed=seed, **settings)
    config.validate()
    return config


def write_split(config, directory: Path) -> dict[str, Path]:
    """The demo's aspirin split of `config` as extended XYZ files in `directory`. Host.

    Each frame keeps its positions and atomic numbers; its energy (eV) and forces (eV/Å) are
    stored as `REF_energy` (info) and `REF_forces` (arrays), names no ASE calculator claims.

    Returns:
      `{split: path}` for `train`, `validation` and `test`.
    """
    import ase
    import ase.io

    from gnkit.demos.potentials.data import split_structures

    if config.data != "aspirin":
        raise ValueError(f"write_split: only aspirin has a mace-torch side, got {config.data!r}")
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, frames in split_structures(config, None, False).items():
        written = []
        for atoms in frames:
            copy = ase.Atoms(atoms.numbers, positions=atoms.positions, cell=atoms.cell,
                             pbc=atoms.pbc)
            copy.info[ENERGY_KEY] = float(atoms.get_potential_energy())
            copy.arrays[FORCES_KEY] = atoms.get_forces().copy()
            written.append(copy)
        paths[split] = directory / SPLIT_FILES[split]
        ase.io.write(paths[split], written, format="extxyz")
    return paths


def read_frames(path: Path, energy_key: str = ENERGY_KEY, forces_key: str = FORCES_KEY) -> dict:
    """An extended XYZ file's frames as arrays (float64). Host.

    Returns:
      `energy` `[S]` (eV), `forces` `[atoms of all S, 3]` (eV/Å), `n_atoms` int `[S]`,
      `positions` `[atoms of all S, 3]` (Å), `atomic_numbers` int `[atoms of all S]`.
    """
    import ase.io
    import numpy as np

    frames = ase.io.read(path, index=":", format="extxyz")
    return {
        "energy": np.array([atoms.info[energy_key] for atoms in frames], np.float64),
        "forces": np.concatenate([atoms.arrays[forces_key] for atoms in frames]).astype(
            np.float64),
        "n_atoms": np.array([len(atoms) for atoms in frames]),
        "positions": np.concatenate([atoms.positions for atoms in frames]),
        "atomic_numbers": np.concatenate([atoms.numbers for atoms in frames]),
    }


def test_errors(energy, forces, reference: dict) -> dict[str, float]:
    """MAE and RMSE of predicted total energies `[S]` (eV) and forces `[atoms, 3]` (eV/Å)
    against `reference` (`read_frames` of the test file), in meV: `energy_*` per structure,
    `energy_per_atom_*` (`|dE| / n_atoms`), `forces_*` over force components. Host NumPy."""
    from gnkit.demos.potentials import metrics

    return metrics.errors({
        "energy": energy, "energy_ref": reference["energy"], "n_atoms": reference["n_atoms"],
        "forces": forces, "forces_ref": reference["forces"],
    })


def exponential_gamma(config) -> float:
    """The per-epoch factor of mace's `ExponentialLR` whose mean learning rate over `epochs`
    epochs equals that of gnkit's schedule over the run's updates (the warm-up + cosine of
    `gnkit.experiments.runner.warmup_cosine_adam`, built here from the same optax call). Host."""
    import numpy as np
    import optax

    updates = config.updates
    warmup = max(1, min(500, updates // 10))
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup, max(updates, warmup + 1),
                                                  1 / 20)
    target = float(np.mean(schedule(np.arange(updates))))
    epochs = np.arange(config.epochs)
    low, high = 1e-6, 1.0
    for _ in range(100):
        gamma = (low + high) / 2
        low, high = (gamma, high) if np.mean(gamma**epochs) < target else (low, gamma)
    return (low + high) / 2


def mace_arguments(config, data, paths: dict[str, Path], work_dir: Path) -> list[str]:
    """`mace_run_train`'s arguments for `config` (the table of the module docstring).

    Args:
      config: the demo's `PotentialsConfig`.
      data: the demo's `PotentialData` of `config` (E0s, scale, shift, mean neighbour count).
      paths: `write_split`'s files.
      work_dir: mace's `--work_dir`.
    """
    e0s = {int(z): float(e) for z, e in zip(data.species, data.reference_energies, strict=True)}
    width = config.mace_features
    return [
        "--name", MACE_NAME, "--work_dir", str(work_dir), "--seed", str(config.seed),
        "--device", "cpu", "--default_dtype", "float32", "--plot", "False",
        "--pin_memory", "False",
        "--train_file", str(paths["train"]), "--valid_file", str(paths["validation"]),
        "--test_file", str(paths["test"]),
        "--energy_key", ENERGY_KEY, "--forces_key", FORCES_KEY,
        "--E0s", repr(e0s),
        "--model", "ScaleShiftMACE", "--mean", repr(float(data.shift)),
        "--std", repr(float(data.scale)),
        "--avg_num_neighbors", repr(float(data.avg_num_neighbors)),
        "--compute_avg_num_neighbors", "False",
        "--interaction", "RealAgnosticResidualInteractionBlock",
        "--interaction_first", "RealAgnosticInteractionBlock",
        "--num_interactions", str(config.mace_interactions),
        "--hidden_irreps", f"{width}x0e + {width}x1o",
        "--max_ell", str(config.mace_max_l), "--correlation", str(config.mace_correlation),
        "--r_max", repr(float(config.cutoff)), "--num_radial_basis", "8",
        "--num_cutoff_basis", "5", "--radial_MLP", "[64, 64, 64]", "--MLP_irreps", "16x0e",
        "--loss", "weighted", "--energy_weight", repr(float(config.energy_weight)),
        "--forces_weight", repr(float(config.forces_weight)),
        "--batch_size", str(config.batch_size), "--valid_batch_size", str(config.eval_batch_size),
        "--max_num_epochs", str(config.epochs), "--eval_interval", "1",
        "--optimizer", "adam", "--lr", repr(float(config.learning_rate)), "--weight_decay", "0",
        "--scheduler", "ExponentialLR", "--lr_scheduler_gamma", repr(exponential_gamma(config)),
        "--clip_grad", repr(float(config.clip_norm)), "--error_table", "PerAtomMAE",
        "--ema_decay", repr(float(config.ema_decay)),
    ] + (["--ema"] if config.ema_decay else [])


# ------------------------------------------------------------------------ the two sides' runs


def _child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_child(command: list[str], env: dict | None = None, log: Path | None = None) -> float:
    """Run `command` to completion (output to `log`); its CPU seconds. Host."""
    before = _child_cpu_seconds()
    with open(log or os.devnull, "w") as stream:
        completed = subprocess.run(command, cwd=REPO, env=env, stdout=stream,
                                   stderr=subprocess.STDOUT)
    if completed.returncode:
        tail = log.read_text()[-3000:] if log else ""
        raise RuntimeError(f"{command[:4]} failed ({completed.returncode}):\n{tail}")
    return _child_cpu_seconds() - before


def gnkit_epoch_seconds(metrics_path: Path) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each epoch's updates from the demo's metrics file (one `train`
    record an epoch): time between an epoch's record and the previous epoch's, less the
    evaluation that ran in between (from its `eval` record). Host."""
    records = [json.loads(line) for line in metrics_path.read_text().splitlines() if line]
    walls, cpus = [], []
    last = {"wall_minutes": 0.0, "cpu_minutes": 0.0}
    for record in records:
        if record["kind"] == "train":
            walls.append(60 * (record["wall_minutes"] - last["wall_minutes"]))
            cpus.append(60 * (record["cpu_minutes"] - last["cpu_minutes"]))
        last = record
    return walls, cpus


def gnkit_worker(args) -> None:
    """Train gnkit's MACE through the demo (one log record an epoch) in `args.gnkit_worker`."""
    import dataclasses

    from gnkit import experiments
    from gnkit.demos.potentials import COMPARISON, DEMO
    from gnkit.experiments import runner

    config = run_config(args.config, args.seed, dict(args.set))
    comparison = dataclasses.replace(COMPARISON, log_every=config.steps_per_epoch)
    demo = dataclasses.replace(DEMO, verbs=runner.comparison_verbs(comparison))
    results = experiments.run_verb(demo, "train", config, args.gnkit_worker, progress=False)
    Path(args.gnkit_worker, "results.json").write_text(json.dumps(results, default=str))


def run_gnkit(args, seed: int, reference: dict, directory: Path) -> dict:
    """gnkit's run of `seed` in `directory/gnkit`: test errors, epoch seconds, CPU-minutes."""
    import numpy as np

    run_dir = directory / "gnkit"
    command = [sys.executable, "-m", "benchmarks.mace_torch_train", "--gnkit-worker",
               str(run_dir), "--config", args.config, "--seeds", str(seed)]
    for key, value in args.set:
        command += ["--set", f"{key}={json.dumps(value)}"]
    cpu = _run_child(command, log=directory / "gnkit.log")
    results = json.loads((run_dir / "results.json").read_text())["models"]["mace"]
    predictions = np.load(run_dir / "predictions_mace.npz")
    if not np.allclose(predictions["energy_ref"], reference["energy"], atol=1e-6):
        raise RuntimeError("gnkit's test references are not the frames of test.xyz")
    walls, cpus = gnkit_epoch_seconds(run_dir / "metrics_mace.jsonl")
    return {
        "test": test_errors(predictions["energy"], predictions["forces"], reference),
        "parameters": results["parameters"], "best_epoch": results["best_epoch"],
        **_epoch_summary(walls, cpus), "cpu_minutes": cpu / 60,
    }


def _epoch_summary(walls: list[float], cpus: list[float]) -> dict:
    later = walls[1:] or walls
    return {
        "epoch_wall_s": [round(value, 3) for value in walls],
        "epoch_cpu_s": [round(value, 3) for value in cpus],
        "first_epoch_s": walls[0],
        "epoch_s": statistics.median(later),
        "epoch_cpu_s_median": statistics.median(cpus[1:] or cpus),
    }


def run_mace(args, config, data, paths: dict, directory: Path, threads: int,
             epochs: int | None = None) -> dict:
    """mace-torch's run at `threads` torch threads in `directory`: epoch seconds, CPU-minutes,
    and (a full run, `epochs` None) its test predictions and test errors."""
    import dataclasses

    directory.mkdir(parents=True, exist_ok=True)
    run_config_ = config if epochs is None else dataclasses.replace(config, epochs=epochs)
    timings = directory / "timings.json"
    command = [str(args.peers_python), "-m", "benchmarks.mace_torch_train", "--mace-worker",
               "--threads", str(threads), "--timings", str(timings)]
    if epochs is None:
        command += ["--predict", str(paths["test"]), str(directory / "test_predictions.xyz")]
    command += ["--", *mace_arguments(run_config_, data, paths, directory)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cpu = _run_child(command, env=env, log=directory / "mace.log")
    worker = json.loads(timings.read_text())
    result = {
        "threads": threads, "parameters": worker["parameters"],
        "best_epoch": worker["best_epoch"],
        **_epoch_summary(worker["epoch_wall_s"], worker["epoch_cpu_s"]), "cpu_minutes": cpu / 60,
    }
    if epochs is None:
        predicted = read_frames(directory / "test_predictions.xyz", "MACE_energy", "MACE_forces")
        result["test"] = test_errors(predicted["energy"], predicted["forces"],
                                     read_frames(paths["test"]))
    return result


def mace_worker(args) -> None:
    """In the peers' venv: `mace_run_train`'s `run` on `args.mace_args` with AMSGrad off, each
    epoch's updates timed, then `mace_eval_configs` on `--predict`; writes `--timings`."""
    import importlib

    import torch

    torch.set_num_threads(args.threads)
    from mace import tools
    from mace.cli import eval_configs
    from mace.cli.run_train import run

    mace_training = importlib.import_module("mace.tools.train")  # `mace.tools.train` is a function
    walls, cpus = [], []
    train_one_epoch = mace_training.train_one_epoch

    def timed_epoch(*positional, **keywords):
        wall, cpu = time.perf_counter(), time.process_time()
        train_one_epoch(*positional, **keywords)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)

    mace_training.train_one_epoch = timed_epoch
    mace_args = tools.build_default_arg_parser().parse_args(args.mace_args)
    mace_args.amsgrad = False
    run(mace_args)
    work_dir = Path(mace_args.work_dir)
    model_path = work_dir / f"{MACE_NAME}.model"
    model = torch.load(model_path, map_location="cpu", weights_only=False)
    # Checkpoints are written on each new lowest validation loss: the last one is the best.
    best_epoch = 1 + max(int(path.stem.rsplit("_epoch-", 1)[1])
                         for path in (work_dir / "checkpoints").glob("*_epoch-*.pt"))
    parameters = sum(parameter.numel() for parameter in model.parameters())
    if args.predict:
        # The trained float32 weights, cast to float64: the total energies (about -17,617 eV)
        # then carry no float32 rounding (2 meV apart there), as gnkit adds its E0s in float64.
        float64_path = work_dir / f"{MACE_NAME}_float64.model"
        torch.save(model.double(), float64_path)
        configs, output = args.predict
        sys.argv = ["mace_eval_configs", "--configs", configs, "--model", str(float64_path),
                    "--output", output, "--device", "cpu", "--default_dtype", "float64",
                    "--batch_size", "50"]
        eval_configs.run(eval_configs.parse_args())
    Path(args.timings).write_text(json.dumps({
        "epoch_wall_s": walls, "epoch_cpu_s": cpus, "best_epoch": best_epoch,
        "parameters": parameters,
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    }))


# ----------------------------------------------------------------------------------- summary


def summarise(runs: list[dict]) -> dict:
    """Mean and population standard deviation over seeds of the test errors; median epoch
    seconds and mean first-epoch seconds; total CPU-minutes."""
    def mean_std(values):
        return {"mean": statistics.fmean(values), "std": statistics.pstdev(values)}

    keys = runs[0]["test"]
    return {
        "test": {key: mean_std([run["test"][key] for run in runs]) for key in keys},
        "epoch_s": statistics.median(run["epoch_s"] for run in runs),
        "first_epoch_s": statistics.fmean(run["first_epoch_s"] for run in runs),
        "epoch_cpu_s": statistics.median(run["epoch_cpu_s_median"] for run in runs),
        "cpu_minutes": sum(run["cpu_minutes"] for run in runs),
        "parameters": runs[0]["parameters"],
    }


def _print_table(record: dict) -> None:
    print("side | seed | energy MAE (meV) | force MAE (meV/Å) | best epoch | first epoch s | "
          "epoch s (median 2..N) | CPU-min")
    for side in record["sides"]:
        for seed, run in zip(record["seeds"], record["runs"][side], strict=True):
            print(f"{side} | {seed} | {run['test']['energy_mae']:.1f} | "
                  f"{run['test']['forces_mae']:.1f} | {run['best_epoch']} | "
                  f"{run['first_epoch_s']:.1f} | {run['epoch_s']:.2f} | {run['cpu_minutes']:.1f}")
    summary = record["summary"]
    means = ", ".join(f"{side} {summary[side]['test']['forces_mae']['mean']:.1f}"
                      for side in record["sides"])
    ratio = (f"; throughput gnkit / mace (epoch s): {summary['speed_ratio']:.2f}x"
             if "speed_ratio" in summary else "")
    print(f"force MAE mean: {means} meV/Å{ratio}")


def _setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="quick", help="the demo preset (aspirin)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", default="1,2", help="torch thread counts to probe")
    parser.add_argument("--probe-epochs", type=int, default=2)
    parser.add_argument("--set", type=_setting, action="append", default=[],
                        metavar="KEY=VALUE", help="a config override for both sides")
    parser.add_argument("--sides", default="gnkit,mace",
                        help="the sides to train: gnkit, mace or both (a default-size mace run "
                        "takes hours; gnkit's side of it is the demo's own default run)")
    parser.add_argument("--peers-python", type=Path, default=DEFAULT_PEERS_PYTHON)
    parser.add_argument("--work", type=Path, default=Path("runs/mace_torch_train"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--gnkit-worker", metavar="RUN_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--mace-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timings", help=argparse.SUPPRESS)
    parser.add_argument("--predict", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("mace_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.seed = int(args.seeds.split(",")[0])
    sides = args.sides.split(",")
    if set(sides) - set(SIDES):
        parser.error(f"--sides: a comma-separated subset of {', '.join(SIDES)}, "
                     f"got {args.sides!r}")
    args.sides = [side for side in SIDES if side in sides]
    return args


def main(argv=None) -> dict | None:
    args = _parse(argv)
    if args.mace_worker:
        args.threads = int(args.threads)
        return mace_worker(args)
    if args.gnkit_worker:
        return gnkit_worker(args)
    from gnkit.demos.potentials.data import load_data

    seeds = [int(seed) for seed in args.seeds.split(",")]
    thread_counts = [int(count) for count in args.threads.split(",")]
    start = time.time()
    record = {"config": args.config, "overrides": dict(args.set), "seeds": seeds,
              "sides": args.sides, "commit": git_commit(),
              "runs": {side: [] for side in args.sides}, "probe": {}}
    for index, seed in enumerate(seeds):
        config = run_config(args.config, seed, dict(args.set))
        directory = args.work / f"seed{seed}"
        shutil.rmtree(directory, ignore_errors=True)  # a run directory left would resume
        paths = write_split(config, directory / "split")
        data = load_data(config, None, False)
        reference = read_frames(paths["test"])
        if index == 0:
            record["sizes"] = {split: len(graphs) for split, graphs in data.splits.items()}
            record["mace_arguments"] = mace_arguments(config, data, paths, Path("WORK"))
            if "mace" in args.sides and len(thread_counts) > 1:
                for threads in thread_counts:
                    probe = run_mace(args, config, data, paths, directory / f"probe{threads}",
                                     threads, epochs=args.probe_epochs)
                    record["probe"][threads] = probe
                    print(f"mace-torch probe, {threads} threads: epochs {probe['epoch_wall_s']} s",
                          flush=True)
            best = min(record["probe"], key=lambda count: record["probe"][count]["epoch_s"],
                       default=thread_counts[0])
            record["mace_threads"] = best
        if "gnkit" in args.sides:
            record["runs"]["gnkit"].append(run_gnkit(args, seed, reference, directory))
        if "mace" in args.sides:
            record["runs"]["mace"].append(
                run_mace(args, config, data, paths, directory / "mace", record["mace_threads"]))
        for side in args.sides:
            run = record["runs"][side][-1]
            print(f"seed {seed} {side}: force MAE {run['test']['forces_mae']:.1f} meV/Å, "
                  f"epoch {run['epoch_s']:.2f} s (first {run['first_epoch_s']:.1f})", flush=True)
    record["summary"] = {side: summarise(record["runs"][side]) for side in args.sides}
    if len(args.sides) == 2:
        record["summary"]["speed_ratio"] = (record["summary"]["mace"]["epoch_s"]
                                            / record["summary"]["gnkit"]["epoch_s"])
    record["wall_minutes"] = (time.time() - start) / 60
    record["load_average"] = os.getloadavg()
    _print_table(record)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
