"""SchNet and PaiNN (gnkit.atoms.nn, gnkit.atoms.nnx): symmetries, derivatives, padding, the NNX
twins, PyTorch Geometric's SchNet with the same weights and edges, and a small fit."""

import math

import ase
import ase.io
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _atoms_graphs import batch_of, graph_of, random_crystal, random_molecule
from ase.build import molecule
from flax import nnx

import gnkit as gn
from gnkit.atoms import nn as atoms_nn
from gnkit.atoms import nnx as atoms_nnx
from gnkit.atoms.features import edge_vectors, safe_norm
from gnkit.atoms.potential import ScaleShift, energy_forces_stress, loss, structure_energies

SPECIES = (1, 6, 8)
CUTOFF = 3.0  # the models' cutoff; graphs are built to 3.5 Å, so pairs beyond 3 Å do nothing
GRAPH_CUTOFF = 3.5
MODELS = {
    "SchNet": lambda **sizes: atoms_nn.SchNet(SPECIES, CUTOFF, features=8, num_filters=8,
                                              num_interactions=2, num_basis=6, **sizes),
    "PaiNN": lambda **sizes: atoms_nn.PaiNN(SPECIES, CUTOFF, features=8, num_interactions=2,
                                            num_basis=6, **sizes),
}


def structures(seed=0):
    rng = np.random.default_rng(seed)
    return [molecule("CH3OH"), random_crystal(rng, [8, 1, 1, 6], size=3.3),
            random_molecule(rng, [6, 1, 1, 8, 1])]


def predictor(model, params):
    """Jitted `graph -> energy_forces_stress` of the model with `params`."""

    def energy_fn(graph):
        return structure_energies(model.apply(params, graph), graph)

    return jax.jit(lambda graph: energy_forces_stress(energy_fn, graph))


def init(model, graph):
    return jax.jit(model.init)(jax.random.key(0), graph)


def per_structure(result, graph):
    """The prediction split into one (energy, forces, stress) per structure."""
    bounds = np.cumsum(np.asarray(graph.n_node))[:-1]
    forces = np.split(np.asarray(result["forces"]), bounds)
    return [(float(result["energy"][k]), forces[k], np.asarray(result["stress"][k]))
            for k in range(len(graph.n_node))]


def rotation(seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def moved(atoms, rotate, shift, order):
    """`atoms` reordered by `order`, rotated by `rotate` (cell too) and translated by `shift`."""
    atoms = atoms[order]
    atoms.set_cell(atoms.cell[:] @ rotate.T, scale_atoms=False)
    atoms.positions = atoms.positions @ rotate.T + shift
    return atoms


def lattice_equivalent(atoms):
    """The same crystal in a cell re-expressed by a unimodular integer matrix, atoms wrapped."""
    atoms = atoms.copy()
    if atoms.pbc.all():
        unimodular = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 1]])
        atoms.set_cell(unimodular @ atoms.cell[:], scale_atoms=False)
        atoms.wrap()
    return atoms


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float32, 2e-5, 2e-5), (np.float64, 1e-10, 1e-11)])
def test_energy_invariant_and_forces_stress_equivariant(name, dtype, rtol, atol):
    with jax.enable_x64(dtype == np.float64):
        originals = structures()
        graph = batch_of(originals, GRAPH_CUTOFF, dtype)
        model = MODELS[name]()
        predict = predictor(model, init(model, graph))
        reference = per_structure(predict(graph), graph)
        assert reference[1][2].any() and np.abs(reference[0][1]).max() > 1e-3
        rotate = rotation(1)
        orders = [np.random.default_rng(2).permutation(len(atoms)) for atoms in originals]
        transformed = [moved(atoms, rotate, np.array([0.7, -1.3, 2.1]), order)
                       for atoms, order in zip(originals, orders)]
        transformed_graph = batch_of(transformed, GRAPH_CUTOFF, dtype)
        for (energy, forces, stress), (e, f, s), order in zip(
            reference, per_structure(predict(transformed_graph), transformed_graph), orders
        ):
            np.testing.assert_allclose(e, energy, rtol=rtol, atol=atol)
            np.testing.assert_allclose(f, forces[order] @ rotate.T, rtol=rtol, atol=atol)
            np.testing.assert_allclose(s, rotate @ stress @ rotate.T, rtol=rtol, atol=atol)
        recelled = batch_of([lattice_equivalent(atoms) for atoms in originals], GRAPH_CUTOFF,
                            dtype)
        assert not np.allclose(recelled.globals["cell"], graph.globals["cell"])
        for (energy, forces, stress), (e, f, s) in zip(
            reference, per_structure(predict(recelled), recelled)
        ):
            np.testing.assert_allclose(e, energy, rtol=rtol, atol=atol)
            np.testing.assert_allclose(f, forces, rtol=rtol, atol=atol)
            np.testing.assert_allclose(s, stress, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", MODELS)
def test_forces_and_stress_are_finite_differences_of_the_energy(name):
    with jax.enable_x64(True):
        graph = batch_of(structures()[:2], GRAPH_CUTOFF)
        model = MODELS[name]()
        params = init(model, graph)
        result = predictor(model, params)(graph)

        @jax.jit
        def energies(positions, cell):
            moved = graph._replace(nodes=dict(graph.nodes, positions=positions),
                                   globals=dict(graph.globals, cell=cell))
            return structure_energies(model.apply(params, moved), moved)

        positions, cell = graph.nodes["positions"], graph.globals["cell"]
        step = 1e-5
        forces = np.zeros_like(positions)
        for atom in range(len(positions)):
            for axis in range(3):
                delta = np.zeros_like(positions)
                delta[atom, axis] = step
                difference = energies(positions + delta, cell) - energies(positions - delta, cell)
                forces[atom, axis] = -np.sum(difference) / (2 * step)
        np.testing.assert_allclose(result["forces"], forces, rtol=1e-6, atol=1e-8)
        crystal = 1  # the second structure is the periodic one
        atoms = np.asarray(gn.node_graph_index(graph)) == crystal
        stress = np.zeros((3, 3))
        for a in range(3):
            for b in range(3):
                strain = np.zeros((3, 3))
                strain[a, b] += step / 2
                strain[b, a] += step / 2
                plus = positions.copy(), cell.copy()
                minus = positions.copy(), cell.copy()
                plus[0][atoms] = positions[atoms] @ (np.eye(3) + strain)
                minus[0][atoms] = positions[atoms] @ (np.eye(3) - strain)
                plus[1][crystal] = cell[crystal] @ (np.eye(3) + strain)
                minus[1][crystal] = cell[crystal] @ (np.eye(3) - strain)
                difference = energies(*plus)[crystal] - energies(*minus)[crystal]
                stress[a, b] = difference / (2 * step) / abs(np.linalg.det(cell[crystal]))
        np.testing.assert_allclose(result["stress"][crystal], stress, rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(result["stress"][0], 0.0)  # the molecule has no pbc


@pytest.mark.parametrize("name", MODELS)
def test_padding_changes_no_real_number_and_padded_atoms_move_none(name):
    with jax.enable_x64(True):
        graph = batch_of(structures(), GRAPH_CUTOFF)
        n_node, n_edge = int(graph.n_node.sum()), int(graph.n_edge.sum())
        model = MODELS[name]()
        params = init(model, graph)
        predict = predictor(model, params)
        small = gn.pad_with_graphs(graph, n_node + 1, n_edge, 4)
        large = gn.pad_with_graphs(graph, n_node + 9, n_edge + 17, 7)
        exact = predict(small)
        np.testing.assert_array_equal(exact["forces"][n_node:], 0.0)
        np.testing.assert_array_equal(exact["energy"][3:], 0.0)
        rng = np.random.default_rng(0)
        large.nodes["positions"][n_node:] = rng.normal(size=(9, 3))  # padding atoms anywhere
        result = predict(large)
        np.testing.assert_allclose(result["energy"][:3], exact["energy"][:3], rtol=1e-12)
        np.testing.assert_array_equal(result["energy"][3:], 0.0)
        np.testing.assert_allclose(result["forces"][:n_node], exact["forces"][:n_node],
                                   atol=1e-12)
        np.testing.assert_array_equal(result["forces"][n_node:], 0.0)
        np.testing.assert_allclose(result["stress"][:3], exact["stress"][:3], atol=1e-12)
        np.testing.assert_array_equal(result["stress"][3:], 0.0)
        # Training on a padded batch: the loss's gradients (through the forces, so second
        # derivatives at the padding edges' zero vectors) are finite.
        targets = small._replace(
            nodes=dict(small.nodes, forces=np.ones_like(small.nodes["positions"])),
            globals=dict(small.globals, energy=np.ones(4), stress=np.zeros((4, 3, 3))))

        def objective(params):
            energy_fn = lambda g: structure_energies(model.apply(params, g), g)  # noqa: E731
            prediction = energy_forces_stress(energy_fn, targets)
            return loss(prediction, targets, {"energy": 1.0, "forces": 1.0, "stress": 1.0})

        gradients = jax.jit(jax.grad(objective))(params)
        leaves = jax.tree.leaves(gradients)
        assert all(np.all(np.isfinite(leaf)) for leaf in leaves)
        assert any(np.abs(leaf).max() > 0 for leaf in leaves)


@pytest.mark.parametrize("name", MODELS)
def test_nnx_twin_gives_the_linen_numbers_with_converted_weights(name):
    graph = jax.tree.map(jnp.asarray, batch_of(structures(), GRAPH_CUTOFF, np.float32))
    model = MODELS[name]()
    variables = init(model, graph)
    twin = gn.nnx.from_linen(model, variables)
    assert type(twin) is getattr(atoms_nnx, name)
    apply_nnx = nnx.jit(lambda module, graph: module(graph))
    apply_linen = jax.jit(model.apply)
    np.testing.assert_array_equal(apply_nnx(twin, graph), apply_linen(variables, graph))

    sizes = {"features": 8, "num_interactions": 2, "num_basis": 6}
    if name == "SchNet":
        sizes["num_filters"] = 8
    native = getattr(atoms_nnx, name)(SPECIES, CUTOFF, rngs=nnx.Rngs(3), **sizes)
    back = gn.nnx.to_linen_variables(native)
    assert jax.tree.map(np.shape, back) == jax.tree.map(np.shape, variables)
    np.testing.assert_array_equal(apply_linen(back, graph), apply_nnx(native, graph))

    nnx_forces = nnx.jit(lambda twin: energy_forces_stress(
        lambda g: structure_energies(twin(g), g), graph))(twin)
    np.testing.assert_allclose(nnx_forces["forces"], predictor(model, variables)(graph)["forces"],
                               rtol=1e-6, atol=1e-7)
    nnx_gradients = nnx.jit(nnx.grad(lambda twin: jnp.sum(twin(graph) ** 2)))(twin)
    linen_gradients = jax.jit(jax.grad(lambda v: jnp.sum(model.apply(v, graph) ** 2)))(variables)
    flat = jax.tree.leaves(nnx.state(nnx_gradients, nnx.Param))
    np.testing.assert_allclose(
        np.concatenate([np.ravel(leaf) for leaf in flat]),
        np.concatenate([np.ravel(leaf) for leaf in jax.tree.leaves(linen_gradients)]),
        rtol=1e-5, atol=1e-7,
    )


def pyg_schnet_with_our_weights(model, params, graph):
    """PyTorch Geometric's SchNet (float64) holding `params`, its interaction graph our edges."""
    torch = pytest.importorskip("torch")
    from torch_geometric.nn.models import SchNet as PygSchNet
    from torch_geometric.nn.models.schnet import ShiftedSoftplus

    senders = torch.as_tensor(np.asarray(graph.senders), dtype=torch.long)
    receivers = torch.as_tensor(np.asarray(graph.receivers), dtype=torch.long)
    offsets = torch.as_tensor(np.asarray(edge_vectors(graph))
                              - (graph.nodes["positions"][graph.receivers]
                                 - graph.nodes["positions"][graph.senders]))

    def interaction_graph(pos, batch):
        vectors = pos[receivers] - pos[senders] + offsets
        return torch.stack([senders, receivers]), vectors.norm(dim=-1)

    pyg = PygSchNet(hidden_channels=model.features, num_filters=model.num_filters,
                    num_interactions=model.num_interactions, num_gaussians=model.num_basis,
                    cutoff=model.cutoff, interaction_graph=interaction_graph).double()
    # PyG computes its Gaussian centres and width, and log 2 in the shifted softplus, in
    # float32; set them in float64.
    pyg.distance_expansion.offset = torch.linspace(0.0, model.cutoff, model.num_basis,
                                                   dtype=torch.float64)
    pyg.distance_expansion.coeff = -0.5 / (model.cutoff / (model.num_basis - 1)) ** 2
    for module in pyg.modules():
        if isinstance(module, ShiftedSoftplus):
            module.shift = math.log(2.0)
    weights = params["params"]

    def copy(linear, dense):
        linear.weight.data = torch.as_tensor(np.asarray(dense["kernel"], np.float64).T.copy())
        if linear.bias is not None:
            linear.bias.data = torch.as_tensor(np.asarray(dense["bias"], np.float64))

    pyg.embedding.weight.data[list(SPECIES)] = torch.as_tensor(
        np.asarray(weights["embedding"]["embedding"], np.float64))
    for k, block in enumerate(pyg.interactions):
        ours = weights[f"interaction_{k}"]
        copy(block.mlp[0], ours["filter_0"])
        copy(block.mlp[2], ours["filter_1"])
        copy(block.conv.lin1, ours["atoms_to_filters"])
        copy(block.conv.lin2, ours["filters_to_atoms"])
        copy(block.lin, ours["update"])
    copy(pyg.lin1, weights["output_0"])
    copy(pyg.lin2, weights["output_1"])
    return pyg


def test_schnet_equals_pytorch_geometrics_with_the_same_weights_and_edges():
    torch = pytest.importorskip("torch")
    with jax.enable_x64(True):
        # A molecular graph within the cutoff: PyG's CFConv applies the cosine factor without
        # zeroing pairs beyond the cutoff, which its radius graph never has.
        graph = batch_of([molecule("CH3OH"), molecule("CH3CH2OH")], CUTOFF)
        assert np.max(safe_norm(edge_vectors(graph))) < CUTOFF
        model = atoms_nn.SchNet(SPECIES, CUTOFF, features=16, num_filters=12,
                                num_interactions=2, num_basis=7)
        params = init(model, graph)
        params = jax.tree.map(lambda leaf: leaf + 0.1 * np.random.default_rng(0).normal(
            size=leaf.shape), params)  # nonzero biases
        result = predictor(model, params)(graph)
        pyg = pyg_schnet_with_our_weights(model, params, graph)
        positions = torch.tensor(np.asarray(graph.nodes["positions"]), requires_grad=True)
        numbers = torch.as_tensor(np.asarray(graph.nodes["atomic_numbers"]), dtype=torch.long)
        batch = torch.as_tensor(np.asarray(gn.node_graph_index(graph)), dtype=torch.long)
        energies = pyg(numbers, positions, batch)[:, 0]
        (gradient,) = torch.autograd.grad(energies.sum(), positions)
    np.testing.assert_allclose(result["energy"], energies.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(result["forces"], -gradient.numpy(), atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_a_small_fit_on_aspirin_frames_lowers_the_force_error(name):
    frames = ase.io.read("/work/shared/data/atoms/rmd17_aspirin_train.xyz.xz", index=":8")
    for atoms in frames:
        atoms.info["energy"] = atoms.get_potential_energy()
        atoms.arrays["forces"] = atoms.get_forces()
    graph = jax.tree.map(jnp.asarray, batch_of(frames, 4.0, np.float32))
    scaling = ScaleShift.fit(batch_of(frames, 4.0), SPECIES)
    model = (atoms_nn.SchNet if name == "SchNet" else atoms_nn.PaiNN)(
        SPECIES, 4.0, features=32, num_interactions=2)
    params = init(model, graph)
    optimizer = optax.adam(3e-3)

    def predict(params):
        energy_fn = lambda g: structure_energies(  # noqa: E731
            scaling(model.apply(params, g), g.nodes["atomic_numbers"]), g)
        return energy_forces_stress(energy_fn, graph, stress=False)

    def force_error(params):
        return jnp.mean((predict(params)["forces"] - graph.nodes["forces"]) ** 2)

    @jax.jit
    def step(params, state):
        objective = lambda p: loss(predict(p), graph, {"energy": 0.1, "forces": 1.0})  # noqa
        gradients = jax.grad(objective)(params)
        updates, state = optimizer.update(gradients, state, params)
        return optax.apply_updates(params, updates), state

    before = float(jax.jit(force_error)(params))
    state = optimizer.init(params)
    for _ in range(300):
        params, state = step(params, state)
    after = float(jax.jit(force_error)(params))
    assert after < before / 4, (before, after)
