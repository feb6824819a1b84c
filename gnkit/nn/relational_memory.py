"""Relational memory core (Santoro et al., 2018) as a Flax recurrent cell.

The memory is a set of `S` slots, each a row of `M = num_heads * head_size` features. One step:

1. the input is flattened and projected to `M` features and appended as an extra row, giving
   `S + 1` rows;
2. for each of `num_blocks` blocks, every row attends over every row (multi-head dot-product
   attention: self-attention on the complete graph of the rows, self-edges included), then
   `rows = LayerNorm(rows + attended)` and `rows = LayerNorm(rows + MLP(rows))`, the MLP row-wise;
3. the input row is dropped, and LSTM-style gates, computed from the input row and
   `tanh(previous memory)`, mix the result into the memory:
   `memory' = input_gate * tanh(attended) + forget_gate * previous memory`.

The output is the new memory flattened, `[B, S * M]`. As in Sonnet v1's module, the query, key
and value projection is one dense layer followed by a LayerNorm, queries are scaled by
`key_size ** -0.5`, and the heads are concatenated without an output projection.

Attention runs in one of two layouts with the same parameters and the same numbers: `"dense"`
(default), the complete-graph case written as batched matrix products, and `"graph"`, gnkit's
`graph_attention` block over a fully connected `GraphsTuple` of the rows (edge list, segment
softmax). The tests show the two equal; the dense layout is the faster one for small complete
graphs (`python -m benchmarks.relational_memory`).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.attention import graph_attention
from gnkit.batching import get_fully_connected_graph
from gnkit.nn.mlp import MLP

_GATE_STYLES = ("unit", "memory", None)
_ATTENTION_LAYOUTS = ("dense", "graph")


def initial_memory(batch_size: int, mem_slots: int, mem_size: int) -> jax.Array:
    """The starting memory `[batch_size, mem_slots, mem_size]`: identity rows, padded with zero
    columns (or cut) to `mem_size`. Jittable for static sizes."""
    identity = jnp.eye(mem_slots, dtype=jnp.float32)
    if mem_size > mem_slots:
        identity = jnp.pad(identity, ((0, 0), (0, mem_size - mem_slots)))
    else:
        identity = identity[:, :mem_size]
    return jnp.broadcast_to(identity, (batch_size, mem_slots, mem_size))


def dense_attention(
    queries: jax.Array, keys: jax.Array, values: jax.Array
) -> jax.Array:
    r"""Multi-head scaled dot-product attention of every row over every row.

    `queries`, `keys` `[B, R, H, D]`, `values` `[B, R, H, Dv]`; returns `[B, R, H * Dv]`, row
    `i`'s head `h` being :math:`\sum_j \operatorname{softmax}_j(q_i \cdot k_j / \sqrt{D})\, v_j`.
    This is `graph_attention` on the complete graph of the `R` rows with self-edges, without the
    edge list. Jittable.
    """
    logits = jnp.einsum("bihd,bjhd->bhij", queries, keys) / math.sqrt(queries.shape[-1])
    weights = jax.nn.softmax(logits, axis=-1)
    attended = jnp.einsum("bhij,bjhd->bihd", weights, values)
    return attended.reshape(attended.shape[:2] + (-1,))


def complete_graph_attention(
    queries: jax.Array, keys: jax.Array, values: jax.Array
) -> jax.Array:
    """`dense_attention` computed by `gnkit.attention.graph_attention` over `B` fully connected
    graphs of `R` nodes (self-edges included): same shapes, same numbers. Jittable."""
    batch, rows, heads, key_size = queries.shape
    nodes = jnp.concatenate([queries, keys, values], axis=-1).reshape(batch * rows, heads, -1)
    graph = get_fully_connected_graph(rows, batch, node_features=nodes)
    attend = graph_attention(
        query_fn=lambda x: x[..., :key_size],
        key_fn=lambda x: x[..., key_size : 2 * key_size],
        value_fn=lambda x: x[..., 2 * key_size :],
        num_heads=heads,
        indices_are_sorted=True,
    )
    return attend(graph).nodes.reshape(batch, rows, -1)


class RelationalMemory(nn.RNNCellBase):
    """The relational memory core: a recurrent cell whose memory slots interact by attention.

    Attributes:
      mem_slots: number of memory rows `S`.
      head_size: size of each head's values; the memory width is `M = num_heads * head_size`.
      num_heads: attention heads `H`.
      num_blocks: attention + MLP blocks per step (separate parameters per block).
      attention_mlp_layers: layers of the row-wise MLP after attention, each `M` wide (ReLU
        between layers, none after the last).
      gate_style: `"unit"` (a gate per memory feature), `"memory"` (one gate per slot) or
        `None` (no gates: the memory is replaced by the attended rows).
      forget_bias, input_bias: added to the forget and input gate pre-activations.
      key_size: size of queries and keys per head (default `head_size`).
      attention: `"dense"` or `"graph"` (see the module docstring); same parameters.

    Call as a Flax RNN cell: `cell(memory, inputs) -> (new_memory, output)` with `memory`
    `[B, S, M]` (from `initialize_carry`), `inputs` `[B, ...]` (flattened), `output`
    `[B, S * M]`. Works with `flax.linen.RNN`, `nn.scan` and by hand. Jittable.

    Example:
        A batch of three inputs `[3, 6]`, two memory slots of two heads of 4:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> cell = gn.nn.RelationalMemory(mem_slots=2, head_size=4, num_heads=2)
        >>> memory = cell.initialize_carry(jax.random.key(0), (3, 6))
        >>> params = cell.init(jax.random.key(0), memory, jnp.ones((3, 6)))
        >>> memory, output = cell.apply(params, memory, jnp.ones((3, 6)))
        >>> memory.shape, output.shape
        ((3, 2, 8), (3, 16))
    """

    mem_slots: int
    head_size: int
    num_heads: int = 1
    num_blocks: int = 1
    attention_mlp_layers: int = 2
    gate_style: str | None = "unit"
    forget_bias: float = 1.0
    input_bias: float = 0.0
    key_size: int | None = None
    attention: str = "dense"

    @property
    def mem_size(self) -> int:
        """The width `M` of a memory row."""
        return self.num_heads * self.head_size

    @nn.compact
    def __call__(self, memory: jax.Array, inputs: jax.Array) -> tuple[jax.Array, jax.Array]:
        self._check_settings()
        expected = (self.mem_slots, self.mem_size)
        if memory.ndim != 3 or memory.shape[1:] != expected:
            raise ValueError(
                f"RelationalMemory: memory must be [B, {expected[0]}, {expected[1]}], got "
                f"{memory.shape}; use initialize_carry."
            )
        flat_inputs = inputs.reshape(inputs.shape[0], -1)
        input_row = nn.Dense(self.mem_size, name="input_projection")(flat_inputs)[:, None, :]
        rows = jnp.concatenate([memory, input_row], axis=1)
        for block in range(self.num_blocks):
            rows = self._attention_block(rows, block)
        attended = rows[:, :-1, :]
        if self.gate_style is None:
            new_memory = attended
        else:
            input_gate, forget_gate = self._gates(input_row, memory)
            new_memory = input_gate * jnp.tanh(attended) + forget_gate * memory
        return new_memory, new_memory.reshape(new_memory.shape[0], -1)

    def _check_settings(self) -> None:
        if self.gate_style not in _GATE_STYLES:
            raise ValueError(f"gate_style must be one of {_GATE_STYLES}, got {self.gate_style!r}")
        if self.attention not in _ATTENTION_LAYOUTS:
            raise ValueError(
                f"attention must be one of {_ATTENTION_LAYOUTS}, got {self.attention!r}"
            )
        for name in ("mem_slots", "head_size", "num_heads", "num_blocks", "attention_mlp_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def _attention_block(self, rows: jax.Array, block: int) -> jax.Array:
        """One block on `rows` `[B, R, M]`: attention, residual, LayerNorm; MLP, residual,
        LayerNorm."""
        attended = self._multihead_attention(rows, block)
        rows = nn.LayerNorm(name=f"attention_{block}_norm")(rows + attended)
        mlp = MLP((self.mem_size,) * self.attention_mlp_layers, name=f"mlp_{block}")
        return nn.LayerNorm(name=f"mlp_{block}_norm")(rows + mlp(rows))

    def _multihead_attention(self, rows: jax.Array, block: int) -> jax.Array:
        """Queries, keys and values from one dense layer and a LayerNorm, split per head;
        `[B, R, M] -> [B, R, M]`. The layer's outputs are `[queries | keys | values]`, each
        head-major (Sonnet interleaves them per head instead: the same layer with its output
        features permuted, which the LayerNorm over all of them does not see)."""
        heads, key_width = self.num_heads, self.num_heads * (self.key_size or self.head_size)
        qkv = nn.Dense(2 * key_width + self.mem_size, name=f"attention_{block}_qkv")(rows)
        qkv = nn.LayerNorm(name=f"attention_{block}_qkv_norm")(qkv)
        per_head = rows.shape[:2] + (heads, -1)
        queries = qkv[..., :key_width].reshape(per_head)
        keys = qkv[..., key_width : 2 * key_width].reshape(per_head)
        values = qkv[..., 2 * key_width :].reshape(per_head)
        return self._attend(queries, keys, values)

    def _attend(self, queries: jax.Array, keys: jax.Array, values: jax.Array) -> jax.Array:
        """Attention of every row over every row in the configured layout: `[B, R, H, D]`
        queries and keys, `[B, R, H, Dv]` values -> `[B, R, H * Dv]`."""
        attend = dense_attention if self.attention == "dense" else complete_graph_attention
        return attend(queries, keys, values)

    def _gates(self, input_row: jax.Array, memory: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Input and forget gates from the projected input `[B, 1, M]` and `tanh(memory)`
        `[B, S, M]`: each `[B, S, M]` (`"unit"`) or `[B, S, 1]` (`"memory"`)."""
        gate_size = self.mem_size if self.gate_style == "unit" else 1
        from_input = nn.Dense(2 * gate_size, name="gate_input")(input_row)
        from_memory = nn.Dense(2 * gate_size, name="gate_memory")(jnp.tanh(memory))
        input_gate, forget_gate = jnp.split(from_input + from_memory, 2, axis=-1)
        return (
            jax.nn.sigmoid(input_gate + self.input_bias),
            jax.nn.sigmoid(forget_gate + self.forget_bias),
        )

    @nn.nowrap
    def initialize_carry(self, rng: jax.Array, input_shape: tuple[int, ...]) -> jax.Array:
        """The identity initial memory `[B, S, M]` for inputs of shape `[B, ...]` (`rng` is
        unused: the initial state is not random)."""
        del rng
        return initial_memory(input_shape[0], self.mem_slots, self.mem_size)

    @property
    def num_feature_axes(self) -> int:
        return 1
