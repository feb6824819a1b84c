"""SchNet and PaiNN (gnkit.atoms.nn, gnkit.atoms.nnx): the shared model checks (symmetries, a
lattice-equivalent cell, finite differences, padding, the NNX twin, an unknown species), PyTorch
Geometric's SchNet with the same weights and edges, and a small fit (slow)."""

import math

import jax
import numpy as np
import pytest
from _atoms_graphs import batch_of
from _equivariant_checks import CUTOFF, SPECIES, ModelChecks, as_jax, predictor, random_params
from ase.build import molecule

import gnkit as gn
from gnkit.atoms import nn as atoms_nn
from gnkit.atoms import nnx as atoms_nnx
from gnkit.atoms.features import edge_vectors, safe_norm


class TestSchNet(ModelChecks):
    linen_class, twin_class = atoms_nn.SchNet, atoms_nnx.SchNet
    options = dict(features=8, num_filters=8, num_interactions=1, num_basis=6)
    fit_options = dict(features=32, num_interactions=2)


class TestPaiNN(ModelChecks):
    linen_class, twin_class = atoms_nn.PaiNN, atoms_nnx.PaiNN
    options = dict(features=8, num_interactions=1, num_basis=6)
    fit_options = dict(features=32, num_interactions=2)


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
            linear.bias.data = torch.as_tensor(np.array(dense["bias"], np.float64))

    pyg.embedding.weight.data[list(SPECIES)] = torch.as_tensor(
        np.array(weights["embedding"]["embedding"], np.float64))
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
        params = random_params(model, as_jax(graph))  # nonzero biases too
        result = predictor(model)(params, graph)
        pyg = pyg_schnet_with_our_weights(model, params, graph)
        positions = torch.tensor(np.asarray(graph.nodes["positions"]), requires_grad=True)
        numbers = torch.as_tensor(np.asarray(graph.nodes["atomic_numbers"]), dtype=torch.long)
        batch = torch.as_tensor(np.array(gn.node_graph_index(graph)), dtype=torch.long)
        energies = pyg(numbers, positions, batch)[:, 0]
        (gradient,) = torch.autograd.grad(energies.sum(), positions)
    np.testing.assert_allclose(result["energy"], energies.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(result["forces"], -gradient.numpy(), atol=1e-12)
