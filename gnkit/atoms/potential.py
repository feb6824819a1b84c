"""From per-atom energies to a potential: energies, forces, stress, E0s, scale / shift, loss.

A model returns one energy contribution per atom; `structure_energies` sums them per structure,
and `energy_forces_stress` differentiates that sum in one jittable call: forces `-dE/dr`, and the
stress `(1/V) dE/d(strain)` (ASE's sign convention) from a symmetric strain applied to the
positions and the cell. Padding atoms (atomic number 0) never count: they are masked in the sums
and in the loss.

    energy_fn = lambda graph: structure_energies(model.apply(params, graph), graph)
    prediction = energy_forces_stress(energy_fn, graph)    # energy, forces, stress

`fit_reference_energies` (host least squares) gives each species' isolated-atom energy E0, and
`ScaleShift` maps a model's normalised per-atom outputs to eV as mace's atomic-energies and
scale-shift blocks do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.atoms.species import check_species, species_index
from gnkit.batching import batch_np
from gnkit.graph import GraphsTuple, node_graph_index, num_graphs

__all__ = [
    "ScaleShift",
    "energy_forces_stress",
    "fit_reference_energies",
    "loss",
    "structure_energies",
]


def _real_atoms(graph: GraphsTuple) -> jax.Array:
    """Bool `[n_atoms]`: True for real atoms (atomic number > 0)."""
    return jnp.asarray(graph.nodes["atomic_numbers"]) > 0


def structure_energies(atom_energies: jax.Array, graph: GraphsTuple) -> jax.Array:
    """The energy of each structure: the sum of its atoms' energies, padding atoms left out.

    Jittable.

    Args:
      atom_energies: `[n_atoms]` per-atom contributions.
      graph: the structure graph (or padded batch) the atoms belong to.

    Returns:
      `[n_graph]`; 0 for padding graphs.
    """
    masked = jnp.where(_real_atoms(graph), atom_energies, 0.0)
    return jax.ops.segment_sum(
        masked, node_graph_index(graph), num_graphs(graph), indices_are_sorted=True
    )


def _strained(graph: GraphsTuple, strain: jax.Array) -> GraphsTuple:
    """`graph` with positions and cell deformed by `I + (strain + strain^T) / 2` per structure."""
    symmetric = 0.5 * (strain + jnp.swapaxes(strain, 1, 2))
    positions = graph.nodes["positions"]
    cell = graph.globals["cell"]
    node_strain = symmetric[node_graph_index(graph)]
    moved = positions + jnp.einsum("ni,nij->nj", positions, node_strain)
    nodes = dict(graph.nodes, positions=moved)
    globals_ = dict(graph.globals, cell=cell + jnp.einsum("gki,gij->gkj", cell, symmetric))
    return graph._replace(nodes=nodes, globals=globals_)


def energy_forces_stress(
    energy_fn: Callable[[GraphsTuple], jax.Array], graph: GraphsTuple, *, stress: bool = True
) -> dict[str, jax.Array]:
    """Energies, forces `-dE/dr` and stress `(1/V) dE/d(strain)` by one reverse-mode pass.

    Each structure gets its own symmetric strain `e`, applied as `r -> r (I + e)` to its atoms'
    positions and `cell -> cell (I + e)` to its lattice vectors (rows); the stress is the energy's
    derivative at `e = 0` over the cell volume, ASE's convention (a compressed crystal has
    negative stress). Structures without periodic boundaries, or whose cell has zero volume
    (padding graphs), get zero stress. Jittable.

    Args:
      energy_fn: `graph -> [n_graph]` structure energies (e.g. `structure_energies` of a model's
        atom energies).
      graph: a structure graph (or padded batch), with `globals["cell"]` and `globals["pbc"]`.
      stress: also compute the stress.

    Returns:
      A dict with `"energy"` `[n_graph]`, `"forces"` `[n_atoms, 3]` and, with `stress`,
      `"stress"` `[n_graph, 3, 3]`.
    """
    cell = graph.globals["cell"]
    strain = jnp.zeros_like(cell)

    def total_energy(positions, strain):
        moved = graph._replace(nodes=dict(graph.nodes, positions=positions))
        energies = energy_fn(_strained(moved, strain) if stress else moved)
        return jnp.sum(energies), energies

    argnums = (0, 1) if stress else 0
    gradients, energies = jax.grad(total_energy, argnums=argnums, has_aux=True)(
        graph.nodes["positions"], strain
    )
    if not stress:
        return {"energy": energies, "forces": -gradients}
    position_gradient, strain_gradient = gradients
    volume = jnp.abs(jnp.linalg.det(cell))
    periodic = jnp.any(jnp.asarray(graph.globals["pbc"]), axis=-1) & (volume > 0)
    safe_volume = jnp.where(periodic, volume, 1.0)[:, None, None]
    virial_stress = jnp.where(periodic[:, None, None], strain_gradient / safe_volume, 0.0)
    return {"energy": energies, "forces": -position_gradient, "stress": virial_stress}


def _as_batch(graphs: GraphsTuple | Iterable[GraphsTuple]) -> GraphsTuple:
    if isinstance(graphs, GraphsTuple):
        return graphs
    return batch_np([jax.tree.map(np.asarray, graph) for graph in graphs])


def _species_counts(graph: GraphsTuple, species: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Host: counts `[n_real_graph, len(species)]` of each species per structure with real atoms,
    and the indices of those structures."""
    atomic_numbers = np.asarray(graph.nodes["atomic_numbers"])
    structure = np.repeat(np.arange(len(graph.n_node)), np.asarray(graph.n_node))
    counts = np.zeros((len(graph.n_node), len(species)))
    for column, number in enumerate(species):
        np.add.at(counts[:, column], structure[atomic_numbers == number], 1.0)
    real = np.flatnonzero(counts.sum(axis=1) > 0)
    return counts[real], real


def fit_reference_energies(
    graphs: GraphsTuple | Iterable[GraphsTuple], species: Sequence[int]
) -> np.ndarray:
    """Each species' reference energy E0, by least squares of `E ~ sum_atoms E0[species]`.

    Host-side (NumPy). Padding atoms and graphs without real atoms are ignored. Where the
    compositions do not determine every E0 (a species always in the same ratio to another), this
    is `numpy.linalg.lstsq`'s minimum-norm solution.

    Args:
      graphs: a structure graph batch (padded or not), or an iterable of graphs, with
        `globals["energy"]` `[n_graph]`.
      species: the atomic numbers, in the model's order.

    Returns:
      `[len(species)]` float64 E0s, in the energies' unit.
    """
    graph = _as_batch(graphs)
    if not isinstance(graph.globals, dict) or "energy" not in graph.globals:
        raise ValueError(
            "fit_reference_energies: the graphs need globals['energy'] (the structures' energies)"
        )
    check_species(graph, species)
    counts, real = _species_counts(graph, species)
    energies = np.asarray(graph.globals["energy"], np.float64)[real]
    solution, *_ = np.linalg.lstsq(counts, energies, rcond=None)
    return solution


@dataclasses.dataclass(frozen=True)
class ScaleShift:
    """A model's normalised per-atom outputs `x` to per-atom energies: `scale x + shift + E0`.

    As mace's `AtomicEnergiesBlock` plus `ScaleShiftBlock`: the model learns `x` of order 1, and
    the reference energy of the atom's species `E0[species_index(Z)]` and the data set's scale and
    shift give eV. Build one from data with `ScaleShift.fit`. Calling it is jittable.

    Attributes:
      scale: multiplies the model's output.
      shift: added per atom.
      species: the atomic numbers, in the model's order.
      reference_energies: E0 per species, `len(species)` values.
    """

    scale: float
    shift: float
    species: tuple[int, ...]
    reference_energies: tuple[float, ...]

    def __post_init__(self):
        if len(self.reference_energies) != len(self.species):
            raise ValueError(
                f"ScaleShift: reference_energies has {len(self.reference_energies)} values but "
                f"species has {len(self.species)}; give one E0 per species"
            )

    def __call__(self, outputs: jax.Array, atomic_numbers: jax.Array) -> jax.Array:
        """Per-atom energies `[n_atoms]` from the model's outputs `[n_atoms]`; 0 on padding
        atoms (atomic number 0), NaN on an atom whose atomic number is not in `species` (inside
        `jit` nothing can raise, so an unknown species poisons its structure's energy instead of
        taking another species' E0; `check_species` names it on the host)."""
        atomic_numbers = jnp.asarray(atomic_numbers)
        reference = jnp.asarray(self.reference_energies, jnp.result_type(outputs))
        known = jnp.any(atomic_numbers[:, None] == jnp.asarray(self.species)[None, :], axis=1)
        energies = (
            self.scale * outputs + self.shift
            + jnp.where(known, reference[species_index(atomic_numbers, self.species)], jnp.nan)
        )
        return jnp.where(atomic_numbers > 0, energies, 0.0)

    @classmethod
    def fit(cls, graphs: GraphsTuple | Iterable[GraphsTuple], species: Sequence[int]) -> ScaleShift:
        """E0s by `fit_reference_energies`; shift the mean per-atom energy left after them;
        scale the RMS of the force components (mace's `rms_forces_scaling`), or, without
        `nodes["forces"]`, the standard deviation of that per-atom energy. Host-side.

        Args:
          graphs: a structure graph batch or an iterable of graphs, with `globals["energy"]`
            (and `nodes["forces"]` for the force scale).
          species: the atomic numbers, in the model's order.
        """
        graph = _as_batch(graphs)
        reference_energies = fit_reference_energies(graph, species)
        counts, real = _species_counts(graph, species)
        energies = np.asarray(graph.globals["energy"], np.float64)[real]
        per_atom = (energies - counts @ reference_energies) / counts.sum(axis=1)
        if "forces" in graph.nodes:
            forces = np.asarray(graph.nodes["forces"], np.float64)
            scale = np.sqrt(np.mean(forces[np.asarray(graph.nodes["atomic_numbers"]) > 0] ** 2))
        else:
            scale = np.std(per_atom)
        return cls(
            scale=float(scale),
            shift=float(np.mean(per_atom)),
            species=tuple(int(z) for z in species),
            reference_energies=tuple(float(e) for e in reference_energies),
        )


_TARGETS = {"energy": "globals", "forces": "nodes", "stress": "globals"}


def loss(
    prediction: Mapping[str, jax.Array],
    graph: GraphsTuple,
    weights: Mapping[str, float] | None = None,
) -> jax.Array:
    """The weighted sum of mean squared errors of energy per atom, forces and stress.

    Each term is a mean over real items only: energy `((E - E_ref) / n_atoms)^2` over structures
    with atoms; forces, squared component errors over real atoms (atomic number > 0); stress,
    squared component errors over periodic structures. Jittable.

    Args:
      prediction: `energy_forces_stress`'s dict (the weighted keys at least).
      graph: the structure graph with the targets `globals["energy"]`, `nodes["forces"]`,
        `globals["stress"]` that `weights` names.
      weights: a weight per term among `"energy"`, `"forces"`, `"stress"`; None for energy and
        forces, both 1.

    Returns:
      A scalar.
    """
    weights = {"energy": 1.0, "forces": 1.0} if weights is None else dict(weights)
    for name in weights:
        if name not in _TARGETS:
            raise ValueError(
                f"loss: weights has {name!r}; expected some of {sorted(_TARGETS)}"
            )
        where = getattr(graph, _TARGETS[name])
        if name not in prediction or not isinstance(where, dict) or name not in where:
            raise ValueError(
                f"loss: weights has {name!r}, so prediction[{name!r}] and graph."
                f"{_TARGETS[name]}[{name!r}] are needed; prediction has {sorted(prediction)}"
            )
    real_atoms = _real_atoms(graph)
    atom_counts = structure_energies(real_atoms.astype(jnp.float32), graph)
    real_structures = atom_counts > 0
    total = jnp.zeros(())
    if "energy" in weights:
        error = (prediction["energy"] - graph.globals["energy"]) / jnp.maximum(atom_counts, 1.0)
        total += weights["energy"] * _masked_mean(error**2, real_structures)
    if "forces" in weights:
        error = (prediction["forces"] - graph.nodes["forces"]) ** 2
        total += weights["forces"] * _masked_mean(error, real_atoms[:, None])
    if "stress" in weights:
        periodic = real_structures & jnp.any(jnp.asarray(graph.globals["pbc"]), axis=-1)
        error = (prediction["stress"] - graph.globals["stress"]) ** 2
        total += weights["stress"] * _masked_mean(error, periodic[:, None, None])
    return total


def _masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `values` where `mask` (broadcast) is True; 0 where nothing is."""
    mask = jnp.broadcast_to(mask, values.shape)
    return jnp.sum(jnp.where(mask, values, 0.0)) / jnp.maximum(jnp.sum(mask), 1)
