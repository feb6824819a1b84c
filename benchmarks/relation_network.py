"""Training throughput of a relation network: gnkit's dense and edge-list layouts vs jraph's.

    python -m benchmarks.relation_network [--quick] [--batch 64] [--width 128] [--reps 5]
                                          [--min-objects 3] [--json PATH]

The model is the CLEVR demo's relation network without its question LSTM: scenes of 3-10
objects (`--min-objects 10`: all of 10; state descriptions, 18 features, padded to 10), a
question vector of 128 per scene, `g` 4 x `width` over every ordered pair of a scene's objects
(self-pairs included), summed, `f` (`width`, `width`, 28 answers), cross-entropy and an Adam
step. Timed: one jitted training step
(forward, backward, update) of each contender in turn, after a warm-up step, for `--reps` rounds;
the table gives the median questions per second of wall time and of CPU time (process time, all
threads), and each contender's CPU time relative to `gnkit dense`.

- `gnkit dense`: `gnkit.nn.RelationNetwork.dense` on objects `[B, 10, 18]` with the object mask:
  pairs as `[B, 10, 10, width]`, the first layer factorised (objects projected before pairing),
  padding pairs computed and weighted 0;
- `gnkit edge list`: the same module on `pair_graph(...)`, a `GraphsTuple` with one fully
  connected graph per scene over its real objects only (the functional `relation_network` block);
- `jraph RelationNetwork`: `jraph.RelationNetwork` on the same graph, the question appended to
  every object (the way a jraph user conditions it: jraph's pair function sees only the two
  objects), the pair MLP on the concatenated `[sender + question, receiver + question]`.

All three start from the same weights (jraph's first-layer kernel is gnkit's three projections
stacked, with zeros for the receiver's copy of the question), and their losses are checked to
agree (relative difference <= 1e-4) before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.nn import RelationNetwork
from gnkit.nn.relation_network import pair_graph

NUM_ANSWERS = 28
OBJECT_FEATURES = 18
QUESTION_FEATURES = 128
MAX_OBJECTS = 10


def make_inputs(batch_size: int, seed: int = 0, min_objects: int = 3) -> dict:
    """Random scenes of `min_objects`-10 objects: objects `[B, 10, 18]`, mask `[B, 10]`,
    questions `[B, 128]`, answers `[B]`, and the edge-list graphs of the same scenes (host)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(min_objects, MAX_OBJECTS + 1, batch_size)
    mask = np.arange(MAX_OBJECTS)[None, :] < counts[:, None]
    objects = rng.normal(size=(batch_size, MAX_OBJECTS, OBJECT_FEATURES)).astype(np.float32)
    objects *= mask[..., None]
    questions = rng.normal(size=(batch_size, QUESTION_FEATURES)).astype(np.float32)
    answers = rng.integers(0, NUM_ANSWERS, batch_size).astype(np.int32)
    graph = pair_graph(objects, questions, mask)
    with_question = np.concatenate(
        [objects, np.broadcast_to(questions[:, None], (batch_size, MAX_OBJECTS,
                                                       QUESTION_FEATURES))], axis=-1)
    jraph_graph = graph._replace(nodes=with_question[mask], globals=None)
    return {"objects": objects, "mask": mask, "questions": questions, "answers": answers,
            "graph": graph, "jraph_graph": jraph_graph, "pairs": int((counts**2).sum())}


def jraph_params(gnkit_params: dict, width: int) -> dict:
    """gnkit's RN parameters as the jraph model's: the first layer's kernel over
    `[sender, question, receiver, question]` is gnkit's sender, question and receiver projections
    stacked (zeros for the second question copy); the other layers are shared as they are."""
    params = gnkit_params["params"]
    sender_kernel, receiver_kernel = jnp.split(params["pair_0_objects"]["kernel"], 2, axis=-1)
    question_kernel = params["pair_0_question"]["kernel"]
    first = jnp.concatenate(
        [sender_kernel, question_kernel, receiver_kernel, jnp.zeros_like(question_kernel)], axis=0
    )
    rest = [params[f"pair_{i}"] for i in range(1, 4)]
    return {"first": {"kernel": first, "bias": params["pair_0_bias"]}, "rest": rest,
            "output": params["output"]}


def _dense(layer: dict, inputs: jax.Array) -> jax.Array:
    return inputs @ layer["kernel"] + layer["bias"]


def jraph_model(params: dict, graph, num_graphs: int) -> jax.Array:
    """The relation network written with `jraph.RelationNetwork`: logits `[num_graphs, 28]`."""
    import jraph

    def pair_fn(sender_nodes, receiver_nodes):
        hidden = jax.nn.relu(_dense(params["first"], jnp.concatenate(
            [sender_nodes, receiver_nodes], axis=-1)))
        for layer in params["rest"]:
            hidden = jax.nn.relu(_dense(layer, hidden))
        return hidden

    def answer_fn(summed_pairs):
        layers = [params["output"][name] for name in sorted(params["output"])]
        hidden = summed_pairs
        for layer in layers[:-1]:
            hidden = jax.nn.relu(_dense(layer, hidden))
        return _dense(layers[-1], hidden)

    network = jraph.RelationNetwork(pair_fn, answer_fn)
    return network(graph._replace(globals=jnp.zeros((num_graphs, 1)))).globals


def contenders(width: int, inputs: dict):
    """`{name: (loss_fn(params), initial params)}` for the three contenders."""
    module = RelationNetwork(pair_features=(width,) * 4,
                             output_features=(width, width, NUM_ANSWERS))
    objects, mask, questions = inputs["objects"], inputs["mask"], inputs["questions"]
    answers, batch_size = inputs["answers"], len(inputs["answers"])
    params = module.init(jax.random.key(0), objects, questions, mask, method=RelationNetwork.dense)

    def cross_entropy(logits):
        return optax.softmax_cross_entropy_with_integer_labels(logits, answers).mean()

    return {
        "gnkit dense": (lambda p: cross_entropy(module.apply(
            p, objects, questions, mask, method=RelationNetwork.dense)), params),
        "gnkit edge list": (lambda p: cross_entropy(module.apply(p, inputs["graph"])), params),
        "jraph RelationNetwork": (
            lambda p: cross_entropy(jraph_model(p, inputs["jraph_graph"], batch_size)),
            jraph_params(params, width),
        ),
    }


def _train_step(loss_fn, optimizer):
    @jax.jit
    def step(params, opt_state):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def measure(batch_size: int, width: int, reps: int, min_objects: int = 3) -> dict:
    """Median questions per second of each contender's training step, timed in turn."""
    inputs = make_inputs(batch_size, min_objects=min_objects)
    optimizer = optax.adam(2.5e-4)
    runners, losses = {}, {}
    for name, (loss_fn, params) in contenders(width, inputs).items():
        losses[name] = float(jax.jit(loss_fn)(params))
        step = _train_step(loss_fn, optimizer)
        state = [params, optimizer.init(params)]
        compile_start = time.perf_counter()
        jax.block_until_ready(step(*state))
        runners[name] = (step, state, time.perf_counter() - compile_start)
    reference = losses["gnkit dense"]
    for name, loss in losses.items():
        if abs(loss - reference) > 1e-4 * abs(reference):
            raise AssertionError(f"{name} loss {loss} differs from gnkit dense's {reference}")
    times = {name: [] for name in runners}
    cpu_times = {name: [] for name in runners}
    for _ in range(reps):
        for name, (step, state, _) in runners.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            state[0], state[1], loss = step(*state)
            jax.block_until_ready(loss)
            times[name].append(time.perf_counter() - start)
            cpu_times[name].append(time.process_time() - cpu_start)
    return {
        name: {
            "questions_per_s": batch_size / statistics.median(times[name]),
            "questions_per_cpu_s": batch_size / statistics.median(cpu_times[name]),
            "seconds_per_step": statistics.median(times[name]),
            "cpu_seconds_per_step": statistics.median(cpu_times[name]),
            "min_s": min(times[name]),
            "max_s": max(times[name]),
            "first_step_s": runners[name][2],
            "initial_loss": losses[name],
        }
        for name in runners
    } | {"pairs": inputs["pairs"], "dense_pairs": batch_size * MAX_OBJECTS**2}


def format_table(batch_size: int, width: int, results: dict) -> str:
    """The results as a table: wall-clock and CPU-time rates (on a shared machine the CPU time
    is the steadier measure), and each contender's CPU time relative to `gnkit dense`."""
    ours = results["gnkit dense"]["questions_per_cpu_s"]
    lines = [
        f"relation network training step, batch {batch_size}, width {width}, forward + backward "
        f"({jax.devices()[0].platform}, {os.cpu_count()} cores; {results['pairs']} real pairs, "
        f"{results['dense_pairs']} dense)",
        f"{'contender':<24}{'q/s':>9}{'min s':>8}{'max s':>8}{'q/CPU-s':>10}"
        f"{'CPU time / dense':>18}",
    ]
    for name, entry in results.items():
        if not isinstance(entry, dict):
            continue
        lines.append(
            f"{name:<24}{entry['questions_per_s']:>9.1f}{entry['min_s']:>8.3f}"
            f"{entry['max_s']:>8.3f}{entry['questions_per_cpu_s']:>10.1f}"
            f"{ours / entry['questions_per_cpu_s']:>18.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 4, width 8, 1 rep")
    parser.add_argument("--batch", type=int, default=64, help="questions per step (paper 64)")
    parser.add_argument("--width", type=int, default=128, help="g / f width (paper 512)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--min-objects", type=int, default=3, choices=range(1, MAX_OBJECTS + 1),
                        help="scenes hold min-objects..10 objects (CLEVR: 3)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    batch_size, width, reps = (4, 8, 1) if args.quick else (args.batch, args.width, args.reps)
    results = measure(batch_size, width, reps, args.min_objects)
    print(format_table(batch_size, width, results))
    summary = {"batch_size": batch_size, "width": width, "results": results}
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(summary, stream, indent=2)
    return summary


if __name__ == "__main__":
    main()
