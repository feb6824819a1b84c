"""gnkit's MACE beside InstaDeep's mlip (JAX), both trained on the same rMD17 aspirin split and
budget.

    bash benchmarks/make_mlip_venv.sh      # once: ~/.cache/gnkit-mlip
    python -m benchmarks.mlip_train [--config quick] [--seeds 0,1,2] [--set KEY=VALUE ...]
        [--mlip-environments gnkit,system] [--no-gnkit] [--mlip-python PATH] [--work DIR]
        [--json PATH]

For each seed, `benchmarks.mace_torch_train`'s split files (`write_split`: `train.xyz`,
`valid.xyz`, `test.xyz` of `run_config(CONFIG, SEED)`) are written; gnkit trains through the
demo as in `benchmarks.mace_torch_train` (`run_gnkit`, left out with `--no-gnkit`), and mlip
0.2.5 trains its MACE on the same files in `--mlip-python` (the mlip venv) through its own
pipeline: `SingleGraphDatasetBuilder` over `ASEAtomsReader`s, `ForceField.from_mlip_network`,
`MSELoss` and `TrainingLoop`, then `run_batched_inference` on the test file. Both sides' test
predictions are scored by `mace_torch_train.test_errors` against `test.xyz`.

Settings, gnkit's preset field against the mlip option it maps to (`mlip_settings`):

| gnkit (`PotentialsConfig`, `gnkit.atoms.nn.MACE`) | mlip 0.2.5 |
|---|---|
| `cutoff` 5 Å | `GraphDatasetBuilderConfig.graph_cutoff_angstrom` |
| `mace_interactions` | `MaceConfig.num_layers` |
| `mace_features` C: hidden `Cx0e + Cx1o` | `num_channels` C, `node_symmetry` 1 |
| `mace_max_l` (edge harmonics) | `l_max` |
| `mace_correlation` | `correlation` |
| 8 Bessel functions, envelope p = 5 | `num_rbf` 8, `radial_envelope` polynomial (p = 5) |
| radial MLP [64, 64, 64] | `radial_mlp_hidden` [64, 64, 64] |
| last readout of 16 scalars | `readout_irreps` ("16x0e", "0e") |
| first layer without residual | `residual_connection_first_layer` False |
| `ScaleShift` (RMS force, mean energy) | `DatasetInfo.scaling_stdev`, `scaling_mean`: the same |
| E0s by least squares (training frames) | `DatasetInfo.atomic_energies_map`: the same (1) |
| trained on energies minus the E0s | `use_formation_energies` True |
| `avg_num_neighbors` (training graphs) | `GraphDatasetBuilderConfig.avg_num_neighbors`: the same |
| `mean_min_distance` (radial scale) | `GraphDatasetBuilderConfig.avg_r_min_angstrom`: the same |
| loss: `w_E` MSE(dE / n_atoms) + `w_F` MSE(dF) | `MSELoss`, constant weight schedules (2) |
| `batch_size`, `eval_batch_size` | `batch_size` of the training and the other builders (3) |
| `epochs` | `TrainingLoopConfig.num_epochs` |
| Adam, warm-up + cosine decay, `clip_norm` | the same optax chain, `TrainingLoop`'s optimizer (4) |
| `ema_decay` d > 0: the moving average tested | `ema_decay` d, `use_ema_params_for_eval` True |
| validation each epoch, best state tested | `TrainingLoop.best_model`, `run_eval_at_start` False |
| float32 | float32 (JAX's default) |
| `seed` | `ForceField.from_mlip_network(seed=)`, the training set's shuffling key |

(1) The dataset info of mlip's own pass over the training frames, with the E0s, scale, shift,
mean neighbour count and mean shortest edge replaced by gnkit's.
(2) The same formula here: mlip averages each structure's force MSE over structures, gnkit
over all atoms, the same when every structure has 21 atoms. No stress (weight 0).
(3) With `max_n_node` the most atoms and `max_n_edge` half the most directed edges of any
structure of the split (from gnkit's graphs, the same cutoff), every batch holds `batch_size`
structures: `ceil(train / batch_size)` updates an epoch, as gnkit (the worker checks it).
(4) `optax.chain(clip_by_global_norm(clip_norm), adam(warmup_cosine_decay_schedule(0, lr,
warmup, updates, lr / 20)))`, gnkit's `warmup_cosine_adam`, in place of mlip's default
`get_default_mlip_optimizer` (AMSGrad, a linear warm-up and a linear decay): `TrainingLoop`
takes any optax transformation.

Differences left: mlip's moving average starts from zeros and is divided by `1 - d^t`
(debiased); gnkit's starts at the initial variables and warms up as `torch_ema`'s, `d_t =
min(d, (1 + t) / (10 + t))`. mlip's MACE multiplies its radial embedding by a constant that
normalises its mean square over [mean shortest edge, cutoff]; gnkit's has no such factor.
mlip's symmetric contraction (the e3j backend) and readouts have their own weight layouts (the
parameter counts are printed). Initial weights and batch orders are each library's own (mlip:
a `jax.random.permutation` an epoch from the seed's key). mlip pads each batch to
`batch_size * max_n_node + 1` nodes and `2 * batch_size * max_n_edge` edges, gnkit to its own
bucket ladder. mlip's readers take energies and forces only from an ASE calculator, so the
worker reads the files with ASE and attaches the `REF_energy` / `REF_forces` values as a
single-point calculator. Test energies: both predict in float32 without the E0s and add them
in float64 on the host.

Timing: wall and CPU seconds of each epoch's updates, around `TrainingLoop._run_training_epoch`
(its steps, ending on `block_until_ready`, and the epoch's metric logging; validation
excluded; within milliseconds of the `runtime_in_seconds` mlip logs); for gnkit as in
`benchmarks.mace_torch_train`. The first epoch holds each side's compilation of its training
step (one padded shape each), so speed is the median over epochs 2..N and the first epoch is
reported on its own. CPU-minutes: each run's process CPU time (`getrusage` of the child), data
building, validation and test included.

Process settings (`--mlip-environments`, one mlip run each, `mlip_environment`): `gnkit`
(side `mlip_gnkit`, the default) runs mlip under the settings gnkit's side runs under, the XLA
flag `import gnkit` adds and glibc's allocator as `import gnkit` sets it, given to mlip's
process through their environment equivalents, so both sides run under the same process
settings. `system` (side `mlip_system`) runs it under glibc's and XLA's defaults, as installed.
On aspirin the allocator matters most: under glibc's defaults XLA's large buffers are mapped
afresh each step (`gnkit.tuning`).

The worker half (`--mlip-worker`) imports only the standard library at module level (and
`benchmarks.mace_torch_train`, which does too), so the mlip venv runs this file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import time
from pathlib import Path

from benchmarks.mace_torch_train import (
    ENERGY_KEY,
    FORCES_KEY,
    _epoch_summary,
    _run_child,
    _setting,
    read_frames,
    run_config,
    run_gnkit,
    summarise,
    test_errors,
    write_split,
)
from benchmarks.provenance import git_commit

DEFAULT_MLIP_PYTHON = Path.home() / ".cache" / "gnkit-mlip" / "bin" / "python"
# The environment equivalent of `gnkit.tuning.use_fast_allocator`, which `import gnkit` applies.
GNKIT_MALLOC = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0",
                "MALLOC_TRIM_THRESHOLD_": "2147483647"}
ENVIRONMENTS = ("gnkit", "system")


# ---------------------------------------------------------------------------- the settings


def mlip_settings(config, data) -> dict:
    """The mlip worker's settings for `config` (the table of the module docstring). Host.

    Args:
      config: the demo's `PotentialsConfig`.
      data: the demo's `PotentialData` of `config` (E0s, scale, shift, mean neighbour count
        and the graphs, whose largest sizes bound mlip's padding).

    Returns:
      A JSON-ready dict: `model` (`MaceConfig` fields), `builder`
      (`GraphDatasetBuilderConfig` fields of the training set), `eval_batch_size`,
      `dataset_info` (the `DatasetInfo` fields replaced), `loss` weights, `optimizer`
      (gnkit's schedule), `training` (`TrainingLoopConfig` fields), `steps_per_epoch`, `seed`.
    """
    graphs = [graph for split in data.splits.values() for graph in split]
    updates = config.updates
    warmup = max(1, min(500, updates // 10))  # as gnkit.experiments.runner.warmup_cosine_adam
    training = {"num_epochs": config.epochs, "run_eval_at_start": False}
    if config.ema_decay:
        training |= {"ema_decay": config.ema_decay, "use_ema_params_for_eval": True}
    else:
        training["use_ema_params_for_eval"] = False
    return {
        "model": {
            "num_layers": config.mace_interactions, "num_channels": config.mace_features,
            "node_symmetry": 1, "l_max": config.mace_max_l,
            "correlation": config.mace_correlation, "num_rbf": 8,
            "radial_envelope": "polynomial_envelope", "radial_mlp_hidden": [64, 64, 64],
            "readout_irreps": ["16x0e", "0e"], "residual_connection_first_layer": False,
        },
        "builder": {
            "graph_cutoff_angstrom": float(config.cutoff), "batch_size": config.batch_size,
            "max_n_node": max(int(graph.n_node[0]) for graph in graphs),
            "max_n_edge": math.ceil(max(int(graph.n_edge[0]) for graph in graphs) / 2),
            "avg_num_neighbors": float(data.avg_num_neighbors),
            "avg_r_min_angstrom": float(data.mean_min_distance),
            "use_formation_energies": True,
        },
        "eval_batch_size": config.eval_batch_size,
        "dataset_info": {
            "atomic_energies_map": {
                int(z): float(e)
                for z, e in zip(data.species, data.reference_energies, strict=True)},
            "scaling_mean": float(data.shift), "scaling_stdev": float(data.scale),
        },
        "loss": {"energy": float(config.energy_weight), "forces": float(config.forces_weight)},
        "optimizer": {
            "peak_learning_rate": float(config.learning_rate), "warmup_steps": warmup,
            "decay_steps": max(updates, warmup + 1),
            "final_learning_rate": float(config.learning_rate) / 20,
            "grad_norm": float(config.clip_norm),
        },
        "training": training,
        "steps_per_epoch": config.steps_per_epoch,
        "seed": config.seed,
    }


def mlip_environment(kind: str, environment: dict[str, str] | None = None) -> dict[str, str]:
    """The mlip worker's process environment, from `environment` (default `os.environ`, which
    gnkit's worker inherits too). Host.

    Args:
      kind: `gnkit`: the process settings of gnkit's side: `XLA_FLAGS` as they are (holding
        the flag `import gnkit` adds, `gnkit.tuning`, for the jaxlib both sides run) and
        glibc's allocator as `import gnkit` sets it (`GNKIT_MALLOC`; not where
        `GNKIT_SYSTEM_MALLOC=1` keeps gnkit's own side on glibc's defaults). `system`:
        neither, glibc's and XLA's defaults.
      environment: the environment to start from.

    Raises:
      ValueError: `kind` is not one of `ENVIRONMENTS`.
    """
    from gnkit import tuning

    environment = dict(os.environ if environment is None else environment)
    if kind == "gnkit":
        if environment.get(tuning.SYSTEM_MALLOC_ENV) == "1":
            return environment
        return environment | GNKIT_MALLOC
    if kind == "system":
        return {key: value for key, value in tuning.foreign_jax_environment(environment).items()
                if key not in GNKIT_MALLOC}
    raise ValueError(f"mlip_environment: kind must be one of {ENVIRONMENTS}, got {kind!r}")


# ---------------------------------------------------------------------------- mlip's run


def run_mlip(args, config, data, paths: dict, directory: Path, environment: str) -> dict:
    """mlip's run in `directory` under `mlip_environment(environment)`: test errors, epoch
    seconds, CPU-minutes, parameter count."""
    import numpy as np

    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    settings = mlip_settings(config, data)
    settings["files"] = {split: str(Path(path).resolve()) for split, path in paths.items()}
    (directory / "settings.json").write_text(json.dumps(settings, indent=1))
    command = [str(args.mlip_python), "-m", "benchmarks.mlip_train", "--mlip-worker",
               str(directory)]
    cpu = _run_child(command, env=mlip_environment(environment), log=directory / "mlip.log")
    worker = json.loads((directory / "timings.json").read_text())
    predicted = np.load(directory / "test_predictions.npz")
    return {
        "test": test_errors(predicted["energy"], predicted["forces"], read_frames(paths["test"])),
        "parameters": worker["parameters"], "best_epoch": worker["best_epoch"],
        "padding": worker["padding"], "versions": worker["versions"],
        **_epoch_summary(worker["epoch_wall_s"], worker["epoch_cpu_s"]), "cpu_minutes": cpu / 60,
    }


def _labelled_frames(path: str) -> list:
    """The frames of an extended XYZ file, each with its `REF_energy` and `REF_forces` as a
    single-point calculator (what mlip's readers take energies and forces from). Host."""
    import ase.io
    from ase.calculators.singlepoint import SinglePointCalculator

    frames = ase.io.read(path, index=":", format="extxyz")
    for atoms in frames:
        atoms.calc = SinglePointCalculator(atoms, energy=atoms.info[ENERGY_KEY],
                                           forces=atoms.arrays[FORCES_KEY])
    return frames


def mlip_worker(directory: Path) -> None:
    """In the mlip venv: train mlip's MACE with `directory/settings.json` (`mlip_settings`
    and the split files), each epoch's updates timed; predict the test file; write
    `timings.json` and `test_predictions.npz` (float64 total energies `[S]`, forces
    `[atoms, 3]`) in `directory`."""
    import dataclasses
    import importlib.metadata
    import logging

    import jax
    import numpy as np
    import optax
    from mlip.data import ASEAtomsReader, GraphDatasetBuilderConfig, SingleGraphDatasetBuilder
    from mlip.inference import run_batched_inference
    from mlip.models import ForceField, Mace
    from mlip.models.loss import MSELoss
    from mlip.training import TrainingLoop

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        force=True)
    settings = json.loads((directory / "settings.json").read_text())
    frames = {split: _labelled_frames(path) for split, path in settings["files"].items()}
    e0s = {int(z): e for z, e in settings["dataset_info"]["atomic_energies_map"].items()}

    # mlip's dataset info of the training frames, with gnkit's E0s, scale and shift.
    builder = GraphDatasetBuilderConfig(**settings["builder"])
    statistics_pass = SingleGraphDatasetBuilder(ASEAtomsReader(frames["train"]), builder,
                                                dataset_info=True)
    statistics_pass.get_dataset()
    info = statistics_pass.dataset_info.model_copy(
        update={**settings["dataset_info"], "atomic_energies_map": e0s})
    train_builder = SingleGraphDatasetBuilder(ASEAtomsReader(frames["train"]), builder,
                                              dataset_info=info, shuffle=True)
    train_set = train_builder.get_dataset()
    train_set.state = train_set.state.replace(rng=jax.random.PRNGKey(settings["seed"]))
    eval_builder = builder.model_copy(update={"batch_size": settings["eval_batch_size"]})
    valid_set = SingleGraphDatasetBuilder(ASEAtomsReader(frames["validation"]), eval_builder,
                                          dataset_info=info).get_dataset()
    if (len(train_set) != settings["steps_per_epoch"]
            or train_set.number_of_graphs() != len(frames["train"])):
        raise RuntimeError(f"mlip batches the {len(frames['train'])} training frames into "
                           f"{len(train_set)} batches ({train_set.number_of_graphs()} kept), "
                           f"not {settings['steps_per_epoch']} full ones")

    network = Mace(Mace.Config(**settings["model"]), train_builder.dataset_info)
    force_field = ForceField.from_mlip_network(network, seed=settings["seed"])
    weights = settings["loss"]
    loss = MSELoss(energy_weight_schedule=lambda _: weights["energy"],
                   forces_weight_schedule=lambda _: weights["forces"],
                   stress_weight_schedule=lambda _: 0.0)
    schedule = settings["optimizer"]
    optimizer = optax.chain(
        optax.clip_by_global_norm(schedule["grad_norm"]),
        optax.adam(optax.warmup_cosine_decay_schedule(
            0.0, schedule["peak_learning_rate"], schedule["warmup_steps"],
            schedule["decay_steps"], schedule["final_learning_rate"])))
    loop = TrainingLoop(train_set, valid_set, force_field, loss, optimizer,
                        TrainingLoop.Config(**settings["training"]))

    walls, cpus = [], []
    run_epoch = loop._run_training_epoch

    def timed_epoch():
        wall, cpu = time.perf_counter(), time.process_time()
        run_epoch()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)

    loop._run_training_epoch = timed_epoch
    loop.run()

    # The best state without its E0s (float32), the E0s added here in float64. `best_model`
    # holds NumPy parameters, which e3j's species-indexed weights cannot take under `jit`.
    best = loop.best_model
    best = dataclasses.replace(best, params=jax.device_put(best.params))
    predictions = run_batched_inference(
        frames["test"], best.replace_config(add_atomic_energies=False),
        batch_size=settings["eval_batch_size"], max_n_node=builder.max_n_node,
        max_n_edge=builder.max_n_edge)
    if len(predictions) != len(frames["test"]):
        raise RuntimeError(f"{len(predictions)} predictions for {len(frames['test'])} frames")
    energy = [float(prediction.energy) + sum(e0s[int(z)] for z in atoms.numbers)
              for prediction, atoms in zip(predictions, frames["test"], strict=True)]
    forces = np.concatenate([np.asarray(prediction.forces) for prediction in predictions])
    np.savez(directory / "test_predictions.npz", energy=np.array(energy, np.float64),
             forces=forces.astype(np.float64))
    (directory / "timings.json").write_text(json.dumps({
        "epoch_wall_s": walls, "epoch_cpu_s": cpus, "best_epoch": loop.best_evaluation_epoch,
        "parameters": sum(int(leaf.size) for leaf in jax.tree.leaves(best.params)),
        "padding": {"nodes": train_set.n_node, "edges": train_set.n_edge},
        "versions": {name: importlib.metadata.version(name)
                     for name in ("mlip", "jax", "jaxlib", "flax", "e3j")},
    }))


# ---------------------------------------------------------------------------------- summary


def _print_table(record: dict) -> None:
    print("side | seed | energy MAE (meV) | force MAE (meV/Å) | best epoch | first epoch s | "
          "epoch s (median 2..N) | CPU-min | parameters")
    for side, runs in record["runs"].items():
        for seed, run in zip(record["seeds"], runs, strict=True):
            print(f"{side} | {seed} | {run['test']['energy_mae']:.1f} | "
                  f"{run['test']['forces_mae']:.1f} | {run['best_epoch']} | "
                  f"{run['first_epoch_s']:.1f} | {run['epoch_s']:.2f} | "
                  f"{run['cpu_minutes']:.1f} | {run['parameters']}")
    summary = record["summary"]
    for side, ratios in summary.get("ratios", {}).items():
        print(f"force MAE mean: gnkit {summary['gnkit']['test']['forces_mae']['mean']:.1f}, "
              f"{side} {summary[side]['test']['forces_mae']['mean']:.1f} meV/Å; "
              f"throughput gnkit / {side}: {ratios['epoch_s']:.2f}x by epoch wall seconds, "
              f"{ratios['epoch_cpu_s']:.2f}x by epoch CPU seconds")


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="quick", help="the demo preset (aspirin)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--set", type=_setting, action="append", default=[],
                        metavar="KEY=VALUE", help="a config override for both sides")
    parser.add_argument("--no-gnkit", action="store_true", help="train mlip's side only")
    parser.add_argument("--mlip-environments", default="gnkit",
                        help="mlip's process settings, one run each: gnkit, system")
    parser.add_argument("--mlip-python", type=Path, default=DEFAULT_MLIP_PYTHON)
    parser.add_argument("--work", type=Path, default=Path("runs/mlip_train"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--mlip-worker", metavar="RUN_DIR", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> dict | None:
    args = _parse(argv)
    if args.mlip_worker:
        return mlip_worker(args.mlip_worker)
    from gnkit.demos.potentials.data import load_data

    seeds = [int(seed) for seed in args.seeds.split(",")]
    environments = args.mlip_environments.split(",")
    for kind in environments:
        mlip_environment(kind)  # an unknown kind fails before any training
    mlip_sides = {f"mlip_{kind}": kind for kind in environments}
    sides = (*(() if args.no_gnkit else ("gnkit",)), *mlip_sides)
    start = time.time()
    record = {"config": args.config, "overrides": dict(args.set), "seeds": seeds,
              "commit": git_commit(), "runs": {side: [] for side in sides}}
    for index, seed in enumerate(seeds):
        config = run_config(args.config, seed, dict(args.set))
        directory = args.work / f"seed{seed}"
        shutil.rmtree(directory, ignore_errors=True)  # a run directory left would resume
        paths = write_split(config, directory / "split")
        data = load_data(config, None, False)
        if index == 0:
            record["sizes"] = {split: len(graphs) for split, graphs in data.splits.items()}
            record["mlip_settings"] = mlip_settings(config, data)
        if not args.no_gnkit:
            record["runs"]["gnkit"].append(
                run_gnkit(args, seed, read_frames(paths["test"]), directory))
        for side, kind in mlip_sides.items():
            record["runs"][side].append(
                run_mlip(args, config, data, paths, directory / side, kind))
        for side in sides:
            run = record["runs"][side][-1]
            print(f"seed {seed} {side}: force MAE {run['test']['forces_mae']:.1f} meV/Å, "
                  f"epoch {run['epoch_s']:.2f} s (first {run['first_epoch_s']:.1f})", flush=True)
    record["summary"] = {side: summarise(record["runs"][side]) for side in sides}
    if not args.no_gnkit:
        gnkit = record["summary"]["gnkit"]
        record["summary"]["ratios"] = {side: {
            key: record["summary"][side][key] / gnkit[key] for key in ("epoch_s", "epoch_cpu_s")}
            for side in mlip_sides}
    record["wall_minutes"] = (time.time() - start) / 60
    record["load_average"] = os.getloadavg()
    _print_table(record)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
