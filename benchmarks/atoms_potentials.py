"""gnkit MACE and NequIP against mace-torch and nequip: energy + forces per second on the CPU.

    bash benchmarks/make_atoms_peers_venv.sh             # once: ~/.cache/gnkit-atoms-peers
    python -m benchmarks.atoms_potentials [--workloads aspirin8,aspirin32,cu500]
        [--models mace,nequip] [--reps 5] [--steps 2] [--threads 1,2] [--modes eager,script]
        [--malloc default,tuned] [--xla-flags gnkit,xla] [--peers-python PATH] [--no-peers]
        [--json PATH] [--quick]

Workloads (float32, cutoff 5 Å, the same neighbour list on every side): `aspirin8` / `aspirin32`,
the first 8 / 32 structures of rMD17 aspirin's test file as one batch (21 atoms each);
`cu500`, a rattled periodic fcc copper cell of 500 atoms (`bulk("Cu", a=3.6, cubic=True) *
(5, 5, 5)`). Models of equal size on both sides:

- MACE: 2 interactions, `64x0e + 64x1o` hidden, `max_ell` 3, correlation 3, 8 Bessel
  functions, polynomial envelope p = 5, radial MLP [64, 64, 64], 16-scalar last readout (mace's
  `ScaleShiftMACE` with `RealAgnosticResidualInteractionBlock`, first `RealAgnosticInteraction
  Block`); gnkit `gnkit.atoms.nn.MACE` with the same arguments;
- NequIP: 4 layers, 32 features, `l_max` 1, parity (`32x0e + 32x0o + 32x1e + 32x1o`), 8
  Bessel functions, p = 6, radial MLP [64, 64], 16-scalar readout (nequip 0.6.2's
  `SimpleIrrepsConfig`, `EnergyModel`, `ForceOutput`); gnkit `gnkit.atoms.nn.NequIP`.

Both use the workload's mean neighbour count as `avg_num_neighbors`. Each contender runs in its
own worker process (so its peak RSS is its own): gnkit in this Python, jitted
(`energy_forces_stress(..., stress=False)`, compiled ahead of time, compile seconds and the
number of XLA compilations reported); the peers in `--peers-python` (the venv of
`make_atoms_peers_venv.sh`), eager and TorchScript (`e3nn.util.jit.compile`), at each torch
thread count of `--threads`, each under glibc's default allocator and under
`MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736` ("tuned"; `--malloc`); gnkit also,
with `--xla-flags gnkit,xla`, without the XLA flag `import gnkit` adds (`gnkit.tuning`). Rounds
interleave the contenders: each round every worker times `--steps` energy + forces calls, and a
contender's number is its best call over `--reps` rounds. Printed: parameters per side, seconds
per call, structures/s, atoms/s, peak RSS, and per workload gnkit (default allocator first, then
its best) against each peer's best setting. Host orchestration; workers on the CPU.

The worker half of this file imports only NumPy and the standard library at module level, so the
peers' venv runs it as a script (`PYTHON benchmarks/atoms_potentials.py --worker ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.provenance import git_commit

REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = Path.home() / ".cache" / "gnkit-atoms-peers" / "bin" / "python"
CUTOFF = 5.0
TUNED_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}
PEERS = {"mace": "mace-torch", "nequip": "nequip"}
MODES = ("eager", "script")
MALLOCS = ("default", "tuned")
XLA_FLAGS = ("gnkit", "xla")
ASPIRIN_TEST_FRAMES = 1800

MACE_SIZE = {"num_interactions": 2, "hidden_irreps": "64x0e + 64x1o", "max_l": 3,
             "correlation": 3, "num_basis": 8, "envelope_p": 5, "radial_mlp": (64, 64, 64),
             "readout_features": 16}
NEQUIP_SIZE = {"num_layers": 4, "num_features": 32, "l_max": 1, "num_basis": 8,
               "envelope_p": 6, "radial_mlp": (64, 64), "readout_features": 16}
QUICK_MACE = {**MACE_SIZE, "hidden_irreps": "8x0e + 8x1o", "max_l": 2, "correlation": 2,
              "radial_mlp": (8,), "readout_features": 4}
QUICK_NEQUIP = {**NEQUIP_SIZE, "num_layers": 2, "num_features": 4, "radial_mlp": (8,),
                "readout_features": 2}


# ---------------------------------------------------------------- workloads (gnkit's env, host)


def workload_count(name: str) -> tuple[str, int]:
    """A workload name's kind and count: `"aspirin8"` -> `("aspirin", 8)`. Host.

    Raises:
      ValueError: naming the workload unless it is `aspirinN` (N from 1 to 1,800, the shipped
        test frames) or `cuN` (N at least 4, one cubic cell).
    """
    match = re.fullmatch(r"(aspirin|cu)(\d+)", name)
    kind, count = (match[1], int(match[2])) if match else (None, 0)
    in_range = 1 <= count <= ASPIRIN_TEST_FRAMES if kind == "aspirin" else count >= 4
    if kind is None or not in_range:
        raise ValueError(f"workload {name!r} is not aspirinN (N from 1 to {ASPIRIN_TEST_FRAMES}) "
                         "or cuN (N at least 4)")
    return kind, count


def workload_arrays(name: str) -> dict[str, np.ndarray]:
    """One workload as plain arrays, gnkit.atoms' layout (host; needs gnkit.atoms).

    `aspirinN`: the first N structures of the shipped aspirin test file as one batch; `cuN`: a
    rattled fcc copper cell of about N atoms (a cube of 4-atom cells). Returns positions
    `[n_atoms, 3]` float32, atomic_numbers int32 `[n_atoms]`, senders / receivers int32
    `[n_edges]` (ASE's i / j), integer cell shifts `[n_edges, 3]`, cell `[n_graph, 3, 3]`, pbc
    `[n_graph, 3]`, n_node / n_edge `[n_graph]`.
    """
    from gnkit.atoms import atoms_to_graph, read_graphs
    from gnkit.atoms.datasets import aspirin_path
    from gnkit.batching import batch_np

    kind, count = workload_count(name)
    if kind == "aspirin":
        graphs = read_graphs(str(aspirin_path("test")), CUTOFF, index=f":{count}", targets=(),
                             dtype=np.float32)
    else:
        from ase.build import bulk

        repeat = round((count / 4) ** (1 / 3))
        atoms = bulk("Cu", "fcc", a=3.6, cubic=True) * (repeat, repeat, repeat)
        atoms.rattle(stdev=0.05, seed=0)
        graphs = [atoms_to_graph(atoms, CUTOFF, targets=(), dtype=np.float32)]
    graph = batch_np(graphs)
    return {
        "positions": np.asarray(graph.nodes["positions"], np.float32),
        "atomic_numbers": np.asarray(graph.nodes["atomic_numbers"], np.int32),
        "senders": np.asarray(graph.senders, np.int32),
        "receivers": np.asarray(graph.receivers, np.int32),
        "shifts": np.asarray(graph.edges["shifts"], np.float32),
        "cell": np.asarray(graph.globals["cell"], np.float32),
        "pbc": np.asarray(graph.globals["pbc"], bool),
        "n_node": np.asarray(graph.n_node, np.int32),
        "n_edge": np.asarray(graph.n_edge, np.int32),
    }


def species_of(arrays: dict) -> tuple[int, ...]:
    """The sorted atomic numbers present in a workload."""
    return tuple(int(z) for z in np.unique(arrays["atomic_numbers"]))


def mean_neighbors(arrays: dict) -> float:
    """Edges per atom, the models' `avg_num_neighbors`."""
    return len(arrays["senders"]) / len(arrays["positions"])


# ---------------------------------------------------------------- workers (either env)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    """The resident set size now (Linux; 0 elsewhere)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0.0
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


def _gnkit_contender(arrays: dict, model_name: str, sizes: dict):
    """gnkit's jitted energy + forces call; `(call, info, compile_count)`."""
    import jax
    import jax.monitoring
    import jax.numpy as jnp

    from gnkit.atoms.nn import MACE, NequIP
    from gnkit.atoms.potential import energy_forces_stress, structure_energies
    from gnkit.graph import GraphsTuple

    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kwargs: compiles.append(seconds)
        if event == "/jax/core/compile/backend_compile_duration" else None
    )
    graph = GraphsTuple(
        nodes={"positions": jnp.asarray(arrays["positions"]),
               "atomic_numbers": jnp.asarray(arrays["atomic_numbers"])},
        edges={"shifts": jnp.asarray(arrays["shifts"])},
        senders=jnp.asarray(arrays["senders"]), receivers=jnp.asarray(arrays["receivers"]),
        globals={"cell": jnp.asarray(arrays["cell"]), "pbc": jnp.asarray(arrays["pbc"])},
        n_node=jnp.asarray(arrays["n_node"]), n_edge=jnp.asarray(arrays["n_edge"]),
    )
    common = {"species": species_of(arrays), "cutoff": CUTOFF,
              "avg_num_neighbors": mean_neighbors(arrays)}
    if model_name == "mace":
        model = MACE(**common, **sizes)
    else:
        hidden = " + ".join(f"{sizes['num_features']}x{degree}{parity}"
                            for degree in range(sizes["l_max"] + 1) for parity in "eo")
        model = NequIP(**common, num_layers=sizes["num_layers"], hidden_irreps=hidden,
                       max_l=sizes["l_max"], num_basis=sizes["num_basis"],
                       envelope_p=sizes["envelope_p"], radial_mlp=sizes["radial_mlp"],
                       readout_features=sizes["readout_features"])
    params = jax.jit(model.init)(jax.random.key(0), graph)  # one compile, not one per op

    def energy_forces(params, graph):
        prediction = energy_forces_stress(
            lambda g: structure_energies(model.apply(params, g), g), graph, stress=False
        )
        return prediction["energy"], prediction["forces"]

    before = len(compiles)
    start = time.perf_counter()
    compiled = jax.jit(energy_forces).lower(params, graph).compile()
    compile_s = time.perf_counter() - start
    after = len(compiles)
    memory = compiled.memory_analysis()
    info = {
        "params": int(sum(leaf.size for leaf in jax.tree.leaves(params))),
        "compile_s": compile_s,
        "compiles_of_the_step": after - before,
        "xla_temp_mb": memory.temp_size_in_bytes / 2**20 if memory else None,
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "xla_flags_env": os.environ.get("XLA_FLAGS", ""),
    }

    def call():
        return jax.block_until_ready(compiled(params, graph))

    def compile_count():
        return len(compiles) - after  # compilations since the step's: 0 when nothing retraces

    return call, info, compile_count


def _torch_data(arrays: dict, peer: str, torch, species: tuple[int, ...]) -> dict:
    """The workload as the peer's input dict (float32 tensors)."""
    index = np.searchsorted(np.asarray(species), arrays["atomic_numbers"])
    n_node = arrays["n_node"]
    batch = torch.as_tensor(np.repeat(np.arange(len(n_node)), n_node), dtype=torch.long)
    ptr = torch.as_tensor(np.concatenate([[0], np.cumsum(n_node)]), dtype=torch.long)
    edge_graph = np.repeat(np.arange(len(n_node)), arrays["n_edge"])
    edge_index = torch.as_tensor(np.stack([arrays["senders"], arrays["receivers"]]),
                                 dtype=torch.long)
    positions = torch.as_tensor(arrays["positions"])
    cell = torch.as_tensor(arrays["cell"])
    unit_shifts = torch.as_tensor(arrays["shifts"])
    if peer == "mace":
        shifts = torch.einsum("ei,eij->ej", unit_shifts, cell[torch.as_tensor(edge_graph)])
        return {
            "positions": positions, "node_attrs": torch.nn.functional.one_hot(
                torch.as_tensor(index), len(species)).to(torch.float32),
            "edge_index": edge_index, "shifts": shifts, "unit_shifts": unit_shifts,
            "cell": cell.reshape(-1, 3), "batch": batch, "ptr": ptr,
            "head": torch.zeros(len(n_node), dtype=torch.long),
        }
    return {
        "pos": positions, "edge_index": edge_index, "edge_cell_shift": unit_shifts,
        "cell": cell, "batch": batch, "ptr": ptr,
        "atom_types": torch.as_tensor(index, dtype=torch.long)[:, None],
        "pbc": torch.as_tensor(arrays["pbc"]),
    }


def mace_torch_model(species, avg_num_neighbors: float, sizes: dict):
    """mace-torch's `ScaleShiftMACE` at `sizes` (`MACE_SIZE`'s keys), untrained; peers' venv."""
    import torch
    from e3nn import o3
    from mace.modules import RealAgnosticInteractionBlock, RealAgnosticResidualInteractionBlock
    from mace.modules.models import ScaleShiftMACE

    return ScaleShiftMACE(
        r_max=CUTOFF, num_bessel=sizes["num_basis"],
        num_polynomial_cutoff=sizes["envelope_p"], max_ell=sizes["max_l"],
        interaction_cls=RealAgnosticResidualInteractionBlock,
        interaction_cls_first=RealAgnosticInteractionBlock,
        num_interactions=sizes["num_interactions"], num_elements=len(species),
        hidden_irreps=o3.Irreps(sizes["hidden_irreps"]),
        MLP_irreps=o3.Irreps(f"{sizes['readout_features']}x0e"),
        atomic_energies=np.zeros(len(species)), avg_num_neighbors=avg_num_neighbors,
        atomic_numbers=list(species), correlation=sizes["correlation"],
        gate=torch.nn.functional.silu, radial_MLP=list(sizes["radial_mlp"]),
        atomic_inter_scale=1.0, atomic_inter_shift=0.0,
    )


def _nequip_model(species, avg_num_neighbors: float, sizes: dict):
    from nequip.model import model_from_config

    config = {
        "model_builders": ["SimpleIrrepsConfig", "EnergyModel", "ForceOutput"],
        "r_max": CUTOFF, "num_layers": sizes["num_layers"], "l_max": sizes["l_max"],
        "parity": True, "num_features": sizes["num_features"],
        "nonlinearity_type": "gate", "num_basis": sizes["num_basis"],
        "BesselBasis_trainable": False, "PolynomialCutoff_p": sizes["envelope_p"],
        "invariant_layers": len(sizes["radial_mlp"]),
        "invariant_neurons": sizes["radial_mlp"][0], "use_sc": True,
        "avg_num_neighbors": avg_num_neighbors, "num_types": len(species),
        "type_names": [f"Z{z}" for z in species], "default_dtype": "float32",
        "model_dtype": "float32",
    }
    return model_from_config(config, initialize=False)


def _peer_contender(arrays: dict, model_name: str, sizes: dict, mode: str, threads: int):
    """A peer's energy + forces call (eager or TorchScript); `(call, info, compile_count)`.
    Warmed up at `threads` torch threads."""
    import torch

    # e3nn 0.4.4 (pinned by both peers) loads its own constants file with `torch.load`, which
    # since torch 2.6 accepts only allow-listed types; the file holds slices.
    torch.serialization.add_safe_globals([slice])
    torch.set_num_threads(threads)
    torch.set_default_dtype(torch.float32)
    species = species_of(arrays)
    build = mace_torch_model if model_name == "mace" else _nequip_model
    model = build(species, mean_neighbors(arrays), sizes).to(torch.float32).eval()
    info = {"params": int(sum(p.numel() for p in model.parameters())), "torch": torch.__version__,
            "mode": mode}
    if model_name == "mace":
        import mace

        info["mace"] = mace.__version__
    else:
        import nequip

        info["nequip"] = nequip.__version__
    start = time.perf_counter()
    if mode == "script":
        from e3nn.util import jit

        model = jit.compile(model)
    data = _torch_data(arrays, model_name, torch, species)

    if model_name == "mace":
        def run():
            out = model(dict(data), training=False, compute_force=True)
            return out["energy"].detach(), out["forces"].detach()
    else:
        def run():
            out = model(dict(data, pos=data["pos"].clone()))
            return out["total_energy"].detach(), out["forces"].detach()

    for _ in range(3 if mode == "script" else 1):  # TorchScript's profiling runs
        run()
    info["compile_s"] = time.perf_counter() - start
    return run, info, lambda: None


def worker_main(args) -> None:
    """A worker: builds one contender, then answers `time` / `quit` lines on stdin (JSON out)."""
    protocol, sys.stdout = sys.stdout, sys.stderr  # what the libraries print goes to stderr
    arrays = dict(np.load(args.arrays))
    sizes = json.loads(args.sizes)
    baseline = _peak_rss_mb()
    if args.worker == "gnkit":
        call, info, compile_count = _gnkit_contender(arrays, args.model, sizes)
    else:
        call, info, compile_count = _peer_contender(arrays, args.model, sizes, args.mode,
                                                    args.threads)
    start = time.perf_counter()
    energy, forces = (np.asarray(x) for x in call())
    info["first_call_s"] = time.perf_counter() - start
    info["finite"] = bool(np.isfinite(energy).all() and np.isfinite(forces).all())
    info["rss_after_imports_mb"] = baseline
    print(json.dumps({"ready": info}), file=protocol, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "quit":
            break
        if request.get("threads"):
            import torch

            torch.set_num_threads(request["threads"])
        times, cpu_times = [], []
        for _ in range(request["steps"]):
            start, cpu_start = time.perf_counter(), time.process_time()
            call()
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
        print(json.dumps({"times": times, "cpu_times": cpu_times, "peak_rss_mb": _peak_rss_mb(),
                          "rss_mb": _rss_mb(), "compiles": compile_count()}),
              file=protocol, flush=True)


# ---------------------------------------------------------------- orchestration (gnkit's env)


class Worker:
    """One contender's worker process, talking JSON lines; a peer's times per thread count."""

    def __init__(self, setting: dict, command: list[str], env: dict):
        self.setting = setting
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env, cwd=REPO)
        self.info = self._read()["ready"]
        self.times: dict[int | None, list[float]] = {}
        self.cpu_times: dict[int | None, list[float]] = {}
        self.peak_rss_mb = self.rss_mb = 0.0
        self.compiles = None

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{label_of(self.setting)}: worker exited "
                               f"(code {self.process.wait()})")
        return json.loads(line)

    def time(self, steps: int, threads: int | None = None) -> None:
        request = {"cmd": "time", "steps": steps, "threads": threads}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        self.times.setdefault(threads, []).extend(answer["times"])
        self.cpu_times.setdefault(threads, []).extend(answer["cpu_times"])
        self.peak_rss_mb, self.rss_mb = answer["peak_rss_mb"], answer["rss_mb"]
        self.compiles = answer["compiles"]

    def close(self) -> None:
        self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.process.stdin.close()
        self.process.wait()


def contender_settings(model: str, args) -> list[dict]:
    """Every worker of one model: gnkit per XLA flags x allocator, the peer per mode x allocator
    (each peer worker is timed at every thread count of `args.threads`)."""
    settings = [{"side": "gnkit", "malloc": malloc, "xla_flags": flags}
                for flags in args.xla_flags for malloc in args.malloc]
    if not args.no_peers:
        settings += [{"side": PEERS[model], "mode": mode, "malloc": malloc}
                     for mode in args.modes for malloc in args.malloc]
    return settings


def label_of(setting: dict, threads: int | None = None) -> str:
    if setting["side"] == "gnkit":
        flags = "XLA's flags, " if setting["xla_flags"] == "xla" else ""
        return f"gnkit jit, {flags}{setting['malloc']} malloc"
    threads = f"{threads} thr, " if threads else ""
    return f"{setting['side']} {setting['mode']}, {threads}{setting['malloc']} malloc"


def _start(setting: dict, model: str, arrays_path: Path, sizes: dict, args) -> Worker:
    env = {key: value for key, value in os.environ.items() if key not in TUNED_MALLOC}
    if setting["malloc"] == "tuned":
        env.update(TUNED_MALLOC)
    if setting["side"] == "gnkit":
        # gnkit's workers share XLA's persistent cache: the first compiles, the others load.
        env["JAX_COMPILATION_CACHE_DIR"] = str(arrays_path.parent / "jax_cache")
        if setting["xla_flags"] == "xla":  # this process imported gnkit: take its flag out
            from gnkit import tuning

            env = {**tuning.foreign_jax_environment(env), tuning.SYSTEM_XLA_FLAGS_ENV: "1"}
        command = [sys.executable, "-m", "benchmarks.atoms_potentials"]
    else:
        command = [str(args.peers_python), "-m", "benchmarks.atoms_potentials", "--mode",
                   setting["mode"], "--threads", str(args.threads[0])]
        env.pop("PYTHONPATH", None)
    command += ["--worker", setting["side"], "--model", model, "--arrays", str(arrays_path),
                "--sizes", json.dumps(sizes)]
    return Worker(setting, command, env)


def run_pair(model: str, workload: str, arrays: dict, arrays_path: Path, args) -> dict:
    """All contenders of one model on one workload, rounds interleaved; the pair's record."""
    sizes = {"mace": QUICK_MACE if args.quick else MACE_SIZE,
             "nequip": QUICK_NEQUIP if args.quick else NEQUIP_SIZE}[model]
    workers, failed = [], {}
    for setting in contender_settings(model, args):
        try:
            workers.append(_start(setting, model, arrays_path, sizes, args))
        except Exception as error:  # a peer that cannot run is named, not fatal
            if setting["side"] == "gnkit":
                raise
            failed[label_of(setting)] = f"{type(error).__name__}: {error}"
    for _ in range(args.reps):
        for worker in workers:
            for threads in [None] if worker.setting["side"] == "gnkit" else args.threads:
                worker.time(args.steps, threads)
    n_graphs, n_atoms = len(arrays["n_node"]), len(arrays["positions"])
    rows = {}
    for worker in workers:
        worker.close()
        for threads, times in worker.times.items():
            best = min(times)
            rows[label_of(worker.setting, threads)] = {
                **worker.setting, "threads": threads, **worker.info, "best_s": best,
                "median_s": float(np.median(times)), "calls": len(times),
                "best_cpu_s": min(worker.cpu_times[threads]),
                "structures_per_s": n_graphs / best, "atoms_per_s": n_atoms / best,
                "peak_rss_mb": worker.peak_rss_mb, "rss_mb": worker.rss_mb,
                "compiles_while_timed": worker.compiles,
            }
    return {"model": model, "workload": workload, "sizes": sizes, "n_graphs": n_graphs,
            "n_atoms": n_atoms, "n_edges": len(arrays["senders"]),
            "avg_num_neighbors": mean_neighbors(arrays), "rows": rows, "failed": failed,
            "summary": summarise(rows)}


def summarise(rows: dict) -> list[dict]:
    """Per peer: its best setting against gnkit under the default allocator and at its best."""
    gnkit = {label: row for label, row in rows.items() if row["side"] == "gnkit"}
    default = [row for row in gnkit.values()
               if row["malloc"] == "default" and row["xla_flags"] == "gnkit"]
    gnkit_best = min(gnkit, key=lambda label: gnkit[label]["best_s"])
    summary = []
    for side in sorted({row["side"] for row in rows.values()} - {"gnkit"}):
        peer = {label: row for label, row in rows.items() if row["side"] == side}
        peer_best = min(peer, key=lambda label: peer[label]["best_s"])
        entry = {"peer": side, "peer_best_setting": peer_best,
                 "peer_best_s": peer[peer_best]["best_s"],
                 "gnkit_best_setting": gnkit_best, "gnkit_best_s": gnkit[gnkit_best]["best_s"],
                 "speedup": peer[peer_best]["best_s"] / gnkit[gnkit_best]["best_s"]}
        if default:
            entry["gnkit_default_s"] = default[0]["best_s"]
            entry["speedup_default"] = peer[peer_best]["best_s"] / default[0]["best_s"]
        summary.append(entry)
    return summary


def format_pair(record: dict) -> str:
    lines = [f"\n{record['model']} on {record['workload']}: {record['n_graphs']} structures, "
             f"{record['n_atoms']} atoms, {record['n_edges']} edges",
             f"{'contender':<42}{'params':>9}{'best ms':>10}{'median ms':>11}"
             f"{'CPU ms':>9}{'struct/s':>10}{'atoms/s':>10}{'peak RSS':>10}{'RSS':>7}"
             f"{'compile s':>11}"]
    for label, row in record["rows"].items():
        lines.append(f"{label:<42}{row['params']:>9}{row['best_s'] * 1e3:>10.1f}"
                     f"{row['median_s'] * 1e3:>11.1f}{row['best_cpu_s'] * 1e3:>9.0f}"
                     f"{row['structures_per_s']:>10.1f}"
                     f"{row['atoms_per_s']:>10.0f}{row['peak_rss_mb']:>10.0f}{row['rss_mb']:>7.0f}"
                     f"{row['compile_s']:>11.2f}")
    for label, reason in record["failed"].items():
        lines.append(f"{label}: failed, {reason}")
    for entry in record["summary"]:
        default = (f"gnkit default malloc {entry['speedup_default']:.2f}x, "
                   if "speedup_default" in entry else "")
        lines.append(f"vs {entry['peer']} at its best ({entry['peer_best_setting']}): {default}"
                     f"gnkit best ({entry['gnkit_best_setting']}) {entry['speedup']:.2f}x")
    return "\n".join(lines)


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="aspirin8,aspirin32,cu500")
    parser.add_argument("--models", default="mace,nequip")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--modes", default="eager,script")
    parser.add_argument("--malloc", default="default,tuned")
    parser.add_argument("--xla-flags", default="gnkit",
                        help="gnkit's workers under the XLA flags `import gnkit` sets (gnkit), "
                             "XLA's own (xla), or both (gnkit,xla)")
    parser.add_argument("--peers-python", type=Path, default=PEERS_PYTHON)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--quick", action="store_true", help="tiny models (the test's size)")
    parser.add_argument("--json")
    parser.add_argument("--worker")
    parser.add_argument("--model")
    parser.add_argument("--arrays")
    parser.add_argument("--sizes")
    parser.add_argument("--mode", default="eager")
    args = parser.parse_args(argv)
    if args.worker:
        args.threads = int(args.threads.split(",")[0])
        return args
    for flag, allowed in (("models", tuple(PEERS)), ("modes", MODES), ("malloc", MALLOCS),
                          ("xla_flags", XLA_FLAGS)):
        chosen = getattr(args, flag).split(",")
        unknown = [name for name in chosen if name not in allowed]
        if unknown:
            parser.error(f"--{flag}: {unknown} not among {allowed}")
        setattr(args, flag, chosen)
    for flag in ("reps", "steps"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if not all(part.isdigit() and int(part) > 0 for part in args.threads.split(",")):
        parser.error(f"--threads: expected positive integers, got {args.threads!r}")
    args.threads = [int(t) for t in args.threads.split(",")]
    args.workloads = args.workloads.split(",")
    for workload in args.workloads:
        try:
            workload_count(workload)
        except ValueError as error:
            parser.error(f"--workloads: {error}")
    if "default" in args.malloc:  # gnkit's default-allocator number comes first
        args.malloc = ["default"] + [m for m in args.malloc if m != "default"]
    if "gnkit" in args.xla_flags:  # and under gnkit's flags
        args.xla_flags = ["gnkit"] + [f for f in args.xla_flags if f != "gnkit"]
    return args


def main(argv=None) -> dict:
    args = _parse(argv)
    if args.worker:
        worker_main(args)
        return {}
    if not args.no_peers and not args.peers_python.exists():
        raise SystemExit(f"{args.peers_python} not found: run benchmarks/make_atoms_peers_venv.sh "
                         "or pass --no-peers")
    record = {
        "command": "python -m benchmarks.atoms_potentials " + " ".join(argv or sys.argv[1:]),
        "commit": git_commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor(),
                    "load_average": os.getloadavg()},
        "reps": args.reps, "steps": args.steps, "threads": args.threads, "modes": args.modes,
        "malloc": args.malloc, "pairs": [],
    }
    work = Path(tempfile.mkdtemp(prefix="atoms_potentials_"))
    for workload in args.workloads:
        arrays = workload_arrays(workload)
        path = work / f"{workload}.npz"
        np.savez(path, **arrays)
        for model in args.models:
            pair = run_pair(model, workload, arrays, path, args)
            record["pairs"].append(pair)
            print(format_pair(pair), flush=True)
            if args.json:  # after every pair, so a cut-short run keeps its rows
                Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    record["machine"]["load_average_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
