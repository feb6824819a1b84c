"""Training throughput of the relational memory core: gnkit's layouts vs Flax's attention.

    python -m benchmarks.relational_memory [--quick] [--batch 256] [--reps 3] [--json PATH]

Every contender is the paper's N-th farthest core (8 slots, 8 heads of size 32, 1 block, a
2-layer attention MLP, per-unit gates) run by `flax.linen.RNN` over 8 steps of N-th farthest
sequences, with a linear readout of the final output, cross-entropy and an Adam step. Timed:
one jitted training step (forward, backward, update), in turn, after a warm-up step, for
`--reps` rounds; the table gives the median in sequences per second of wall time and of CPU
time (process time, all threads), and the ratio of CPU time to gnkit's dense layout.

- `gnkit dense`: `nn.RelationalMemory()` as shipped, attention as batched matrix products over
  the complete graph of memory rows;
- `gnkit graph`: the same module with `attention="graph"`, `gnkit.attention.graph_attention`
  over a fully connected `GraphsTuple` of the rows (edge list, segment softmax);
- `flax dot_product_attention`: the same module with the attention replaced by
  `flax.linen.dot_product_attention` on the same queries, keys and values;
- `flax MultiHeadDotProductAttention`: the cell written directly with
  `flax.linen.MultiHeadDotProductAttention` (its own query, key, value and output projections,
  so a few more parameters and no LayerNorm on the projections).

The first three share their weights and are checked to give the same loss before timing
(relative difference <= 1e-4).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.nn import RelationalMemory
from gnkit.tasks import nth_farthest


class FlaxAttentionMemory(RelationalMemory):
    """`RelationalMemory` whose attention is `flax.linen.dot_product_attention` on the same
    queries, keys and values (same parameters, same numbers)."""

    def _attend(self, queries, keys, values):
        attended = nn.dot_product_attention(queries, keys, values)
        return attended.reshape(attended.shape[:2] + (-1,))


class FlaxMultiHeadMemory(RelationalMemory):
    """`RelationalMemory` written with `flax.linen.MultiHeadDotProductAttention` (its own
    projections, an output projection, no LayerNorm on the projections)."""

    def _multihead_attention(self, rows, block):
        attention = nn.MultiHeadDotProductAttention(
            num_heads=self.num_heads,
            qkv_features=self.mem_size,
            out_features=self.mem_size,
            name=f"attention_{block}_flax",
        )
        return attention(rows)


class Classifier(nn.Module):
    """A memory core over the sequence `[B, T, F]`, then a linear readout: logits `[B, 8]`."""

    core: nn.RNNCellBase

    @nn.compact
    def __call__(self, inputs):
        outputs = nn.RNN(self.core, name="rnn")(inputs)
        return nn.Dense(nth_farthest.NUM_OBJECTS, name="readout")(outputs[:, -1])


def contenders(sizes: dict) -> dict[str, nn.Module]:
    """The four models of the comparison, by name."""
    return {
        "gnkit dense": Classifier(RelationalMemory(**sizes)),
        "gnkit graph": Classifier(RelationalMemory(**sizes, attention="graph")),
        "flax dot_product_attention": Classifier(FlaxAttentionMemory(**sizes)),
        "flax MultiHeadDotProductAttention": Classifier(FlaxMultiHeadMemory(**sizes)),
    }


def _train_step(model: nn.Module, optimizer: optax.GradientTransformation):
    def loss_fn(params, inputs, targets):
        logits = model.apply(params, inputs)
        return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

    @jax.jit
    def step(params, opt_state, inputs, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, inputs, targets)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(loss_fn), step


def measure(batch_size: int, sizes: dict, reps: int) -> dict:
    """Median sequences per second of each contender's training step, timed in turn."""
    inputs, targets = nth_farthest.sample(np.random.default_rng(0), batch_size)
    inputs, targets = jnp.asarray(inputs), jnp.asarray(targets)
    optimizer = optax.adam(1e-4)
    models = contenders(sizes)
    shared = models["gnkit dense"].init(jax.random.key(0), inputs[:1])
    runners, losses = {}, {}
    for name, model in models.items():
        params = shared if "MultiHead" not in name else model.init(jax.random.key(0), inputs[:1])
        loss_fn, step = _train_step(model, optimizer)
        losses[name] = float(loss_fn(params, inputs, targets))
        state = [params, optimizer.init(params)]
        compile_start = time.perf_counter()
        jax.block_until_ready(step(*state, inputs, targets))
        runners[name] = (step, state, time.perf_counter() - compile_start)
    reference = losses["gnkit dense"]
    for name in ("gnkit graph", "flax dot_product_attention"):
        if abs(losses[name] - reference) > 1e-4 * abs(reference):
            raise AssertionError(f"{name} loss {losses[name]} differs from gnkit's {reference}")
    times = {name: [] for name in models}
    cpu_times = {name: [] for name in models}
    for _ in range(reps):
        for name, (step, state, _) in runners.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            state[0], state[1], loss = step(*state, inputs, targets)
            jax.block_until_ready(loss)
            times[name].append(time.perf_counter() - start)
            cpu_times[name].append(time.process_time() - cpu_start)
    return {
        name: {
            "sequences_per_s": batch_size / statistics.median(times[name]),
            "sequences_per_cpu_s": batch_size / statistics.median(cpu_times[name]),
            "seconds_per_step": statistics.median(times[name]),
            "cpu_seconds_per_step": statistics.median(cpu_times[name]),
            "min_s": min(times[name]),
            "max_s": max(times[name]),
            "first_step_s": runners[name][2],
            "parameters": sum(x.size for x in jax.tree.leaves(runners[name][1][0])),
            "initial_loss": losses[name],
        }
        for name in models
    }


def format_table(batch_size: int, results: dict) -> str:
    """The results as a table: wall-clock and CPU-time rates (on a shared machine the CPU time
    is the steadier measure), and each contender's CPU-time ratio to `gnkit dense`."""
    ours = results["gnkit dense"]["sequences_per_cpu_s"]
    lines = [
        f"relational memory core training step, batch {batch_size}, 8 steps, forward + backward "
        f"({jax.devices()[0].platform}, {os.cpu_count()} cores)",
        f"{'contender':<34}{'seq/s':>8}{'min s':>8}{'max s':>8}{'seq/CPU-s':>10}"
        f"{'params':>10}{'gnkit dense / it':>18}",
    ]
    for name, entry in results.items():
        lines.append(
            f"{name:<34}{entry['sequences_per_s']:>8.1f}{entry['min_s']:>8.3f}"
            f"{entry['max_s']:>8.3f}{entry['sequences_per_cpu_s']:>10.1f}"
            f"{entry['parameters']:>10,}{ours / entry['sequences_per_cpu_s']:>18.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 4, a tiny core, 1 rep")
    parser.add_argument("--batch", type=int, default=256, help="sequences per step (paper 1600)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    paper = dict(mem_slots=8, head_size=32, num_heads=8, num_blocks=1, attention_mlp_layers=2)
    tiny = dict(mem_slots=2, head_size=4, num_heads=2, num_blocks=1, attention_mlp_layers=2)
    batch_size, sizes, reps = (4, tiny, 1) if args.quick else (args.batch, paper, args.reps)
    results = measure(batch_size, sizes, reps)
    print(format_table(batch_size, results))
    summary = {"batch_size": batch_size, "sizes": sizes, "results": results}
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(summary, stream, indent=2)
    return summary


if __name__ == "__main__":
    main()
