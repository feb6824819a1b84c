"""D-MPNN: the functional block against a NumPy loop, reverse-edge matching, padding, and the
linen module against chemprop v2's BondMessagePassing with copied weights."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.batching import pad_with_graphs
from gnkit.dmpnn import (
    bond_message_passing,
    paired_reverse_edges,
    reverse_edge_index,
    swap_edge_pairs,
)
from gnkit.graph import GraphsTuple
from gnkit.nn.dmpnn import DMPNN, graph_readout

# Two molecules: a 3-atom chain (bonds 0-1, 1-2) and a 2-atom one (bond 3-4), edges in pairs.
SENDERS = np.array([0, 1, 1, 2, 3, 4], np.int32)
RECEIVERS = np.array([1, 0, 2, 1, 4, 3], np.int32)
RNG = np.random.default_rng(0)
GRAPH = GraphsTuple(
    nodes=RNG.normal(size=(5, 3)).astype(np.float32),
    edges=RNG.normal(size=(6, 2)).astype(np.float32),
    receivers=RECEIVERS,
    senders=SENDERS,
    globals=np.zeros((2, 1), np.float32),
    n_node=np.array([3, 2], np.int32),
    n_edge=np.array([4, 2], np.int32),
)


def numpy_dmpnn(graph, w_i, w_h, w_o, b_o, depth):
    """chemprop's equations edge by edge: m[s->r] = sum of h[k->s] over k != r."""
    relu = lambda x: np.maximum(x, 0)  # noqa: E731
    x, e, s, r = graph.nodes, graph.edges, graph.senders, graph.receivers
    h0 = np.stack([np.concatenate([x[s[j]], e[j]]) @ w_i for j in range(len(s))])
    h = relu(h0)
    for _ in range(depth - 1):
        m = np.zeros_like(h)
        for j in range(len(s)):
            for k in range(len(s)):
                if r[k] == s[j] and s[k] != r[j]:
                    m[j] += h[k]
        h = relu(h0 + m @ w_h)
    node_m = np.zeros((len(x), h.shape[1]))
    for j in range(len(s)):
        node_m[r[j]] += h[j]
    return relu(np.concatenate([x, node_m], axis=1) @ w_o + b_o)


def test_block_equals_the_edge_by_edge_numpy_loop():
    w_i, w_h, w_o = (RNG.normal(size=shape) * 0.5 for shape in ((5, 4), (4, 4), (7, 4)))
    b_o = RNG.normal(size=4)
    block = bond_message_passing(
        lambda z: z @ w_i, lambda z: z @ w_h, lambda z: z @ w_o + b_o, depth=3
    )
    out = jax.jit(block)(GRAPH)
    expected = numpy_dmpnn(GRAPH, w_i, w_h, w_o, b_o, 3)
    np.testing.assert_allclose(out.nodes, expected, rtol=1e-4, atol=1e-5)
    assert out.edges.shape == (6, 4)
    # depth 1: no edge update, the readout of tau(W_i [x_s, e]).
    out1 = bond_message_passing(
        lambda z: z @ w_i, lambda z: z @ w_h, lambda z: z @ w_o + b_o, depth=1
    )(GRAPH)
    np.testing.assert_allclose(
        out1.nodes, numpy_dmpnn(GRAPH, w_i, w_h, w_o, b_o, 1), rtol=1e-4, atol=1e-5
    )
    with pytest.raises(ValueError, match="depth must be at least 1"):
        bond_message_passing(None, None, None, depth=0)


def test_reverse_edge_index_matches_pairs_and_names_a_missing_reverse():
    np.testing.assert_array_equal(reverse_edge_index(SENDERS, RECEIVERS), [1, 0, 3, 2, 5, 4])
    np.testing.assert_array_equal(paired_reverse_edges(6), [1, 0, 3, 2, 5, 4])
    shuffled = reverse_edge_index(np.array([2, 0, 1, 1, 3]), np.array([1, 1, 0, 2, 3]))
    np.testing.assert_array_equal(shuffled, [3, 2, 1, 0, 4])
    with pytest.raises(ValueError, match=r"edge 0 \(0 -> 1\) has no reverse edge"):
        reverse_edge_index(np.array([0, 1]), np.array([1, 2]))


def test_swapping_pairs_equals_the_reverse_gather_with_its_gradient():
    values = jnp.asarray(RNG.normal(size=(6, 4)), jnp.float32)
    np.testing.assert_array_equal(swap_edge_pairs(values), values[paired_reverse_edges(6)])
    weights = jnp.asarray(RNG.normal(size=(6, 4)), jnp.float32)
    swapped = jax.grad(lambda v: (swap_edge_pairs(v) * weights).sum())(values)
    np.testing.assert_array_equal(swapped, np.asarray(weights)[[1, 0, 3, 2, 5, 4]])
    with pytest.raises(ValueError, match="even in number, got 5: pad to an even n_edge"):
        swap_edge_pairs(values[:5])


def test_default_reverses_equal_explicit_pair_indices_in_value_and_gradient():
    w_i, w_h, w_o = (jnp.asarray(RNG.normal(size=shape), jnp.float32)
                     for shape in ((5, 4), (4, 4), (7, 3)))

    def total(weights, reverse_edges):
        block = bond_message_passing(
            lambda z: z @ weights[0], lambda z: z @ weights[1], lambda z: z @ weights[2]
        )
        return block(GRAPH, reverse_edges).nodes.sum()

    default = jax.value_and_grad(total)((w_i, w_h, w_o), None)
    explicit = jax.value_and_grad(total)((w_i, w_h, w_o), jnp.asarray(paired_reverse_edges(6)))
    for ours, theirs in zip(jax.tree.leaves(default), jax.tree.leaves(explicit), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_padding_leaves_real_outputs_unchanged():
    model = DMPNN(hidden_size=8, depth=3)
    params = model.init(jax.random.PRNGKey(0), GRAPH)
    plain = model.apply(params, GRAPH).nodes
    padded = pad_with_graphs(GRAPH, n_node=9, n_edge=12, n_graph=4)
    out = jax.jit(model.apply)(params, padded)
    np.testing.assert_allclose(out.nodes[:5], plain, rtol=1e-5, atol=1e-6)
    pooled = graph_readout(out, "mean")
    np.testing.assert_allclose(pooled[:2], [plain[:3].mean(0), plain[3:].mean(0)], rtol=1e-5)
    np.testing.assert_allclose(graph_readout(out, "norm")[0], plain[:3].sum(0) / 100, rtol=1e-5)
    with pytest.raises(ValueError, match="readout must be one of"):
        graph_readout(out, "max")


def test_module_equals_chemprops_bond_message_passing_with_copied_weights():
    torch = pytest.importorskip("torch")
    pytest.importorskip("rdkit")
    chemprop_nn = pytest.importorskip("chemprop.nn")
    from chemprop.data import BatchMolGraph
    from chemprop.featurizers import SimpleMoleculeMolGraphFeaturizer
    from chemprop.utils import make_mol

    from gnkit import chem

    smiles = ["CCO", "c1ccccc1C(=O)N", "[NH4+]", "FC(F)(F)c1ccc(Cl)cc1", "C#CC=C"]
    featurizer = SimpleMoleculeMolGraphFeaturizer()
    theirs_graph = BatchMolGraph([featurizer(make_mol(s)) for s in smiles])
    theirs_graph.V, theirs_graph.E = theirs_graph.V.double(), theirs_graph.E.double()
    torch.manual_seed(0)
    theirs = chemprop_nn.BondMessagePassing(d_h=16, depth=3).double().eval()
    aggregation = chemprop_nn.NormAggregation()
    with torch.no_grad():
        expected_nodes = theirs(theirs_graph)
        expected_pooled = aggregation(expected_nodes, theirs_graph.batch)

    graphs = chem.molecule_graphs(smiles)
    batch = graphs.padded_batch(range(len(smiles)), n_node=48, n_edge=64, n_graph=6)
    batch = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64), batch)._replace(
        senders=batch.senders, receivers=batch.receivers, n_node=batch.n_node, n_edge=batch.n_edge
    )
    params = {
        "params": {
            "W_i": {"kernel": theirs.W_i.weight.detach().numpy().T},
            "W_h": {"kernel": theirs.W_h.weight.detach().numpy().T},
            "W_o": {
                "kernel": theirs.W_o.weight.detach().numpy().T,
                "bias": theirs.W_o.bias.detach().numpy(),
            },
        }
    }
    with jax.enable_x64(True):
        params = jax.tree_util.tree_map(jnp.asarray, params)
        out = jax.jit(DMPNN(hidden_size=16, depth=3).apply)(params, batch)
        n_real = int(graphs.n_node.sum())
        np.testing.assert_allclose(out.nodes[:n_real], expected_nodes.numpy(), rtol=1e-10)
        pooled = graph_readout(out, "norm")[: len(smiles)]
        np.testing.assert_allclose(pooled, expected_pooled.numpy(), rtol=1e-10)


def test_bucketed_molecule_batches_keep_reverse_pairs_for_every_default_bucket():
    pytest.importorskip("rdkit")
    from gnkit import chem
    from gnkit.batching import BucketPolicy, pad_to_bucket

    smiles = chem.load_dataset("esol").smiles
    graphs = chem.molecule_graphs(smiles[:32])
    model = DMPNN(hidden_size=8, depth=3)
    params = model.init(jax.random.PRNGKey(0), graphs.batch(range(4)))
    apply = jax.jit(model.apply)
    for size in (4, 16, 32):  # ESOL's first 16 molecules have 506 edges: rung 3, 629 raw
        batch = graphs.batch(range(size))
        padded = pad_to_bucket(batch, BucketPolicy())
        assert padded.senders.shape[0] % 2 == 0
        np.testing.assert_array_equal(padded.senders[paired_reverse_edges(len(padded.senders))],
                                      padded.receivers)
        n_real = int(batch.n_node.sum())
        np.testing.assert_allclose(
            apply(params, padded).nodes[:n_real], model.apply(params, batch).nodes,
            rtol=1e-5, atol=1e-6,
        )
