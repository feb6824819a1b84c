"""Recurrent relational network (Palm et al., 2018) for any graph and any per-node task.

An encoder MLP turns node features into `x`; then, for `T` steps, every edge computes a message
from `[h_sender, h_receiver, edge]`, messages are summed at receivers, and each node updates its
state from `[x, summed messages]` through an MLP into a recurrent cell (LSTM, GRU or a plain MLP).
A readout MLP gives an output at every step. The steps run under `jax.lax.scan` (one compiled
step body for any `T`), so a model trained with `T = 32` can be evaluated with `T = 64`.

For the backward pass the scan can be rematerialised (`jax.checkpoint`): per step (`remat=True`),
which keeps every step's carry (`T` carries), or in blocks (`remat="block"`, two-level sqrt-`T`
checkpointing): an outer scan over blocks of `K` steps keeps only the carries at block boundaries
and recomputes each block, step by step, when its gradient is needed, so about `T / K + K` carries
are live instead of `T`, for one more forward pass of compute than per-step remat.

Two algebraic rewrites keep the edge work small (see DESIGN.md, "Performance ideas"):
- the first message layer is factorised: `Dense([h_s, h_r, e]) = A h[senders] + B h[receivers]
  + C e + b`, so nodes are projected once (`O(N F H)`) and the projections gathered;
- the last message layer is linear and applied after the sum at receivers:
  `sum_j (W z_j + b) = W sum_j z_j + deg b`, costing `O(N)` instead of `O(E)`.
The update MLP's first layer is split the same way, and its `x` part is computed once, outside
the loop.

Mixed precision (`dtype=jnp.bfloat16`): the matmuls inside the loop (message and update layers,
the recurrent cell's gates) run in bf16 on f32 parameters; the sums at receivers, the recurrent
state, the encoder, the readout and the outputs stay f32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit._varying import varying_like
from gnkit.graph import GraphsTuple, num_nodes, require
from gnkit.nn.mlp import MLP
from gnkit.segment import segment_sum

_CELLS = ("lstm", "gru", "mlp")
_REMATS = (False, True, "step", "block")


class RecurrentRelationalNetwork(nn.Module):
    """A recurrent relational network over the nodes of a `GraphsTuple`.

    Attributes:
      encoder_features: layer sizes of the input MLP; the last one is the state size `H`.
      message_features: layer sizes of the message MLP (hidden layers are ReLU, the last is
        linear and applied after the sum at receivers).
      update_features: layer sizes of the MLP from `[x, messages]` to the cell input.
      readout_features: layer sizes of the per-step output MLP, e.g. `(9,)`.
      cell: `"lstm"`, `"gru"` or `"mlp"` (the update MLP's output is the new state; its last
        size must then be `H`).
      remat: `False`; `True` (or `"step"`): rematerialise each step in the backward pass
        (`jax.checkpoint`), keeping one carry per step, about one more forward pass of compute;
        `"block"`: two-level checkpointing, keeping one carry per block of `remat_block_size`
        steps, about two more forward passes. The outputs and gradients are the same.
      remat_block_size: steps per block for `remat="block"`; by default the divisor of
        `num_steps` nearest `sqrt(num_steps)` (within a factor 2), else `round(sqrt(num_steps))`.
        If it does not divide `num_steps`, a shorter last block runs the remainder (a second
        compiled copy of the step).
      receivers_sorted: promise that `graph.receivers` is sorted (enables the sorted fast path).
      fixed_degree: if every node receives exactly this many edges and receivers are sorted,
        sum messages with a reshape instead of a scatter.
      dtype: compute dtype of the loop's matmuls (e.g. `jnp.bfloat16`); None: the parameters'
        f32. Parameters, sums at receivers, the recurrent state and the outputs stay f32.

    Call with a graph whose `nodes` are `[N, F]` (and optional `edges` `[E, F_e]`), `senders` and
    `receivers` `[E]`, and a static `num_steps`. Returns the readout at every step,
    `[num_steps, N, readout_features[-1]]`. Pass `scan=False` to unroll the same network with a
    Python loop (same parameters, same numbers; used to check the scan). Jittable.

    Example:
        On a three-node cycle, node features `[3, 4]`, a readout after each of 3 steps:

        >>> import jax, jax.numpy as jnp
        >>> import gnkit as gn
        >>> graph = gn.from_edge_list([0, 1, 2], [1, 2, 0], n_node=3, nodes=jnp.ones((3, 4)))
        >>> model = gn.nn.RecurrentRelationalNetwork(encoder_features=(8,), message_features=(8,),
        ...                                          update_features=(8,), readout_features=(2,))
        >>> params = model.init(jax.random.key(0), graph, num_steps=3)
        >>> model.apply(params, graph, num_steps=3).shape
        (3, 3, 2)
    """

    encoder_features: Sequence[int] = (96, 96, 96)
    message_features: Sequence[int] = (96, 96, 96)
    update_features: Sequence[int] = (96, 96, 96)
    readout_features: Sequence[int] = (9,)
    cell: str = "lstm"
    remat: bool | str = False
    remat_block_size: int | None = None
    receivers_sorted: bool = False
    fixed_degree: int | None = None
    dtype: Any = None

    def setup(self):
        if self.cell not in _CELLS:
            raise ValueError(f"cell must be one of {_CELLS}, got {self.cell!r}")
        if self.remat not in _REMATS:
            raise ValueError(f"remat must be one of {_REMATS}, got {self.remat!r}")
        if self.remat_block_size is not None:
            if self.remat != "block":
                raise ValueError(f"remat_block_size needs remat='block', got remat={self.remat!r}")
            if self.remat_block_size < 1:
                raise ValueError(f"remat_block_size must be >= 1, got {self.remat_block_size}")
        hidden = self.encoder_features[-1]
        if self.cell == "mlp" and self.update_features[-1] != hidden:
            raise ValueError(
                f"cell='mlp' needs update_features[-1] == encoder_features[-1] ({hidden}), "
                f"got {self.update_features[-1]}"
            )
        self.encoder = MLP(tuple(self.encoder_features), name="encoder")
        first = self.message_features[0]
        self.message_nodes = nn.Dense(
            2 * first, use_bias=False, dtype=self.dtype, name="message_0_nodes"
        )
        self.message_edges = nn.Dense(first, use_bias=False, name="message_0_edges")
        self.message_bias = self.param("message_0_bias", nn.initializers.zeros, (first,))
        self.message_hidden = [
            nn.Dense(width, dtype=self.dtype, name=f"message_{i}")
            for i, width in enumerate(self.message_features[1:-1], start=1)
        ]
        if len(self.message_features) > 1:
            last = len(self.message_features) - 1
            self.message_last = nn.Dense(
                self.message_features[-1],
                use_bias=False,
                dtype=self.dtype,
                name=f"message_{last}",
            )
            self.message_last_bias = self.param(
                f"message_{last}_bias", nn.initializers.zeros, (self.message_features[-1],)
            )
        self.update_x = nn.Dense(self.update_features[0], name="update_0_x")
        self.update_messages = nn.Dense(
            self.update_features[0], use_bias=False, dtype=self.dtype, name="update_0_m"
        )
        self.update_rest = [
            nn.Dense(width, dtype=self.dtype, name=f"update_{i}")
            for i, width in enumerate(self.update_features[1:], start=1)
        ]
        if self.cell == "lstm":
            self.recurrent = nn.OptimizedLSTMCell(hidden, dtype=self.dtype, name="lstm")
        elif self.cell == "gru":
            self.recurrent = nn.GRUCell(hidden, dtype=self.dtype, name="gru")
        self.readout = MLP(tuple(self.readout_features), name="readout")

    def __call__(self, graph: GraphsTuple, num_steps: int, scan: bool = True) -> jax.Array:
        carry, context = self._start(graph)
        if not scan:
            outputs = []
            for _ in range(num_steps):
                carry, out = self._step(carry, context)
                outputs.append(out)
            return jnp.stack(outputs)
        if self.remat == "block":
            return self._blocked_steps(carry, context, num_steps)
        body = nn.remat(_scan_body, prevent_cse=False) if self.remat else _scan_body
        _, outputs = _scan(body, num_steps)(self, carry, context)
        return outputs

    def _start(self, graph: GraphsTuple):
        """The initial carry and the per-step context (the loop-invariant terms) of `graph`."""
        require(graph, "nodes", "senders", "receivers", block="RecurrentRelationalNetwork")
        n_node = num_nodes(graph)
        x = self.encoder(graph.nodes)
        degree = self._sum_at_receivers(
            jnp.ones((graph.receivers.shape[0], 1), x.dtype), graph.receivers, n_node
        )
        edge_term = self.message_bias
        if graph.edges is not None:
            edge_term = edge_term + self.message_edges(graph.edges)
        context = (self.update_x(x), edge_term, degree, graph.senders, graph.receivers)
        carry = (jnp.zeros_like(x), x) if self.cell == "lstm" else x
        return carry, context

    def _blocked_steps(self, carry, context, num_steps: int) -> jax.Array:
        block = self.remat_block_size or _default_block_size(num_steps)
        block = min(block, num_steps)
        num_blocks, remainder = divmod(num_steps, block)
        carry, outputs = _scan(_remat_block(block), num_blocks)(self, carry, context)
        outputs = outputs.reshape(num_blocks * block, *outputs.shape[2:])
        if remainder:
            _, rest = _remat_block(remainder)(self, carry, context)
            outputs = jnp.concatenate([outputs, rest])
        return outputs

    def _sum_at_receivers(self, values: jax.Array, receivers: jax.Array, n_node: int) -> jax.Array:
        values = values.astype(jnp.promote_types(values.dtype, jnp.float32))
        if self.fixed_degree is not None:
            return values.reshape(n_node, self.fixed_degree, values.shape[-1]).sum(axis=1)
        return segment_sum(values, receivers, n_node, indices_are_sorted=self.receivers_sorted)

    def _messages(self, state, edge_term, degree, senders, receivers):
        n_node = state.shape[0]
        sender_part, receiver_part = jnp.split(self.message_nodes(state), 2, axis=-1)
        from_senders = jnp.take(sender_part, senders, axis=0)
        if self.fixed_degree is None:
            pre = from_senders + jnp.take(receiver_part, receivers, axis=0)
        else:
            width = from_senders.shape[-1]
            pre = from_senders.reshape(n_node, self.fixed_degree, width) + receiver_part[:, None]
            pre = pre.reshape(-1, width)
        pre = pre + edge_term.astype(pre.dtype)
        if len(self.message_features) == 1:
            return self._sum_at_receivers(pre, receivers, n_node)
        hidden = nn.relu(pre)
        for layer in self.message_hidden:
            hidden = nn.relu(layer(hidden))
        summed = self._sum_at_receivers(hidden, receivers, n_node)
        return self.message_last(summed) + degree * self.message_last_bias

    def _step(self, carry, context):
        x_part, edge_term, degree, senders, receivers = context
        state = carry[1] if self.cell == "lstm" else carry
        messages = self._messages(state, edge_term, degree, senders, receivers)
        update = x_part + self.update_messages(messages)
        for layer in self.update_rest:
            update = layer(nn.relu(update))
        if self.cell == "mlp":
            new_carry = update
        else:
            new_carry, _ = self.recurrent(carry, update)
        new_carry = jax.tree.map(lambda new, old: new.astype(old.dtype), new_carry, carry)
        state = new_carry[1] if self.cell == "lstm" else new_carry
        return new_carry, self.readout(state)


def _scan_body(module: RecurrentRelationalNetwork, carry, context):
    """One step as a function of the module, the form `nn.scan` and `nn.remat` lift."""
    return module._step(carry, context)


def _scan(body, length: int):
    """`body(module, carry, context)` scanned `length` times, shared parameters and context."""
    return nn.scan(
        body,
        variable_broadcast="params",
        split_rngs={"params": False},
        in_axes=nn.broadcast,
        length=length,
    )


def _remat_block(length: int):
    """`length` rematerialised steps, themselves rematerialised as one block: in the backward
    pass only the block's input carry is kept; the block reruns forward keeping its `length`
    step carries, then each step reruns for its own gradient. Outputs `[length, N, C]`."""
    steps = _scan(nn.remat(_scan_body, prevent_cse=False), length)

    def block(module: RecurrentRelationalNetwork, carry, context):
        return steps(module, varying_like(carry, context), context)

    return nn.remat(block, prevent_cse=False)


def _default_block_size(num_steps: int) -> int:
    """The divisor of `num_steps` nearest `sqrt(num_steps)` within a factor 2, else the root."""
    root = math.sqrt(num_steps)
    near_root = range(math.ceil(root / 2), math.floor(2 * root) + 1)
    divisors = [k for k in near_root if num_steps % k == 0]
    return min(divisors, key=lambda k: abs(k - root)) if divisors else max(1, round(root))
