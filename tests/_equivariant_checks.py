"""The checks every gnkit.atoms model passes, as a base class that each model's tests subclass.

`ModelChecks` holds one test per property: energy invariance and force / stress equivariance under
a random rotation (proper and improper), translation and permutation; a lattice-equivalent cell;
forces and stress against central differences (float64); padding in two buckets; the NNX twin;
an atomic number the model does not know, named; and, slow, float32 tolerances, finite training
gradients on a padded batch and a small fit on rMD17 aspirin.
A subclass names its linen model, NNX twin and sizes. All of a model's checks share one compiled
energy / forces / stress function: every batch is padded to one bucket, and the padding check
adds a second, so a model compiles twice, plus once for its twin's energies. Parameters are
random normals with the standard deviation `fan_in ** -0.5` (what e3nn-jax's initialisers draw),
made on the host, as compiling a model's `init` costs more than its checks. Graphs reach half an
Ångström past the model's cutoff, so the pairs beyond it are there and must do nothing.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _atoms_graphs import batch_of, random_crystal, random_molecule
from flax import nnx

import gnkit as gn
from gnkit.atoms.equivariant import average_num_neighbors
from gnkit.atoms.potential import ScaleShift, energy_forces_stress, loss, structure_energies
from gnkit.nnx import from_linen, to_linen_variables

SPECIES = (1, 6, 8)
CUTOFF = 3.0
CRYSTAL_NUMBERS = [1, 6, 8, 6]
MOLECULE_NUMBERS = [6, 1, 8, 1, 1]
BUCKETS = ((2, 6, 1), (9, 31, 3))  # (padding atoms, padding edges, padding graphs)


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


def random_rotation(rng, proper=True):
    """A random orthogonal matrix with determinant +1 (`proper`) or -1."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q if proper else -q


def moved(atoms, rotation, translation, order):
    """`atoms` reordered by `order` (atom `k` is atom `order[k]`), positions `r R^T + t`, cell
    rows `c R^T`."""
    atoms = atoms[order]
    atoms.set_cell(atoms.cell[:] @ rotation.T, scale_atoms=False)
    atoms.positions = atoms.positions @ rotation.T + translation
    return atoms


def lattice_equivalent(atoms):
    """The same crystal in a cell re-expressed by a unimodular integer matrix, atoms wrapped."""
    atoms = atoms.copy()
    unimodular = np.array([[1, 1, 0], [0, 1, 0], [-1, 0, 1]])
    assert round(np.linalg.det(unimodular)) == 1
    atoms.set_cell(unimodular @ atoms.cell[:], scale_atoms=False)
    atoms.wrap()
    return atoms


class Case:
    """A model with host-drawn parameters and a crystal and a molecule to check it on.

    `predict(structures)` pads the batch of `structures` (ASE Atoms with the case's atom and edge
    counts: the case's structures moved, relabelled or re-celled) into one bucket, so every call
    after the first reuses the compiled program.
    """

    def __init__(self, module, cutoff, dtype=np.float64, seed=0):
        rng = np.random.default_rng(seed)
        self.module, self.dtype, self.graph_cutoff = module, dtype, cutoff + 0.5
        self.structures = [random_crystal(rng, CRYSTAL_NUMBERS),
                           random_molecule(rng, MOLECULE_NUMBERS)]
        batch = batch_of(self.structures, self.graph_cutoff, dtype)
        self.n_node, self.n_edge = int(batch.n_node.sum()), int(batch.n_edge.sum())
        self.edge_counts = list(batch.n_edge)
        with jax.enable_x64(dtype == np.float64):
            self.params = random_params(module, as_jax(batch), dtype=dtype)
        self.reference = self.predict(self.structures)
        self.scale = (np.abs(self.reference["forces"]).max()
                      + np.abs(self.reference["energy"]).max())
        assert self.scale > 1e-6, "the model's outputs vanish: the checks would be empty"

    def padded(self, structures, bucket=BUCKETS[0]):
        """The padded NumPy batch of `structures` (the case's counts) in `bucket`."""
        batch = batch_of(structures, self.graph_cutoff, self.dtype)
        assert list(batch.n_edge) == self.edge_counts, "the edges changed: a pair at the cutoff"
        atoms, edges, graphs = bucket
        return gn.pad_with_graphs(batch, n_node=self.n_node + atoms, n_edge=self.n_edge + edges,
                                  n_graph=len(structures) + graphs)

    def predict_graph(self, graph):
        with jax.enable_x64(self.dtype == np.float64):
            result = predictor(self.module)(self.params, as_jax(graph))
            return {name: np.asarray(value) for name, value in result.items()}

    def predict(self, structures, bucket=BUCKETS[0]):
        return self.predict_graph(self.padded(structures, bucket))

    def split(self, result):
        """`(energy, forces, stress)` of each real structure of a prediction."""
        bounds = np.cumsum([len(atoms) for atoms in self.structures])
        forces = np.split(result["forces"][:bounds[-1]], bounds[:-1])
        return [(result["energy"][k], forces[k], result["stress"][k])
                for k in range(len(self.structures))]

    def assert_close(self, actual, expected, atol, rtol):
        np.testing.assert_allclose(actual, expected, atol=atol * self.scale, rtol=rtol)


def check_fit(linen_class, options, frames=4, steps=40, learning_rate=1e-2):
    """A model of `options` fitted to the energies and forces of `frames` rMD17 aspirin frames
    (scale / shift and E0s from the data) by `steps` Adam steps halves the loss."""
    import optax

    from gnkit.atoms.datasets import load_aspirin

    structures = load_aspirin("train")[:frames]
    for atoms in structures:
        atoms.info["energy"] = atoms.get_potential_energy()
        atoms.arrays["forces"] = atoms.get_forces()
    batch = batch_of(structures, 4.0, dtype=np.float32)
    scale_shift = ScaleShift.fit(batch, SPECIES)
    if "avg_num_neighbors" in {field.name for field in dataclasses.fields(linen_class)}:
        options = dict(options, avg_num_neighbors=average_num_neighbors(batch))
    model = linen_class(SPECIES, 4.0, **options)
    batch = as_jax(batch)
    params = jax.jit(model.init)(jax.random.PRNGKey(0), batch)
    optimiser = optax.adam(learning_rate)

    def objective(params):
        energy_fn = lambda g: structure_energies(  # noqa: E731
            scale_shift(model.apply(params, g), g.nodes["atomic_numbers"]), g)
        return loss(energy_forces_stress(energy_fn, batch, stress=False), batch)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(objective)(params)
        updates, state = optimiser.update(grads, state)
        return optax.apply_updates(params, updates), state, value

    state = optimiser.init(params)
    values = []
    for _ in range(steps):
        params, state, value = step(params, state)
        values.append(float(value))
    assert np.all(np.isfinite(values))
    assert values[-1] < 0.5 * values[0], (values[0], values[-1])


class ModelChecks:
    """The shared tests; a subclass sets `linen_class`, `twin_class`, `options` (the checks'
    sizes) and `fit_options` (the sizes of the slow fit)."""

    linen_class: type
    twin_class: type
    options: dict
    fit_options: dict
    float64_tolerance = dict(atol=1e-11, rtol=1e-9)
    float32_tolerance = dict(atol=1e-5, rtol=1e-4)

    def module(self):
        return self.linen_class(SPECIES, CUTOFF, **self.options)

    @pytest.fixture(scope="class")
    def case(self):
        return Case(self.module(), CUTOFF)

    def check_symmetries(self, case, tolerance, seed=1):
        """Proper and improper rotations, a translation and a permutation of every structure."""
        rng = np.random.default_rng(seed)
        reference = case.split(case.reference)
        assert np.abs(reference[0][2]).max() > 1e-6 * case.scale, "the crystal has no stress"
        for proper in (True, False):
            rotation = random_rotation(rng, proper)
            orders = [rng.permutation(len(atoms)) for atoms in case.structures]
            structures = [moved(atoms, rotation, rng.normal(size=3), order)
                          for atoms, order in zip(case.structures, orders, strict=True)]
            for (energy, forces, stress), (e, f, s), order in zip(
                reference, case.split(case.predict(structures)), orders, strict=True
            ):
                case.assert_close(e, energy, **tolerance)
                case.assert_close(f, forces[order] @ rotation.T, **tolerance)
                case.assert_close(s, rotation @ stress @ rotation.T, **tolerance)

    def test_energy_invariant_forces_and_stress_equivariant_float64(self, case):
        self.check_symmetries(case, self.float64_tolerance)

    def test_a_lattice_equivalent_cell_gives_the_same_energy_forces_and_stress(self, case):
        crystal, molecule = case.structures
        recelled = lattice_equivalent(crystal)
        assert not np.allclose(recelled.cell[:], crystal.cell[:])
        result = case.predict([recelled, molecule])
        for name in ("energy", "forces", "stress"):
            case.assert_close(result[name], case.reference[name], **self.float64_tolerance)

    def test_forces_and_stress_are_central_differences_of_the_energy(self, case, step=1e-5):
        graph = case.padded(case.structures)
        positions = np.asarray(graph.nodes["positions"])
        cell = np.asarray(graph.globals["cell"])
        crystal_atoms = len(case.structures[0])

        def energies(positions, cell):
            nodes = dict(graph.nodes, positions=positions)
            globals_ = dict(graph.globals, cell=cell)
            return case.predict_graph(graph._replace(nodes=nodes, globals=globals_))["energy"]

        for atom, axis in ((0, 0), (1, 2), (crystal_atoms - 1, 1), (crystal_atoms + 1, 0)):
            plus, minus = positions.copy(), positions.copy()
            plus[atom, axis] += step
            minus[atom, axis] -= step
            difference = -np.sum(energies(plus, cell) - energies(minus, cell)) / (2 * step)
            np.testing.assert_allclose(case.reference["forces"][atom, axis], difference,
                                       rtol=1e-6, atol=1e-8 * case.scale)
        volume = abs(np.linalg.det(cell[0]))
        for a, b in ((0, 0), (1, 2)):
            strain = np.zeros((3, 3))
            strain[a, b] += step / 2
            strain[b, a] += step / 2
            deformed = []
            for sign in (1, -1):
                deformation = np.eye(3) + sign * strain
                moved_positions, moved_cell = positions.copy(), cell.copy()
                moved_positions[:crystal_atoms] = positions[:crystal_atoms] @ deformation
                moved_cell[0] = cell[0] @ deformation
                deformed.append(energies(moved_positions, moved_cell)[0])
            difference = (deformed[0] - deformed[1]) / (2 * step * volume)
            np.testing.assert_allclose(case.reference["stress"][0, a, b], difference,
                                       rtol=1e-6, atol=1e-8 * case.scale)
        np.testing.assert_array_equal(case.reference["stress"][1], 0.0)  # the molecule: no pbc

    def test_padding_changes_no_real_number_and_padded_atoms_move_none(self, case):
        real = len(case.structures)
        graph = case.padded(case.structures, BUCKETS[1])
        result = case.predict_graph(graph)
        positions = np.asarray(graph.nodes["positions"]).copy()
        positions[case.n_node:] = np.random.default_rng(0).normal(size=(BUCKETS[1][0], 3))
        shaken = case.predict_graph(graph._replace(nodes=dict(graph.nodes, positions=positions)))
        for name in ("energy", "stress"):
            np.testing.assert_array_equal(shaken[name][:real], result[name][:real])
            np.testing.assert_array_equal(result[name][real:], 0.0)
            np.testing.assert_allclose(result[name][:real], case.reference[name][:real],
                                       rtol=1e-10, atol=1e-12 * case.scale)
        np.testing.assert_array_equal(shaken["forces"][:case.n_node],
                                      result["forces"][:case.n_node])
        np.testing.assert_array_equal(result["forces"][case.n_node:], 0.0)
        np.testing.assert_allclose(result["forces"][:case.n_node],
                                   case.reference["forces"][:case.n_node],
                                   rtol=1e-10, atol=1e-12 * case.scale)

    def test_nnx_twin_gives_the_linen_numbers_with_converted_weights(self, case):
        twin = from_linen(case.module, case.params)
        assert type(twin) is self.twin_class
        with jax.enable_x64(True):
            graph = as_jax(case.padded(case.structures))
            energies = nnx.jit(lambda model, g: structure_energies(model(g), g))(twin, graph)
        np.testing.assert_allclose(energies, case.reference["energy"], rtol=1e-12,
                                   atol=1e-14 * case.scale)
        back = to_linen_variables(twin)
        assert jax.tree.structure(back) == jax.tree.structure(case.params)
        for converted, original in zip(jax.tree.leaves(back), jax.tree.leaves(case.params),
                                       strict=True):
            np.testing.assert_array_equal(converted, original)
        built = nnx.eval_shape(lambda: self.twin_class(SPECIES, rngs=nnx.Rngs(0),
                                                       **self.options))
        assert (jax.tree.map(jnp.shape, built.linen_params())
                == jax.tree.map(jnp.shape, case.params["params"]))
        default_cutoff = {field.name: field.default
                          for field in dataclasses.fields(self.linen_class)}["cutoff"]
        assert built.linen_module.cutoff == default_cutoff != CUTOFF

    def test_an_atomic_number_the_model_does_not_know_is_named_with_its_structure(self, case):
        crystal, molecule = case.structures
        molecule = molecule.copy()
        molecule.numbers[1] = 17
        graph = case.padded([crystal, molecule])
        with (jax.enable_x64(True),
              pytest.raises(ValueError, match=r"atomic number 17 of atom 1 in structure 1 .* "
                                              r"model's species \(1, 6, 8\)")):
            case.module.apply(case.params, graph)

    @pytest.mark.slow
    def test_energy_invariant_forces_and_stress_equivariant_float32(self):
        self.check_symmetries(Case(self.module(), CUTOFF, dtype=np.float32),
                              self.float32_tolerance)

    @pytest.mark.slow
    def test_a_small_fit_on_aspirin_frames_lowers_the_loss(self):
        check_fit(self.linen_class, self.fit_options)

    @pytest.mark.slow
    def test_a_padded_batch_trains_with_finite_parameter_gradients(self, case):
        # The loss reaches the padding edges' zero vectors through the forces, so through
        # second derivatives there.
        graph = case.padded(case.structures, BUCKETS[1])
        n_graph = len(graph.n_node)
        targets = graph._replace(
            nodes=dict(graph.nodes, forces=np.ones_like(graph.nodes["positions"])),
            globals=dict(graph.globals, energy=np.ones(n_graph), stress=np.zeros((n_graph, 3, 3))))

        def objective(params, graph):
            energy_fn = lambda g: structure_energies(case.module.apply(params, g), g)  # noqa
            prediction = energy_forces_stress(energy_fn, graph)
            return loss(prediction, graph, {"energy": 1.0, "forces": 1.0, "stress": 1.0})

        with jax.enable_x64(True):
            gradients = jax.jit(jax.grad(objective))(case.params, as_jax(targets))
        leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(gradients)]
        assert all(np.all(np.isfinite(leaf)) for leaf in leaves)
        assert sum(np.abs(leaf).max() > 0 for leaf in leaves) > len(leaves) // 2

