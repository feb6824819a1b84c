"""Data-parallel scaling on 1, 2, 4 and 8 forced CPU devices: step time, examples/s, efficiency.

    python -m benchmarks.scaling [--quick] [--devices 1,2,4,8] [--modes mesh,pmap] [--steps 5]

Weak scaling: every device gets the same batch (Sudoku RRN: `--puzzles` puzzles; GraphNetwork:
`--molecules` molecule-sized graphs of 10-30 atoms), so `k` devices train on `k` times the
examples per step. Parallel efficiency is examples/s on `k` devices divided by `k` times
examples/s on one device (same mode). One process with 8 forced CPU devices runs every row, on
meshes of the first `k` devices; if this process has fewer devices, the script re-runs itself
with `XLA_FLAGS=--xla_force_host_platform_device_count=8`.

Forced CPU devices share the host's cores (`os.cpu_count()` is printed): on a machine with `C`
cores efficiency is bounded by about `C / k`, so this measures correctness and overhead, not the
speed-up of real accelerators. Each row also shows the all-reduce ops in the compiled step
(gradients and metrics) and the host transfers during the timed steps, which run under
`jax.transfer_guard("disallow")`: an implicit host transfer would raise, so 0 is measured.

Running the same code on accelerators (the README's scale-out note):

- One multi-GPU host or one TPU VM: nothing changes. `make_mesh()` spans every local device;
  'mesh' (recommended) or 'pmap' runs one batch per device.
- Many hosts (a TPU pod slice, a GPU cluster): start the same script on every host and call
  `gnkit.parallel.initialize()` before any other JAX call. On Cloud TPU, Slurm and Open MPI it
  needs no arguments; elsewhere set `JAX_COORDINATOR_ADDRESS=host0:port`, `JAX_NUM_PROCESSES`
  and `JAX_PROCESS_ID` on each process (or pass them). Each process reads only its part of the
  data (`process_shard`) and feeds only its own devices; give `device_batches` a fixed `budget`
  so that every host pads to the same shapes. On a TPU pod slice, e.g.
  `gcloud compute tpus tpu-vm ssh NAME --worker=all --command="python train.py"`.
- Weak scaling grows the global batch with the device count: rescale the learning rate if the
  per-device batch stays fixed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit import parallel
from gnkit.batching import get_graph_padding_mask
from gnkit.blocks import concatenated_args, graph_network
from gnkit.demos.sudoku.models import SudokuRRN
from gnkit.graph import GraphsTuple
from gnkit.nn.mlp import MLP
from gnkit.tasks import sudoku

FORCE_DEVICES = "--xla_force_host_platform_device_count="


class MoleculeNetwork(nn.Module):
    """Encode, `rounds` shared GraphNetwork steps with MLP updates, decode one value per graph."""

    hidden: int = 64
    rounds: int = 3

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        width = (self.hidden, self.hidden)
        graph = graph._replace(
            nodes=nn.Dense(self.hidden)(graph.nodes),
            edges=nn.Dense(self.hidden)(graph.edges),
            globals=jnp.zeros((graph.n_node.shape[0], self.hidden)),
        )
        network = graph_network(
            concatenated_args(MLP(width, name="edge_mlp")),
            concatenated_args(MLP(width, name="node_mlp")),
            concatenated_args(MLP(width, name="global_mlp")),
            indices_are_sorted=True,
        )
        for _ in range(self.rounds):
            graph = network(graph)
        return nn.Dense(1)(graph.globals)[:, 0]


def molecules(rng: np.random.Generator, count: int, features: int = 16) -> list[GraphsTuple]:
    """Molecule-sized graphs: 10-30 atoms, a ring plus random bonds, both directions, sorted."""
    graphs = []
    for _ in range(count):
        n = int(rng.integers(10, 31))
        bonds = [(i, (i + 1) % n) for i in range(n)]
        bonds += [tuple(rng.choice(n, 2, replace=False)) for _ in range(n // 5)]
        pairs = np.array(bonds + [(b, a) for a, b in bonds], np.int32)
        pairs = pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]
        graphs.append(
            GraphsTuple(
                nodes=rng.normal(size=(n, features)).astype(np.float32),
                edges=rng.normal(size=(len(pairs), 4)).astype(np.float32),
                senders=pairs[:, 0],
                receivers=pairs[:, 1],
                globals=rng.normal(size=(1, 1)).astype(np.float32),
                n_node=np.array([n], np.int32),
                n_edge=np.array([len(pairs)], np.int32),
            )
        )
    return graphs


def molecule_task(per_device: int, quick: bool):
    """`(params, loss_fn, weight_fn, batch_for(mode, mesh))` for the GraphNetwork rows."""
    model = MoleculeNetwork(hidden=8 if quick else 64, rounds=1 if quick else 3)
    graphs = molecules(np.random.default_rng(0), 8 * per_device)

    def loss_fn(params, graph):
        mask = get_graph_padding_mask(graph)
        error = (model.apply(params, graph) - graph.globals[:, 0]) ** 2
        return jnp.sum(jnp.where(mask, error, 0.0)) / jnp.maximum(jnp.sum(mask), 1)

    def weight_fn(graph):
        return jnp.sum(get_graph_padding_mask(graph))

    def batch_for(mode, mesh):
        count = 1 if mode == "single" else mesh.size
        batches = parallel.device_batches(graphs[: count * per_device], count)
        return parallel.shard_device_batches(batches, mode, mesh), count * per_device

    params = jax.jit(model.init)(jax.random.PRNGKey(0), parallel.device_batches(graphs[:1], 1)[0])
    return params, loss_fn, weight_fn, batch_for


def sudoku_task(per_device: int, quick: bool):
    """`(params, loss_fn, weight_fn, batch_for(mode, mesh))` for the Sudoku RRN rows."""
    hidden, steps = (16, 2) if quick else (64, 8)
    model = SudokuRRN(hidden_size=hidden, embed_size=16)
    rng = np.random.default_rng(0)
    quizzes = rng.integers(0, 10, (8 * per_device, sudoku.NUM_CELLS)).astype(np.int32)
    solutions = rng.integers(1, 10, (8 * per_device, sudoku.NUM_CELLS)).astype(np.int32)

    def loss_fn(params, batch):
        return jnp.mean(sudoku.cell_loss(model.apply(params, batch[0], steps), batch[1]))

    def batch_for(mode, mesh):
        count = (1 if mode == "single" else mesh.size) * per_device
        return parallel.shard_batch((quizzes[:count], solutions[:count]), mode, mesh), count

    params = jax.jit(model.init, static_argnums=2)(jax.random.PRNGKey(0), quizzes[:1], 1)
    return params, loss_fn, None, batch_for


def _all_reduces(step, *args) -> int:
    return len(re.findall(r"\ball-reduce(?:-start)?\(", step.lower(*args).compile().as_text()))


def measure(task, mode: str, devices: int, steps: int) -> dict:
    """Compile, warm up, then time `steps` steps with no implicit host transfer allowed."""
    params, loss_fn, weight_fn, batch_for = task
    mesh = parallel.make_mesh(devices=jax.devices()[:devices])
    optimizer = optax.adam(1e-3)
    step = parallel.make_train_step(loss_fn, optimizer, mode, mesh=mesh, weight_fn=weight_fn)
    state = parallel.replicate((params, optimizer.init(params)), mode, mesh)
    batch, examples = batch_for(mode, mesh)
    all_reduces = _all_reduces(step, *state, batch)
    *state, metrics = step(*state, batch)
    jax.block_until_ready(state)
    times = []
    with jax.transfer_guard("disallow"):
        for _ in range(steps):
            start = time.perf_counter()
            *state, metrics = step(*state, batch)
            jax.block_until_ready(state)
            times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    return {
        "mode": mode,
        "devices": devices,
        "examples": examples,
        "step_ms": 1000 * seconds,
        "examples_per_s": examples / seconds,
        "all_reduces": all_reduces,
        "host_transfers": 0,
    }


def run(args) -> list[dict]:
    tasks = {
        "sudoku_rrn": lambda: sudoku_task(args.puzzles, args.quick),
        "graph_network": lambda: molecule_task(args.molecules, args.quick),
    }
    rows = []
    for name in args.models:
        task = tasks[name]()
        for mode in args.modes:
            base = None
            for devices in args.devices:
                row = {"model": name, **measure(task, mode, devices, args.steps)}
                base = base or row["examples_per_s"] / row["devices"]
                row["efficiency"] = row["examples_per_s"] / (row["devices"] * base)
                rows.append(row)
    return rows


def format_table(rows: Sequence[dict]) -> str:
    header = (
        f"{'model':<14} {'mode':<5} {'dev':>3} {'batch':>5} {'step ms':>9} {'ex/s':>8} "
        f"{'eff':>5} {'all-red':>7} {'h2d/d2h':>7}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['model']:<14} {r['mode']:<5} {r['devices']:>3} {r['examples']:>5} "
            f"{r['step_ms']:>9.1f} {r['examples_per_s']:>8.1f} {r['efficiency']:>5.2f} "
            f"{r['all_reduces']:>7} {r['host_transfers']:>7}"
        )
    return "\n".join(lines)


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="tiny models, 1-2 devices, mesh only, for tests"
    )
    parser.add_argument("--devices", help="comma-separated device counts (default 1,2,4,8)")
    parser.add_argument("--modes", help="comma-separated: mesh, pmap (default both; quick mesh)")
    parser.add_argument("--models", default="sudoku_rrn,graph_network")
    parser.add_argument("--steps", type=int, help="timed steps per row (default 5; quick 2)")
    parser.add_argument("--puzzles", type=int, default=4, help="Sudoku puzzles per device")
    parser.add_argument("--molecules", type=int, default=32, help="graphs per device")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    args.devices = [
        int(d) for d in (args.devices or ("1,2" if args.quick else "1,2,4,8")).split(",")
    ]
    args.modes = (args.modes or ("mesh" if args.quick else "mesh,pmap")).split(",")
    args.models = args.models.split(",")
    args.steps = args.steps or (2 if args.quick else 5)
    if args.quick:
        args.puzzles, args.molecules = min(args.puzzles, 2), min(args.molecules, 4)
    return args


def main(argv: Sequence[str] | None = None) -> list[dict]:
    """Run the benchmark, print the table and return its rows. A process with too few devices
    re-runs the benchmark in a child process with enough forced CPU devices."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    if jax.device_count() < max(args.devices):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "rows.json")
            env = dict(os.environ, XLA_FLAGS=f"{FORCE_DEVICES}{max(max(args.devices), 8)}")
            subprocess.run(
                [sys.executable, "-m", "benchmarks.scaling", *argv, "--json", path],
                env=env,
                check=True,
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            )
            with open(path) as stream:
                rows = json.load(stream)
    else:
        rows = run(args)
        print(f"jax {jax.__version__}, {jax.device_count()} CPU devices, {os.cpu_count()} cores")
        print(format_table(rows), flush=True)
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream)
    return rows


if __name__ == "__main__":
    main()
