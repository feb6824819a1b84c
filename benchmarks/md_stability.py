"""Molecular-dynamics stability of trained potentials: aspirin NVE 20 ps, an EMT metal NVE 10 ps.

    python -m benchmarks.md_stability [--quick] [--json PATH] [--speeds]
        [--aspirin-run-dir runs/md/aspirin] [--emt-run-dir runs/md_stability/emt_schnet]
        [--emt-model schnet] [--mace-torch-model PATH] [--float64]

Aspirin: a test frame of the demo's run directory (`gnkit potentials train --data aspirin`),
Maxwell-Boltzmann velocities at 300 K (ASE, centre-of-mass momentum removed), then NVE velocity
Verlet at 0.5 fs for 20 ps with gnkit's jitted loop (`gnkit.atoms.run_md`), and 2 ps from the
same start through gnkit's ASE `Calculator` with ASE's `VelocityVerlet`; the two trajectories
are compared at their first frames. Reported: the largest bond-length change over the run
(bonds: pairs closer than 1.2 times the sum of ASE's covalent radii at t = 0), the total-energy
drift per atom per ps (least-squares slope) and max |E(t) - E(0)| per atom, steps per second.
Beside them mace-torch's `MACECalculator` (mace-torch 0.3.14, in the peers' venv
`~/.cache/gnkit-atoms-peers`, a worker subprocess) on a MACE of the same sizes, untrained unless
`--mace-torch-model` names a file: steps per second do not depend on the weights. The three
speeds come from interleaved rounds (`--rounds`, median kept), the machine's load printed.

EMT: a 256-atom fcc Cu cell (4 x 4 x 4 conventional cells at EMT's lattice constant), 300 K,
NVE at 1 fs for 10 ps with the EMT run's model through `run_md`; drift per ps and max deviation
per atom against the 1 meV/atom bar; ASE's own EMT through ASE's `VelocityVerlet` for a short
stretch as the integrator's reference. `--speeds` first times SchNet, PaiNN and MACE (the demo's
quick sizes, untrained) in `run_md` on that cell, which picks the model that fits the CPU.

`--quick` runs every part for a few hundred steps. Host orchestration of jitted device loops.

The peer worker half imports only NumPy and the standard library at module level, so the peers'
venv runs this file as a script (`PYTHON benchmarks/md_stability.py --peer-worker ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PEERS_PYTHON = Path.home() / ".cache" / "gnkit-atoms-peers" / "bin" / "python"
WORK = REPO / "runs" / "md_stability"
#: Bonds are pairs closer than this multiple of the sum of their covalent radii at t = 0.
BOND_FACTOR = 1.2
#: The EMT case's bar on |E(t) - E(0)| per atom (eV).
EMT_BAR = 1e-3
#: The MACE sizes of mace-torch's peer: those of the demo's quick preset.
QUICK_MACE_SIZES = {"num_interactions": 2, "hidden_irreps": "32x0e + 32x1o", "max_l": 2,
                    "correlation": 2, "num_basis": 8, "envelope_p": 5,
                    "radial_mlp": [64, 64, 64], "readout_features": 16}


# ------------------------------------------------------------------ metrics (host, NumPy)


def bonds_at(positions: np.ndarray, numbers: np.ndarray, factor: float = BOND_FACTOR):
    """The bonded pairs of a molecule: `i < j` closer than `factor * (r_i + r_j)` (ASE's
    covalent radii). Host.

    Args:
      positions: `[n_atoms, 3]` in Å (no periodic images).
      numbers: `int [n_atoms]`.
      factor: the multiple of the radii sum.

    Returns:
      `int [n_bonds, 2]`.
    """
    from ase.data import covalent_radii

    radii = covalent_radii[np.asarray(numbers)]
    distances = np.linalg.norm(positions[:, None] - positions[None], axis=-1)
    first, second = np.nonzero(np.triu(distances < factor * (radii[:, None] + radii[None]), 1))
    return np.stack([first, second], axis=1)


def bond_changes(trajectory: np.ndarray, bonds: np.ndarray) -> np.ndarray:
    """`[n_frames]`: each frame's largest |d(t) - d(0)| over the bonds (Å). Host.

    Args:
      trajectory: `[n_frames, n_atoms, 3]`, frame 0 the start.
      bonds: `int [n_bonds, 2]`.
    """
    lengths = np.linalg.norm(trajectory[:, bonds[:, 0]] - trajectory[:, bonds[:, 1]], axis=-1)
    return np.max(np.abs(lengths - lengths[0]), axis=1)


def energy_drift(times_ps: np.ndarray, total_energy: np.ndarray, n_atoms: int) -> dict:
    """Total-energy conservation of a run. Host.

    Args:
      times_ps: `[n_frames]` in ps.
      total_energy: `[n_frames]` in eV.
      n_atoms: atoms of the system.

    Returns:
      `drift_ev_per_atom_per_ps`: the least-squares slope of `E(t) / n_atoms`;
      `max_deviation_ev_per_atom`: max |E(t) - E(0)| / n_atoms;
      `std_ev_per_atom`: the standard deviation of `E(t) / n_atoms`.
    """
    per_atom = np.asarray(total_energy, np.float64) / n_atoms
    slope = np.polyfit(np.asarray(times_ps, np.float64), per_atom, 1)[0]
    return {
        "drift_ev_per_atom_per_ps": float(slope),
        "max_deviation_ev_per_atom": float(np.max(np.abs(per_atom - per_atom[0]))),
        "std_ev_per_atom": float(np.std(per_atom)),
    }


def _load() -> str:
    return os.getloadavg().__repr__()


# ------------------------------------------------------------------ gnkit side (host drivers)


def load_potential(run_dir: Path, name: str):
    """A trained model of the potentials demo's run directory, as its eval verb restores it.

    Returns:
      `(model, params, scale_shift, config, data, run)`: the linen module, its best validated
      variables, the `ScaleShift` to eV relative to the E0s, the run's `PotentialsConfig`, its
      `PotentialData` and its `RunDir`.
    """
    from gnkit.demos.potentials import COMPARISON, training
    from gnkit.demos.potentials.config import PotentialsConfig
    from gnkit.demos.potentials.models import build_model, scale_shift
    from gnkit.experiments import runner
    from gnkit.experiments.run_dir import open_existing

    run = open_existing(Path(run_dir), PotentialsConfig)
    config = run.config
    data = COMPARISON.load_data(config, run, False)
    state = runner.trained_state(COMPARISON, name, config, run, data)
    params = training.averaged(state.params)
    return build_model(name, config, data), params, scale_shift(data), config, data, run


def _cast(tree, dtype):
    import jax
    import jax.numpy as jnp

    return jax.tree.map(
        lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.result_type(x), jnp.floating)
        else x, tree)


def _start_capacity(atoms, radius: float) -> int:
    """Pair slots for the list at the start with `grown_capacity`'s headroom (ASE's count of
    directed pairs within `radius`), so a run rarely grows (and recompiles) its list."""
    from ase.neighborlist import neighbor_list

    from gnkit.atoms.device_neighbors import grown_capacity

    return grown_capacity(len(neighbor_list("i", atoms, radius)), 1.25, 64)


class JaxMD:
    """gnkit's NVE loop on one structure: `run_md` with the model's energy on a Verlet list.

    Args:
      model, params, scale_shift: the potential (`load_potential`).
      atoms: the start (`ase.Atoms` with momenta).
      cutoff: the model's cutoff (Å).
      timestep_fs: the step in fs.
      dtype: float32 or float64 (the latter needs JAX's x64 mode).
      skin: the Verlet list's skin (Å).
    """

    def __init__(self, model, params, scale_shift, atoms, cutoff, timestep_fs, dtype=np.float32,
                 skin: float = 0.5):
        import ase.units
        import jax.numpy as jnp

        from gnkit.atoms import NeighborSettings, VelocityVerlet, model_energy_fn

        self.atoms = atoms
        self.dtype = dtype
        self.energy_fn = model_energy_fn(model, _cast(params, dtype), atoms.numbers,
                                         atoms.cell[:], atoms.pbc, scale_shift=scale_shift)
        self.integrator = VelocityVerlet(timestep_fs * ase.units.fs)
        capacity = _start_capacity(atoms, cutoff + skin)
        self.settings = NeighborSettings(cutoff=cutoff, skin=skin, cell=atoms.cell[:],
                                         pbc=atoms.pbc, capacity=capacity)
        self._jnp = jnp

    def start(self):
        """The `MDState` at the atoms' positions and momenta."""
        from gnkit.atoms import init_md_state

        jnp = self._jnp
        return init_md_state(jnp.asarray(self.atoms.positions, self.dtype),
                             self.atoms.get_masses(), self.energy_fn, self.settings,
                             momenta=jnp.asarray(self.atoms.get_momenta(), self.dtype))

    def run(self, state, n_steps: int, chunk_steps: int, write_every: int, trajectory=None):
        """`run_md` from `state`, keeping the grown capacity. Returns `(state, wall seconds)`."""
        import dataclasses

        from gnkit.atoms import run_md

        begin = time.perf_counter()
        state, stats = run_md(state, self.energy_fn, n_steps, self.integrator, self.settings,
                              chunk_steps=chunk_steps, write_every=write_every,
                              trajectory=trajectory, atoms=self.atoms)
        state.positions.block_until_ready()
        seconds = time.perf_counter() - begin
        if stats.capacity != self.settings.capacity:
            self.settings = dataclasses.replace(self.settings, capacity=stats.capacity)
        return state, seconds


def read_trajectory(path: Path) -> dict:
    """Positions `[T, N, 3]`, potential and kinetic energies `[T]` (eV), steps `[T]` of an
    extended XYZ trajectory written by `run_md`. Host."""
    import ase.io

    frames = ase.io.read(path, index=":", format="extxyz")
    return {
        "positions": np.stack([frame.positions for frame in frames]),
        "potential": np.array([frame.get_potential_energy() for frame in frames]),
        "kinetic": np.array([frame.get_kinetic_energy() for frame in frames]),
        "step": np.array([frame.info["step"] for frame in frames]),
    }


def thermalised(atoms, temperature: float, seed: int):
    """`atoms` (a copy) with Maxwell-Boltzmann momenta at `temperature` K, no net momentum."""
    from ase.md import velocitydistribution
    from ase.md.velocitydistribution import Stationary

    # Newer ASE deprecates MaxwellBoltzmannDistribution for thermalize_momenta (the same draws).
    thermalise = getattr(velocitydistribution, "thermalize_momenta",
                         velocitydistribution.MaxwellBoltzmannDistribution)
    atoms = atoms.copy()
    thermalise(atoms, temperature_K=temperature, rng=np.random.default_rng(seed))
    Stationary(atoms)
    return atoms


def fcc_copper(repeats: int = 4):
    """The fcc Cu cell of `repeats^3` conventional cells at EMT's lattice constant."""
    from ase.build import bulk

    from gnkit.atoms.datasets.emt import EMT_LATTICE_CONSTANTS

    return bulk("Cu", "fcc", a=EMT_LATTICE_CONSTANTS["Cu"], cubic=True).repeat(repeats)


def model_speeds(emt_run_dir: Path, names, n_steps: int, rounds: int) -> dict:
    """Steps per second of each of `names` (untrained, the EMT run's config sizes) in `run_md`
    on the 256-atom Cu cell at 300 K, float32: compile seconds, then `rounds` timed runs of
    `n_steps` each, interleaved across the models (median and best kept). Host driver."""
    from gnkit.demos.potentials import COMPARISON, training
    from gnkit.demos.potentials.config import PotentialsConfig
    from gnkit.demos.potentials.models import build_model, scale_shift
    from gnkit.experiments.run_dir import open_existing

    run = open_existing(Path(emt_run_dir), PotentialsConfig)
    data = COMPARISON.load_data(run.config, run, False)
    atoms = thermalised(fcc_copper(), 300.0, seed=0)
    loops, states, result = {}, {}, {}
    for name in names:
        params = training.averaged(training.init(name, run.config, data))
        loops[name] = JaxMD(build_model(name, run.config, data), params, scale_shift(data), atoms,
                            run.config.cutoff, 1.0)
        begin = time.perf_counter()
        states[name], _ = loops[name].run(loops[name].start(), n_steps, n_steps, n_steps)
        result[name] = {"compile_and_first_s": time.perf_counter() - begin, "seconds": []}
        print(f"{name}: compiled and ran {n_steps} steps in "
              f"{result[name]['compile_and_first_s']:.1f} s", flush=True)
    for _ in range(rounds):
        for name in names:
            states[name], seconds = loops[name].run(states[name], n_steps, n_steps, n_steps)
            result[name]["seconds"].append(seconds)
    for name in names:
        median = statistics.median(result[name]["seconds"])
        result[name]["steps_per_s"] = n_steps / median
        result[name]["best_steps_per_s"] = n_steps / min(result[name]["seconds"])
        result[name]["wall_minutes_for_10000_steps"] = 10_000 / result[name]["steps_per_s"] / 60
        print(f"{name}: {result[name]['steps_per_s']:.2f} steps/s (load {_load()})", flush=True)
    return {"atoms": len(atoms), "steps_per_round": n_steps, "rounds": rounds, "models": result,
            "load": _load()}


# ------------------------------------------------------------------ mace-torch peer (its venv)


def peer_worker(args) -> None:
    """mace-torch's `MACECalculator` driving ASE's `VelocityVerlet` from the start in
    `args.atoms`; answers lines `N` on stdin with `{"seconds": ...}` for N more steps (JSON on
    stdout). Runs in the peers' venv."""
    protocol, sys.stdout = sys.stdout, sys.stderr
    import ase.io
    import ase.units
    import torch
    from ase.md.verlet import VelocityVerlet
    from mace.calculators import MACECalculator

    torch.serialization.add_safe_globals([slice])
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(args.threads)
    atoms = ase.io.read(args.atoms, format="extxyz")
    momenta = atoms.get_momenta()
    species = sorted(int(z) for z in args.species.split(","))
    if args.peer_model:
        model = torch.load(args.peer_model, map_location="cpu", weights_only=False)
        source = f"trained: {args.peer_model}"
    else:
        sys.path.insert(0, str(REPO))
        from benchmarks.atoms_potentials import mace_torch_model

        model = mace_torch_model(species, args.avg_neighbors, json.loads(args.sizes))
        source = "untrained, the same sizes"
    model = model.to(torch.float32).eval()
    info = {"params": int(sum(p.numel() for p in model.parameters())), "source": source,
            "threads": torch.get_num_threads(), "torch": torch.__version__}
    import mace

    info["mace"] = mace.__version__
    atoms.calc = MACECalculator(models=[model], device="cpu", default_dtype="float32")
    atoms.set_momenta(momenta)
    dynamics = VelocityVerlet(atoms, timestep=args.timestep_fs * ase.units.fs)
    dynamics.run(2)
    print(json.dumps(info), file=protocol, flush=True)
    for line in sys.stdin:
        n_steps = int(line)
        begin = time.perf_counter()
        dynamics.run(n_steps)
        print(json.dumps({"seconds": time.perf_counter() - begin,
                          "energy": float(atoms.get_total_energy())}), file=protocol, flush=True)


class PeerWorker:
    """The host side of `peer_worker`: a subprocess in `python`; `steps(n)` times n steps."""

    def __init__(self, python: Path, atoms, species, avg_neighbors: float, timestep_fs: float,
                 model: Path | None, work: Path, threads: int = 1):
        import ase.io

        path = work / "peer_start.xyz"
        ase.io.write(path, atoms, format="extxyz")
        command = [str(python), str(Path(__file__).resolve()), "--peer-worker", "--atoms",
                   str(path), "--species", ",".join(map(str, species)), "--avg-neighbors",
                   str(avg_neighbors), "--timestep-fs", str(timestep_fs), "--sizes",
                   json.dumps(QUICK_MACE_SIZES), "--peer-model", str(model or ""),
                   "--threads", str(threads)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=open(work / "peer_worker.log", "w"), text=True)
        self.info = self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the mace-torch worker stopped; see peer_worker.log")
        return json.loads(line)

    def steps(self, n_steps: int) -> float:
        self.process.stdin.write(f"{n_steps}\n")
        self.process.stdin.flush()
        return self._answer()["seconds"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


# ------------------------------------------------------------------ the two cases (host)


def ase_run(atoms, calculator, timestep_fs: float, n_steps: int, write_every: int):
    """ASE's `VelocityVerlet` from `atoms` (copied) with `calculator`, a frame every
    `write_every` steps from step 0. Returns `(record, dynamics, seconds)`: positions `[T, N, 3]`,
    total energies `[T]`, steps `[T]`; the dynamics to go on with; the run's wall seconds."""
    import ase.units
    from ase.md.verlet import VelocityVerlet

    atoms = atoms.copy()
    atoms.calc = calculator
    atoms.get_potential_energy()  # compiles a jitted calculator before the clock starts
    dynamics = VelocityVerlet(atoms, timestep=timestep_fs * ase.units.fs)
    record = {"positions": [], "total": [], "step": []}

    def observe():
        record["positions"].append(atoms.positions.copy())
        record["total"].append(atoms.get_total_energy())
        record["step"].append(dynamics.nsteps)

    dynamics.attach(observe, interval=write_every)
    begin = time.perf_counter()
    dynamics.run(n_steps)
    seconds = time.perf_counter() - begin
    return {key: np.asarray(value) for key, value in record.items()}, dynamics, seconds


def _series(times_ps, values, points: int = 200) -> dict:
    """At most `points` evenly spaced samples of a curve, for the record and its plot."""
    rows = np.unique(np.linspace(0, len(times_ps) - 1, min(points, len(times_ps))).round()
                     .astype(int))
    return {"t_ps": [round(float(times_ps[i]), 4) for i in rows],
            "value": [float(values[i]) for i in rows]}


def _conservation(times_ps, total, n_atoms) -> dict:
    metrics = energy_drift(times_ps, total, n_atoms)
    per_atom = (np.asarray(total, np.float64) - total[0]) / n_atoms
    metrics["energy_series_ev_per_atom"] = _series(times_ps, per_atom)
    return metrics


def _agreement(first: dict, second_positions, second_total, steps, dt_fs, n_atoms) -> dict:
    """Max |r_1 - r_2| (Å) and |E_1 - E_2| per atom (eV) over the frames both runs wrote, up
    to 50 fs and 500 fs."""
    common = min(len(first["step"]), len(steps))
    result = {}
    for horizon_fs in (50, 500):
        rows = [i for i in range(common) if steps[i] * dt_fs <= horizon_fs]
        positions = np.abs(first["positions"][rows] - second_positions[rows]).max()
        energies = np.abs(first["total"][rows] - second_total[rows]).max() / n_atoms
        result[f"{horizon_fs}_fs"] = {"max_position_difference": float(positions),
                                      "max_energy_difference_ev_per_atom": float(energies)}
    return result


def _temperature(kinetic: np.ndarray, n_atoms: int) -> float:
    """The mean kinetic temperature (K) of a run, all 3N degrees of freedom."""
    from ase.units import kB

    return float(np.mean(kinetic) * 2 / (3 * n_atoms * kB))


def _timed_run(loop: JaxMD, steps: int, chunk: int, write_every: int, path: Path):
    """`steps` of `loop` from its start, frames to `path`: the first chunk (compiling) apart
    from the rest. Returns `(compile and first chunk seconds, steps/s of the rest or None)`."""
    first = min(chunk, steps)
    state, compile_s = loop.run(loop.start(), first, chunk, write_every, trajectory=path)
    if steps == first:
        return compile_s, None
    _, seconds = loop.run(state, steps - first, chunk, write_every, trajectory=path)
    return compile_s, (steps - first) / seconds


def _trajectory_path(work: Path, name: str) -> Path:
    path = work / name
    path.unlink(missing_ok=True)
    return path


def aspirin_case(potential, work: Path, *, steps: int, ase_steps: int, write_every: int,
                 chunk: int, timed_steps: int, rounds: int, peer_python: Path | None,
                 peer_model: Path | None, seed: int = 0) -> dict:
    """The aspirin NVE runs (JAX loop, ASE calculator), their metrics, and the interleaved
    steps/s of both against mace-torch's calculator (see the module docstring). Host."""
    import jax

    from gnkit.atoms import Calculator
    from gnkit.demos.potentials.data import split_structures

    model, params, outputs_to_ev, config, data, run = potential
    timestep_fs = 0.5
    atoms = thermalised(split_structures(config, run, False)["test"][0], 300.0, seed)
    n_atoms = len(atoms)
    loop = JaxMD(model, params, outputs_to_ev, atoms, config.cutoff, timestep_fs)
    path = _trajectory_path(work, "aspirin_jax.xyz")
    compile_s, steps_per_s = _timed_run(loop, steps, chunk, write_every, path)
    jax_run = read_trajectory(path)
    jax_run["total"] = jax_run["potential"] + jax_run["kinetic"]
    times = jax_run["step"] * timestep_fs / 1000
    bonds = bonds_at(jax_run["positions"][0], atoms.numbers)
    changes = bond_changes(jax_run["positions"], bonds)
    calculator = Calculator(model, params, cutoff=config.cutoff, scale_shift=outputs_to_ev)
    ase_record, dynamics, ase_seconds = ase_run(atoms, calculator, timestep_fs, ase_steps,
                                                write_every)
    ase_times = ase_record["step"] * timestep_fs / 1000
    result = {
        "atoms": n_atoms, "timestep_fs": timestep_fs, "temperature_k": 300.0, "seed": seed,
        "model": {"name": model.__class__.__name__, "run_dir": str(run.path),
                  "parameters": int(sum(np.size(x) for x in jax.tree.leaves(params)))},
        "bonds": len(bonds), "bond_factor": BOND_FACTOR,
        "jax": {
            "steps": steps, "ps": steps * timestep_fs / 1000,
            "compile_and_first_chunk_s": compile_s,
            "steps_per_s_after_first_chunk": steps_per_s,
            "max_bond_change": float(changes.max()),
            "bond_change_series": _series(times, changes),
            "fragmented": bool(changes.max() > 0.5),
            **_conservation(times, jax_run["total"], n_atoms),
            "mean_temperature_k": _temperature(jax_run["kinetic"], n_atoms),
        },
        "ase": {
            "steps": ase_steps, "ps": ase_steps * timestep_fs / 1000,
            "steps_per_s_whole_run": ase_steps / ase_seconds,
            "max_bond_change": float(bond_changes(ase_record["positions"], bonds).max()),
            **_conservation(ase_times, ase_record["total"], n_atoms),
        },
        "jax_vs_ase": _agreement(ase_record, jax_run["positions"], jax_run["total"],
                                 jax_run["step"], timestep_fs, n_atoms),
    }
    result["speed"] = _interleaved_speeds(loop, dynamics, atoms, data, work, timed_steps, rounds,
                                          timestep_fs, peer_python, peer_model)
    return result


def _interleaved_speeds(loop, dynamics, atoms, data, work, timed_steps, rounds, timestep_fs,
                        peer_python, peer_model) -> dict:
    """Steps/s of gnkit's JAX loop, gnkit's ASE calculator and mace-torch's calculator, each
    timed for `timed_steps` per round, interleaved over `rounds` rounds (median kept)."""
    peer = None
    if peer_python is not None and Path(peer_python).exists():
        peer = PeerWorker(peer_python, atoms, data.species, data.avg_num_neighbors, timestep_fs,
                          peer_model, work)
    state, _ = loop.run(loop.start(), timed_steps, timed_steps, timed_steps)  # compiles
    seconds = {"gnkit_jax_loop": [], "gnkit_ase_calculator": [], "mace_torch_ase_calculator": []}
    loads = []
    for _ in range(rounds):
        state, elapsed = loop.run(state, timed_steps, timed_steps, timed_steps)
        seconds["gnkit_jax_loop"].append(elapsed)
        begin = time.perf_counter()
        dynamics.run(timed_steps)
        seconds["gnkit_ase_calculator"].append(time.perf_counter() - begin)
        if peer is not None:
            seconds["mace_torch_ase_calculator"].append(peer.steps(timed_steps))
        loads.append(_load())
    result = {"timed_steps": timed_steps, "rounds": rounds, "seconds": seconds, "load": loads,
              "steps_per_s": {name: timed_steps / statistics.median(values)
                              for name, values in seconds.items() if values}}
    if peer is not None:
        result["mace_torch"] = peer.info
        peer.close()
    return result


def emt_case(potential, work: Path, *, steps: int, ref_steps: int, write_every: int, chunk: int,
             dtype=np.float32, seed: int = 0, repeats: int = 4) -> dict:
    """The EMT Cu NVE run with the trained model, against the 1 meV/atom bar, and ASE's EMT
    through ASE's `VelocityVerlet` as the integrator's reference; the cell is `repeats^3`
    conventional cells. Host."""
    import jax
    from ase.calculators.emt import EMT

    from gnkit.atoms import Calculator

    model, params, outputs_to_ev, config, data, run = potential
    timestep_fs = 1.0
    atoms = thermalised(fcc_copper(repeats), 300.0, seed)
    n_atoms = len(atoms)
    loop = JaxMD(model, params, outputs_to_ev, atoms, config.cutoff, timestep_fs, dtype)
    path = _trajectory_path(work, f"emt_jax_{np.dtype(dtype).name}.xyz")
    compile_s, steps_per_s = _timed_run(loop, steps, chunk, write_every, path)
    jax_run = read_trajectory(path)
    total = jax_run["potential"] + jax_run["kinetic"]
    times = jax_run["step"] * timestep_fs / 1000
    reference, _, ref_seconds = ase_run(atoms, EMT(), timestep_fs, ref_steps, write_every)
    conservation = _conservation(times, total, n_atoms)
    strained = atoms.copy()
    strained.set_cell(atoms.cell[:] * 1.01, scale_atoms=True)
    strained.calc = Calculator(model, params, cutoff=config.cutoff, scale_shift=outputs_to_ev)
    model_stress = strained.get_stress()
    strained.calc = EMT()
    return {
        "atoms": n_atoms, "timestep_fs": timestep_fs, "temperature_k": 300.0, "seed": seed,
        "dtype": np.dtype(dtype).name, "bar_ev_per_atom": EMT_BAR,
        "model": {"name": model.__class__.__name__, "run_dir": str(run.path),
                  "parameters": int(sum(np.size(x) for x in jax.tree.leaves(params)))},
        "jax": {
            "steps": steps, "ps": steps * timestep_fs / 1000,
            "compile_and_first_chunk_s": compile_s,
            "steps_per_s_after_first_chunk": steps_per_s, **conservation,
            "within_bar": conservation["max_deviation_ev_per_atom"] <= EMT_BAR,
            "mean_temperature_k": _temperature(jax_run["kinetic"], n_atoms),
        },
        "emt_reference": {
            "steps": ref_steps, "ps": ref_steps * timestep_fs / 1000,
            "steps_per_s_whole_run": ref_steps / ref_seconds,
            **_conservation(reference["step"] * timestep_fs / 1000, reference["total"], n_atoms),
        },
        "stress_at_1_percent_strain_ev_per_a3": {"model": model_stress.tolist(),
                                                 "emt": strained.get_stress().tolist()},
    }


# ------------------------------------------------------------------ command line (host)


def plot(results: dict, path: Path) -> Path:
    """E(t) - E(0) per atom of each run, and aspirin's largest bond change, against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(11, 3.2), layout="constrained")
    aspirin, emt = results.get("aspirin"), results.get("emt")
    if aspirin is not None:
        for name in ("jax", "ase"):
            curve = aspirin[name]["energy_series_ev_per_atom"]
            axes[0].plot(curve["t_ps"], np.asarray(curve["value"]) * 1000, label=f"gnkit {name}")
        curve = aspirin["jax"]["bond_change_series"]
        axes[1].plot(curve["t_ps"], curve["value"])
    axes[0].set_title("aspirin NVE 0.5 fs (MACE)", fontsize=9)
    axes[1].set_title("aspirin: max bond-length change", fontsize=9)
    axes[1].set_ylabel("Å")
    if emt is not None:
        for label, entry in (("model", emt["jax"]), ("ASE EMT", emt["emt_reference"])):
            curve = entry["energy_series_ev_per_atom"]
            axes[2].plot(curve["t_ps"], np.asarray(curve["value"]) * 1000, label=label)
        for sign in (1, -1):
            axes[2].axhline(sign * EMT_BAR * 1000, color="black", linewidth=0.6, linestyle="--")
        axes[2].set_title(f"Cu {emt['atoms']} atoms NVE 1 fs ({emt['model']['name']})",
                          fontsize=9)
    for ax in (axes[0], axes[2]):
        ax.set_ylabel("E(t) - E(0) (meV/atom)")
        ax.legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("t (ps)")
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path


def _steps_per_s(entry: dict) -> str:
    value = entry.get("steps_per_s_after_first_chunk", entry.get("steps_per_s_whole_run"))
    return "-" if value is None else f"{value:.2f}"


def summary(results: dict) -> str:
    """A few lines: the metrics of each case."""
    lines = []
    aspirin = results.get("aspirin")
    if aspirin is not None:
        for name in ("jax", "ase"):
            entry = aspirin[name]
            lines.append(
                f"aspirin {name}: {entry['ps']:g} ps, max bond change "
                f"{entry['max_bond_change']:.3f} Å, "
                f"drift {entry['drift_ev_per_atom_per_ps'] * 1000:.4f} meV/atom/ps, max |dE| "
                f"{entry['max_deviation_ev_per_atom'] * 1000:.3f} meV/atom, "
                f"{_steps_per_s(entry)} steps/s")
        speeds = ", ".join(f"{k} {v:.1f}" for k, v in aspirin["speed"]["steps_per_s"].items())
        lines.append(f"aspirin steps/s (interleaved medians): {speeds}")
        lines.append(f"aspirin JAX vs ASE: {aspirin['jax_vs_ase']}")
    emt = results.get("emt")
    if emt is not None:
        for name in ("jax", "emt_reference"):
            entry = emt[name]
            lines.append(
                f"emt {name} ({emt['dtype'] if name == 'jax' else 'ASE, float64'}): "
                f"{entry['ps']:g} ps, drift "
                f"{entry['drift_ev_per_atom_per_ps'] * 1000:.4f} meV/atom/ps, max |dE| "
                f"{entry['max_deviation_ev_per_atom'] * 1000:.3f} meV/atom (bar 1), "
                f"{_steps_per_s(entry)} steps/s")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred steps of each part")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--plot", type=Path, help="write the energy / bond plot here (PNG)")
    parser.add_argument("--cases", default="aspirin,emt")
    parser.add_argument("--speeds", action="store_true",
                        help="first time SchNet, PaiNN and MACE on the 256-atom Cu cell")
    parser.add_argument("--aspirin-run-dir", type=Path, default=REPO / "runs/md/aspirin")
    parser.add_argument("--aspirin-model", default="mace")
    parser.add_argument("--emt-run-dir", type=Path, default=WORK / "emt_schnet")
    parser.add_argument("--emt-model", default="schnet")
    parser.add_argument("--float64", action="store_true", help="the EMT run in float64")
    parser.add_argument("--peers-python", type=Path, default=PEERS_PYTHON)
    parser.add_argument("--mace-torch-model", type=Path, default=None,
                        help="a trained mace-torch model of the quick sizes (else untrained)")
    parser.add_argument("--aspirin-steps", type=int, help="override the JAX loop's aspirin steps")
    parser.add_argument("--ase-steps", type=int, help="override the ASE calculator's steps")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--peer-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--atoms", help=argparse.SUPPRESS)
    parser.add_argument("--species", help=argparse.SUPPRESS)
    parser.add_argument("--avg-neighbors", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--timestep-fs", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", help=argparse.SUPPRESS)
    parser.add_argument("--peer-model", default="", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help="mace-torch's torch threads")
    args = parser.parse_args(argv)
    if args.peer_worker:
        peer_worker(args)
        return 0
    if args.float64:
        import jax

        jax.config.update("jax_enable_x64", True)
    args.work.mkdir(parents=True, exist_ok=True)
    cases = args.cases.split(",")
    sizes = (dict(aspirin_steps=400, ase_steps=100, chunk=200, timed=50, emt_steps=400,
                  ref_steps=100, write_every=10) if args.quick else
             dict(aspirin_steps=40_000, ase_steps=4_000, chunk=2_000, timed=400,
                  emt_steps=10_000, ref_steps=2_000, write_every=20))
    for key, value in (("aspirin_steps", args.aspirin_steps), ("ase_steps", args.ase_steps)):
        if value is not None:
            sizes[key] = value
    results: dict = {"quick": args.quick, "load_start": _load()}
    if args.speeds:
        results["speeds"] = model_speeds(args.emt_run_dir if (args.emt_run_dir / "config.json")
                                         .exists() else REPO / "runs/md/emt_quick",
                                         ("schnet", "painn", "mace"), 10 if args.quick else 20,
                                         args.rounds)
    if "aspirin" in cases:
        potential = load_potential(args.aspirin_run_dir, args.aspirin_model)
        results["aspirin"] = aspirin_case(
            potential, args.work, steps=sizes["aspirin_steps"], ase_steps=sizes["ase_steps"],
            write_every=sizes["write_every"], chunk=sizes["chunk"], timed_steps=sizes["timed"],
            rounds=args.rounds, peer_python=args.peers_python, peer_model=args.mace_torch_model)
        print(summary({"aspirin": results["aspirin"]}), flush=True)
    if "emt" in cases:
        potential = load_potential(args.emt_run_dir, args.emt_model)
        results["emt"] = emt_case(
            potential, args.work, steps=sizes["emt_steps"], ref_steps=sizes["ref_steps"],
            write_every=sizes["write_every"], chunk=sizes["chunk"],
            dtype=np.float64 if args.float64 else np.float32)
    results["load_end"] = _load()
    print(summary(results))
    if args.plot is not None:
        plot(results, args.plot)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
