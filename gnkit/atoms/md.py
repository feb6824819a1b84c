"""Molecular dynamics on the device: velocity Verlet (NVE) and Langevin BAOAB (NVT) in `lax.scan`.

    neighbors = NeighborSettings(cutoff=5.0, skin=0.5, cell=atoms.cell[:], pbc=atoms.pbc,
                                 capacity=4096)
    energy_fn = model_energy_fn(model, params, atoms.numbers, atoms.cell[:], atoms.pbc)
    state = init_md_state(atoms.positions, atoms.get_masses(), energy_fn, neighbors)
    state, stats = run_md(state, energy_fn, 10_000, VelocityVerlet(1.0 * ase.units.fs),
                          neighbors, trajectory="md.xyz", write_every=10, atoms=atoms)

Units are ASE's: Å, eV, amu, and ASE's time unit (`ase.units.fs` is one femtosecond in it), so
momenta are amu Å / ASE-time as `atoms.get_momenta()`, and a temperature is given in kelvin.

An energy function is `energy_fn(positions, neighbors) -> []`: `neighbors` is the
`DeviceNeighbors` of the pairs within the cutoff (from the Verlet list), or None when the run has
no `NeighborSettings` (then any `positions -> energy` callable works, wrapped by
`positions_energy_fn`). `model_energy_fn` makes one from a gnkit potential (linen or NNX).
Forces are `-grad(energy_fn)` with the pairs held fixed.

Inside a chunk (`md_chunk`, jittable) every step rebuilds the Verlet list at the same static
capacity when `needs_rebuild` says an atom moved more than half the skin (`lax.cond`); the state
keeps a sticky `overflow` flag and the largest pair count seen. `run_md` (host) checks the flag
after each chunk: on overflow it grows the capacity (`grown_capacity`), rebuilds the list at the
chunk's start state and runs the chunk again, so no step ever used a truncated list. Accepted
chunks append their frames (every `write_every` steps) to an extended XYZ file at once, so an
interrupted run keeps every finished chunk.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from ase import units

from gnkit.atoms.device_neighbors import (
    DeviceNeighbors,
    _check_cutoff,
    _check_static,
    grown_capacity,
    image_ranges,
)
from gnkit.atoms.potential import structure_energies
from gnkit.atoms.verlet import (
    VerletList,
    build_verlet_list,
    needs_rebuild,
    verlet_neighbors,
)
from gnkit.graph import GraphsTuple

__all__ = [
    "Langevin",
    "MDState",
    "MDStats",
    "NeighborSettings",
    "VelocityVerlet",
    "init_md_state",
    "kinetic_energy",
    "kinetic_temperature",
    "md_chunk",
    "model_energy_fn",
    "positions_energy_fn",
    "run_md",
]

EnergyFn = Callable[[jax.Array, DeviceNeighbors | None], jax.Array]


@dataclasses.dataclass(frozen=True)
class NeighborSettings:
    """The Verlet list of a run: cutoff, skin, the fixed cell, and the static sizes.

    Attributes:
      cutoff: the energy's cutoff in Å.
      skin: the extra distance of the list in Å; 0 rebuilds whenever an atom moves.
      cell: `[3, 3]`, rows are the lattice vectors (fixed during the run; stored as tuples).
      pbc: `bool [3]` (stored as a tuple).
      capacity: pair slots of the list (grown by `run_md` on overflow).
      images: cell images per axis; None for `image_ranges(cell, pbc, cutoff + skin)`.
    """

    cutoff: float
    skin: float
    cell: np.ndarray
    pbc: np.ndarray
    capacity: int
    images: tuple[int, int, int] | None = None

    def __post_init__(self):
        _check_cutoff(self.cutoff)
        if not (math.isfinite(self.skin) and self.skin >= 0):
            raise ValueError(f"NeighborSettings: skin must be >= 0 Å, got {self.skin!r}.")
        _check_static(self.capacity, (0, 0, 0) if self.images is None else self.images)
        # tuples, so the settings hash as a static argument of `jax.jit`
        cell = tuple(tuple(float(x) for x in row) for row in np.asarray(self.cell).reshape(3, 3))
        object.__setattr__(self, "cell", cell)
        object.__setattr__(self, "pbc", tuple(bool(x) for x in np.broadcast_to(self.pbc, 3)))
        if self.images is not None:
            object.__setattr__(self, "images", tuple(int(x) for x in self.images))

    def scanned_images(self) -> tuple[int, int, int]:
        """The images the list scans (host-side)."""
        if self.images is not None:
            return tuple(self.images)
        return image_ranges(self.cell, self.pbc, self.cutoff + self.skin)


class MDState(NamedTuple):
    """The state of a run (a pytree; every field a device array).

    Attributes:
      positions: `[n_atoms, 3]` in Å, never wrapped into the cell.
      momenta: `[n_atoms, 3]` in amu Å / ASE-time.
      masses: `[n_atoms]` in amu.
      forces: `[n_atoms, 3]` in eV/Å at `positions`.
      energy: `[]`, the potential energy in eV at `positions`.
      verlet: the `VerletList`, or None without neighbour settings.
      step: `int32 []`, steps done.
      rebuilds: `int32 []`, Verlet list rebuilds done inside chunks.
      overflow: `bool []`, a list used since the last check overflowed (sticky).
      max_pairs: `int32 []`, the largest pair count of the skin list since the last check.
      key: the PRNG key of a stochastic integrator.
    """

    positions: jax.Array
    momenta: jax.Array
    masses: jax.Array
    forces: jax.Array
    energy: jax.Array
    verlet: VerletList | None
    step: jax.Array
    rebuilds: jax.Array
    overflow: jax.Array
    max_pairs: jax.Array
    key: jax.Array


class MDStats(NamedTuple):
    """What `run_md` did (host values).

    Attributes:
      rebuilds: Verlet list rebuilds inside accepted chunks since step 0 (`state.rebuilds`).
      redone_chunks: chunks run again after an overflow.
      capacity: the list's capacity at the end (`NeighborSettings.capacity` grown).
      frames: frames written to the trajectory.
    """

    rebuilds: int
    redone_chunks: int
    capacity: int
    frames: int


def kinetic_energy(momenta, masses) -> jax.Array:
    """`[]`: `sum p^2 / 2m` in eV. Jittable.

    Args:
      momenta: `[n_atoms, 3]`.
      masses: `[n_atoms]`.
    """
    return 0.5 * jnp.sum(momenta**2 / masses[:, None])


def kinetic_temperature(momenta, masses) -> jax.Array:
    """`[]`: `2 E_kin / (3 n_atoms k_B)` in kelvin (all 3N degrees of freedom). Jittable."""
    return 2.0 * kinetic_energy(momenta, masses) / (3 * masses.shape[0] * units.kB)


def _check_timestep(timestep) -> None:
    if not (math.isfinite(timestep) and timestep > 0):
        raise ValueError(f"timestep must be positive (ASE time units), got {timestep!r}.")


@dataclasses.dataclass(frozen=True)
class _Integrator:
    """A splitting integrator: `move` before the new forces, the half `kick` after them."""

    timestep: float

    def __post_init__(self):
        _check_timestep(self.timestep)

    def kick(self, momenta, forces):
        """The half kick after the new forces. Jittable."""
        return momenta + 0.5 * self.timestep * forces


@dataclasses.dataclass(frozen=True)
class VelocityVerlet(_Integrator):
    """NVE velocity Verlet, ASE's `VelocityVerlet`: `p += dt F / 2; r += dt p / m`, new forces,
    `p += dt F / 2`.

    Attributes:
      timestep: in ASE time units (`1.0 * ase.units.fs` is one femtosecond).
    """

    def move(self, positions, momenta, forces, masses, key):
        """The part before the new forces. Jittable. Returns `(positions, momenta, key)`."""
        momenta = momenta + 0.5 * self.timestep * forces
        return positions + self.timestep * momenta / masses[:, None], momenta, key


@dataclasses.dataclass(frozen=True)
class Langevin(_Integrator):
    """NVT Langevin dynamics by BAOAB (Leimkuhler and Matthews 2013, as jax-md's `nvt_langevin`):
    half kick, half drift, the exact Ornstein-Uhlenbeck update
    `p -> c p + sqrt((1 - c^2) m k_B T) xi` with `c = exp(-friction dt)`, half drift, new forces,
    half kick.

    Attributes:
      timestep: in ASE time units.
      temperature: the target in kelvin.
      friction: in 1 / ASE-time (`0.01 / ase.units.fs` relaxes momenta in 100 fs).
    """

    temperature: float
    friction: float

    def __post_init__(self):
        super().__post_init__()
        for name in ("temperature", "friction"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"Langevin: {name} must be >= 0, got {value!r}.")

    def move(self, positions, momenta, forces, masses, key):
        """The part before the new forces. Jittable. Returns `(positions, momenta, key)`."""
        half = 0.5 * self.timestep
        momenta = momenta + half * forces
        positions = positions + half * momenta / masses[:, None]
        key, noise_key = jax.random.split(key)
        decay = math.exp(-self.friction * self.timestep)
        spread = jnp.sqrt((1 - decay**2) * masses * units.kB * self.temperature)[:, None]
        noise = jax.random.normal(noise_key, momenta.shape, momenta.dtype)
        momenta = decay * momenta + spread * noise
        return positions + half * momenta / masses[:, None], momenta, key


def positions_energy_fn(energy: Callable[[jax.Array], jax.Array]) -> EnergyFn:
    """An energy function of the run from `energy(positions) -> []` (no neighbour list used)."""
    return lambda positions, neighbors: energy(positions)


def model_energy_fn(model, params, atomic_numbers, cell, pbc, *, scale_shift=None) -> EnergyFn:
    """The energy of a gnkit potential on the pairs of the Verlet list. Jittable result.

    One structure becomes a graph in gnkit.atoms' layout with one padding atom (atomic number 0)
    and a padding graph after it; the list's padding slots become padding edges on that atom.

    Args:
      model: a gnkit potential `graph -> [n_atoms]` per-atom energies, linen or NNX.
      params: the linen module's variables; None for an NNX module.
      atomic_numbers: `int [n_atoms]`.
      cell: `[3, 3]`.
      pbc: `bool [3]`.
      scale_shift: a `ScaleShift` for the model's outputs, or None.

    Returns:
      `energy_fn(positions [n_atoms, 3], neighbors) -> []` in eV.
    """
    from gnkit.atoms.calculator import _split_model

    apply, weights = _split_model(model, params)
    numbers = jnp.concatenate([jnp.asarray(atomic_numbers, jnp.int32), jnp.zeros(1, jnp.int32)])
    n_atoms = numbers.shape[0] - 1
    cell = np.asarray(cell)
    pbc = jnp.asarray(np.stack([np.asarray(pbc, bool), np.zeros(3, bool)]))

    def energy_fn(positions, neighbors: DeviceNeighbors):
        dtype = positions.dtype
        cells = jnp.stack([jnp.asarray(cell, dtype), jnp.zeros((3, 3), dtype)])
        mask = neighbors.pair_mask
        capacity = mask.shape[0]
        n_pairs = jnp.minimum(neighbors.n_pairs, capacity)
        graph = GraphsTuple(
            nodes={
                "positions": jnp.concatenate([positions, jnp.zeros((1, 3), dtype)]),
                "atomic_numbers": numbers,
            },
            edges={"shifts": jnp.where(mask[:, None], neighbors.shifts, 0.0).astype(dtype)},
            senders=jnp.where(mask, neighbors.senders, n_atoms),
            receivers=jnp.where(mask, neighbors.receivers, n_atoms),
            globals={"cell": cells, "pbc": pbc},
            n_node=jnp.asarray([n_atoms, 1], jnp.int32),
            n_edge=jnp.stack([n_pairs, capacity - n_pairs]).astype(jnp.int32),
        )
        outputs = apply(weights, graph)
        if scale_shift is not None:
            outputs = scale_shift(outputs, numbers)
        return structure_energies(outputs, graph)[0]

    return energy_fn


def _energy_forces(energy_fn: EnergyFn, positions, verlet, settings: NeighborSettings | None):
    neighbors = None
    if settings is not None:
        neighbors = verlet_neighbors(verlet, positions, settings.cell, settings.cutoff)
    energy, gradient = jax.value_and_grad(lambda moved: energy_fn(moved, neighbors))(positions)
    return energy, -gradient


@functools.partial(jax.jit, static_argnums=(1, 2))
def _listed_energy_forces(positions, energy_fn: EnergyFn, settings: NeighborSettings | None):
    """The list built at `positions` (None without settings), energy and forces. Jitted."""
    verlet = None if settings is None else _build(positions, settings)
    return (verlet, *_energy_forces(energy_fn, positions, verlet, settings))


def _build(positions, settings: NeighborSettings) -> VerletList:
    return build_verlet_list(
        positions, jnp.asarray(settings.cell, positions.dtype), jnp.asarray(settings.pbc),
        settings.cutoff, settings.skin, capacity=settings.capacity,
        images=settings.scanned_images(),
    )


def init_md_state(
    positions,
    masses,
    energy_fn: EnergyFn,
    settings: NeighborSettings | None = None,
    *,
    momenta=None,
    seed: int = 0,
) -> MDState:
    """The state at step 0: the Verlet list (at `settings.capacity`, overflow flagged, not
    grown: `run_md` grows it), energy and forces. Host-side driver of device calls.

    Args:
      positions: `[n_atoms, 3]` in Å.
      masses: `[n_atoms]` in amu (`atoms.get_masses()`).
      energy_fn: `energy_fn(positions, neighbors) -> []`, hashable (a function; it is a static
        argument of `jax.jit`).
      settings: the Verlet list's settings, or None for an energy without neighbours.
      momenta: `[n_atoms, 3]` (`atoms.get_momenta()`), None for zeros.
      seed: the PRNG seed of a stochastic integrator.
    """
    positions = jnp.asarray(positions)
    dtype = positions.dtype
    momenta = jnp.zeros_like(positions) if momenta is None else jnp.asarray(momenta, dtype)
    verlet, energy, forces = _listed_energy_forces(positions, energy_fn, settings)
    return MDState(
        positions=positions,
        momenta=momenta,
        masses=jnp.asarray(masses, dtype),
        forces=forces,
        energy=energy,
        verlet=verlet,
        step=jnp.zeros((), jnp.int32),
        rebuilds=jnp.zeros((), jnp.int32),
        overflow=jnp.asarray(False) if verlet is None else _overflowed(verlet),
        max_pairs=jnp.zeros((), jnp.int32) if verlet is None else verlet.neighbors.n_pairs,
        key=jax.random.key(seed),
    )


def _overflowed(verlet: VerletList) -> jax.Array:
    return verlet.neighbors.overflow | verlet.neighbors.image_overflow


def _step(state: MDState, energy_fn, integrator, settings) -> MDState:
    positions, momenta, key = integrator.move(
        state.positions, state.momenta, state.forces, state.masses, state.key
    )
    verlet, rebuilds, overflow, max_pairs = (
        state.verlet, state.rebuilds, state.overflow, state.max_pairs
    )
    if settings is not None:
        rebuild = needs_rebuild(verlet, positions)
        verlet = jax.lax.cond(
            rebuild, lambda: _build(positions, settings), lambda: verlet
        )
        rebuilds = rebuilds + rebuild.astype(jnp.int32)
        overflow = overflow | _overflowed(verlet)
        max_pairs = jnp.maximum(max_pairs, verlet.neighbors.n_pairs)
    energy, forces = _energy_forces(energy_fn, positions, verlet, settings)
    return MDState(
        positions=positions,
        momenta=integrator.kick(momenta, forces),
        masses=state.masses,
        forces=forces,
        energy=energy,
        verlet=verlet,
        step=state.step + 1,
        rebuilds=rebuilds,
        overflow=overflow,
        max_pairs=max_pairs,
        key=key,
    )


def md_chunk(
    state: MDState,
    energy_fn: EnergyFn,
    integrator: VelocityVerlet | Langevin,
    settings: NeighborSettings | None,
    n_frames: int,
    write_every: int,
) -> tuple[MDState, dict[str, jax.Array]]:
    """`n_frames * write_every` steps by `lax.scan`, with a frame after every `write_every`.

    Jittable with everything but `state` static (`run_md` jits it). Does not check overflow:
    read `state.overflow` afterwards.

    Returns:
      The state after the chunk, and the frames: `"positions"`, `"momenta"`, `"forces"`
      `[n_frames, n_atoms, 3]`, `"energy"` `[n_frames]`, `"step"` `int32 [n_frames]`.
    """

    def steps(state, _):
        state = jax.lax.fori_loop(
            0, write_every, lambda _, s: _step(s, energy_fn, integrator, settings), state
        )
        frame = {
            "positions": state.positions, "momenta": state.momenta, "forces": state.forces,
            "energy": state.energy, "step": state.step,
        }
        return state, frame

    return jax.lax.scan(steps, state, None, length=n_frames)


_jitted_chunk = jax.jit(md_chunk, static_argnums=(1, 2, 3, 4, 5))


def _write_frames(path, atoms, frames: dict[str, np.ndarray]) -> None:
    """Append frames to an extended XYZ file (host)."""
    from ase.calculators.singlepoint import SinglePointCalculator
    from ase.io import write

    images = []
    for index in range(len(frames["energy"])):
        image = atoms.copy()
        image.positions = frames["positions"][index]
        image.set_momenta(frames["momenta"][index])
        image.info["step"] = int(frames["step"][index])
        image.calc = SinglePointCalculator(
            image, energy=float(frames["energy"][index]),
            forces=np.asarray(frames["forces"][index], np.float64),
        )
        images.append(image)
    write(path, images, format="extxyz", append=True)


def _frame_of(state: MDState) -> dict[str, np.ndarray]:
    frame = jax.device_get(
        {"positions": state.positions, "momenta": state.momenta, "forces": state.forces,
         "energy": state.energy, "step": state.step}
    )
    return {name: np.asarray(value)[None] for name, value in frame.items()}


def run_md(
    state: MDState,
    energy_fn: EnergyFn,
    n_steps: int,
    integrator: VelocityVerlet | Langevin,
    settings: NeighborSettings | None = None,
    *,
    chunk_steps: int = 100,
    write_every: int | None = None,
    trajectory=None,
    atoms=None,
    progress: bool = False,
    growth: float = 1.25,
    multiple: int = 64,
) -> tuple[MDState, MDStats]:
    """`n_steps` of MD in jitted chunks, growing the Verlet list on overflow. Host-side driver.

    Each chunk of `chunk_steps` steps (the last may be shorter) runs `md_chunk`. When its state
    reports an overflow, the capacity becomes `grown_capacity(max_pairs, growth, multiple)`, the
    list is rebuilt at the chunk's start state (forces recomputed) and the chunk runs again.

    Args:
      state: from `init_md_state` (its list may overflow; the first chunk grows it).
      energy_fn: the energy function the state was made with.
      n_steps: steps to run.
      integrator: `VelocityVerlet` or `Langevin`.
      settings: the state's neighbour settings, or None.
      chunk_steps: steps per jitted chunk, a multiple of `write_every`.
      write_every: steps between frames; None for `gcd(chunk_steps, n_steps)`.
      trajectory: an extended XYZ path to append frames to (positions, momenta, energy,
        forces, `step` in the info); a fresh run (step 0) also writes its start frame.
      atoms: the ASE `Atoms` giving symbols, cell and pbc to the frames (needed with
        `trajectory`).
      progress: show a progress bar (`gnkit.progress`) counting steps.
      growth: `grown_capacity`'s headroom factor.
      multiple: `grown_capacity`'s rounding (capacities are multiples of it).

    Returns:
      The final state and `MDStats`.
    """
    _check_count("n_steps", n_steps, minimum=0)
    _check_count("chunk_steps", chunk_steps, minimum=1)
    if write_every is not None:
        _check_count("write_every", write_every, minimum=1)
    write_every = math.gcd(chunk_steps, n_steps) if write_every is None else int(write_every)
    if chunk_steps % write_every:
        raise ValueError(
            f"run_md: chunk_steps={chunk_steps} must be a multiple of write_every={write_every}."
        )
    if n_steps % write_every:
        raise ValueError(
            f"run_md: n_steps={n_steps} must be a multiple of write_every={write_every}."
        )
    if trajectory is not None and atoms is None:
        raise ValueError("run_md: writing a trajectory needs atoms= (symbols, cell and pbc).")
    frames_written, redone = 0, 0
    if trajectory is not None and int(state.step) == 0:
        _write_frames(trajectory, atoms, _frame_of(state))
        frames_written += 1
    bar = None
    if progress:
        from gnkit.progress import ProgressBar

        bar = ProgressBar(n_steps, description="md", unit="step")
    try:
        done = 0
        while done < n_steps:
            n_frames = min(chunk_steps, n_steps - done) // write_every
            start = state
            while True:
                if settings is not None and bool(start.overflow):
                    settings, start = _grown(start, energy_fn, settings, growth, multiple)
                    continue
                end, frames = _jitted_chunk(
                    start, energy_fn, integrator, settings, n_frames, write_every
                )
                if settings is None or not bool(end.overflow):
                    break
                redone += 1
                settings, start = _grown(
                    start._replace(max_pairs=end.max_pairs), energy_fn, settings, growth,
                    multiple,
                )
            state = end
            done += n_frames * write_every
            if trajectory is not None:
                _write_frames(trajectory, atoms, jax.device_get(frames))
                frames_written += n_frames
            if bar is not None:
                bar.update(n_frames * write_every)
                bar.set_status({"energy": float(end.energy)})
    finally:
        if bar is not None:
            bar.close()
    capacity = 0 if settings is None else settings.capacity
    return state, MDStats(int(state.rebuilds), redone, capacity, frames_written)


def _check_count(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"run_md: {name} must be an int >= {minimum}, got {value!r}.")


def _grown(state: MDState, energy_fn, settings: NeighborSettings, growth, multiple):
    """Settings with a capacity for `state.max_pairs` pairs (and the images the cell needs), and
    `state` with its list rebuilt and forces recomputed with them (host)."""
    if bool(state.verlet.neighbors.image_overflow):
        raise RuntimeError(
            f"run_md: the Verlet list reports image_overflow with images="
            f"{settings.scanned_images()}; give NeighborSettings images=None or more images."
        )
    capacity = max(settings.capacity + 1, grown_capacity(int(state.max_pairs), growth, multiple))
    settings = dataclasses.replace(settings, capacity=capacity)
    verlet, energy, forces = _listed_energy_forces(state.positions, energy_fn, settings)
    state = state._replace(
        verlet=verlet, energy=energy, forces=forces, overflow=_overflowed(verlet),
        max_pairs=verlet.neighbors.n_pairs,
    )
    return settings, state
