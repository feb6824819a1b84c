"""ASE structures to graphs: positions, atomic numbers, cell, pbc, cell shifts and targets.

One structure becomes one `GraphsTuple` in gnkit.atoms' layout:

- `nodes`: `positions` `[n_atoms, 3]` (Å), `atomic_numbers` `int32 [n_atoms]`, and `forces`
  `[n_atoms, 3]` (eV/Å) when read;
- `edges`: `shifts` `[n_edges, 3]`, the integer cell shift of each edge in the positions' dtype;
- `senders`, `receivers`: `int32 [n_edges]`, ASE's `i` and `j`, sorted by receiver;
- `globals`: `cell` `[1, 3, 3]` (rows are lattice vectors; zeros without pbc), `pbc`
  `bool [1, 3]`, and `energy` `[1]` (eV) and `stress` `[1, 3, 3]` (eV/Å^3, ASE's sign) when read.

The vector of an edge is `positions[receivers] - positions[senders] + shifts @ cell`, ASE's `D`.
Batch with `gnkit.batch_np` and pad with `gnkit.pad_to_bucket` (`atoms_bucket_policy` suits
structures). Host-side (NumPy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from ase.stress import voigt_6_to_full_3x3_stress

from gnkit.atoms.checks import StructureError, check_arrays, check_overlaps
from gnkit.atoms.neighbor_list import neighbor_list
from gnkit.batching import BucketPolicy
from gnkit.graph import GraphsTuple

TARGETS = ("energy", "forces", "stress")


def _calculator_result(atoms, key: str):
    calculator = atoms.calc
    results = getattr(calculator, "results", None) or {}
    return results.get(key)


def _stored(atoms, key: str, per_atom: bool):
    """The value under `key` in `atoms.arrays` (per atom) or `atoms.info`, else in the results
    a calculator (an ASE `SinglePointCalculator`, as `ase.io.read` makes) already holds."""
    table = atoms.arrays if per_atom else atoms.info
    if key in table:
        return table[key], f"atoms.{'arrays' if per_atom else 'info'}[{key!r}]"
    value = _calculator_result(atoms, key)
    return value, f"the calculator's {key!r}"


def _read_targets(atoms, targets, keys: dict[str, str], name: str) -> dict[str, np.ndarray]:
    """The targets of one structure: those named in `targets`, or all found when None."""
    found = {}
    for target in TARGETS if targets is None else targets:
        value, where = _stored(atoms, keys[target], per_atom=target == "forces")
        if value is None:
            if targets is None:
                continue
            raise StructureError(
                f"{name}: no {target} found under key {keys[target]!r} (looked in atoms."
                f"{'arrays' if target == 'forces' else 'info'} and the calculator's results)."
            )
        value = np.asarray(value, np.float64)
        if target == "stress" and value.size == 6:
            value = voigt_6_to_full_3x3_stress(value.reshape(6))
        expected = {"energy": (), "forces": (len(atoms), 3), "stress": (3, 3)}[target]
        if value.size != math.prod(expected):
            raise StructureError(
                f"{name}: {target} from {where} has shape {value.shape}, expected {expected}"
                f"{' or 6 Voigt components' if target == 'stress' else ''}."
            )
        found[target] = value.reshape(expected)
    return found


def atoms_to_graph(
    atoms,
    cutoff: float,
    *,
    targets: Sequence[str] | None = None,
    energy_key: str = "energy",
    forces_key: str = "forces",
    stress_key: str = "stress",
    min_distance: float = 0.1,
    dtype=np.float64,
    structure: int | None = None,
) -> GraphsTuple:
    """One ASE `Atoms` as a graph: every pair closer than `cutoff` (both directions) is an edge.

    Checks the structure first (`gnkit.atoms.check_structure`: finite positions, a cell with
    volume along its periodic axes, no atoms closer than `min_distance`). Targets are read from
    `atoms.info` / `atoms.arrays` under the given keys, or else from the results an attached
    calculator holds (`ase.io.read` puts an extended XYZ file's `energy`, `forces` and `stress`
    there); stress given as 6 Voigt components is expanded to `[3, 3]`. Host-side.

    Args:
      atoms: an `ase.Atoms`.
      cutoff: the edge cutoff in Å.
      targets: which of `"energy"`, `"forces"`, `"stress"` to read (a missing one is an error);
        None reads those present.
      energy_key: key of the energy (eV) in `atoms.info` or the calculator's results.
      forces_key: key of the forces (eV/Å) in `atoms.arrays` or the calculator's results.
      stress_key: key of the stress (eV/Å^3) in `atoms.info` or the calculator's results.
      min_distance: atoms closer than this (Å) are an error; 0 turns the check off.
      dtype: the float dtype of positions, shifts, cell and targets.
      structure: the structure's index in its list, named in error messages.

    Returns:
      A `GraphsTuple` with one graph, in the layout of this module's docstring.
    """
    name = "structure" if structure is None else f"structure {structure}"
    if not (np.ndim(cutoff) == 0 and math.isfinite(cutoff) and cutoff > 0):
        raise ValueError(f"atoms_to_graph: cutoff must be a positive number of Å, got {cutoff!r}.")
    if not (np.ndim(min_distance) == 0 and min_distance >= 0):
        raise ValueError(f"atoms_to_graph: min_distance must be >= 0 Å, got {min_distance!r}.")
    unknown = sorted(set(targets or ()) - set(TARGETS))
    if unknown:
        raise ValueError(f"targets must be among {TARGETS}, got {unknown}.")
    positions, pbc = atoms.get_positions(), np.asarray(atoms.pbc, bool)
    cell = atoms.cell.array if pbc.any() else np.zeros((3, 3))
    check_arrays(positions, cell, pbc, atoms.numbers, structure=structure)
    neighbors = neighbor_list(positions, cell, pbc, max(cutoff, min_distance))
    if min_distance > 0:
        check_overlaps(neighbors, min_distance, structure=structure)
    within = neighbors.distances < cutoff
    keys = {"energy": energy_key, "forces": forces_key, "stress": stress_key}
    found = _read_targets(atoms, targets, keys, name)
    nodes = {
        "positions": positions.astype(dtype),
        "atomic_numbers": np.asarray(atoms.numbers, np.int32),
    }
    globals_ = {"cell": cell[None].astype(dtype), "pbc": pbc[None]}
    if "forces" in found:
        nodes["forces"] = found["forces"].astype(dtype)
    if "energy" in found:
        globals_["energy"] = found["energy"].reshape(1).astype(dtype)
    if "stress" in found:
        globals_["stress"] = found["stress"][None].astype(dtype)
    return GraphsTuple(
        nodes=nodes,
        edges={"shifts": neighbors.shifts[within].astype(dtype)},
        senders=neighbors.senders[within],
        receivers=neighbors.receivers[within],
        globals=globals_,
        n_node=np.array([len(atoms)], np.int32),
        n_edge=np.array([int(within.sum())], np.int32),
    )


def atoms_to_graphs(structures: Sequence, cutoff: float, **kwargs) -> list[GraphsTuple]:
    """A list of ASE `Atoms` as graphs, one each (`atoms_to_graph`). Host-side.

    With `targets=None` (the default) a target is read when every structure has it; one present
    in some structures only is an error naming the first structure without it. Errors name the
    structure by its index in `structures`.

    Args:
      structures: a sequence of `ase.Atoms`.
      cutoff: the edge cutoff in Å.
      **kwargs: passed on to `atoms_to_graph` (`targets`, the keys, `min_distance`, `dtype`).

    Returns:
      One single-graph `GraphsTuple` per structure; `gnkit.batch_np` batches them.
    """
    structures = list(structures)
    graphs = [
        atoms_to_graph(atoms, cutoff, structure=index, **kwargs)
        for index, atoms in enumerate(structures)
    ]
    if kwargs.get("targets") is None:
        _check_same_targets(graphs)
    return graphs


def _target_names(graph: GraphsTuple) -> set[str]:
    return set(graph.globals) & {"energy", "stress"} | set(graph.nodes) & {"forces"}


def _check_same_targets(graphs: list[GraphsTuple]) -> None:
    for index, graph in enumerate(graphs):
        for target in sorted(_target_names(graphs[0]) ^ _target_names(graph)):
            having = 0 if target in _target_names(graphs[0]) else index
            lacking = index if having == 0 else 0
            raise StructureError(
                f"structure {lacking} has no {target} but structure {having} has; pass targets= "
                f"naming the targets every structure has (found {sorted(_target_names(graph))} "
                f"in structure {index}, {sorted(_target_names(graphs[0]))} in structure 0)."
            )


_OPENERS = {".xz": "lzma", ".lzma": "lzma", ".gz": "gzip", ".bz2": "bz2"}


def _read_frames(path, index: str, format: str | None) -> list:
    """`ase.io.read(path, index=index)`; a compressed file is decompressed into memory first,
    because ASE's reader seeks back to every frame, which restarts an `.xz` stream each time."""
    import importlib
    import io
    import pathlib

    import ase.io
    from ase.io.formats import filetype

    path = pathlib.Path(path)
    opener = _OPENERS.get(path.suffix)
    if opener is None:
        frames = ase.io.read(path, index=index, format=format)
    else:
        with importlib.import_module(opener).open(path, "rt") as stream:
            text = stream.read()
        format = format or filetype(path.with_suffix("").name, read=False)
        frames = ase.io.read(io.StringIO(text), index=index, format=format)
    return frames if isinstance(frames, list) else [frames]


def read_graphs(
    path, cutoff: float, *, index: str = ":", format: str | None = None, **kwargs
) -> list[GraphsTuple]:
    """Structures of a file `ase.io.read` reads (extended XYZ, also `.xz` / `.gz` / `.bz2`) as
    graphs.

    Host-side; the same as `atoms_to_graphs(ase.io.read(path, index=index), cutoff, **kwargs)`,
    with compressed files decompressed into memory first (much faster for many frames).

    Args:
      path: the file.
      cutoff: the edge cutoff in Å.
      index: which frames, in ASE's syntax (`":"` all, `"::10"` every tenth).
      format: ASE's format name; None guesses it from the name (`.xyz` is extended XYZ).
      **kwargs: passed on to `atoms_to_graph`.

    Returns:
      One single-graph `GraphsTuple` per frame.
    """
    return atoms_to_graphs(_read_frames(path, index, format), cutoff, **kwargs)


def atoms_bucket_policy(
    graphs: Sequence[GraphsTuple], batch_size: int, growth: float = 1.3
) -> BucketPolicy:
    """A `BucketPolicy` whose rung 0 holds `batch_size` structures of the mean size of `graphs`.

    Rung 0 has `batch_size + 1` graph slots, `ceil(batch_size * mean atoms) + 1` nodes and
    edges for those atoms at the largest edges-per-atom ratio of `graphs`, so a batch whose
    atoms fit a rung also has room for its edges; larger batches climb the ladder by `growth`.
    Structures of one size (a molecular-dynamics trajectory) then compile once per batch size,
    and a data set of varying sizes a few times. Host-side.

    Args:
      graphs: the data set's graphs (`atoms_to_graphs`).
      batch_size: structures per batch.
      growth: the ratio between rungs (`BucketPolicy.growth`).

    Returns:
      The `BucketPolicy`; pad a batch with `gnkit.pad_to_bucket(gnkit.batch_np(batch), policy)`.
    """
    if batch_size < 1 or not graphs:
        raise ValueError(
            f"atoms_bucket_policy needs batch_size >= 1 and at least one graph, got batch_size="
            f"{batch_size} and {len(graphs)} graphs."
        )
    atoms = np.array([int(np.sum(graph.n_node)) for graph in graphs])
    edges = np.array([int(np.sum(graph.n_edge)) for graph in graphs])
    real_atoms = math.ceil(batch_size * atoms.mean())
    return BucketPolicy(
        growth=growth,
        min_nodes=real_atoms + 1,
        min_edges=max(1, math.ceil(real_atoms * np.max(edges / np.maximum(atoms, 1)))),
        min_graphs=batch_size + 1,
    )
