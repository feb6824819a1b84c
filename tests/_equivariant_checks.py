"""The checks every gnkit.atoms model must pass, shared by the NequIP and MACE tests.

Each check takes a linen model and its parameters and compiles one energy / forces / stress
function per graph shape, so a test reuses it across transformed copies of the same structure
(rotations, reflections, translations, permutations and a re-expressed cell keep the shapes).
Parameters are random normals with the standard deviation `fan_in ** -0.5` (what e3nn-jax's
initialisers draw), made on the host, as compiling a model's `init` costs more than its checks.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from _atoms_graphs import batch_of, graph_of, random_crystal, random_molecule

import gnkit as gn
from gnkit.atoms.potential import energy_forces_stress, structure_energies


def random_params(module, graph, seed=0, dtype=np.float64):
    """Host-drawn parameters of `module` for `graph`'s shapes (`fan_in ** -0.5` normals)."""
    shapes = jax.eval_shape(module.init, jax.random.PRNGKey(0), graph)
    rng = np.random.default_rng(seed)

    def draw(leaf):
        std = leaf.shape[-2] ** -0.5 if len(leaf.shape) > 1 else 1.0
        return jnp.asarray(rng.normal(scale=std, size=leaf.shape), dtype)

    return jax.tree.map(draw, shapes)


@functools.cache
def predictor(module):
    """`jit((params, graph) -> energy, forces, stress)` of the model, one per model (so each
    shape compiles once)."""

    def predict(params, graph):
        energy_fn = lambda g: structure_energies(module.apply(params, g), g)  # noqa: E731
        return energy_forces_stress(energy_fn, graph)

    return jax.jit(predict)


def as_jax(graph):
    return jax.tree.map(jnp.asarray, graph)


def transformed(graph, rotation=None, translation=None):
    """`graph` with positions `r R^T + t` and cell rows `c R^T`; the edges stay valid."""
    rotation = np.eye(3) if rotation is None else rotation
    translation = np.zeros(3) if translation is None else translation
    positions = np.asarray(graph.nodes["positions"]) @ rotation.T + translation
    cell = np.asarray(graph.globals["cell"]) @ rotation.T
    return graph._replace(nodes=dict(graph.nodes, positions=positions),
                          globals=dict(graph.globals, cell=cell))


def permuted(graph, order, edge_order):
    """Atom `k` of the result is atom `order[k]` of `graph`; edges reordered by `edge_order`."""
    inverse = np.argsort(order)
    nodes = {name: np.asarray(value)[order] for name, value in graph.nodes.items()}
    edges = {name: np.asarray(value)[edge_order] for name, value in graph.edges.items()}
    senders = inverse[np.asarray(graph.senders)[edge_order]].astype(np.int32)
    receivers = inverse[np.asarray(graph.receivers)[edge_order]].astype(np.int32)
    return graph._replace(nodes=nodes, edges=edges, senders=senders, receivers=receivers)


def random_rotation(rng, proper=True):
    """A random orthogonal matrix with determinant +1 (`proper`) or -1."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q if proper else -q


def crystal_and_molecule(numbers, cutoff, seed=0):
    rng = np.random.default_rng(seed)
    return random_crystal(rng, numbers), random_molecule(rng, numbers)


def check_symmetries(module, params, crystal, cutoff, *, atol, rtol, seed=0):
    """Energy, forces and stress of `crystal` (periodic ASE Atoms) under proper and improper
    rotations, a translation, a permutation of atoms and edges, and a cell re-expressed by a
    unimodular integer matrix (graph rebuilt by ASE's neighbour list)."""
    rng = np.random.default_rng(seed)
    predict = predictor(module)
    graph = graph_of(crystal, cutoff, dtype=params_dtype(params))
    reference = predict(params, as_jax(graph))
    scale = np.max(np.abs(reference["forces"])) + np.abs(reference["energy"]).max()
    assert scale > 1e-6, "the model's outputs vanish: the checks would be empty"

    def close(actual, expected):
        np.testing.assert_allclose(actual, expected, atol=atol * scale, rtol=rtol)

    for proper in (True, False):
        rotation = random_rotation(rng, proper)
        moved = predict(params, as_jax(transformed(graph, rotation, rng.normal(size=3))))
        close(moved["energy"], reference["energy"])
        close(moved["forces"], np.asarray(reference["forces"]) @ rotation.T)
        close(moved["stress"][0], rotation @ np.asarray(reference["stress"][0]) @ rotation.T)

    order = rng.permutation(len(crystal))
    edge_order = rng.permutation(len(graph.senders))
    shuffled = predict(params, as_jax(permuted(graph, order, edge_order)))
    close(shuffled["energy"], reference["energy"])
    close(shuffled["forces"], np.asarray(reference["forces"])[order])
    close(shuffled["stress"], reference["stress"])

    unimodular = np.array([[1, 1, 0], [0, 1, 0], [-1, 0, 1]])
    assert round(np.linalg.det(unimodular)) == 1
    reexpressed = crystal.copy()
    reexpressed.set_cell(unimodular @ crystal.cell[:], scale_atoms=False)
    other = graph_of(reexpressed, cutoff, dtype=params_dtype(params))
    assert len(other.senders) == len(graph.senders)
    lattice = predict(params, as_jax(other))
    close(lattice["energy"], reference["energy"])
    close(lattice["forces"], reference["forces"])
    close(lattice["stress"], reference["stress"])
    return reference


def params_dtype(params):
    return jax.tree.leaves(params)[0].dtype


def check_finite_differences(module, params, crystal, cutoff, step=1e-4):
    """Forces against a central difference of the energy in three coordinates, and the stress
    against a central difference in a diagonal and an off-diagonal strain (float64)."""
    predict = predictor(module)
    graph = graph_of(crystal, cutoff, dtype=np.float64)
    reference = predict(params, as_jax(graph))

    def energy(positions=None, deformation=None):
        moved = graph
        if positions is not None:
            moved = moved._replace(nodes=dict(moved.nodes, positions=positions))
        if deformation is not None:
            moved = moved._replace(
                nodes=dict(moved.nodes, positions=moved.nodes["positions"] @ deformation),
                globals=dict(moved.globals, cell=moved.globals["cell"] @ deformation))
        return float(predict(params, as_jax(moved))["energy"][0])

    positions = np.asarray(graph.nodes["positions"])
    for atom, axis in ((0, 0), (1, 2), (len(crystal) - 1, 1)):
        plus, minus = positions.copy(), positions.copy()
        plus[atom, axis] += step
        minus[atom, axis] -= step
        difference = -(energy(plus) - energy(minus)) / (2 * step)
        np.testing.assert_allclose(reference["forces"][atom, axis], difference, rtol=1e-5,
                                   atol=1e-8)
    volume = abs(np.linalg.det(crystal.cell[:]))
    for a, b in ((0, 0), (1, 2)):
        strain = np.zeros((3, 3))
        strain[a, b] = strain[b, a] = step
        difference = (energy(deformation=np.eye(3) + strain)
                      - energy(deformation=np.eye(3) - strain)) / (2 * step * volume)
        expected = reference["stress"][0, a, b] * (1 if a == b else 2)
        np.testing.assert_allclose(expected, difference, rtol=1e-5, atol=1e-8)


def check_padding(module, params, structures, cutoff):
    """The batch of `structures` padded into two buckets gives the same energies and forces;
    padding rows get zero forces, and moving the padding atoms changes no real number."""
    predict = predictor(module)
    dtype = params_dtype(params)
    batch = batch_of(structures, cutoff, dtype=dtype)
    n_atoms, n_edges = int(batch.n_node.sum()), int(batch.n_edge.sum())
    results = []
    for extra_atoms, extra_edges in ((1, 2), (7, 30)):
        padded = gn.pad_with_graphs(batch, n_node=n_atoms + extra_atoms,
                                    n_edge=n_edges + extra_edges, n_graph=len(structures) + 1)
        result = predict(params, as_jax(padded))
        assert np.all(np.asarray(result["forces"][n_atoms:]) == 0)
        assert np.all(np.isfinite(np.asarray(result["stress"])))
        positions = np.asarray(padded.nodes["positions"]).copy()
        positions[n_atoms:] = np.random.default_rng(extra_atoms).normal(size=(extra_atoms, 3))
        moved = predict(params, as_jax(padded._replace(
            nodes=dict(padded.nodes, positions=positions.astype(dtype)))))
        np.testing.assert_array_equal(moved["energy"][:len(structures)],
                                      result["energy"][:len(structures)])
        np.testing.assert_array_equal(moved["forces"][:n_atoms], result["forces"][:n_atoms])
        results.append(result)
    small, large = results
    np.testing.assert_allclose(small["energy"][:len(structures)],
                               large["energy"][:len(structures)], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(small["forces"][:n_atoms], large["forces"][:n_atoms],
                               rtol=1e-6, atol=1e-9)
    return small
