"""Training throughput of the Sudoku RRN: gnkit's RecurrentRelationalNetwork (f32 and bf16) vs
jraph.

    python -m benchmarks.sudoku_rrn [--quick] [--malloc both|default|tuned] [--reps 3]

Both models are the paper's configuration (hidden 96, 3-layer MLPs, LSTM, 32 steps, batch 64):
the same embeddings, the same layer sizes and the same loss and Adam step. The jraph model is
written the way a jraph user would: `jraph.GraphNetwork` with an edge MLP on
`[h_sender, h_receiver]`, summed at receivers, and a node update `[x, messages] -> MLP -> LSTM`,
under `nn.scan` over steps. gnkit's model uses its fast paths (factorised first message layer,
last message layer after the sum, fixed-degree reshape-sum); "gnkit bf16" is the same model with
bf16 matmuls in the loop (`SudokuRRN(dtype=jnp.bfloat16)`). All are timed in the same process,
alternating, and the median step time of each is reported as puzzles per second (forward and
backward). With `--malloc both` (the default) the measurement runs twice in subprocesses, with
glibc's default allocator settings and with `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`
(DESIGN.md), and the ratio is taken against jraph's better setting.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax

from gnkit.demos.sudoku.models import SudokuRRN
from gnkit.nn.mlp import MLP
from gnkit.tasks import sudoku

TUNED_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}


class _JraphStep(nn.Module):
    hidden_size: int
    layers: int

    @nn.compact
    def __call__(self, nodes, graph):
        widths = (self.hidden_size,) * self.layers
        message_mlp, update_mlp = MLP(widths, name="message"), MLP(widths, name="update")
        lstm = nn.OptimizedLSTMCell(self.hidden_size, name="lstm")

        def update_edge_fn(edges, sent, received, globals_):
            return message_mlp(jnp.concatenate([sent["h"], received["h"]], axis=-1))

        def update_node_fn(nodes, sent, received, globals_):
            update = update_mlp(jnp.concatenate([nodes["x"], received], axis=-1))
            (memory, state), _ = lstm((nodes["c"], nodes["h"]), update)
            return {"x": nodes["x"], "h": state, "c": memory}

        network = jraph.GraphNetwork(update_edge_fn, update_node_fn)
        nodes = network(graph._replace(nodes=nodes)).nodes
        return nodes, nn.Dense(9, name="readout")(nodes["h"])


class JraphSudokuRRN(nn.Module):
    """The paper's RRN written with `jraph.GraphNetwork`: `quizzes [B, 81] -> [T, B, 81, 9]`."""

    hidden_size: int = 96
    embed_size: int = 16
    layers: int = 3

    @nn.compact
    def __call__(self, quizzes, num_steps):
        batch = quizzes.shape[0]
        cells = jnp.arange(sudoku.NUM_CELLS)
        digit = nn.Embed(10, self.embed_size)(quizzes.reshape(-1))
        row = nn.Embed(9, self.embed_size)(cells // 9)
        col = nn.Embed(9, self.embed_size)(cells % 9)
        position = jnp.tile(jnp.concatenate([row, col], -1), (batch, 1))
        x = MLP((self.hidden_size,) * self.layers)(jnp.concatenate([digit, position], -1))
        ours = sudoku.batch_graph(batch)
        graph = jraph.GraphsTuple(
            nodes=None,
            edges=None,
            senders=jnp.asarray(ours.senders),
            receivers=jnp.asarray(ours.receivers),
            globals=None,
            n_node=jnp.asarray(ours.n_node),
            n_edge=jnp.asarray(ours.n_edge),
        )
        scan = nn.scan(
            _JraphStep,
            variable_broadcast="params",
            split_rngs={"params": False},
            in_axes=nn.broadcast,
            length=num_steps,
        )
        nodes = {"x": x, "h": x, "c": jnp.zeros_like(x)}
        _, logits = scan(self.hidden_size, self.layers)(nodes, graph)
        return logits.reshape(num_steps, batch, sudoku.NUM_CELLS, 9)


def _train_step(model, num_steps):
    optimizer = optax.adam(2e-4)

    def loss_fn(params, quizzes, solutions):
        return jnp.mean(sudoku.cell_loss(model.apply(params, quizzes, num_steps), solutions))

    @jax.jit
    def step(params, opt_state, quizzes, solutions):
        loss, grads = jax.value_and_grad(loss_fn)(params, quizzes, solutions)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return optimizer, step


MODELS = {
    "gnkit": lambda: SudokuRRN(),
    "gnkit bf16": lambda: SudokuRRN(dtype=jnp.bfloat16),
    "jraph": lambda: JraphSudokuRRN(),
}


def measure(
    batch_size: int, num_steps: int, reps: int, names: Sequence[str] = ("gnkit", "jraph")
) -> dict:
    """Median seconds per training step of each model in `names` (keys of `MODELS`), measured
    alternately in this process."""
    pool = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))
    rng = np.random.default_rng(0)
    quizzes, solutions = sudoku.sample_puzzles(rng, *pool, batch_size, range(17, 35))
    quizzes, solutions = jnp.asarray(quizzes, jnp.int32), jnp.asarray(solutions, jnp.int32)
    models = {name: MODELS[name]() for name in names}
    runners, times = {}, {name: [] for name in models}
    for name, model in models.items():
        params = model.init(jax.random.PRNGKey(0), quizzes[:1], 1)
        optimizer, step = _train_step(model, num_steps)
        state = [params, optimizer.init(params)]
        jax.block_until_ready(step(*state, quizzes, solutions))  # compile
        runners[name] = (step, state)
    for _ in range(reps):
        for name, (step, state) in runners.items():
            start = time.perf_counter()
            state[0], state[1], loss = step(*state, quizzes, solutions)
            jax.block_until_ready(loss)
            times[name].append(time.perf_counter() - start)
    count = {name: sum(x.size for x in jax.tree.leaves(runners[name][1][0])) for name in models}
    return {
        name: {
            "seconds_per_step": statistics.median(times[name]),
            "puzzles_per_s": batch_size / statistics.median(times[name]),
            "parameters": count[name],
        }
        for name in models
    }


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 8, 4 steps, 2 reps")
    parser.add_argument("--malloc", choices=("both", "default", "tuned"), default="both")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    batch_size, num_steps, reps = (8, 4, 2) if args.quick else (64, 32, args.reps)
    if args.malloc != "both":
        result = measure(batch_size, num_steps, reps, tuple(MODELS))
        print(json.dumps(result))
        return result
    results = {}
    for setting in ("default", "tuned"):
        env = {key: value for key, value in os.environ.items() if key not in TUNED_MALLOC}
        if setting == "tuned":
            env.update(TUNED_MALLOC)
        command = [
            sys.executable,
            "-m",
            "benchmarks.sudoku_rrn",
            "--malloc",
            setting,
            "--reps",
            str(reps),
        ] + (["--quick"] if args.quick else [])
        output = subprocess.run(command, env=env, capture_output=True, text=True)
        if output.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{output.stderr[-3000:]}")
        results[setting] = json.loads(output.stdout.strip().splitlines()[-1])
    print(
        f"Sudoku RRN training step, batch {batch_size}, {num_steps} steps, forward + backward "
        f"({jax.devices()[0].platform}, {os.cpu_count()} cores)"
    )
    print("puzzles/s per model; ratio = gnkit f32 / jraph")
    print(f"{'malloc':>8} {'gnkit':>8} {'gnkit bf16':>10} {'jraph':>8} {'ratio':>6}")
    for setting, result in results.items():
        ours, theirs = result["gnkit"]["puzzles_per_s"], result["jraph"]["puzzles_per_s"]
        bf16 = result["gnkit bf16"]["puzzles_per_s"]
        print(f"{setting:>8} {ours:>8.2f} {bf16:>10.2f} {theirs:>8.2f} {ours / theirs:>6.2f}")
    best_ours = max(result["gnkit"]["puzzles_per_s"] for result in results.values())
    best_theirs = max(result["jraph"]["puzzles_per_s"] for result in results.values())
    print(f"best vs best: gnkit / jraph = {best_ours / best_theirs:.2f}")
    summary = {
        "batch_size": batch_size,
        "num_steps": num_steps,
        "results": results,
        "best_ratio": best_ours / best_theirs,
    }
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(summary, stream, indent=2)
    return summary


if __name__ == "__main__":
    main()
