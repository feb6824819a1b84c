"""gnkit's GNS and LagrangeBench's own GNS trained on the same data, steps and sizes.

    python benchmarks/lagrangebench_compare.py --steps 1500 --json OUT.json

Both train on the shipped `tgv2d` set (`gnkit/data/particles/tgv2d`, LagrangeBench's layout) at
the demo's `quick` preset sizes (`gnkit.demos.particles.config.CONFIGS`), mapped to
LagrangeBench's arguments by `lagrangebench_settings`. gnkit trains in this process with the
demo's loss, optimiser, batches and compiled step; LagrangeBench 0.0.1 trains in a worker
process in its own venv (`benchmarks/make_lagrangebench_venv.sh`), through its `case_builder`,
`models.GNS` (haiku), `H5Dataset` and the trainer's jitted `_update` / `_mse`, in the loop of
its `Trainer` (noise, neighbour-list update and reallocation, pushforward sampling) with the
torch `DataLoader` at `num_workers=0` (the Trainer hard-codes 4 workers). The two train in
interleaved chunks of `--chunk` steps, so both see the same machine load; every
`--eval-every` steps both roll out the first `history + 1` frames of the test trajectory for
20 steps, scored by one function, `rollout_mse`.

Matched on purpose: LagrangeBench widens the velocity and acceleration standard deviations
with the noise (`sqrt(std**2 + noise_std**2)`, `data/utils.get_dataset_stats`); gnkit's side
gets the same widened statistics here (`widened_stats`); and the architecture: an encoder MLP
per field, one residual interaction block per message-passing step with its own parameters, no
globals, LayerNorm after every MLP but the decoder, `num_mlp_layers` = `num_layers` Linear
layers per MLP. Not matched (the report says so): LagrangeBench's 16-wide particle-type
embedding (one type on TGV: a learned constant), the libraries' weight initialisation, and the
windows drawn (LagrangeBench's `H5Dataset` has one window fewer per trajectory, and shuffles by
epoch; gnkit draws uniformly per update).

Host driver; the worker mode (`--worker`) needs only the LagrangeBench venv, not gnkit.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_VENV = pathlib.Path.home() / ".cache" / "gnkit-lagrangebench-venv"
ROLLOUT_STEPS = 20


def rollout_mse(predicted: np.ndarray, target: np.ndarray, box) -> float:
    """LagrangeBench's `mse` of a rollout: the mean over steps, particles and dims of the
    squared minimum-image position error. Host, NumPy.

    Args:
      predicted, target: positions `[steps, N, dim]`.
      box: periodic box lengths `[dim]` (the box starts at 0).

    Returns:
      The mean squared error (float); over 20 steps it is LagrangeBench's `mse20`.
    """
    predicted, target = np.asarray(predicted, np.float64), np.asarray(target, np.float64)
    if predicted.shape != target.shape or predicted.ndim != 3:
        raise ValueError(f"predicted {predicted.shape} and target {target.shape} must both be "
                         "[steps, N, dim]")
    box = np.asarray(box, np.float64)
    error = predicted - target
    error -= box * np.round(error / box)
    return float(np.mean(error**2))


def lagrangebench_settings(config, dataset_path, rollout_steps: int = ROLLOUT_STEPS) -> dict:
    """LagrangeBench's arguments for a `gnkit.demos.particles` config (JSON-ready).

    `input_seq_length` is `history + 1` (frames, not velocities); `num_mlp_layers` is
    `num_layers` (the same number of Linear layers in the encoder and processor MLPs); the
    neighbour-list multiplier is `capacity_growth`. Host.
    """
    return {
        "dataset_path": str(dataset_path),
        "input_seq_length": config.history + 1,
        "latent_size": config.latent_size,
        "num_mlp_layers": config.num_layers,
        "num_message_passing_steps": config.steps,
        "particle_type_embedding_size": 16,
        "noise_std": config.noise_std,
        "batch_size": config.batch_size,
        "lr_start": config.learning_rate,
        "lr_final": config.lr_final,
        "lr_decay_steps": config.lr_decay_steps,
        "lr_decay_rate": config.lr_decay_rate,
        "neighbor_list_multiplier": config.capacity_growth,
        "seed": config.seed,
        "rollout_steps": rollout_steps,
    }


def widened_stats(stats, noise_std: float):
    """`stats` (a `gnkit.particles.gns.Normalisation`) with LagrangeBench's widening:
    velocity and acceleration std become `sqrt(std**2 + noise_std**2)`. Host."""
    return dataclasses.replace(
        stats, vel_std=np.sqrt(stats.vel_std**2 + noise_std**2).astype(np.float32),
        acc_std=np.sqrt(stats.acc_std**2 + noise_std**2).astype(np.float32))


def _usage() -> dict:
    """This process's CPU seconds (user + system) and peak RSS in MiB."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_mib": usage.ru_maxrss / 1024}


# ----------------------------------------------------------------------------- gnkit side


class GnkitSide:
    """gnkit's GNS on the demo's pieces: `train(n)`, `rollout()` and `usage()` (host)."""

    def __init__(self, config, rollout_steps: int = ROLLOUT_STEPS):
        import jax

        from gnkit.demos.particles import data as demo_data
        from gnkit.demos.particles import training
        from gnkit.parallel import data_parallel

        self.config, self.rollout_steps = config, rollout_steps
        data = demo_data.load_data(config, None, False)
        self.data = dataclasses.replace(data, stats=widened_stats(data.stats, config.noise_std))
        self.strategy = data_parallel("single")
        self.step_fn = self.strategy.train_step(
            training.loss("gns", config, self.data), training.optimizer(config), has_aux=True)
        self.params = training.init("gns", config, self.data)
        self.opt_state = training.optimizer(config).init(self.params)
        self.batches = demo_data.make_batch(config, self.data)
        self.update = 0
        self.test = self.data.splits["test"][0]
        self._jax = jax

    def train(self, n_steps: int) -> dict:
        start = time.perf_counter()
        losses = []
        for _ in range(n_steps):
            batch = self.strategy.shard(self.batches(self.update))
            self.params, self.opt_state, metrics = self.step_fn(
                self.params, self.opt_state, batch)
            losses.append(metrics["loss"])
            self.update += 1
        self._jax.block_until_ready(self.params)
        return {"seconds": time.perf_counter() - start,
                "loss": float(np.mean([float(loss) for loss in losses]))}

    def rollout(self) -> tuple[np.ndarray, float]:
        """The test rollout `[rollout_steps, N, dim]` and its wall seconds."""
        from gnkit.demos.particles.training import rollout_of

        start = time.perf_counter()
        result = rollout_of("gns", self.config, self.data, self.params, self.test,
                            self.rollout_steps)
        seconds = time.perf_counter() - start
        if not result.complete:
            raise RuntimeError(f"gnkit rollout stopped: {result.message}")
        return result.positions, seconds

    def usage(self) -> dict:
        return _usage()


# ----------------------------------------------------------------------------- LB side


class LagrangeBenchWorker:
    """The worker process in LagrangeBench's venv, driven by one JSON line per command."""

    def __init__(self, python: pathlib.Path, settings: dict, log_path: pathlib.Path):
        from gnkit.tuning import foreign_jax_environment  # jax 0.4.13 there: no gnkit flags

        env = dict(foreign_jax_environment(), JAX_PLATFORMS="cpu", PYTHONPATH="")
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [str(python), __file__, "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True, env=env, cwd=ROOT)
        self.ask({"command": "setup", "settings": settings})

    def ask(self, message: dict) -> dict:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the LagrangeBench worker exited; see {self.log.name}")
        return json.loads(line)

    def train(self, n_steps: int) -> dict:
        return self.ask({"command": "train", "steps": n_steps})

    def rollout(self, path: pathlib.Path) -> tuple[np.ndarray, float, float]:
        """The test rollout `[rollout_steps, N, dim]`, its wall seconds and LagrangeBench's own
        `mse` of it (over those steps)."""
        reply = self.ask({"command": "rollout", "path": str(path)})
        return np.load(path), reply["seconds"], reply["lagrangebench_mse20"]

    def usage(self) -> dict:
        return self.ask({"command": "usage"})

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.log.close()


def _worker_main() -> None:
    """Serve commands on stdin; replies on stdout, LagrangeBench's prints on stderr."""
    replies, sys.stdout = sys.stdout, sys.stderr
    import e3nn_jax._src.tensor_products as tensor_products

    # lagrangebench 0.0.1's SEGNN imports a helper e3nn-jax 0.19.2+ dropped; GNS never calls it.
    if not hasattr(tensor_products, "naive_broadcast_decorator"):
        tensor_products.naive_broadcast_decorator = lambda function: function
    side = None
    for line in sys.stdin:
        message = json.loads(line)
        if message["command"] == "setup":
            side = _LagrangeBenchSide(message["settings"])
            reply = {"ok": True}
        elif message["command"] == "train":
            reply = side.train(message["steps"])
        elif message["command"] == "rollout":
            positions, seconds, own_mse = side.rollout()
            np.save(message["path"], positions)
            reply = {"seconds": seconds, "lagrangebench_mse20": own_mse}
        else:
            reply = _usage()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


class _LagrangeBenchSide:
    """LagrangeBench's GNS, trained in its Trainer's loop (worker process only)."""

    def __init__(self, settings: dict):
        import haiku as hk
        import jax
        import jax.numpy as jnp
        import optax
        from lagrangebench import GNS, H5Dataset, case_builder
        from lagrangebench.data.utils import numpy_collate
        from lagrangebench.evaluate import MetricsComputer
        from lagrangebench.train import trainer
        from lagrangebench.utils import LossConfig, PushforwardConfig, set_seed
        from torch.utils.data import DataLoader

        self.jax, self.jnp = jax, jnp
        isl = settings["input_seq_length"]
        path = settings["dataset_path"]
        self.train_set = H5Dataset("train", path, input_seq_length=isl)
        self.test_set = H5Dataset("test", path, input_seq_length=isl, is_rollout=True)
        metadata = self.train_set.metadata
        bounds = np.asarray(metadata["bounds"])
        self.case = case_builder(
            box=tuple(bounds[:, 1] - bounds[:, 0]), metadata=metadata, input_seq_length=isl,
            noise_std=settings["noise_std"],
            neighbor_list_multiplier=settings["neighbor_list_multiplier"])
        self.isl, self.noise_std = isl, settings["noise_std"]
        self.rollout_steps = settings["rollout_steps"]

        def model_fn(sample):
            return GNS(particle_dimension=metadata["dim"], latent_size=settings["latent_size"],
                       num_mlp_layers=settings["num_mlp_layers"],
                       num_message_passing_steps=settings["num_message_passing_steps"],
                       particle_type_embedding_size=settings["particle_type_embedding_size"],
                       )(sample)

        model = hk.without_apply_rng(hk.transform_with_state(model_fn))
        key, seed_worker, generator = set_seed(settings["seed"])
        self.loader = DataLoader(
            self.train_set, batch_size=settings["batch_size"], shuffle=True, num_workers=0,
            collate_fn=numpy_collate, drop_last=True, worker_init_fn=seed_worker,
            generator=generator)
        schedule = optax.exponential_decay(
            init_value=settings["lr_start"], transition_steps=settings["lr_decay_steps"],
            decay_rate=settings["lr_decay_rate"], end_value=settings["lr_final"])
        opt_init, opt_update = optax.adamw(learning_rate=schedule, weight_decay=1e-8)
        self.model_apply = jax.jit(model.apply)
        loss_fn = functools.partial(trainer._mse, model_fn=self.model_apply,
                                    loss_weight=LossConfig())
        self.update_fn = functools.partial(trainer._update, loss_fn=loss_fn,
                                           opt_update=opt_update)
        positions, particle_type = next(iter(self.loader))
        key, features, _, neighbors = self.case.allocate(key, (positions[0], particle_type[0]))
        key, subkey = jax.random.split(key)
        self.params, self.state = model.init(subkey, (features, particle_type[0]))
        self.opt_state = opt_init(self.params)
        self.preprocess_vmap = jax.vmap(self.case.preprocess, in_axes=(0, 0, None, 0, None))
        self.pushforward = PushforwardConfig()
        self.key = key
        self.keys = jax.random.split(key, settings["batch_size"])
        self.neighbors_batch = jax.tree_map(
            lambda x: jnp.repeat(x[None], settings["batch_size"], axis=0), neighbors)
        self.batch_size, self.step = settings["batch_size"], 0
        self.batches = iter(())
        self.metrics = MetricsComputer(["mse"], dist_fn=self.case.displacement,
                                       metadata=metadata, input_seq_length=isl)
        self._push_forward_sample_steps = trainer.push_forward_sample_steps

    def _next_batch(self):
        try:
            return next(self.batches)
        except StopIteration:
            self.batches = iter(self.loader)
            return next(self.batches)

    def train(self, n_steps: int) -> dict:
        """`n_steps` updates as LagrangeBench's Trainer makes them (no pushforward unrolls at
        its default config; an overflowing neighbour list is reallocated and the batch
        redrawn)."""
        jax, jnp = self.jax, self.jnp
        start, done, losses, reallocations = time.perf_counter(), 0, [], 0
        while done < n_steps:
            raw_batch = jax.tree_map(jnp.array, self._next_batch())
            self.key, unroll_steps = self._push_forward_sample_steps(
                self.key, self.step, self.pushforward)
            self.keys, features, target, self.neighbors_batch = self.preprocess_vmap(
                self.keys, raw_batch, self.noise_std, self.neighbors_batch, unroll_steps)
            if self.neighbors_batch.did_buffer_overflow.sum() > 0:
                index = int(jnp.argmax(self.neighbors_batch.did_buffer_overflow))
                sample = jax.tree_map(lambda x, index=index: x[index], raw_batch)
                _, _, _, neighbors = self.case.allocate(self.keys[0], sample)
                self.neighbors_batch = jax.tree_map(
                    lambda x: jnp.repeat(x[None], self.batch_size, axis=0), neighbors)
                reallocations += 1
                continue
            loss, self.params, self.state, self.opt_state = self.update_fn(
                params=self.params, state=self.state, features_batch=features,
                target_batch=target, particle_type_batch=raw_batch[1],
                opt_state=self.opt_state)
            losses.append(loss)
            self.step += 1
            done += 1
        jax.block_until_ready(self.params)
        return {"seconds": time.perf_counter() - start,
                "loss": float(np.mean([float(loss) for loss in losses])),
                "reallocations": reallocations}

    def rollout(self) -> tuple[np.ndarray, float, float]:
        from lagrangebench.evaluate.rollout import eval_single_rollout

        trajectory = self.test_set[0]
        start = time.perf_counter()
        _, neighbors = self.case.allocate_eval((trajectory[0][:, : self.isl], trajectory[1]))
        predictions, metrics, _ = eval_single_rollout(
            model_apply=self.model_apply, case=self.case, params=self.params, state=self.state,
            traj_i=trajectory, neighbors=neighbors, metrics_computer=self.metrics,
            n_rollout_steps=self.rollout_steps, t_window=self.isl)
        predictions = np.asarray(self.jax.block_until_ready(predictions))
        seconds = time.perf_counter() - start
        return predictions, seconds, float(np.mean(metrics["mse"]))


# ----------------------------------------------------------------------------- driver


def compare(steps: int, chunk: int, eval_every: int, rollout_repeats: int, venv: pathlib.Path,
            scratch: pathlib.Path, preset: str = "quick", overrides: dict | None = None) -> dict:
    """Train both for `steps` in interleaved chunks and compare them (host driver).

    Returns:
      A run record: `settings`, `rows` (`gnkit`, `lagrangebench`: `mse20` by `rollout_mse`,
      median train steps/s over the chunks after the first, rollout steps/s, peak RSS,
      CPU-minutes, the curve of `(step, train_loss, mse20)`), and the load averages seen.
    """
    from gnkit.demos.particles.config import CONFIGS
    from gnkit.particles import particle_dataset_path

    config = dataclasses.replace(CONFIGS[preset], case="tgv2d", updates=steps,
                                 **(overrides or {}))
    settings = lagrangebench_settings(config, particle_dataset_path("tgv2d"))
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    sides = {"gnkit": GnkitSide(config),
             "lagrangebench": LagrangeBenchWorker(venv / "bin" / "python", settings,
                                                  scratch / "lagrangebench_worker.log")}
    setup_seconds = time.perf_counter() - started
    box = sides["gnkit"].data.box
    target = sides["gnkit"].test[config.history + 1:][:ROLLOUT_STEPS]
    chunks = {name: [] for name in sides}
    curves = {name: [] for name in sides}
    loads = []

    def evaluate(name, side):
        if name == "gnkit":
            positions, seconds = side.rollout()
            own = None
        else:
            positions, seconds, own = side.rollout(scratch / "lagrangebench_rollout.npy")
        return rollout_mse(positions, target, box), seconds, own

    done = 0
    while done < steps:
        n = min(chunk, steps - done)
        for name, side in sides.items():
            chunks[name].append({"steps": n, **side.train(n)})
        done += n
        loads.append(os.getloadavg()[0])
        print(f"step {done}: " + ", ".join(
            f"{name} {chunks[name][-1]['steps'] / chunks[name][-1]['seconds']:.1f} steps/s "
            f"loss {chunks[name][-1]['loss']:.4f}" for name in sides)
            + f" (load {loads[-1]:.1f})", flush=True)
        if done % eval_every == 0 or done == steps:
            for name, side in sides.items():
                mse, _, _ = evaluate(name, side)
                curves[name].append({"step": done, "train_loss": chunks[name][-1]["loss"],
                                     "mse20": mse})
            print(f"  mse20: gnkit {curves['gnkit'][-1]['mse20']:.3e}, lagrangebench "
                  f"{curves['lagrangebench'][-1]['mse20']:.3e}", flush=True)
    rollouts = {name: [] for name in sides}
    final = {}
    for _ in range(rollout_repeats):
        for name, side in sides.items():
            final[name] = evaluate(name, side)
            rollouts[name].append(final[name][1])
    rows = {}
    for name, side in sides.items():
        timed = chunks[name][1:] or chunks[name]
        usage = side.usage()
        rows[name] = {
            "mse20": final[name][0],
            "train_steps_per_second": statistics.median(
                c["steps"] / c["seconds"] for c in timed),
            "train_steps_per_second_chunks": [round(c["steps"] / c["seconds"], 2)
                                              for c in chunks[name]],
            "first_chunk_seconds": chunks[name][0]["seconds"],
            "rollout_steps_per_second": ROLLOUT_STEPS / statistics.median(rollouts[name]),
            "peak_rss_mib": usage["peak_rss_mib"],
            "cpu_minutes": usage["cpu_seconds"] / 60,
            "train_wall_minutes": sum(c["seconds"] for c in chunks[name]) / 60,
            "curve": curves[name],
        }
    rows["lagrangebench"]["own_mse20"] = final["lagrangebench"][2]
    rows["lagrangebench"]["reallocations"] = sum(
        c["reallocations"] for c in chunks["lagrangebench"])
    sides["lagrangebench"].close()
    gnkit_row, lb_row = rows["gnkit"], rows["lagrangebench"]
    return {
        "settings": {"preset": preset, "steps": steps, "chunk": chunk,
                     "rollout_steps": ROLLOUT_STEPS, "lagrangebench": settings,
                     "gnkit": dataclasses.asdict(config)},
        "rows": rows,
        "mse20_ratio_gnkit_over_lagrangebench": gnkit_row["mse20"] / lb_row["mse20"],
        "train_speedup_gnkit_over_lagrangebench": (gnkit_row["train_steps_per_second"]
                                                   / lb_row["train_steps_per_second"]),
        "rollout_speedup_gnkit_over_lagrangebench": (gnkit_row["rollout_steps_per_second"]
                                                     / lb_row["rollout_steps_per_second"]),
        "setup_seconds": setup_seconds,
        "load_averages": loads,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="training steps of each")
    parser.add_argument("--chunk", type=int, default=100, help="steps per interleaved chunk")
    parser.add_argument("--eval-every", type=int, default=500, help="steps between rollouts")
    parser.add_argument("--rollout-repeats", type=int, default=3)
    parser.add_argument("--preset", default="quick", help="the demo preset whose sizes to use")
    parser.add_argument("--venv", type=pathlib.Path, default=DEFAULT_VENV)
    parser.add_argument("--scratch", type=pathlib.Path, default=ROOT / "runs" / "lagrangebench")
    parser.add_argument("--json", type=pathlib.Path, help="write the run record here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker_main()
        return
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    record = compare(args.steps, args.chunk, args.eval_every, args.rollout_repeats, args.venv,
                     args.scratch, args.preset)
    record["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                            text=True).stdout.strip()
    text = json.dumps(record, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(json.dumps({name: {k: v for k, v in row.items() if k != "curve"}
                      for name, row in record["rows"].items()}, indent=1))
    print(record["uptime_after"])


if __name__ == "__main__":
    main()
