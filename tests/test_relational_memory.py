"""Tests of gnkit.nn.RelationalMemory against NumPy references written from the paper's step."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnkit.nn import RelationalMemory
from gnkit.nn.relational_memory import complete_graph_attention, dense_attention


def _cell(**overrides):
    settings = dict(mem_slots=3, head_size=4, num_heads=2, num_blocks=1, attention_mlp_layers=2)
    return RelationalMemory(**{**settings, **overrides})


def _init(cell, batch=2, features=5, seed=0):
    inputs = jax.random.normal(jax.random.key(seed + 1), (batch, features))
    memory = cell.initialize_carry(jax.random.key(seed + 2), inputs.shape)
    memory = memory + 0.3 * jax.random.normal(jax.random.key(seed + 3), memory.shape)
    params = cell.init(jax.random.key(seed), memory, inputs)
    return params, memory, inputs


def _np_layer_norm(x, scale, bias, eps=1e-6):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def _np_dense(x, layer):
    return x @ np.asarray(layer["kernel"]) + np.asarray(layer["bias"])


def _np_multihead_attention(rows, qkv_kernel, qkv_bias, norm, num_heads, key_size, head_size):
    """Textbook multi-head attention, one batch element, one head at a time, in float64."""
    qkv = _np_layer_norm(rows @ qkv_kernel + qkv_bias, norm["scale"], norm["bias"])
    queries = qkv[:, : num_heads * key_size]
    keys = qkv[:, num_heads * key_size : 2 * num_heads * key_size]
    values = qkv[:, 2 * num_heads * key_size :]
    outputs = []
    for head in range(num_heads):
        q = queries[:, head * key_size : (head + 1) * key_size]
        k = keys[:, head * key_size : (head + 1) * key_size]
        v = values[:, head * head_size : (head + 1) * head_size]
        logits = q @ k.T / np.sqrt(key_size)
        weights = np.exp(logits - logits.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        outputs.append(weights @ v)
    return np.concatenate(outputs, axis=-1)


def _np_step(params, memory, inputs, num_heads, key_size, head_size, gate_style="unit",
             forget_bias=1.0, input_bias=0.0):
    """The paper's step in NumPy (float64), parameters taken from the Flax tree by name."""
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), params["params"])
    memory, inputs = np.asarray(memory, np.float64), np.asarray(inputs, np.float64)
    input_row = _np_dense(inputs, p["input_projection"])[:, None, :]
    new_memory = []
    for b in range(memory.shape[0]):
        rows = np.concatenate([memory[b], input_row[b]], axis=0)
        attended = _np_multihead_attention(
            rows, p["attention_0_qkv"]["kernel"], p["attention_0_qkv"]["bias"],
            p["attention_0_qkv_norm"], num_heads, key_size, head_size)
        norm = p["attention_0_norm"]
        rows = _np_layer_norm(rows + attended, norm["scale"], norm["bias"])
        mlp = p["mlp_0"]
        hidden = np.maximum(_np_dense(rows, mlp["dense_0"]), 0)
        norm = p["mlp_0_norm"]
        rows = _np_layer_norm(rows + _np_dense(hidden, mlp["dense_1"]), norm["scale"], norm["bias"])
        next_rows = rows[:-1]
        if gate_style is None:
            new_memory.append(next_rows)
            continue
        gates = _np_dense(input_row[b], p["gate_input"]) + _np_dense(
            np.tanh(memory[b]), p["gate_memory"])
        half = gates.shape[-1] // 2
        sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
        input_gate = sigmoid(gates[:, :half] + input_bias)
        forget_gate = sigmoid(gates[:, half:] + forget_bias)
        new_memory.append(input_gate * np.tanh(next_rows) + forget_gate * memory[b])
    return np.stack(new_memory)


def test_initial_state_is_identity_padded_or_cut():
    wide = RelationalMemory(mem_slots=3, head_size=2, num_heads=2)   # M = 4 > S = 3
    np.testing.assert_array_equal(
        wide.initialize_carry(jax.random.key(0), (2, 7))[1],
        [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]])
    narrow = RelationalMemory(mem_slots=4, head_size=1, num_heads=2)   # M = 2 < S = 4
    np.testing.assert_array_equal(
        narrow.initialize_carry(jax.random.key(0), (1, 7))[0],
        [[1, 0], [0, 1], [0, 0], [0, 0]])


@pytest.mark.parametrize("gate_style, gate_width", [("unit", 8), ("memory", 1), (None, None)])
def test_gate_styles_shapes_and_step_match_numpy(gate_style, gate_width):
    cell = _cell(gate_style=gate_style, forget_bias=0.5, input_bias=-0.25)
    params, memory, inputs = _init(cell)
    if gate_width is None:
        assert "gate_input" not in params["params"]
    else:
        assert params["params"]["gate_input"]["kernel"].shape == (8, 2 * gate_width)
        assert params["params"]["gate_memory"]["kernel"].shape == (8, 2 * gate_width)
    new_memory, output = cell.apply(params, memory, inputs)
    assert new_memory.shape == (2, 3, 8) and output.shape == (2, 24)
    np.testing.assert_array_equal(output, new_memory.reshape(2, 24))
    expected = _np_step(params, memory, inputs, num_heads=2, key_size=4, head_size=4,
                        gate_style=gate_style, forget_bias=0.5, input_bias=-0.25)
    np.testing.assert_allclose(new_memory, expected, rtol=2e-4, atol=2e-5)


def test_key_size_differs_from_head_size():
    cell = _cell(key_size=3)
    params, memory, inputs = _init(cell, seed=5)
    assert params["params"]["attention_0_qkv"]["kernel"].shape == (8, 2 * (2 * 3 + 4))
    expected = _np_step(params, memory, inputs, num_heads=2, key_size=3, head_size=4)
    np.testing.assert_allclose(cell.apply(params, memory, inputs)[0], expected,
                               rtol=2e-4, atol=2e-5)


def test_attention_layouts_equal_numpy_attention():
    rng = np.random.default_rng(0)
    queries, keys = rng.normal(size=(2, 2, 5, 3, 4)).astype(np.float32)
    values = rng.normal(size=(2, 5, 3, 6)).astype(np.float32)
    expected = np.zeros((2, 5, 3, 6))
    for b in range(2):
        for h in range(3):
            logits = queries[b, :, h] @ keys[b, :, h].T / 2.0
            weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
            expected[b, :, h] = weights @ values[b, :, h]
    expected = expected.reshape(2, 5, 18)
    np.testing.assert_allclose(dense_attention(queries, keys, values), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(complete_graph_attention(queries, keys, values), expected,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_graph_layout_equals_dense_layout_with_the_same_weights():
    dense, graph = _cell(num_blocks=2), _cell(num_blocks=2, attention="graph")
    params, memory, inputs = _init(dense, seed=3)

    def loss(params, cell):
        new_memory, output = cell.apply(params, memory, inputs)
        return jnp.sum(output**2) + jnp.sum(jnp.sin(new_memory))

    np.testing.assert_allclose(graph.apply(params, memory, inputs)[1],
                               dense.apply(params, memory, inputs)[1], rtol=1e-5, atol=1e-6)
    grads_dense = jax.grad(loss)(params, dense)
    grads_graph = jax.grad(loss)(params, graph)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
                 grads_dense, grads_graph)


def test_scan_equals_unrolled_cell_and_flax_rnn():
    cell = _cell()
    sequence = jax.random.normal(jax.random.key(7), (2, 4, 5))
    memory = cell.initialize_carry(jax.random.key(0), sequence[:, 0].shape)
    params = cell.init(jax.random.key(1), memory, sequence[:, 0])

    unrolled, state = [], memory
    for t in range(4):
        state, output = cell.apply(params, state, sequence[:, t])
        unrolled.append(output)
    unrolled = np.stack(unrolled, axis=1)

    scanned_cell = nn.scan(RelationalMemory, variable_broadcast="params",
                           split_rngs={"params": False}, in_axes=1, out_axes=1)(
        mem_slots=3, head_size=4, num_heads=2)
    final, scanned = scanned_cell.apply(params, memory, sequence)
    np.testing.assert_allclose(scanned, unrolled, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final, state, rtol=1e-5, atol=1e-6)

    rnn = nn.RNN(cell)
    rnn_outputs = rnn.apply({"params": {"cell": params["params"]}}, sequence)
    np.testing.assert_allclose(rnn_outputs, unrolled, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("setting, message", [
    (dict(gate_style="lstm"), "gate_style"),
    (dict(attention="sparse"), "attention"),
    (dict(num_blocks=0), "num_blocks"),
])
def test_bad_settings_raise_clear_errors(setting, message):
    cell = _cell(**setting)
    memory = jnp.zeros((1, 3, 8))
    with pytest.raises(ValueError, match=message):
        cell.init(jax.random.key(0), memory, jnp.zeros((1, 5)))


def test_memory_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"memory must be \[B, 3, 8\]"):
        _cell().init(jax.random.key(0), jnp.zeros((1, 3, 6)), jnp.zeros((1, 5)))
