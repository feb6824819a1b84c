"""Prediction for the graph_nets demos: a jitted last-step output, compiled once per shape, over
lists of graphs padded to one shape. Host driver around a jitted model."""

from __future__ import annotations

import functools

import jax
import numpy as np

from gnkit.batching import batch_np, pad_with_graphs
from gnkit.demos.graph_nets.config import DemoConfig
from gnkit.demos.graph_nets.harness import QUICK_COMPILE
from gnkit.graph import GraphsTuple
from gnkit.nn.encode_process_decode import EncodeProcessDecode


def _last_step(model: EncodeProcessDecode, steps: int, params, inputs):
    return model.apply(params, inputs, steps)[-1]


_PREDICT = {
    False: jax.jit(_last_step, static_argnums=(0, 1)),
    True: jax.jit(_last_step, static_argnums=(0, 1), compiler_options=QUICK_COMPILE),
}


def make_predict(model: EncodeProcessDecode, config: DemoConfig):
    """A jitted `(params, padded inputs) -> output graph` at `config.eval_steps`.

    Compiled once per model, step count and input shape for the whole process (the model is a
    static argument), so periodic evaluations do not recompile.
    """
    predict = _PREDICT[config.quick_compile]
    return functools.partial(predict, model, config.eval_steps)


def pad_all_to(graphs: list[GraphsTuple], batch_size: int) -> list[tuple[GraphsTuple, int, int]]:
    """Batches of `batch_size` graphs, all padded to one shape (the largest batch's, + 1 node).

    Returns `(padded batch, real nodes, real edges)` per batch. Host.
    """
    batches = [batch_np(graphs[i : i + batch_size]) for i in range(0, len(graphs), batch_size)]
    sizes = [(int(np.sum(b.n_node)), int(np.sum(b.n_edge))) for b in batches]
    n_node = max(nodes for nodes, _ in sizes) + 1
    n_edge = max(edges for _, edges in sizes)
    return [
        (pad_with_graphs(b, n_node, n_edge, batch_size + 1), *size)
        for b, size in zip(batches, sizes, strict=True)
    ]


def predict_graphs(
    predict, params, inputs: list[GraphsTuple], batch_size: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`predict`'s node and edge outputs for `inputs`, concatenated in order (padding dropped).

    Args:
      predict: a jitted `(params, padded inputs) -> output graph` (`make_predict`).
      params: the model's parameters.
      inputs: the graphs.
      batch_size: graphs per call.

    Returns:
      `(nodes [N, C] or None, edges [E, C] or None)` over all graphs in order.
    """
    nodes, edges = [], []
    for padded, real_nodes, real_edges in pad_all_to(inputs, batch_size):
        output = jax.device_get(predict(params, padded))
        if output.nodes is not None:
            nodes.append(np.asarray(output.nodes)[:real_nodes])
        if output.edges is not None:
            edges.append(np.asarray(output.edges)[:real_edges])
    return (
        np.concatenate(nodes) if nodes else None,
        np.concatenate(edges) if edges else None,
    )
