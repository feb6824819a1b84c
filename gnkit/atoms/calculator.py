"""An ASE calculator for gnkit's potentials: energy, forces and stress from one jitted call.

    calculator = Calculator(model, params, cutoff=5.0)     # a linen module and its variables
    calculator = Calculator(nnx_model, cutoff=5.0)         # or an NNX module
    atoms.calc = calculator
    atoms.get_potential_energy(), atoms.get_forces(), atoms.get_stress()

Each structure becomes a graph (`atoms_to_graph`), padded to a bucket of a `BucketPolicy` ladder
whose rung 0 fits the first structure with some room, so the structures of an MD run or an
optimiser (same atoms, a neighbour count that drifts) compile once or twice, not every step.
The model's per-atom outputs (optionally through a `ScaleShift`) are summed per structure and
differentiated by `energy_forces_stress`. Host-side driver around a jitted device function.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from ase.calculators.calculator import Calculator as AseCalculator
from ase.calculators.calculator import PropertyNotImplementedError, all_changes
from ase.stress import full_3x3_to_voigt_6_stress

from gnkit.atoms.potential import ScaleShift, energy_forces_stress, structure_energies
from gnkit.atoms.species import check_species
from gnkit.atoms.structures import atoms_to_graph
from gnkit.batching import BucketPolicy, pad_to_bucket
from gnkit.graph import GraphsTuple

__all__ = ["Calculator"]


def _cast_floats(tree, dtype):
    """`tree` with its floating arrays cast to `dtype` (integers and booleans kept)."""
    return jax.tree.map(
        lambda value: jnp.asarray(value, dtype)
        if jnp.issubdtype(jnp.result_type(value), jnp.floating) else value,
        tree,
    )


def _model_attribute(model, name: str):
    """`model.<name>`, or its linen twin's for an NNX module; None where neither declares it."""
    for holder in (model, getattr(model, "linen_module", None)):
        value = getattr(holder, name, None)
        if value is not None:
            return value
    return None


def _positive_float(value, name: str) -> float:
    """`value` as a finite float above 0, or a ValueError naming the argument `name`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not (math.isfinite(number) and number > 0):
        raise ValueError(f"Calculator: {name} must be a positive number, got {value!r}.")
    return number


def _split_model(model, params) -> tuple[Callable, object]:
    """`(apply, weights)` with `apply(weights, graph) -> [n_atoms]` a pure function.

    A linen module is applied with `params` (its variables, `{"params": ...}`); an NNX module
    (params None) is split into its graph definition and state and merged back inside `apply`.
    """
    from flax import nnx

    if isinstance(model, nnx.Module):
        if params is not None:
            raise ValueError(
                "Calculator: an NNX module holds its own weights; pass params=None with it."
            )
        graphdef, state = nnx.split(model)
        return (lambda weights, graph: nnx.merge(graphdef, weights)(graph)), state
    if params is None:
        raise ValueError(
            f"Calculator: {type(model).__name__} is a linen module; pass its variables as params "
            "(what model.init returned)."
        )
    return model.apply, params


class Calculator(AseCalculator):
    """ASE calculator of a gnkit potential: `energy`, `free_energy`, `forces`, `stress`.

    Energies in eV, forces in eV/Å and stress in eV/Å^3 with ASE's sign (a compressed crystal
    has negative stress) and Voigt order `xx, yy, zz, yz, xz, xy`. Stress exists only for
    structures periodic along all three axes; asking for it otherwise raises ASE's
    `PropertyNotImplementedError`. `free_energy` equals `energy` (no electronic entropy).
    A structure with an atomic number the model's `species` lacks is a ValueError naming the
    atom (`check_species`, on the host before the jitted call).

    Every structure is padded to a bucket of `policy`: by default a `BucketPolicy` whose rung 0
    holds the first structure's atoms and `edge_headroom` times its edges, rising by `growth`.
    A stream of structures of one size then compiles once per stress setting and again only
    when the neighbour count outgrows the rung; `padded_sizes` lists the shapes used so far.

    Args:
      model: a gnkit potential `graph -> [n_atoms]` per-atom energies (e.g.
        `gnkit.atoms.nn.MACE`), a linen module or an NNX module.
      params: the linen module's variables (`model.init`'s result); None for an NNX module.
      cutoff: the graph's cutoff (Å); None takes the model's `cutoff`.
      scale_shift: maps the model's per-atom outputs to eV (`ScaleShift.fit` on the training
        set); None when the model already returns eV.
      dtype: float dtype of positions, cell and weights; `np.float64` needs JAX's x64 mode
        (`jax.config.update("jax_enable_x64", True)` or `with jax.enable_x64(True):`).
      policy: the padding ladder; None builds one from the first structure.
      growth: the ratio between rungs of the default ladder.
      edge_headroom: edges of the default rung 0, as a multiple of the first structure's.
      min_distance: atoms closer than this (Å) are an error (`check_structure`).
      **kwargs: ASE `Calculator` arguments (`label`, `directory`).
    """

    implemented_properties = ["energy", "free_energy", "forces", "stress"]

    def __init__(
        self,
        model,
        params=None,
        cutoff: float | None = None,
        *,
        scale_shift: ScaleShift | None = None,
        dtype=np.float32,
        policy: BucketPolicy | None = None,
        growth: float = 1.3,
        edge_headroom: float = 1.1,
        min_distance: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if cutoff is None:
            cutoff = _model_attribute(model, "cutoff")
            if cutoff is None:
                raise ValueError(
                    f"Calculator: {type(model).__name__} declares no cutoff; pass cutoff= (Å), "
                    "the model's radial cutoff."
                )
        self.cutoff = _positive_float(cutoff, "cutoff (Å)")
        self.dtype = np.dtype(dtype)
        if not np.issubdtype(self.dtype, np.floating):
            raise ValueError(f"Calculator: dtype must be a float dtype, got {self.dtype}.")
        if self.dtype.itemsize == 8 and not jax.config.jax_enable_x64:
            raise ValueError(
                "Calculator: dtype float64 needs JAX's x64 mode; call "
                "jax.config.update('jax_enable_x64', True) first (or build and use the "
                "calculator inside `with jax.enable_x64(True):`)."
            )
        if policy is not None and not isinstance(policy, BucketPolicy):
            raise ValueError(
                f"Calculator: policy must be a gnkit.BucketPolicy or None, got "
                f"{type(policy).__name__}."
            )
        self.policy = policy
        self.growth = growth
        self.edge_headroom = _positive_float(edge_headroom, "edge_headroom")
        self._species = _model_attribute(model, "species")
        self.min_distance = min_distance
        self.padded_sizes: set[tuple[int, int, bool]] = set()
        apply, weights = _split_model(model, params)
        self._weights = _cast_floats(weights, self.dtype)

        def predict(weights, graph: GraphsTuple, stress: bool) -> dict[str, jax.Array]:
            def energy_fn(strained: GraphsTuple) -> jax.Array:
                outputs = apply(weights, strained)
                if scale_shift is not None:
                    outputs = scale_shift(outputs, strained.nodes["atomic_numbers"])
                return structure_energies(outputs, strained)

            return energy_forces_stress(energy_fn, graph, stress=stress)

        self._predict = jax.jit(predict, static_argnames="stress")

    def _default_policy(self, graph: GraphsTuple) -> BucketPolicy:
        n_atoms, n_edges = int(graph.n_node[0]), int(graph.n_edge[0])
        return BucketPolicy(
            growth=self.growth,
            min_nodes=n_atoms + 1,
            min_edges=max(2, math.ceil(self.edge_headroom * n_edges)),
            min_graphs=2,
        )

    def calculate(self, atoms=None, properties=None, system_changes=all_changes):
        """Fills `self.results` for `atoms` (ASE's calculator protocol). Host-side."""
        super().calculate(atoms, properties, system_changes)
        properties = self.implemented_properties if properties is None else properties
        periodic = bool(np.all(self.atoms.pbc))
        if "stress" in properties and not periodic:
            raise PropertyNotImplementedError(
                "Calculator: stress needs a cell periodic along all three axes; this structure "
                f"has pbc={self.atoms.pbc.tolist()}."
            )
        graph = atoms_to_graph(
            self.atoms, self.cutoff, targets=(), min_distance=self.min_distance, dtype=self.dtype
        )
        if self._species is not None:
            check_species(graph, self._species)
        if self.policy is None:
            self.policy = self._default_policy(graph)
        padded = pad_to_bucket(graph, self.policy)
        self.padded_sizes.add((len(padded.nodes["atomic_numbers"]), len(padded.senders), periodic))
        prediction = jax.device_get(self._predict(self._weights, padded, stress=periodic))
        energy = float(prediction["energy"][0])
        self.results = {
            "energy": energy,
            "free_energy": energy,
            "forces": np.asarray(prediction["forces"][: len(self.atoms)], np.float64),
        }
        if periodic:
            stress = np.asarray(prediction["stress"][0], np.float64)
            self.results["stress"] = full_3x3_to_voigt_6_stress(stress)
