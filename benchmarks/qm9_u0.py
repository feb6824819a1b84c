"""QM9 U0 with gnkit's SchNet or PaiNN on a seeded subset: test MAE (meV) and CPU-minutes.

    pip install 'gnkit[qm9]'
    python -m benchmarks.qm9_u0 --model schnet|painn [--n-train 10000] [--n-validation 1000]
        [--n-test 2000] [--epochs 30] [--batch-size 32] [--learning-rate 5e-4]
        [--features 64] [--interactions 3] [--cutoff 5.0] [--seed 0] [--json PATH]

Data: `gnkit.atoms.datasets.load_qm9` (the `qm9pack` CSVs, U0 in eV), one seeded permutation
giving test, validation and train (the same test and validation molecules for every
`--n-train`). Energy-only training: per-species reference energies E0 by least squares on the
training molecules (`gnkit.atoms.potential.ScaleShift.fit`, float64 on the host), the model
learning the rest, `scale x + shift` per atom with the shift the mean per-atom residual and the
scale its standard deviation. Loss: `gnkit.atoms.potential.loss` with energy weight 1 (the mean
squared error of energy per atom); Adam with a linear warm-up over the first epoch and cosine
decay to 5% of the rate, the gradient norm clipped at 10; batches padded to
`atoms_bucket_policy`'s ladder. After each epoch the validation MAE is measured; the test MAE
is that of the best-validation parameters. With `--json` the record (the learning curve so far,
`"finished": false`) is rewritten after every epoch, and in full at the end. CPU-minutes are the
process's CPU time (`time.process_time`, all threads) of the training loop including validation,
and of the whole run. Host driver around jitted steps.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.atoms import atoms_bucket_policy
from gnkit.atoms.datasets import load_qm9
from gnkit.atoms.potential import ScaleShift, loss, structure_energies
from gnkit.batching import batch_np, pad_to_bucket

SPECIES = (1, 6, 7, 8, 9)
PUBLISHED_MEV = {"schnet": 14.0, "painn": 5.9}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.qm9_u0", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("schnet", "painn"), required=True)
    parser.add_argument("--n-train", type=int, default=10_000)
    parser.add_argument("--n-validation", type=int, default=1_000)
    parser.add_argument("--n-test", type=int, default=2_000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--features", type=int, default=64, help="feature width (default 64)")
    parser.add_argument("--interactions", type=int, default=3,
                        help="interaction blocks (default 3)")
    parser.add_argument("--cutoff", type=float, default=5.0, help="edge cutoff, Å (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="subset, weights and order seed")
    parser.add_argument("--json", help="write the run record (JSON) here")
    return parser


def build_model(arguments):
    """The SchNet or PaiNN of `arguments` over QM9's species."""
    from gnkit.atoms.nn import PaiNN, SchNet

    if arguments.model == "schnet":
        return SchNet(SPECIES, arguments.cutoff, features=arguments.features,
                      num_filters=arguments.features, num_interactions=arguments.interactions)
    return PaiNN(SPECIES, arguments.cutoff, features=arguments.features,
                 num_interactions=arguments.interactions)


def _relative(graph, reference: float):
    """`graph` in float32 with its energy minus `reference` (subtracted in float64)."""
    energy = np.asarray(graph.globals["energy"], np.float64) - reference
    nodes = {key: (value.astype(np.float32) if value.dtype == np.float64 else value)
             for key, value in graph.nodes.items()}
    globals_ = {key: (np.asarray(value).astype(np.float32)
                      if np.asarray(value).dtype == np.float64 else value)
                for key, value in dict(graph.globals, energy=energy).items()}
    edges = {key: value.astype(np.float32) for key, value in graph.edges.items()}
    return graph._replace(nodes=nodes, edges=edges, globals=globals_)


def load_splits(arguments):
    """`({split: [float32 graphs, energy relative to sum E0]}, {split: float64 [S] sum E0},
    ScaleShift with zero E0s)`. Host."""
    sizes = {"n_train": arguments.n_train, "n_validation": arguments.n_validation,
             "n_test": arguments.n_test}
    graphs = {split: load_qm9(split, seed=arguments.seed, cutoff=arguments.cutoff, **sizes)
              for split in ("train", "validation", "test")}
    fitted = ScaleShift.fit(graphs["train"], SPECIES)
    e0 = np.asarray(fitted.reference_energies, np.float64)
    reference = {
        split: np.array([[np.sum(g.nodes["atomic_numbers"] == z) for z in SPECIES]
                         for g in split_graphs], np.float64) @ e0
        for split, split_graphs in graphs.items()
    }
    relative = {split: [_relative(g, r) for g, r in zip(split_graphs, reference[split],
                                                          strict=True)]
                for split, split_graphs in graphs.items()}
    scale_shift = ScaleShift(fitted.scale, fitted.shift, SPECIES, (0.0,) * len(SPECIES))
    return relative, reference, scale_shift, e0


def make_functions(model, scale_shift, optimizer):
    """Jitted `train_step(params, state, batch)` and `energies(params, batch) -> [G]`."""

    def energies(params, batch):
        outputs = model.apply(params, batch)
        return structure_energies(scale_shift(outputs, batch.nodes["atomic_numbers"]), batch)

    def loss_fn(params, batch):
        return loss({"energy": energies(params, batch)}, batch, {"energy": 1.0})

    @jax.jit
    def train_step(params, state, batch):
        value, gradients = jax.value_and_grad(loss_fn)(params, batch)
        updates, state = optimizer.update(gradients, state, params)
        return optax.apply_updates(params, updates), state, value

    return train_step, jax.jit(energies)


def predict(energies, params, graphs, policy, batch_size: int) -> np.ndarray:
    """float64 `[S]` predicted relative energies of `graphs`, in padded chunks. Host driver."""
    parts = []
    for start in range(0, len(graphs), batch_size):
        chunk = graphs[start:start + batch_size]
        batch = pad_to_bucket(batch_np(chunk), policy)
        parts.append(np.asarray(energies(params, batch))[: len(chunk)].astype(np.float64))
    return np.concatenate(parts)


def mae_mev(energies, params, graphs, policy, batch_size: int) -> float:
    """Mean absolute energy error (meV) on `graphs`. Host driver."""
    targets = np.array([float(g.globals["energy"][0]) for g in graphs])
    return float(np.mean(np.abs(predict(energies, params, graphs, policy, batch_size)
                                - targets)) * 1000.0)


def run(arguments) -> dict:
    """Loads, trains and evaluates; returns the run record. Host driver."""
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    splits, _, scale_shift, e0 = load_splits(arguments)
    load_cpu = time.process_time() - cpu_start
    train = splits["train"]
    policy = atoms_bucket_policy(train, arguments.batch_size)
    steps_per_epoch = -(-len(train) // arguments.batch_size)
    updates = steps_per_epoch * arguments.epochs
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, arguments.learning_rate, steps_per_epoch, max(updates, steps_per_epoch + 1),
        arguments.learning_rate / 20)
    optimizer = optax.chain(optax.clip_by_global_norm(10.0), optax.adam(schedule))
    model = build_model(arguments)
    first = pad_to_bucket(batch_np(train[: arguments.batch_size]), policy)
    params = jax.jit(model.init)(jax.random.key(arguments.seed), first)
    n_params = int(sum(np.size(leaf) for leaf in jax.tree.leaves(params)))
    state = optimizer.init(params)
    train_step, energies = make_functions(model, scale_shift, optimizer)
    print(f"{arguments.model}: {n_params} parameters; train {len(train)}, validation "
          f"{len(splits['validation'])}, test {len(splits['test'])}; loaded in "
          f"{load_cpu / 60:.1f} CPU-min", flush=True)
    curve, best = [], (np.inf, params, 0)
    train_cpu = time.process_time()
    for epoch in range(1, arguments.epochs + 1):
        order = np.random.default_rng([arguments.seed, epoch]).permutation(len(train))
        losses = []
        for start in range(0, len(train), arguments.batch_size):
            batch = pad_to_bucket(
                batch_np([train[i] for i in order[start:start + arguments.batch_size]]), policy)
            params, state, value = train_step(params, state, jax.tree.map(jnp.asarray, batch))
            losses.append(value)
        validation = mae_mev(energies, params, splits["validation"], policy,
                             arguments.batch_size)
        cpu_minutes = (time.process_time() - train_cpu) / 60
        curve.append({"epoch": epoch, "train_rmse_per_atom_mev":
                      float(np.sqrt(np.mean(jax.device_get(losses)))) * 1000.0,
                      "validation_mae_mev": validation, "cpu_minutes": cpu_minutes})
        print(f"epoch {epoch}: train RMSE/atom {curve[-1]['train_rmse_per_atom_mev']:.1f} meV, "
              f"validation MAE {validation:.1f} meV, {cpu_minutes:.1f} CPU-min", flush=True)
        if validation < best[0]:
            best = (validation, params, epoch)
        if arguments.json:
            _write(arguments.json, {"benchmark": "qm9_u0", "model": arguments.model,
                                    "finished": False, "curve": curve})
    train_cpu_minutes = (time.process_time() - train_cpu) / 60
    test = mae_mev(energies, best[1], splits["test"], policy, arguments.batch_size)
    record = {
        "benchmark": "qm9_u0", "model": arguments.model, "finished": True,
        "settings": {key: value for key, value in vars(arguments).items() if key != "json"},
        "parameters": n_params,
        "e0_ev": dict(zip(map(str, SPECIES), map(float, e0), strict=True)),
        "scale_ev": scale_shift.scale, "shift_ev": scale_shift.shift,
        "best_epoch": best[2], "validation_mae_mev": best[0], "test_mae_mev": test,
        "published_test_mae_mev_full_train": PUBLISHED_MEV[arguments.model],
        "train_cpu_minutes": train_cpu_minutes,
        "total_cpu_minutes": (time.process_time() - cpu_start) / 60,
        "wall_minutes": (time.perf_counter() - wall_start) / 60,
        "curve": curve,
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "jax": jax.__version__, "device": str(jax.devices()[0])},
    }
    print(f"{arguments.model}: test U0 MAE {test:.1f} meV (best epoch {best[2]}, validation "
          f"{best[0]:.1f}); train {train_cpu_minutes:.1f} CPU-min, total "
          f"{record['total_cpu_minutes']:.1f} CPU-min, {record['wall_minutes']:.1f} wall-min; "
          f"published on 110k: {PUBLISHED_MEV[arguments.model]} meV", flush=True)
    return record


def _write(path: str, record: dict) -> None:
    with open(path, "w") as stream:
        json.dump(record, stream, indent=1)


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status. Host."""
    arguments = _parser().parse_args(argv)
    for name in ("n_train", "epochs", "batch_size", "features", "interactions"):
        if getattr(arguments, name) < 1:
            print(f"qm9_u0: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    record = run(arguments)
    if arguments.json:
        _write(arguments.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
