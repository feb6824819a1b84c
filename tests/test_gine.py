"""`gnkit.gine` and `gnkit.nn.GINE`: a hand-computed layer, and PyTorch Geometric's `GINEConv`
with the same weights (outputs, and gradients with respect to the node and edge features and
every weight), with and without the edge projection and a learned epsilon.

One small directed graph, in float64: node 0 receives a duplicated edge, node 2 holds a
self-edge, node 5 only sends (in-degree 0), node 6 is isolated.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gnkit as gn
from gnkit.graph import GraphsTuple
from gnkit.nn import GINE

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

torch.set_num_threads(1)

SENDERS = np.array([0, 0, 1, 3, 0, 2, 4, 5, 5, 2, 1])
RECEIVERS = np.array([1, 1, 2, 1, 3, 2, 3, 0, 4, 0, 0])
N_NODE = 7
TOLERANCE = 1e-10


def make_graph(nodes, edges):
    return GraphsTuple(
        nodes=jnp.asarray(nodes),
        edges=jnp.asarray(edges),
        receivers=jnp.asarray(RECEIVERS),
        senders=jnp.asarray(SENDERS),
        globals=None,
        n_node=jnp.asarray([N_NODE]),
        n_edge=jnp.asarray([len(SENDERS)]),
    )


def test_gine_block_by_hand():
    """Two nodes, edges 0 -> 1 (feature -3) and 1 -> 1 (feature 1), eps = 0.5, identity MLP:
    node 0 gets `1.5 * 1`; node 1 gets `1.5 * 2 + relu(1 - 3) + relu(2 + 1) = 6`."""
    graph = GraphsTuple(
        nodes=jnp.array([[1.0], [2.0]]),
        edges=jnp.array([[-3.0], [1.0]]),
        senders=jnp.array([0, 1]),
        receivers=jnp.array([1, 1]),
        globals=None,
        n_node=jnp.array([2]),
        n_edge=jnp.array([2]),
    )
    out = gn.gine(lambda x: x, epsilon=0.5)(graph).nodes
    np.testing.assert_allclose(np.asarray(out)[:, 0], [1.5, 6.0])
    doubled = gn.gine(lambda x: x, edge_fn=lambda e: 2 * e, epsilon=0.5)(graph).nodes
    # relu(1 - 6) + relu(2 + 2) = 4.
    np.testing.assert_allclose(np.asarray(doubled)[:, 0], [1.5, 7.0])


def test_gine_rejects_mismatched_edge_width():
    graph = make_graph(np.ones((N_NODE, 3)), np.ones((len(SENDERS), 2)))
    with pytest.raises(ValueError, match="edge features have width 2 but node features 3"):
        gn.gine(lambda x: x)(graph)
    params = GINE((4,), project_edges=False).init
    with pytest.raises(ValueError, match="edge_fn"):
        params(jax.random.key(0), graph)


def _pyg_weights(project, learn_epsilon):
    """(gnkit path, PyG parameter name, kind) of every GINE weight."""
    weights = [
        (("mlp", "dense_0", "kernel"), "nn.0.weight", "kernel"),
        (("mlp", "dense_0", "bias"), "nn.0.bias", "vector"),
        (("mlp", "dense_1", "kernel"), "nn.2.weight", "kernel"),
        (("mlp", "dense_1", "bias"), "nn.2.bias", "vector"),
    ]
    if project:
        weights += [
            (("edge_projection", "kernel"), "lin.weight", "kernel"),
            (("edge_projection", "bias"), "lin.bias", "vector"),
        ]
    if learn_epsilon:
        weights.append((("epsilon",), "eps", "scalar"))
    return weights


def _lookup(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _to_torch(kind, array):
    array = np.asarray(array)
    if kind == "kernel":
        return array.T
    if kind == "scalar":
        return array.reshape(1)
    return array


@pytest.mark.parametrize(
    "node_width, edge_width, project_edges, learn_epsilon",
    [
        (3, 3, None, False),  # same widths: no projection, PyG's edge_dim=None
        (3, 2, None, True),  # widths differ: projected, PyG's edge_dim=2, train_eps
        (3, 3, True, True),  # projection asked for at equal widths, PyG's edge_dim=3
    ],
)
def test_gine_matches_pyg_gineconv(node_width, edge_width, project_edges, learn_epsilon):
    hidden, out_width = 5, 4
    rng = np.random.default_rng(0)
    nodes = rng.normal(size=(N_NODE, node_width))
    edges = rng.normal(size=(len(SENDERS), edge_width))
    cotangent = rng.normal(size=(N_NODE, out_width))
    module = GINE(
        (hidden, out_width), epsilon=0.3, learn_epsilon=learn_epsilon, project_edges=project_edges
    )
    project = project_edges or edge_width != node_width
    weights = _pyg_weights(project, learn_epsilon)

    with jax.enable_x64(True):
        shapes = jax.eval_shape(module.init, jax.random.key(0), make_graph(nodes, edges))
        params = jax.tree_util.tree_map(
            lambda leaf: rng.normal(scale=0.6, size=leaf.shape), shapes["params"]
        )
        assert len(jax.tree_util.tree_leaves(params)) == len(weights)

        def objective(params, nodes, edges):
            out = module.apply({"params": params}, make_graph(nodes, edges)).nodes
            return jnp.sum(out * cotangent), out

        (param_grads, node_grads, edge_grads), out = jax.grad(
            objective, argnums=(0, 1, 2), has_aux=True
        )(params, jnp.asarray(nodes), jnp.asarray(edges))

    mlp = torch.nn.Sequential(
        torch.nn.Linear(node_width, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, out_width)
    )
    conv = pyg_nn.GINEConv(
        mlp, eps=0.3, train_eps=learn_epsilon, edge_dim=edge_width if project else None
    ).double()
    with torch.no_grad():
        conv.eps.fill_(0.3)  # PyG fills its buffer in float32; 0.3 in float64 here
        for path, name, kind in weights:
            conv.get_parameter(name).copy_(torch.from_numpy(_to_torch(kind, _lookup(params, path))))
    assert {name for _, name, _ in weights} == {name for name, _ in conv.named_parameters()}
    x = torch.tensor(nodes, requires_grad=True)
    edge_attr = torch.tensor(edges, requires_grad=True)
    edge_index = torch.from_numpy(np.stack([SENDERS, RECEIVERS]))
    pyg_out = conv(x, edge_index, edge_attr)
    (pyg_out * torch.from_numpy(cotangent)).sum().backward()

    assert np.abs(pyg_out.detach().numpy()).max() > 0.1
    np.testing.assert_allclose(
        np.asarray(out), pyg_out.detach().numpy(), rtol=TOLERANCE, atol=TOLERANCE
    )
    np.testing.assert_allclose(
        np.asarray(node_grads), x.grad.numpy(), rtol=TOLERANCE, atol=TOLERANCE
    )
    np.testing.assert_allclose(
        np.asarray(edge_grads), edge_attr.grad.numpy(), rtol=TOLERANCE, atol=TOLERANCE
    )
    for path, name, kind in weights:
        expected = conv.get_parameter(name).grad.numpy()
        assert np.abs(expected).max() > 1e-3, name
        np.testing.assert_allclose(
            _to_torch(kind, _lookup(param_grads, path)),
            expected,
            rtol=TOLERANCE,
            atol=TOLERANCE,
            err_msg=name,
        )


def test_gine_padding_changes_no_real_output():
    """A padding graph (its edges pointing at its own node) leaves the real nodes unchanged."""
    rng = np.random.default_rng(1)
    graph = make_graph(rng.normal(size=(N_NODE, 3)), rng.normal(size=(len(SENDERS), 2)))
    padded = gn.pad_with_graphs(graph, n_node=N_NODE + 3, n_edge=len(SENDERS) + 4, n_graph=2)
    module = GINE((4, 2))
    params = module.init(jax.random.key(0), graph)
    out = module.apply(params, graph).nodes
    padded_out = module.apply(params, padded).nodes
    np.testing.assert_allclose(np.asarray(padded_out)[:N_NODE], np.asarray(out), rtol=1e-6)
