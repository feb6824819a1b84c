"""Device neighbour lists: every pair within a cutoff, jittable, at a static capacity.

The pairs follow the host list (`gnkit.atoms.neighbor_list`, ASE's `neighbor_list("ijS")`):
both directions of every pair, self-image pairs `(i, i, S != 0)` kept, `(i, i, 0)` left out,
and the vector from atom `i` to atom `j` is `positions[j] - positions[i] + S @ cell` (rows of
`cell` are the lattice vectors). Triclinic cells, cutoffs above half the cell, mixed `pbc` and
positions outside the cell are handled: positions are wrapped into the cell along periodic axes
before the search and the shifts corrected back, so `S` refers to the positions given.

The search is dense: every (receiver, sender, cell image) triple is tested, O(n_atoms^2 x
images) in time and memory, then the pairs within the cutoff are compacted to the front of
`capacity` slots (for large periodic cells, `gnkit.atoms.cell_list` tests only nearby bins).
Shapes depend only on `n_atoms`, `capacity` and `images`, all static. A list never truncates
silently: `n_pairs` is the true count and `overflow` says it exceeds `capacity`;
`image_overflow` says the cell needs more images than were scanned (a changed cell).

- `device_neighbor_list`: one structure, `[n_atoms, 3]` positions with an atom mask;
- `graph_with_device_neighbors`: a padded batch in gnkit.atoms' layout (per-graph cells, pairs
  only within one graph), returned with new senders / receivers / shifts / n_edge;
- `image_ranges`: the static image counts a cell needs (host-side);
- `GrowingNeighborList`, `grown_capacity`: host-side, rerun with a grown capacity (rounded up
  to a bucket, so a recompile is rare) or more images when a call overflows.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gnkit.atoms.neighbor_list import completed_cell
from gnkit.batching import (
    get_node_padding_mask,
    get_number_of_padding_with_graphs_nodes,
)
from gnkit.graph import GraphsTuple, node_graph_index, num_graphs

# A cell needs more images than scanned when cutoff * |column k of inv(cell)| exceeds the
# scanned count by more than this (in fractional units): it absorbs float32 rounding, so
# images from `image_ranges` never raise `image_overflow` on the cell they were computed for.
_IMAGE_TOLERANCE = 1e-4


class DeviceNeighbors(NamedTuple):
    """Pairs within a cutoff in `capacity` slots: the real pairs first, sorted by receiver, then
    sender, then padding slots.

    Attributes:
      senders: `int32 [capacity]`, ASE's `i`; padding slots hold the padding atom index.
      receivers: `int32 [capacity]`, ASE's `j`; padding slots hold the padding atom index.
      shifts: `[capacity, 3]`, ASE's `S` (integer values in the positions' dtype); 0 on padding
        slots.
      n_pairs: `int32 []`, the number of pairs within the cutoff, also when above `capacity`.
      overflow: `bool []`, `n_pairs > capacity`: pairs past the capacity are missing.
      image_overflow: `bool []`, the cell needs more images than were scanned: pairs may be
        missing (recompute `image_ranges`).
    """

    senders: jax.Array
    receivers: jax.Array
    shifts: jax.Array
    n_pairs: jax.Array
    overflow: jax.Array
    image_overflow: jax.Array

    @property
    def pair_mask(self) -> jax.Array:
        """`bool [capacity]`: True on the slots that hold a real pair. Jittable."""
        return jnp.arange(self.senders.shape[0]) < self.n_pairs


def image_ranges(cell, pbc, cutoff: float) -> tuple[int, int, int]:
    """The cell images per axis a search within `cutoff` must scan, `images` of the lists here.

    `ceil(cutoff * |column k of inv(cell)|)` on periodic axes (the cutoff over the distance
    between lattice planes), 0 on the others; for a batch of cells, the largest over the cells.
    Host-side (NumPy).

    Args:
      cell: `[3, 3]` or `[n_graph, 3, 3]`, rows are the lattice vectors (rows of non-periodic
        axes are not used).
      pbc: `bool [3]` or `bool [n_graph, 3]`.
      cutoff: the pair cutoff in Å, positive.

    Returns:
      Three non-negative ints, one per cell axis.
    """
    _check_cutoff(cutoff)
    cells = np.asarray(cell, np.float64).reshape(-1, 3, 3)
    pbc = np.asarray(pbc, bool)
    pbc = np.broadcast_to(pbc if pbc.ndim == 0 else pbc.reshape(-1, 3), (len(cells), 3))
    images = np.zeros(3, np.int64)
    for one_cell, one_pbc in zip(cells, pbc, strict=True):
        if not one_pbc.any():
            continue
        inverse = np.linalg.inv(completed_cell(one_cell, one_pbc))
        needed = np.ceil(cutoff * np.linalg.norm(inverse, axis=0))
        images = np.maximum(images, np.where(one_pbc, needed, 0).astype(np.int64))
    return tuple(int(count) for count in images)


def _check_cutoff(cutoff) -> None:
    if isinstance(cutoff, jax.core.Tracer):
        return
    if not (np.ndim(cutoff) == 0 and math.isfinite(float(cutoff)) and float(cutoff) > 0):
        raise ValueError(f"the neighbour list needs a positive finite cutoff, got {cutoff!r}.")


def _check_static(capacity, images) -> tuple[int, int, int]:
    if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity < 1:
        raise ValueError(
            f"capacity must be an int of at least 1 (the static number of pair slots), got "
            f"{capacity!r}."
        )
    images = tuple(images) if np.ndim(images) == 1 else ()
    if len(images) != 3 or any(
        isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0
        for count in images
    ):
        raise ValueError(
            "images must be 3 non-negative ints (cell images scanned per axis; "
            f"gnkit.atoms.image_ranges computes them), got {images!r}."
        )
    return tuple(int(count) for count in images)


def _check_arrays(positions, cell, pbc, atom_mask) -> None:
    shape = np.shape(positions)
    if len(shape) != 2 or shape[1] != 3 or shape[0] < 1:
        raise ValueError(f"positions must be [n_atoms, 3] with n_atoms >= 1, got shape {shape}.")
    dtype = getattr(positions, "dtype", None) or np.asarray(positions).dtype
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"positions must be floats (Å), got dtype {dtype}.")
    if np.shape(cell) != (3, 3):
        raise ValueError(f"cell must be [3, 3] (rows are lattice vectors), got {np.shape(cell)}.")
    if np.shape(pbc) not in ((), (3,)):
        raise ValueError(f"pbc must be bool [3] or one bool, got shape {np.shape(pbc)}.")
    if atom_mask is not None and np.shape(atom_mask) != (shape[0],):
        raise ValueError(
            f"atom_mask must be bool [n_atoms] = [{shape[0]}] like positions {shape}, got shape "
            f"{np.shape(atom_mask)}."
        )


def _unit(vectors: jax.Array) -> jax.Array:
    norms = jnp.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / jnp.where(norms > 0, norms, 1.0)


def _check_padded(graph: GraphsTuple, n_atoms: int) -> None:
    """With concrete counts: `sum(n_node)` matches the positions, and the last graph with atoms
    is a padding graph (atomic numbers 0), where padding edges can point."""
    if isinstance(graph.n_node, jax.core.Tracer):
        return
    n_node = np.asarray(graph.n_node)
    if int(n_node.sum()) != n_atoms:
        raise ValueError(
            f"sum(n_node) = {int(n_node.sum())} does not match the {n_atoms} rows of "
            "nodes['positions']."
        )
    numbers = graph.nodes.get("atomic_numbers")
    non_empty = np.flatnonzero(n_node)
    if numbers is None or isinstance(numbers, jax.core.Tracer) or not non_empty.size:
        return
    first_padding = int(n_node[: non_empty[-1]].sum())
    if np.any(np.asarray(numbers)[first_padding:] != 0):
        raise ValueError(
            "graph_with_device_neighbors needs a padded graph: its last graph with atoms must be "
            f"the padding graph (atomic numbers 0), but atoms {first_padding}.. have atomic "
            "numbers; pad it with gnkit.pad_with_graphs first."
        )


def _completed_cells(cells: jax.Array, pbc: jax.Array) -> jax.Array:
    """`[G, 3, 3]`: each non-periodic row replaced by a unit vector normal to the periodic rows,
    as `gnkit.atoms.neighbor_list.completed_cell` (built from cross products, no SVD). Jittable.
    """

    def complete(cell, periodic_axes):
        periodic = jnp.where(periodic_axes[:, None], cell, 0.0)
        n_periodic = jnp.sum(periodic_axes)
        # two periodic rows: the third row of `periodic` is zero, so one cross product remains
        plane_normal = _unit(
            jnp.cross(periodic[0], periodic[1])
            + jnp.cross(periodic[1], periodic[2])
            + jnp.cross(periodic[2], periodic[0])
        )
        # one periodic row: two orthonormal vectors normal to it
        direction = _unit(jnp.sum(periodic, axis=0))
        helper = jnp.eye(3, dtype=cell.dtype)[jnp.argmin(jnp.abs(direction))]
        first_normal = _unit(jnp.cross(direction, helper))
        line_normals = jnp.stack([first_normal, jnp.cross(direction, first_normal)])
        normals = jnp.select(
            [n_periodic == 2, n_periodic == 1],
            [jnp.eye(3, dtype=cell.dtype).at[0].set(plane_normal),
             jnp.eye(3, dtype=cell.dtype).at[:2].set(line_normals)],
            jnp.eye(3, dtype=cell.dtype),
        )
        slot = jnp.clip(jnp.cumsum(~periodic_axes) - 1, 0, 2)
        return jnp.where(periodic_axes[:, None], cell, normals[slot])

    return jax.vmap(complete)(cells, pbc)


def _reciprocal(cells: jax.Array) -> jax.Array:
    """`[G, 3, 3]`: `inv(cell)` of full-rank cells, whose columns are the reciprocal vectors
    `a_2 x a_3 / V`, ... (cheaper to compile than an LU inverse). Jittable."""
    first, second, third = cells[:, 0], cells[:, 1], cells[:, 2]
    crosses = jnp.stack(
        [jnp.cross(second, third), jnp.cross(third, first), jnp.cross(first, second)], axis=-1
    )
    volumes = jnp.sum(first * crosses[:, :, 0], axis=-1)
    return crosses / volumes[:, None, None]


def _compact(keep: jax.Array, capacity: int) -> jax.Array:
    """`int32 [capacity]`: the indices of the first `capacity` True entries of `keep`, in order
    (0 past the last one): a cumulative sum gives each its slot, a scatter puts it there."""
    slot = jnp.cumsum(keep, dtype=jnp.int32) - 1
    target = jnp.where(keep & (slot < capacity), slot, capacity)
    indices = jnp.arange(keep.shape[0], dtype=jnp.int32)
    return jnp.zeros(capacity, jnp.int32).at[target].set(indices, mode="drop")


def _packed(keep: jax.Array, capacity: int, padding_index: jax.Array, pairs_at):
    """The candidate pairs where `keep` (`bool [P]`) holds, packed into `capacity` slots in order.

    `pairs_at(index)` gives the senders, receivers and shifts (`[capacity]`, `[capacity]`,
    `[capacity, 3]`) of the candidates at `index` (`int32 [capacity]`); the slots past the last
    kept pair point at `padding_index` with zero shifts. Returns `(senders, receivers, shifts,
    n_pairs)`, `n_pairs` the count of kept pairs (above `capacity` on overflow). Jittable.
    """
    n_pairs = jnp.sum(keep, dtype=jnp.int32)
    senders, receivers, shifts = pairs_at(_compact(keep, capacity))
    valid = jnp.arange(capacity) < n_pairs
    return (
        jnp.where(valid, senders, padding_index).astype(jnp.int32),
        jnp.where(valid, receivers, padding_index).astype(jnp.int32),
        jnp.where(valid[:, None], shifts, 0.0).astype(shifts.dtype),
        n_pairs,
    )


def _image_grid(images: tuple[int, int, int]) -> np.ndarray:
    """`int [M, 3]`: every cell shift with `|S_k| <= images[k]`, lexicographic."""
    axes = [np.arange(-count, count + 1) for count in images]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def _padding_index(atom_mask: jax.Array) -> jax.Array:
    """The first atom outside the mask, or the last atom when every atom is real."""
    n_atoms = atom_mask.shape[0]
    return jnp.where(jnp.all(atom_mask), n_atoms - 1, jnp.argmin(atom_mask)).astype(jnp.int32)


def _pairs(positions, cells, pbc, atom_graph, atom_mask, cutoff, capacity, images, padding_index):
    """The dense search over a batch: `cells [G, 3, 3]`, `pbc bool [G, 3]`, `atom_graph int
    [N]` (the graph of each atom), pairs only inside one graph. Jittable."""
    positions = jax.lax.stop_gradient(positions)
    dtype = positions.dtype
    cells = jax.lax.stop_gradient(jnp.asarray(cells, dtype))
    pbc = jnp.asarray(pbc, bool)
    n_atoms = positions.shape[0]
    completed = _completed_cells(cells, pbc)
    inverse = _reciprocal(completed)
    atom_pbc = pbc[atom_graph]
    fractional = jnp.einsum("ni,nij->nj", positions, inverse[atom_graph])
    offsets = jnp.where(atom_pbc, jnp.floor(fractional), 0.0)
    wrapped = positions - jnp.einsum("ni,nij->nj", offsets, completed[atom_graph])

    grid_np = _image_grid(images)
    grid = jnp.asarray(grid_np, dtype)
    translations = jnp.einsum("mi,gij->gmj", grid, completed)  # [G, M, 3]
    allowed_images = jnp.all(pbc[:, None, :] | (grid_np == 0)[None], axis=-1)  # [G, M]

    # axes: receiver j, sender i, image m; flat order sorts by receiver, then sender
    differences = wrapped[:, None, :] - wrapped[None, :, :]
    vectors = differences[:, :, None, :] + translations[atom_graph][:, None, :, :]
    within = jnp.sum(vectors * vectors, axis=-1) < jnp.asarray(cutoff, dtype) ** 2
    real = (
        atom_mask[:, None] & atom_mask[None, :] & (atom_graph[:, None] == atom_graph[None, :])
    )
    zero_image = np.all(grid_np == 0, axis=-1)
    self_pair = jnp.eye(n_atoms, dtype=bool)[:, :, None] & zero_image[None, None, :]
    keep = within & real[:, :, None] & allowed_images[atom_graph][:, None, :] & ~self_pair

    n_images = grid_np.shape[0]

    def pairs_at(index):
        receivers = index // (n_atoms * n_images)
        senders = (index // n_images) % n_atoms
        return senders, receivers, grid[index % n_images] + offsets[senders] - offsets[receivers]

    senders, receivers, shifts, n_pairs = _packed(
        keep.reshape(-1), capacity, padding_index, pairs_at
    )
    needed = cutoff * jnp.linalg.norm(inverse, axis=1)  # [G, 3]: column norms of inv(cell)
    short = pbc & (needed > jnp.asarray(images, dtype) + _IMAGE_TOLERANCE)
    return DeviceNeighbors(
        senders=senders,
        receivers=receivers,
        shifts=shifts,
        n_pairs=n_pairs,
        overflow=n_pairs > capacity,
        image_overflow=jnp.any(short),
    )


def device_neighbor_list(
    positions,
    cell,
    pbc,
    cutoff: float,
    *,
    capacity: int,
    images: tuple[int, int, int],
    atom_mask=None,
) -> DeviceNeighbors:
    """Every pair of atoms closer than `cutoff`, with cell shifts, in `capacity` slots.

    Jittable with `capacity` and `images` static (for example
    `jax.jit(device_neighbor_list, static_argnames=("cutoff", "capacity", "images"))`; the
    cutoff may also be traced). The same pairs as `gnkit.atoms.neighbor_list` (as a set of
    `(i, j, S)`) when `overflow` and `image_overflow` are False. Argument checks run on the host
    before tracing and raise `ValueError`. Not differentiable (the pairs are integers; shifts
    hold no gradient): take gradients through `positions` in the edge vectors instead.

    Args:
      positions: `[n_atoms, 3]` in Å (float32 or float64), inside or outside the cell.
      cell: `[3, 3]`, rows are the lattice vectors; rows of non-periodic axes are not used.
      pbc: `bool [3]` (or one bool), periodic axes.
      cutoff: the pair cutoff in Å, positive.
      capacity: the number of pair slots (static), at least 1.
      images: cell images scanned per axis (static), from `image_ranges(cell, pbc, cutoff)`.
      atom_mask: `bool [n_atoms]`, False on padding atoms, which take part in no pair; None for
        all real.

    Returns:
      `DeviceNeighbors`; its padding slots point at the first atom outside `atom_mask` (the
      first padding atom), or at atom `n_atoms - 1` when every atom is real: mask them with
      `pair_mask`.
    """
    _check_arrays(positions, cell, pbc, atom_mask)
    _check_cutoff(cutoff)
    images = _check_static(capacity, images)
    positions = jnp.asarray(positions)
    if not jnp.issubdtype(positions.dtype, jnp.floating):
        positions = positions.astype(jnp.result_type(float))
    n_atoms = positions.shape[0]
    atom_mask = jnp.ones(n_atoms, bool) if atom_mask is None else jnp.asarray(atom_mask, bool)
    pbc = jnp.broadcast_to(jnp.asarray(pbc, bool), (3,))
    return _pairs(
        positions,
        jnp.asarray(cell)[None],
        pbc[None],
        jnp.zeros(n_atoms, jnp.int32),
        atom_mask,
        cutoff,
        int(capacity),
        images,
        _padding_index(atom_mask),
    )


def graph_with_device_neighbors(
    graph: GraphsTuple, cutoff: float, *, capacity: int, images: tuple[int, int, int]
) -> tuple[GraphsTuple, DeviceNeighbors]:
    """A padded batch of structures with its edges rebuilt on the device: pairs within `cutoff`.

    Jittable with `capacity` and `images` static. The graph is in gnkit.atoms' layout
    (`nodes["positions"]`, `globals["cell"]` `[n_graph, 3, 3]`, `globals["pbc"]` `bool
    [n_graph, 3]`) and padded by `gnkit.pad_with_graphs` (a trailing padding graph with at
    least one node). Pairs stay inside one graph and use that graph's cell and pbc; padding
    atoms take part in none. The search is dense over the whole batch (O(n_atoms^2 x images)).
    With concrete counts, a graph whose `sum(n_node)` differs from its positions, or whose last
    graph with atoms has nonzero atomic numbers (no padding graph), is a `ValueError`.

    Args:
      graph: the padded batch.
      cutoff: the pair cutoff in Å, positive.
      capacity: edges of the returned graph (static): real pairs plus padding edges.
      images: cell images scanned per axis (static), `image_ranges(cells, pbc, cutoff)` over the
        batch's cells.

    Returns:
      `(graph, neighbors)`: the graph with `senders`, `receivers`, `edges = {"shifts": ...}`
      (other edge features are dropped) and `n_edge` from the new pairs, edges sorted by
      receiver; padding edges go from and to the first padding node and belong to the padding
      graph. `neighbors` is the `DeviceNeighbors` with `n_pairs`, `overflow` and
      `image_overflow`.
    """
    positions = graph.nodes["positions"]
    n_atoms = np.shape(positions)[0]
    cells, pbc = graph.globals["cell"], graph.globals["pbc"]
    n_graph = num_graphs(graph)
    if np.shape(cells) != (n_graph, 3, 3) or np.shape(pbc) != (n_graph, 3):
        raise ValueError(
            f"globals['cell'] must be [n_graph, 3, 3] and globals['pbc'] [n_graph, 3] with "
            f"n_graph = {n_graph}, got {np.shape(cells)} and {np.shape(pbc)}."
        )
    _check_arrays(positions, cells[0], pbc[0], None)
    _check_padded(graph, n_atoms)
    _check_cutoff(cutoff)
    images = _check_static(capacity, images)
    atom_graph = node_graph_index(graph).astype(jnp.int32)
    padding_index = (n_atoms - get_number_of_padding_with_graphs_nodes(graph)).astype(jnp.int32)
    neighbors = _pairs(
        jnp.asarray(positions),
        cells,
        pbc,
        atom_graph,
        jnp.asarray(get_node_padding_mask(graph)),
        cutoff,
        int(capacity),
        images,
        padding_index,
    )
    # padding edges point at the padding node, so they count in the padding graph
    n_edge = jax.ops.segment_sum(
        jnp.ones(capacity, jnp.int32), atom_graph[neighbors.receivers], n_graph,
        indices_are_sorted=True,
    )
    rebuilt = graph._replace(
        senders=neighbors.senders,
        receivers=neighbors.receivers,
        edges={"shifts": neighbors.shifts},
        n_edge=n_edge,
    )
    return rebuilt, neighbors


def grown_capacity(n_pairs: int, growth: float = 1.25, multiple: int = 64) -> int:
    """The capacity to rerun with after an overflow: `n_pairs * growth`, rounded up to a multiple
    of `multiple`, so a slowly growing count recompiles rarely. Host-side.

    Args:
      n_pairs: the true pair count an overflowing list reported.
      growth: the headroom factor, at least 1.
      multiple: capacities are multiples of this (the bucket step).

    Returns:
      An int `>= max(n_pairs, 1)`.
    """
    if (isinstance(n_pairs, bool) or np.ndim(n_pairs) != 0
            or not np.issubdtype(np.asarray(n_pairs).dtype, np.integer) or n_pairs < 0):
        raise ValueError(f"n_pairs must be a non-negative int, got {n_pairs!r}.")
    if growth < 1 or multiple < 1:
        raise ValueError(f"growth must be >= 1 and multiple >= 1, got {growth} and {multiple}.")
    return max(multiple, multiple * math.ceil(int(n_pairs) * growth / multiple))


class GrowingNeighborList:
    """A jitted device list whose capacity and images grow on the host when a call overflows.

    Each call runs the jitted list; when it reports `overflow`, the capacity becomes
    `grown_capacity(n_pairs, growth, multiple)`, and when it reports `image_overflow`, the images
    are recomputed from the call's cell (`image_ranges`); then the call reruns. A list that
    grows recompiles once for the new size, and later calls of that size reuse it. Host-side
    (reads `overflow` back from the device after each call). `traces` counts compilations.

    Args:
      cutoff: the pair cutoff in Å.
      capacity: the first capacity (pair slots).
      images: the first images per axis; None computes them from the first call's cell.
      growth: headroom factor when the capacity grows.
      multiple: capacities are multiples of this.
    """

    def __init__(
        self,
        cutoff: float,
        capacity: int,
        images: tuple[int, int, int] | None = None,
        growth: float = 1.25,
        multiple: int = 64,
    ):
        _check_cutoff(cutoff)
        _check_static(capacity, (0, 0, 0) if images is None else images)
        self.cutoff = float(cutoff)
        self.capacity = int(capacity)
        self.images = None if images is None else tuple(int(count) for count in images)
        self.growth = growth
        self.multiple = multiple
        self.traces = 0

        def arrays(positions, cell, pbc, atom_mask, capacity, images):
            self.traces += 1
            return device_neighbor_list(
                positions, cell, pbc, self.cutoff, capacity=capacity, images=images,
                atom_mask=atom_mask,
            )

        def graphs(graph, capacity, images):
            self.traces += 1
            return graph_with_device_neighbors(
                graph, self.cutoff, capacity=capacity, images=images
            )

        self._arrays = jax.jit(arrays, static_argnames=("capacity", "images"))
        self._graphs = jax.jit(graphs, static_argnames=("capacity", "images"))

    def _run(self, run, cell, pbc):
        if self.images is None:
            self.images = image_ranges(cell, pbc, self.cutoff)
        while True:
            result = run(self.capacity, self.images)
            neighbors = result if isinstance(result, DeviceNeighbors) else result[1]
            overflow, image_overflow, n_pairs = jax.device_get(
                (neighbors.overflow, neighbors.image_overflow, neighbors.n_pairs)
            )
            if not (overflow or image_overflow):
                return result
            before = (self.capacity, self.images)
            if image_overflow:
                self.images = tuple(
                    max(old, new)
                    for old, new in zip(self.images, image_ranges(cell, pbc, self.cutoff),
                                        strict=True)
                )
            if overflow:
                self.capacity = grown_capacity(n_pairs, self.growth, self.multiple)
            if (self.capacity, self.images) == before:
                raise RuntimeError(
                    f"the device list reports image_overflow with images={self.images}, which "
                    "image_ranges computes for this cell; is the cell finite and full rank?"
                )

    def __call__(self, positions, cell, pbc, atom_mask=None) -> DeviceNeighbors:
        """`device_neighbor_list` of one structure, with room for all its pairs.

        Args:
          positions: `[n_atoms, 3]`.
          cell: `[3, 3]`.
          pbc: `bool [3]`.
          atom_mask: `bool [n_atoms]` or None.

        Returns:
          `DeviceNeighbors` with `overflow` and `image_overflow` False.
        """
        return self._run(
            lambda capacity, images: self._arrays(
                positions, cell, pbc, atom_mask, capacity=capacity, images=images
            ),
            cell,
            pbc,
        )

    def graph(self, graph: GraphsTuple) -> tuple[GraphsTuple, DeviceNeighbors]:
        """`graph_with_device_neighbors` of a padded batch, with room for all its pairs."""
        return self._run(
            lambda capacity, images: self._graphs(graph, capacity=capacity, images=images),
            graph.globals["cell"],
            graph.globals["pbc"],
        )
