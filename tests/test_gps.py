"""Attention within each graph of a padded batch (`gnkit.graph_transformer`) against a per-graph
NumPy loop, and `gnkit.nn.GPSLayer` / `GPS` against PyTorch Geometric's `GPSConv` with copied
weights: outputs, gradients with respect to nodes, edges and every weight, and batch-norm
statistics, on a padded batch of molecule-like graphs in float64."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gnkit as gn
from gnkit.graph_transformer import (
    from_dense_batch,
    masked_attention,
    to_dense_batch,
    within_graph_attention,
)
from gnkit.nn import GINE, GPS, GPSLayer, GraphMultiheadAttention

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")

torch.set_num_threads(1)

MAX_NODES = 12
TOLERANCE = 1e-9


def molecule_like(rng, n):
    """A random tree on `n` nodes with one ring-closing bond, both directions of each bond."""
    bonds = [(int(rng.integers(0, i)), i) for i in range(1, n)]
    bonds.append((0, n - 1) if n > 3 else (0, 1))
    bonds = np.array(bonds)
    return np.concatenate([bonds, bonds[:, ::-1]])


def make_batch(sizes, node_width, edge_width, seed=0, pad=True):
    """A float64 batch of molecule-like graphs and the same batch padded with two graphs."""
    rng = np.random.default_rng(seed)
    graphs = []
    for n in sizes:
        bonds = molecule_like(rng, n)
        graphs.append(
            gn.GraphsTuple(
                nodes=rng.normal(size=(n, node_width)),
                edges=rng.normal(size=(len(bonds), edge_width)),
                senders=bonds[:, 0],
                receivers=bonds[:, 1],
                globals=None,
                n_node=np.array([n]),
                n_edge=np.array([len(bonds)]),
            )
        )
    batch = gn.batch_np(graphs)
    n_node, n_edge = int(batch.n_node.sum()) + 7, len(batch.senders) + 5
    padded = gn.pad_with_graphs(batch, n_node, n_edge, len(sizes) + 2)
    return batch, padded


# ------------------------------------------------------------------ attention within graphs


def test_dense_batch_by_hand_and_back():
    nodes = jnp.arange(6.0)[:, None] + 1.0
    n_node = jnp.array([2, 0, 3, 1])
    dense, mask = to_dense_batch(nodes, n_node, 3)
    np.testing.assert_array_equal(
        dense[..., 0], [[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [3.0, 4.0, 5.0], [6.0, 0.0, 0.0]]
    )
    np.testing.assert_array_equal(
        mask, [[True, True, False], [False, False, False], [True, True, True], [True] + [False] * 2]
    )
    np.testing.assert_array_equal(from_dense_batch(dense, n_node, 6), nodes)
    # A graph larger than max_nodes (a padding graph) loses its extra nodes, which read zeros.
    dense, mask = to_dense_batch(nodes, jnp.array([2, 4]), 3)
    np.testing.assert_array_equal(dense[1, :, 0], [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(
        from_dense_batch(dense, jnp.array([2, 4]), 6)[:, 0], [1, 2, 3, 4, 5, 0]
    )
    with pytest.raises(ValueError, match="max_nodes must be a positive int, got 0"):
        to_dense_batch(nodes, n_node, 0)


def numpy_attention(query, key, value, n_node):
    """Per graph, per head: `softmax(q k^T / sqrt(D)) v` in NumPy."""
    out = np.zeros_like(query)
    start = 0
    for count in n_node:
        rows = slice(start, start + count)
        for head in range(query.shape[1] if count else 0):
            q, k, v = query[rows, head], key[rows, head], value[rows, head]
            logits = q @ k.T / np.sqrt(q.shape[-1])
            weights = np.exp(logits - logits.max(axis=1, keepdims=True))
            out[rows, head] = (weights / weights.sum(axis=1, keepdims=True)) @ v
        start += count
    return out


def test_within_graph_attention_equals_a_numpy_loop_and_ignores_padding():
    rng = np.random.default_rng(0)
    n_node = np.array([3, 1, 0, 5, 4])
    query, key, value = (rng.normal(size=(13, 2, 3)) for _ in range(3))
    expected = numpy_attention(query, key, value, n_node)
    with jax.enable_x64(True):
        attend = jax.jit(within_graph_attention, static_argnums=4)
        out = attend(query, key, value, n_node, 6)
        np.testing.assert_allclose(out, expected, rtol=1e-12)
        # Padding: a trailing graph of 9 nodes (more than max_nodes) changes no real node.
        padded = [np.concatenate([x, rng.normal(size=(9, 2, 3))]) for x in (query, key, value)]
        padded_out = attend(*padded, np.append(n_node, 9), 6)
        np.testing.assert_allclose(padded_out[:13], expected, rtol=1e-12)
        assert np.all(np.isfinite(padded_out))


def test_masked_attention_gradients_equal_finite_differences_and_empty_rows_are_zero():
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        query, key, value = (jnp.asarray(rng.normal(size=(2, 4, 1, 2))) for _ in range(3))
        mask = jnp.array([[True, True, True, False], [False] * 4])

        def loss(query):
            return jnp.sum(masked_attention(query, key, value, mask) ** 2)

        gradient = jax.grad(loss)(query)
        step = 1e-6
        direction = jnp.asarray(rng.normal(size=query.shape))
        numeric = (loss(query + step * direction) - loss(query - step * direction)) / (2 * step)
        np.testing.assert_allclose(jnp.sum(gradient * direction), numeric, rtol=1e-6)
        np.testing.assert_array_equal(masked_attention(query, key, value, mask)[1], 0.0)
        assert np.all(np.isfinite(gradient))


# --------------------------------------------------------------------- PyG GPSConv parity


def pyg_gps_conv(channels, heads, norm):
    gine = pyg_nn.GINEConv(
        torch.nn.Sequential(
            torch.nn.Linear(channels, channels),
            torch.nn.ReLU(),
            torch.nn.Linear(channels, channels),
        )
    )
    norm_kwargs = {"mode": "node"} if norm == "layer_norm" else None
    return pyg_nn.GPSConv(channels, gine, heads=heads, norm=norm, norm_kwargs=norm_kwargs).double()


def gnkit_variables(conv, norm, read):
    """gnkit's `{params, batch_stats}` of `conv`, each leaf `read(torch tensor)` as NumPy:
    the weights themselves (`read = data`) or their gradients (`read = grad`)."""
    channels = conv.channels

    def get(name):
        return read(conv.get_parameter(name) if "running" not in name else conv.get_buffer(name))

    def dense(prefix):
        return {"kernel": get(f"{prefix}.weight").T, "bias": get(f"{prefix}.bias")}

    in_weight, in_bias = get("attn.in_proj_weight"), get("attn.in_proj_bias")
    attention = {
        name: {
            "kernel": in_weight[i * channels : (i + 1) * channels].T,
            "bias": in_bias[i * channels : (i + 1) * channels],
        }
        for i, name in enumerate(("query", "key", "value"))
    }
    attention["output"] = dense("attn.out_proj")
    params = {"attention": attention, "mlp_hidden": dense("mlp.0"), "mlp_output": dense("mlp.3")}
    if conv.conv is not None:
        params["local"] = {"mlp": {"dense_0": dense("conv.nn.0"), "dense_1": dense("conv.nn.2")}}
    stats = {}
    for ours, theirs in (
        ("norm_local", "norm1"),
        ("norm_attention", "norm2"),
        ("norm_output", "norm3"),
    ):
        if norm == "batch_norm":
            params[ours] = {
                "scale": get(f"{theirs}.module.weight"),
                "bias": get(f"{theirs}.module.bias"),
            }
            if read is _data:
                stats[ours] = {
                    "mean": get(f"{theirs}.module.running_mean"),
                    "var": get(f"{theirs}.module.running_var"),
                }
        elif norm == "layer_norm":
            params[ours] = {"scale": get(f"{theirs}.weight"), "bias": get(f"{theirs}.bias")}
    return {"params": params, "batch_stats": stats}


def _data(tensor):
    return tensor.detach().numpy().copy()


def _grad(tensor):
    return tensor.grad.numpy().copy()


def run_pyg(conv, batch, cotangent, train):
    conv.train(train)
    x = torch.tensor(batch.nodes, requires_grad=True)
    edge_attr = torch.tensor(batch.edges, requires_grad=True)
    edge_index = torch.from_numpy(np.stack([batch.senders, batch.receivers]))
    graph_of_node = torch.from_numpy(np.repeat(np.arange(len(batch.n_node)), batch.n_node))
    out = conv(x, edge_index, graph_of_node, edge_attr=edge_attr)
    (out * torch.from_numpy(cotangent)).sum().backward()
    return _data(out), _grad(x), _grad(edge_attr)


def run_gnkit(layer, variables, padded, cotangent, train):
    """Output, gradients (params, nodes, edges) and new batch statistics on the padded batch;
    the cotangent is zero on padding nodes."""
    n_real = cotangent.shape[0]
    full_cotangent = np.zeros((padded.nodes.shape[0], cotangent.shape[1]))
    full_cotangent[:n_real] = cotangent
    node_mask = gn.get_node_padding_mask(padded)

    def objective(params, nodes, edges):
        graph = padded._replace(nodes=nodes, edges=edges)
        out, updates = layer.apply(
            {"params": params, "batch_stats": variables["batch_stats"]},
            graph,
            node_mask=node_mask,
            train=train,
            mutable=["batch_stats"],
        )
        return jnp.sum(out.nodes * full_cotangent), (out.nodes, updates)

    with jax.enable_x64(True):
        grads, (out, updates) = jax.jit(jax.grad(objective, argnums=(0, 1, 2), has_aux=True))(
            variables["params"], jnp.asarray(padded.nodes), jnp.asarray(padded.edges)
        )
    return np.asarray(out), grads, updates


def assert_trees_close(actual, expected, what):
    flat_actual = jax.tree_util.tree_leaves_with_path(actual)
    flat_expected = jax.tree_util.tree_leaves_with_path(expected)
    assert [path for path, _ in flat_actual] == [path for path, _ in flat_expected], what
    for (path, a), (_, e) in zip(flat_actual, flat_expected, strict=True):
        # Biases can have no gradient (softmax ignores one shared by all keys, batch norm in
        # training one shared by all nodes); every kernel and scale has one.
        if jax.tree_util.keystr(path).endswith(("['kernel']", "['scale']")):
            assert np.abs(e).max() > 1e-4, (what, path)
        np.testing.assert_allclose(
            np.asarray(a),
            e,
            rtol=TOLERANCE,
            atol=TOLERANCE,
            err_msg=f"{what} {jax.tree_util.keystr(path)}",
        )


@pytest.mark.parametrize(
    "norm, train, heads",
    [("batch_norm", True, 2), ("batch_norm", False, 4), ("layer_norm", True, 1), (None, False, 2)],
)
def test_gps_layer_matches_pyg_gpsconv(norm, train, heads):
    channels = 8
    batch, padded = make_batch([5, 9, 3, 12, 7, 6], channels, channels)
    torch.manual_seed(0)
    conv = pyg_gps_conv(channels, heads, norm)
    if norm == "batch_norm":
        with torch.no_grad():  # nontrivial running statistics for evaluation mode
            for name, buffer in conv.named_buffers():
                if "running_mean" in name:
                    buffer.normal_()
                elif "running_var" in name:
                    buffer.uniform_(0.5, 2.0)
    variables = gnkit_variables(conv, norm, _data)
    cotangent = np.random.default_rng(5).normal(size=(batch.nodes.shape[0], channels))
    layer = GPSLayer(heads, MAX_NODES, norm=norm)

    out, (param_grads, node_grads, edge_grads), updates = run_gnkit(
        layer, variables, padded, cotangent, train
    )
    pyg_out, pyg_node_grads, pyg_edge_grads = run_pyg(conv, batch, cotangent, train)
    n_real, n_edge = batch.nodes.shape[0], batch.senders.shape[0]

    assert np.abs(pyg_out).max() > 0.1
    np.testing.assert_allclose(out[:n_real], pyg_out, rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(node_grads[:n_real], pyg_node_grads, rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(edge_grads[:n_edge], pyg_edge_grads, rtol=TOLERANCE, atol=TOLERANCE)
    assert_trees_close(param_grads, gnkit_variables(conv, norm, _grad)["params"], "gradient")
    if norm == "batch_norm" and train:
        # Running means alike; torch averages the unbiased batch variance, Flax the biased one.
        new_stats = gnkit_variables(conv, norm, _data)["batch_stats"]
        for name, stats in updates["batch_stats"].items():
            np.testing.assert_allclose(stats["mean"], new_stats[name]["mean"], rtol=TOLERANCE)
            old_var = variables["batch_stats"][name]["var"]
            unbiased = (new_stats[name]["var"] - 0.9 * old_var) / 0.1
            biased = unbiased * (n_real - 1) / n_real
            np.testing.assert_allclose(stats["var"], 0.9 * old_var + 0.1 * biased, rtol=1e-8)


def test_gps_layer_padding_changes_no_real_node_and_dropout_is_live_only_in_training():
    batch, padded = make_batch([4, 6, 5], 8, 8)
    n_real = batch.nodes.shape[0]
    mask = gn.get_node_padding_mask(padded)
    with jax.enable_x64(True):
        variables = jax.jit(GPSLayer(2, 8).init)(jax.random.key(0), batch)

        def apply(dropout_rate, train):
            layer = GPSLayer(2, 8, dropout_rate=dropout_rate)
            return jax.jit(partial(layer.apply, mutable=["batch_stats"], train=train))

        applies = {
            (rate, train): apply(rate, train) for rate in (0.0, 0.3) for train in (False, True)
        }

        def run(dropout_rate, graph, seed, train=False, node_mask=None):
            out, _ = applies[dropout_rate, train](
                variables, graph, node_mask=node_mask, rngs={"dropout": jax.random.key(seed)}
            )
            return np.asarray(out.nodes)

        # Batch statistics over the real nodes only: padding changes nothing.
        plain = run(0.0, batch, 0, train=True)
        np.testing.assert_allclose(
            run(0.0, padded, 0, node_mask=mask, train=True)[:n_real], plain, rtol=1e-10
        )
        # Dropout draws differ by seed in training, and are off in evaluation.
        first, second = run(0.3, batch, 1, train=True), run(0.3, batch, 2, train=True)
        assert np.abs(first - second).max() > 1e-3
        assert np.abs(first - plain).max() > 1e-3
        np.testing.assert_allclose(run(0.3, batch, 1), run(0.0, batch, 2), rtol=1e-12)


def test_attention_only_layer_and_custom_local_layer():
    """`local=None` leaves only the attention branch (PyG's `conv=None`); a module given as
    `local` is used in place of GINE."""
    batch, _ = make_batch([4, 6], 4, 4)
    with jax.enable_x64(True):
        attention_only = GPSLayer(1, 8, local=None, norm=None)
        variables = jax.eval_shape(attention_only.init, jax.random.key(0), batch)
        assert set(variables["params"]) == {"attention", "mlp_hidden", "mlp_output"}
        torch.manual_seed(1)
        conv = pyg_nn.GPSConv(4, None, heads=1, norm=None).double()
        params = gnkit_variables(conv, None, _data)["params"]
        out = jax.jit(attention_only.apply)({"params": params}, batch).nodes
        pyg_out, _, _ = run_pyg_without_local(conv, batch)
        np.testing.assert_allclose(out, pyg_out, rtol=TOLERANCE, atol=TOLERANCE)
        custom = GPSLayer(1, 8, local=GINE((3, 4), epsilon=0.5), norm=None)
        variables = jax.eval_shape(custom.init, jax.random.key(0), batch)
        assert variables["params"]["local"]["mlp"]["dense_0"]["kernel"].shape == (4, 3)


def run_pyg_without_local(conv, batch):
    conv.eval()
    x = torch.tensor(batch.nodes)
    graph_of_node = torch.from_numpy(np.repeat(np.arange(len(batch.n_node)), batch.n_node))
    edge_index = torch.from_numpy(np.stack([batch.senders, batch.receivers]))
    with torch.no_grad():
        return _data(conv(x, edge_index, graph_of_node)), None, None


def test_graph_multihead_attention_rejects_indivisible_width():
    batch, _ = make_batch([4], 6, 6)
    with pytest.raises(ValueError, match="node width 6 is not divisible by num_heads=4"):
        jax.eval_shape(GraphMultiheadAttention(4, 8).init, jax.random.key(0), batch)


# ------------------------------------------------------------------------------------ GPS


@pytest.mark.slow
def test_gps_model_is_its_encoders_then_its_layers():
    batch, padded = make_batch([5, 7, 4], 3, 2)
    lap = gn.laplacian_pe(padded, 4)
    walk = gn.random_walk_pe(padded, 5)
    model = GPS(
        16, 1, 2, MAX_NODES, laplacian_features=4, random_walk_features=3, norm="layer_norm"
    )
    with jax.enable_x64(True):
        variables = jax.jit(partial(model.init, laplacian_pe=lap, random_walk_pe=walk))(
            jax.random.key(0), padded
        )
        params = variables["params"]
        out = jax.jit(partial(model.apply, laplacian_pe=lap, random_walk_pe=walk))(
            variables, padded
        ).nodes

        def dense(name, x):
            return x @ params[name]["kernel"] + params[name]["bias"]

        nodes = np.concatenate(
            [
                dense("node_encoder", padded.nodes),
                dense("laplacian_encoder", lap),
                dense("random_walk_encoder", walk),
            ],
            axis=-1,
        )
        assert nodes.shape[-1] == 16
        graph = padded._replace(nodes=nodes, edges=dense("edge_encoder", padded.edges))
        layer = GPSLayer(2, MAX_NODES, norm="layer_norm")
        graph = jax.jit(layer.apply)({"params": params["layer_0"]}, graph)
        np.testing.assert_allclose(out, graph.nodes, rtol=1e-10)


def test_gps_flips_laplacian_signs_per_graph_in_training_only():
    """With the Laplacian encoding the only input that varies, the encoder's output in training
    is the evaluation one with each graph's columns negated or not."""
    batch, _ = make_batch([5, 7, 4, 6], 3, 2)
    lap = gn.laplacian_pe(batch, 3)
    model = GPS(8, 0, 1, MAX_NODES, laplacian_features=3)
    with jax.enable_x64(True):
        variables = jax.jit(partial(model.init, laplacian_pe=lap))(jax.random.key(0), batch)
        train = jax.jit(partial(model.apply, laplacian_pe=lap, train=True))
        kernel = np.asarray(variables["params"]["laplacian_encoder"]["kernel"])
        bias = np.asarray(variables["params"]["laplacian_encoder"]["bias"])
        seen = set()
        for seed in range(4):
            out = train(variables, batch, rngs={"dropout": jax.random.key(seed)}).nodes[:, -3:]
            # Recover the flipped encodings from the linear encoder's output.
            flipped = np.linalg.lstsq(kernel.T, (np.asarray(out) - bias).T, rcond=None)[0].T
            start = 0
            for count in batch.n_node:
                rows = slice(start, start + count)
                signs = np.sign(np.sum(flipped[rows] * lap[rows], axis=0))
                np.testing.assert_allclose(flipped[rows], lap[rows] * signs, atol=1e-8)
                seen.update(signs.tolist())
                start += count
        assert seen == {-1.0, 1.0}
        evaluation = model.apply(variables, batch, laplacian_pe=lap).nodes[:, -3:]
        np.testing.assert_allclose(evaluation, lap @ kernel + bias, rtol=1e-10)


def test_gps_names_bad_arguments():
    batch, _ = make_batch([4], 3, 2)
    with pytest.raises(ValueError, match="channels=8 must exceed"):
        jax.eval_shape(
            partial(
                GPS(8, 1, 1, 8, laplacian_features=4, random_walk_features=4).init,
                laplacian_pe=np.zeros((4, 2)),
                random_walk_pe=np.zeros((4, 2)),
            ),
            jax.random.key(0),
            batch,
        )
    with pytest.raises(ValueError, match="pass laplacian_pe exactly when laplacian_features > 0"):
        jax.eval_shape(GPS(8, 1, 1, 8, laplacian_features=2).init, jax.random.key(0), batch)
    with pytest.raises(ValueError, match="local must be 'gine', a linen module or None"):
        jax.eval_shape(GPSLayer(1, 8, local="gcn").init, jax.random.key(0), batch)
    with pytest.raises(ValueError, match="norm must be one of"):
        jax.eval_shape(GPSLayer(1, 8, norm="group_norm").init, jax.random.key(0), batch)
