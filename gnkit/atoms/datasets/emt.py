"""A periodic data set labelled by ASE's EMT potential: fcc Cu and Al supercells, host-side.

Each structure is an fcc supercell (2x2x2 to 3x3x3 conventional cells, 32-108 atoms) of copper
or aluminium at its EMT lattice constant, sometimes with one vacancy, under a random symmetric
strain, with rattled atoms; a fraction of them then runs a short Langevin MD at 300-1,200 K and
keeps the last frame. EMT (Jacobsen, Stoltze and Norskov 1996, ships with ASE) labels the
energy (eV), forces (eV/Å) and stress (eV/Å^3, ASE's sign), held by a `SinglePointCalculator`,
where `gnkit.atoms.atoms_to_graph` and an extended XYZ file keep them. Structure `i` depends only
on `(seed, i)`, so a larger set starts with the structures of a smaller one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["EMT_LATTICE_CONSTANTS", "make_emt_dataset", "write_emt_dataset"]

#: fcc lattice constants (Å) at EMT's energy minimum.
EMT_LATTICE_CONSTANTS = {"Cu": 3.590, "Al": 3.994}

_SIZES = ((2, 2, 2), (2, 2, 3), (2, 3, 3), (3, 3, 3))


def _structure(
    rng: np.random.Generator,
    elements: Sequence[str],
    sizes: Sequence[tuple[int, int, int]],
    vacancy_fraction: float,
    max_strain: float,
    rattle: float,
    md_fraction: float,
    md_steps: int,
    temperature_range: tuple[float, float],
):
    """One labelled structure drawn with `rng` (see the module docstring)."""
    from ase.build import bulk
    from ase.calculators.emt import EMT
    from ase.calculators.singlepoint import SinglePointCalculator

    element = elements[rng.integers(len(elements))]
    repeat = tuple(sizes[rng.integers(len(sizes))])
    atoms = bulk(element, "fcc", a=EMT_LATTICE_CONSTANTS[element], cubic=True).repeat(repeat)
    vacancy = bool(rng.random() < vacancy_fraction)
    if vacancy:
        del atoms[int(rng.integers(len(atoms)))]
    strain = rng.uniform(-max_strain, max_strain, size=(3, 3))
    strain = 0.5 * (strain + strain.T)
    atoms.set_cell(atoms.cell[:] @ (np.eye(3) + strain), scale_atoms=True)
    atoms.positions += rng.normal(scale=rattle, size=atoms.positions.shape)
    atoms.calc = EMT()
    atoms.info.update(element=element, supercell="x".join(map(str, repeat)), vacancy=vacancy)
    if rng.random() < md_fraction:
        temperature = float(rng.uniform(*temperature_range))
        _langevin(atoms, temperature, md_steps, rng)
        atoms.info.update(config_type="md", temperature_K=temperature)
    else:
        atoms.info.update(config_type="static")
    atoms.calc = SinglePointCalculator(
        atoms,
        energy=atoms.get_potential_energy(),
        forces=atoms.get_forces(),
        stress=atoms.get_stress(),
    )
    return atoms


def _langevin(atoms, temperature: float, steps: int, rng: np.random.Generator) -> None:
    """`steps` Langevin steps of 2 fs at `temperature` (K) from Maxwell-Boltzmann momenta; the
    velocities are dropped afterwards (the data set holds positions and labels only)."""
    from ase import units
    from ase.md.langevin import Langevin

    momentum_scale = np.sqrt(atoms.get_masses() * units.kB * temperature)[:, None]
    atoms.set_momenta(momentum_scale * rng.standard_normal(size=atoms.positions.shape))
    dynamics = Langevin(atoms, timestep=2.0 * units.fs, temperature_K=temperature,
                        friction=0.02 / units.fs, fixcm=False, rng=rng)
    dynamics.run(steps)
    del atoms.arrays["momenta"]


def _is_count(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and value >= 0


def _check_options(n_structures, seed, elements, sizes, vacancy_fraction, max_strain, rattle,
                   md_fraction, md_steps, temperature_range) -> None:
    """Raises a ValueError naming the first bad argument of `make_emt_dataset`. Host."""

    def fail(name: str, expected: str, value) -> None:
        raise ValueError(f"make_emt_dataset: {name} must be {expected}, got {value!r}.")

    for name, value in (("n_structures", n_structures), ("seed", seed), ("md_steps", md_steps)):
        if not _is_count(value):
            fail(name, "an int >= 0", value)
    unknown = sorted(set(elements) - set(EMT_LATTICE_CONSTANTS))
    if unknown or not len(elements):
        fail("elements", f"a non-empty sequence among {sorted(EMT_LATTICE_CONSTANTS)}", elements)
    if not len(sizes) or not all(
        len(size) == 3 and all(_is_count(n) and n > 0 for n in size) for size in sizes
    ):
        fail("sizes", "a non-empty sequence of 3 positive int repeats", sizes)
    for name, value in (("vacancy_fraction", vacancy_fraction), ("md_fraction", md_fraction)):
        if not 0 <= value <= 1:
            fail(name, "between 0 and 1", value)
    for name, value in (("max_strain", max_strain), ("rattle", rattle)):
        if not 0 <= value < np.inf:
            fail(name, "finite and >= 0", value)
    low, high = temperature_range
    if not 0 < low <= high < np.inf:
        fail("temperature_range", "(low, high) kelvin with 0 < low <= high", temperature_range)


def make_emt_dataset(
    n_structures: int,
    seed: int = 0,
    *,
    elements: Sequence[str] = ("Cu", "Al"),
    sizes: Sequence[tuple[int, int, int]] = _SIZES,
    vacancy_fraction: float = 0.3,
    max_strain: float = 0.03,
    rattle: float = 0.05,
    md_fraction: float = 0.5,
    md_steps: int = 20,
    temperature_range: tuple[float, float] = (300.0, 1200.0),
    progress: bool = False,
) -> list:
    """`n_structures` periodic fcc structures labelled by EMT. Host-side (ASE, NumPy).

    Args:
      n_structures: how many structures.
      seed: structure `i` is drawn from `numpy.random.SeedSequence(seed).spawn(...)[i]`, so it
        is the same for every `n_structures > i`.
      elements: among `EMT_LATTICE_CONSTANTS` (`"Cu"`, `"Al"`), drawn uniformly.
      sizes: supercell repeats of the 4-atom conventional cell, drawn uniformly.
      vacancy_fraction: the probability of removing one random atom.
      max_strain: components of the symmetric strain are uniform in `[-max_strain, max_strain]`.
      rattle: the standard deviation (Å) of the Gaussian displacement of every atom.
      md_fraction: the probability that a structure runs a Langevin MD and keeps its last frame.
      md_steps: steps of that MD (2 fs each, friction 0.02 / fs).
      temperature_range: the MD temperature (K) is uniform in this range.
      progress: show a progress bar with a count of the structures made.

    Returns:
      A list of `ase.Atoms` (`pbc` True) whose `SinglePointCalculator` holds `energy`, `forces`
      and `stress` (Voigt); `info` has `element`, `supercell`, `vacancy`, `config_type`
      (`"static"` or `"md"`) and, for MD frames, `temperature_K`.
    """
    _check_options(n_structures, seed, elements, sizes, vacancy_fraction, max_strain, rattle,
                   md_fraction, md_steps, temperature_range)
    seeds = np.random.SeedSequence(seed).spawn(n_structures)
    indices = range(n_structures)
    if progress:
        from gnkit.progress import track

        indices = track(indices, n_structures, f"EMT structures (seed {seed})", "structure")
    options = dict(elements=tuple(elements), sizes=tuple(sizes),
                   vacancy_fraction=vacancy_fraction, max_strain=max_strain, rattle=rattle,
                   md_fraction=md_fraction, md_steps=md_steps,
                   temperature_range=tuple(temperature_range))
    return [_structure(np.random.default_rng(seeds[index]), **options) for index in indices]


def write_emt_dataset(path, n_structures: int, seed: int = 0, **kwargs) -> list:
    """`make_emt_dataset(n_structures, seed, **kwargs)` written to `path` as extended XYZ.

    A name ending in `.xz`, `.gz` or `.bz2` is compressed (ASE's writer). Host-side.
    `gnkit.atoms.read_graphs(path, cutoff)` reads the energies, forces and stress back.

    Returns:
      The structures written.
    """
    import ase.io

    structures = make_emt_dataset(n_structures, seed, **kwargs)
    ase.io.write(path, structures, format="extxyz")
    return structures
