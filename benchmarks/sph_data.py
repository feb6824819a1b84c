"""Particle-fluid datasets made with JAX-SPH, in LagrangeBench's layout (host-side CLI).

Runs inside the venv of `benchmarks/make_sph_venv.sh` (JAX-SPH 0.1.0 on jax 0.4.29); it imports
only what that venv has, never gnkit, and gnkit's own environment does not need JAX-SPH::

    ~/.cache/gnkit-sph-venv/bin/python benchmarks/sph_data.py --case tgv2d --out DIR \\
        [--preset paper|small] [--trajectories N] [--steps N] [--relax-steps N] ...

Each case follows LagrangeBench's recipe (tumaer/lagrangebench, `data_gen/lagrangebench_data/`,
`dataset_tgv.sh`, `dataset_rpf.sh`, `gen_dataset.py`) on JAX-SPH's case files (tumaer/jax-sph
v0.1.0, `cases/tgv.py`, `cases/tgv.yaml`, `cases/rpf.py`, `cases/rpf.yaml`; the wheel's
`jax_sph/defaults.py` for every other setting):

1. Relaxation (`case.mode=rlx solver.tvf=1.0 case.r0_noise_factor=0.25`): a Cartesian lattice
   with Gaussian noise of 0.25 dx, zero velocity, no body force, JAX-SPH's 5000 steps at the CFL
   time step.
2. Simulation from the relaxed positions at LagrangeBench's dt, a frame every `write_every`
   steps. As in JAX-SPH's `SimulationSetup.initialize`, the initial velocity is evaluated on the
   unperturbed lattice and only the positions are taken from the relaxed state
   (`case.state0_keys=["r"]`); JAX-SPH's own `state0_path` loader cannot be used with 0.1.0
   (it assigns into a JAX array), so the positions are replaced here as in v0.0.2, the version
   LagrangeBench used.
3. `train.h5`, `valid.h5`, `test.h5` (one group per trajectory, `"00000"`, ..., each with
   `position` float32 [T, N, dim], gzip, and `particle_type` [N], 0 = fluid) split 2:1:1 as
   `gen_dataset.py --split=2_1_1` does (at least one validation and one test trajectory; one
   trajectory is split along time), and `metadata.json` with `gen_dataset.py`'s keys and its
   velocity / acceleration statistics (per-frame displacements with the periodic wrap, fluid
   particles only). `sequence_length_train/test` are the frames per trajectory minus one, the
   intent `gen_dataset.py` states; its own count also included `config.yaml` and so reads one
   more.

Cases (the `paper` preset is LagrangeBench's full dataset):

| case | particles | box | nu | body force | dt | steps | write_every | trajectories |
|---|---|---|---|---|---|---|---|---|
| tgv2d | 2500 (dx 0.02) | 1 x 1 | 0.01 (Re 100) | none | 0.0004 | 12,500 (t 5) | 100 | 200 |
| rpf2d | 3200 (dx 0.025) | 1 x 2 | 0.1 | +-1 in x (y < 1 / y > 1) | 0.0005 | 4,100,000 | 100 | 1 |

TGV 2D: `tgv.yaml` (dx 0.02, t_end 5, write_every 100), `dataset_tgv.sh` (seeds 0..199, dt
0.0004), `tgv.py` (u = -cos(2 pi x) sin(2 pi y), v = sin(2 pi x) cos(2 pi y) on the unit box),
`defaults.py` (viscosity 0.01, rho_ref 1, u_ref 1, c_ref_factor 10, QSK kernel, Tait EoS with
gamma 1, p_bg_factor 0, float64). RPF 2D: `rpf.yaml` (dx 0.025, viscosity 0.1, g_ext_magnitude 1,
p_bg_factor 0.05, seed 123), `rpf.py` (box 1 x 2, acceleration -1 in x above y = 1 and +1 below),
`dataset_rpf.sh` (dt 0.0005, t_end 2050, the first 998 frames dropped; the dataset's name
"20kevery100" gives write_every 100, where `rpf.yaml` says 10). RPF datasets also get
LagrangeBench's `force.py` (the body force as a function of one particle's position).

The `small` preset (the default) is what two shared CPU cores made in 31 (TGV) and 40 (RPF)
minutes (0.17-0.27 s a step of wall time, about 0.03 CPU-s): TGV 3 trajectories (one each for
train / valid / test) of 2500 steps (t 1, 26 frames) after 1000 relaxation steps; RPF one
trajectory of 8000 steps after 1000 relaxation steps, its first 40 frames (t 2) dropped, 41
frames split along time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", os.environ.get("SPH_X64", "1") == "1")

import h5py  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax_sph import partition  # noqa: E402
from jax_sph.case_setup import SimulationSetup, set_relaxation  # noqa: E402
from jax_sph.defaults import defaults  # noqa: E402
from jax_sph.integrator import si_euler  # noqa: E402
from jax_sph.jax_md.partition import Sparse  # noqa: E402
from jax_sph.solver import WCSPH  # noqa: E402
from jax_sph.utils import Tag  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402


class _Periodic2D(SimulationSetup):
    """A fully periodic 2D JAX-SPH case without walls; subclasses give the box and the flow."""

    box = (1.0, 1.0)

    def __init__(self, cfg):
        super().__init__(cfg)
        if self.case.mode == "rlx":
            self._set_default_rlx()

    def _box_size2D(self, n_walls):
        return np.array(self.box)

    def _box_size3D(self, n_walls):
        raise NotImplementedError("only the 2D case is generated here")

    def _init_walls_2d(self):
        pass

    def _init_walls_3d(self):
        pass

    def _init_velocity3D(self, r):
        raise NotImplementedError("only the 2D case is generated here")

    def _boundary_conditions_fn(self, state):
        return state


class TGV(_Periodic2D):
    """2D Taylor-Green vortex on the periodic unit box (JAX-SPH `cases/tgv.py`)."""

    def _init_velocity2D(self, r):
        x, y = r
        u = -jnp.cos(2.0 * jnp.pi * x) * jnp.sin(2.0 * jnp.pi * y)
        v = jnp.sin(2.0 * jnp.pi * x) * jnp.cos(2.0 * jnp.pi * y)
        return jnp.array([u, v])

    def _external_acceleration_fn(self, r):
        return jnp.zeros_like(r)


class RPF(_Periodic2D):
    """2D reverse Poiseuille flow on the periodic 1 x 2 box (JAX-SPH `cases/rpf.py`)."""

    box = (1.0, 2.0)

    def _init_velocity2D(self, r):
        return jnp.zeros_like(r)

    def _external_acceleration_fn(self, r):
        x_force = jnp.where(r[:, 1] > 1.0, -1.0, 1.0)
        return jnp.zeros_like(r).at[:, 0].set(x_force) * self.case.g_ext_magnitude


RPF_FORCE_PY = '''"""External force of the 2D reverse Poiseuille flow (LagrangeBench's force.py)."""

import jax.numpy as jnp


def force_fn(r):
    """Body force [dim] at one particle position r [dim]: -1 in x above y = 1, +1 below."""
    return jnp.where(r[1] > 1.0, jnp.array([-1.0, 0.0]), jnp.array([1.0, 0.0]))
'''


@dataclasses.dataclass(frozen=True)
class CaseSpec:
    """One LagrangeBench case: JAX-SPH settings and the paper-size run."""

    name: str
    case_class: type
    config_overrides: dict
    dt: float
    write_every: int
    paper_steps: int
    paper_skip_frames: int
    paper_seeds: tuple[int, ...]
    small_steps: int
    small_skip_frames: int
    small_trajectories: int
    small_relax_steps: int


CASES = {
    "tgv2d": CaseSpec(
        name="tgv",
        case_class=TGV,
        config_overrides={"case": {"dim": 2, "dx": 0.02}},
        dt=0.0004,
        write_every=100,
        paper_steps=12_500,
        paper_skip_frames=0,
        paper_seeds=tuple(range(200)),
        small_steps=2500,
        small_skip_frames=0,
        small_trajectories=3,
        small_relax_steps=1000,
    ),
    "rpf2d": CaseSpec(
        name="rpf",
        case_class=RPF,
        config_overrides={
            "case": {"dim": 2, "dx": 0.025, "viscosity": 0.1, "g_ext_magnitude": 1.0},
            "eos": {"p_bg_factor": 0.05},
        },
        dt=0.0005,
        write_every=100,
        paper_steps=4_100_000,
        paper_skip_frames=998,
        paper_seeds=(123,),
        small_steps=8000,
        small_skip_frames=40,
        small_trajectories=1,
        small_relax_steps=1000,
    ),
}


def make_config(spec: CaseSpec, seed: int, mode: str, dt: float | None):
    """JAX-SPH's configuration for one run: defaults, the case file's values, the CLI's.

    Args:
        spec: the case.
        seed: JAX-SPH's `seed` (noise of the relaxation).
        mode: "rlx" (relaxation, `solver.tvf=1`, `case.r0_noise_factor=0.25`) or "sim".
        dt: the simulation's time step; None in relaxation (JAX-SPH's CFL step).

    Returns:
        An OmegaConf DictConfig as JAX-SPH's `main.py` would build it.
    """
    overrides = {"config": f"{spec.name}.yaml", "seed": seed, "case": {"mode": mode}}
    if mode == "rlx":
        overrides["solver"] = {"tvf": 1.0}
        overrides["case"]["r0_noise_factor"] = 0.25
    else:
        overrides["solver"] = {"dt": dt}
    return OmegaConf.merge(defaults, spec.config_overrides, overrides)


def _make_stepper(cfg, case):
    """Initialise a JAX-SPH case; return (state, neighbour functions, jitted chunk advance)."""
    cfg, box_size, state, g_ext_fn, bc_fn, nw_fn, eos_fn, _, displacement_fn, shift_fn = (
        case.initialize()
    )
    solver = WCSPH(
        displacement_fn,
        eos_fn,
        g_ext_fn,
        cfg.case.dx,
        cfg.case.dim,
        cfg.solver.dt,
        cfg.case.c_ref,
        cfg.solver.eta_limiter,
        cfg.solver.name,
        cfg.kernel.name,
        cfg.solver.is_bc_trick,
        cfg.solver.density_evolution,
        cfg.solver.artificial_alpha,
        cfg.solver.free_slip,
        cfg.solver.density_renormalize,
        cfg.solver.heat_conduction,
    )
    neighbor_fn = partition.neighbor_list(
        displacement_fn,
        box_size,
        r_cutoff=solver._kernel_fn.cutoff,
        backend=cfg.nl.backend,
        capacity_multiplier=1.25,
        mask_self=False,
        format=Sparse,
        num_particles_max=state["r"].shape[0],
        num_partitions=cfg.nl.num_partitions,
        pbc=np.array(cfg.case.pbc),
    )
    advance = si_euler(cfg.solver.tvf, solver.forward_wrapper(), shift_fn, bc_fn, nw_fn)

    @jax.jit
    def advance_steps(state, neighbors, n_steps):
        def body(_, carry):
            state, neighbors, overflow = carry
            state, neighbors = advance(cfg.solver.dt, state, neighbors)
            return state, neighbors, overflow | (neighbors.did_buffer_overflow != 0)

        return jax.lax.fori_loop(0, n_steps, body, (state, neighbors, jnp.array(False)))

    return cfg, box_size, state, neighbor_fn, advance_steps


def _run(state, neighbor_fn, advance_steps, n_chunks: int, chunk: int, first: int = 0):
    """Advance `first` steps, then `n_chunks` chunks of `chunk` steps, as JAX-SPH's loop does.

    A chunk whose neighbour list overflowed is rerun from its start with a reallocated list.

    Returns:
        (final state, positions [n_chunks + 1, N, dim] after `first` + k * chunk steps).
    """
    num_particles = int((state["tag"] != Tag.PAD_VALUE).sum())
    neighbors = neighbor_fn.allocate(state["r"], num_particles=num_particles)

    def checked(state, neighbors, n_steps):
        while True:
            new_state, new_neighbors, overflow = advance_steps(state, neighbors, n_steps)
            if not bool(overflow):
                return new_state, new_neighbors
            neighbors = neighbor_fn.allocate(state["r"], num_particles=num_particles)

    if first:
        state, neighbors = checked(state, neighbors, first)
    frames = [np.asarray(state["r"])]
    for _ in range(n_chunks):
        state, neighbors = checked(state, neighbors, chunk)
        frames.append(np.asarray(state["r"]))
    return state, np.stack(frames)


class TrajectorySimulator:
    """Relaxation and simulation of one case, each compiled once and reused for every seed."""

    def __init__(self, spec: CaseSpec):
        self.spec = spec
        self._steppers = {}

    def _initial(self, seed: int, mode: str):
        """The case's initial state for `seed`, with the mode's (cached) neighbour list / step."""
        cfg = make_config(self.spec, seed, mode, None if mode == "rlx" else self.spec.dt)
        case = (
            set_relaxation(self.spec.case_class, cfg) if mode == "rlx"
            else self.spec.case_class(cfg)
        )
        if mode not in self._steppers:
            cfg, _, state, neighbor_fn, advance_steps = _make_stepper(cfg, case)
            self._steppers[mode] = (neighbor_fn, advance_steps)
            return cfg, state, neighbor_fn, advance_steps
        cfg, _, state, *_ = case.initialize()
        return (cfg, state, *self._steppers[mode])

    def trajectory(self, seed: int, steps: int, relax_steps: int, write_every: int):
        """Relax, then simulate one trajectory (host-side driver of jitted JAX-SPH steps).

        Args:
            seed: the relaxation's noise seed.
            steps: simulation steps (a multiple of `write_every`).
            relax_steps: relaxation steps (JAX-SPH: 5000).
            write_every: steps between frames.

        Returns:
            (positions [steps // write_every + 1, N, dim], particle_type [N], the simulation's
            JAX-SPH config). Frame k is the state after 1 + k * write_every steps, as JAX-SPH's
            `simulate` writes it.
        """
        _, state, neighbor_fn, advance_steps = self._initial(seed, "rlx")
        relaxed, _ = _run(state, neighbor_fn, advance_steps, 0, 0, first=relax_steps)
        cfg, state, neighbor_fn, advance_steps = self._initial(seed, "sim")
        state["r"] = relaxed["r"]
        _, positions = _run(
            state, neighbor_fn, advance_steps, steps // write_every, write_every, first=1
        )
        return positions, np.asarray(state["tag"]), cfg


def _split_sizes(count: int) -> tuple[int, int, int]:
    """gen_dataset.py's 2:1:1 split of `count` items: (train, valid, test), valid = test >= 1."""
    num_eval = int(np.ceil(count / 4))
    if count - 2 * num_eval < 1:
        raise ValueError(f"a 2:1:1 split needs at least 3 trajectories or frames, got {count}")
    return count - 2 * num_eval, num_eval, num_eval


def _periodic_displacement(later, earlier, box):
    """Minimum-image displacement later - earlier in a periodic box [dim]."""
    delta = later - earlier
    return delta - box * np.round(delta / box)


def velocity_statistics(splits: dict, box: np.ndarray) -> dict:
    """gen_dataset.py's `compute_statistics_h5`: per-frame velocity / acceleration mean and std.

    Args:
        splits: {split: [(positions [T, N, dim], particle_type [N]), ...]}.
        box: box lengths [dim].

    Returns:
        {"vel_mean", "vel_std", "acc_mean", "acc_std"}: lists of length dim (trajectory means of
        fluid-particle means; a std under 1e-7 becomes 1).
    """
    trajectories = [trajectory for split in splits.values() for trajectory in split]
    vels, accs = [], []
    for positions, particle_type in trajectories:
        fluid = positions[:, particle_type == Tag.FLUID].astype(np.float64)
        vel = _periodic_displacement(fluid[1:], fluid[:-1], box)
        vels.append(vel)
        accs.append(vel[1:] - vel[:-1])
    vel_mean = np.stack([vel.mean((0, 1)) for vel in vels]).mean(0)
    acc_mean = np.stack([acc.mean((0, 1)) for acc in accs]).mean(0)
    vel_std = np.stack([np.square(vel - vel_mean).mean((0, 1)) for vel in vels]).mean(0) ** 0.5
    acc_std = np.stack([np.square(acc - acc_mean).mean((0, 1)) for acc in accs]).mean(0) ** 0.5
    return {
        "vel_mean": vel_mean.tolist(),
        "vel_std": np.where(vel_std < 1e-7, 1, vel_std).tolist(),
        "acc_mean": acc_mean.tolist(),
        "acc_std": np.where(acc_std < 1e-7, 1, acc_std).tolist(),
    }


def write_dataset(out: str, splits: dict, cfg, seeds: list[int]) -> dict:
    """Write train/valid/test.h5 and metadata.json (gen_dataset.py's layout and keys).

    Args:
        out: output folder (created).
        splits: {"train" | "valid" | "test": [(positions [T, N, dim], particle_type [N]), ...]}.
        cfg: the simulation's JAX-SPH config (after `initialize`).
        seeds: the relaxation seeds, in trajectory order.

    Returns:
        The metadata written.
    """
    os.makedirs(out, exist_ok=True)
    for split, trajectories in splits.items():
        with h5py.File(os.path.join(out, f"{split}.h5"), "w") as handle:
            for index, (positions, particle_type) in enumerate(trajectories):
                key = str(index).zfill(5)
                handle.create_dataset(f"{key}/particle_type", data=particle_type)
                handle.create_dataset(
                    f"{key}/position", data=positions, dtype=np.float32, compression="gzip",
                    shuffle=True,
                )
    bounds = np.array(cfg.case.bounds)
    connectivity = np.format_float_positional(
        1.45 * cfg.case.dx, precision=2, unique=False, fractional=False, trim="k"
    )
    metadata = {
        "case": cfg.case.name.upper(),
        "solver": cfg.solver.name,
        "density_evolution": cfg.solver.density_evolution,
        "dim": cfg.case.dim,
        "dx": cfg.case.dx,
        "dt": cfg.solver.dt,
        "t_end": cfg.solver.t_end,
        "viscosity": cfg.case.viscosity,
        "p_bg_factor": cfg.eos.p_bg_factor,
        "g_ext_magnitude": cfg.case.g_ext_magnitude,
        "artificial_alpha": cfg.solver.artificial_alpha,
        "free_slip": cfg.solver.free_slip,
        "write_every": cfg.io.write_every,
        "is_bc_trick": cfg.solver.is_bc_trick,
        "sequence_length_train": int(splits["train"][0][0].shape[0] - 1),
        "num_trajs_train": len(splits["train"]),
        "sequence_length_test": int(splits["test"][0][0].shape[0] - 1),
        "num_trajs_test": len(splits["test"]),
        "num_particles_max": int(cfg.case.num_particles_max),
        "periodic_boundary_conditions": list(cfg.case.pbc),
        "bounds": bounds.tolist(),
        "default_connectivity_radius": float(connectivity),
        **velocity_statistics(splits, bounds[:, 1] - bounds[:, 0]),
        "generator": "gnkit benchmarks/sph_data.py on jax_sph 0.1.0",
        "seeds": seeds,
    }
    with open(os.path.join(out, "metadata.json"), "w") as handle:
        json.dump(metadata, handle)
    if cfg.case.g_ext_magnitude and cfg.case.name == "rpf":
        with open(os.path.join(out, "force.py"), "w") as handle:
            handle.write(RPF_FORCE_PY)
    return metadata


def generate(case: str, out: str, trajectories: int, steps: int, relax_steps: int,
             write_every: int, skip_frames: int, first_seed: int | None = None) -> dict:
    """Simulate a case's trajectories and write the dataset; returns the metadata (host-side).

    Args:
        case: "tgv2d" or "rpf2d".
        out: output folder.
        trajectories: number of trajectories (seeds first_seed, first_seed + 1, ...); 1 splits
            one trajectory along time.
        steps: simulation steps per trajectory (a multiple of `write_every`).
        relax_steps: relaxation steps before each trajectory.
        write_every: steps between frames.
        skip_frames: leading frames dropped from every trajectory.
        first_seed: the first seed; None for the case's (TGV 0, RPF 123).
    """
    spec = CASES[case]
    if steps < write_every or steps % write_every:
        raise ValueError(f"--steps must be a positive multiple of --write-every, got {steps}")
    first_seed = spec.paper_seeds[0] if first_seed is None else first_seed
    seeds = list(range(first_seed, first_seed + trajectories))
    simulator = TrajectorySimulator(spec)
    runs = []
    for seed in seeds:
        start = time.time()
        positions, particle_type, cfg = simulator.trajectory(seed, steps, relax_steps, write_every)
        runs.append((positions[skip_frames:], particle_type))
        print(f"{case} seed {seed}: {positions.shape[0]} frames, {positions.shape[1]} particles,"
              f" {time.time() - start:.0f} s", flush=True)
    if runs[0][0].shape[0] < 3 * (3 if trajectories == 1 else 1):
        raise ValueError("every split trajectory needs at least 3 frames (velocity statistics)")
    cfg.io.write_every = write_every
    cfg.solver.t_end = steps * spec.dt
    if trajectories == 1:
        positions, particle_type = runs[0]
        n_train, n_valid, _ = _split_sizes(positions.shape[0])
        bounds = np.cumsum([0, n_train, n_valid, n_valid])
        splits = {
            name: [(positions[bounds[i]:bounds[i + 1]], particle_type)]
            for i, name in enumerate(["train", "valid", "test"])
        }
    else:
        n_train, n_valid, _ = _split_sizes(trajectories)
        splits = {
            "train": runs[:n_train],
            "valid": runs[n_train:n_train + n_valid],
            "test": runs[n_train + n_valid:],
        }
    return write_dataset(out, splits, cfg, seeds)


def main(argv=None) -> None:
    """CLI: `--case tgv2d|rpf2d --out DIR [--preset paper|small]` and per-setting overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--preset", choices=["paper", "small"], default="small",
                        help="paper: LagrangeBench's full dataset; small: a CPU-sized one")
    parser.add_argument("--trajectories", type=int, help="trajectories (seeds)")
    parser.add_argument("--steps", type=int, help="simulation steps per trajectory")
    parser.add_argument("--relax-steps", type=int, help="relaxation steps (paper: 5000)")
    parser.add_argument("--write-every", type=int, help="steps between frames")
    parser.add_argument("--skip-frames", type=int, help="leading frames dropped")
    parser.add_argument("--seed", type=int, help="first seed")
    args = parser.parse_args(argv)
    spec = CASES[args.case]
    paper = args.preset == "paper"
    metadata = generate(
        args.case,
        args.out,
        trajectories=args.trajectories or (
            len(spec.paper_seeds) if paper else spec.small_trajectories
        ),
        steps=args.steps or (spec.paper_steps if paper else spec.small_steps),
        relax_steps=args.relax_steps or (5000 if paper else spec.small_relax_steps),
        write_every=args.write_every or spec.write_every,
        skip_frames=args.skip_frames if args.skip_frames is not None else (
            spec.paper_skip_frames if paper else spec.small_skip_frames
        ),
        first_seed=args.seed,
    )
    print(json.dumps({key: metadata[key] for key in (
        "case", "dt", "write_every", "num_particles_max", "num_trajs_train",
        "sequence_length_train", "num_trajs_test", "sequence_length_test")}))


if __name__ == "__main__":
    main()
