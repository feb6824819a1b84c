"""The relational models as peer workloads: a relation network on CLEVR-sized scenes (W4) and
the Sudoku recurrent relational network (W5), each written with gnkit, with jraph and with PyG
on the same weights, for the suite in `benchmarks/workloads.py` (which imports this module;
both build on `benchmarks/contenders.py`).

- W4: the CLEVR demo's relation network without its question encoder, as
  `benchmarks/relation_network.py` builds it (scenes of 3-10 objects with 18 features, a
  question of 128 per scene, `g` 4 x 128 over every ordered pair of a scene's objects, summed,
  `f` 128, 128, 28 answers, cross-entropy). gnkit: `nn.RelationNetwork` on the edge list (one
  fully connected graph per scene; `gnkit dense` with `--ablations`); jraph:
  `jraph.RelationNetwork` with the question appended to every object; PyG: the pair MLP on the
  concatenated `[sender, receiver, question]` rows of the pair list, summed per scene with
  `torch_geometric.utils.scatter`.
- W5: the paper's Sudoku RRN (hidden 96, 3-layer MLPs, LSTM), batch 16, 16 steps, the loss on
  every step. gnkit: `demos.sudoku.models.SudokuRRN` (factorised first message layer, last message
  layer after the sum); jraph: `jraph.GraphNetwork` in `nn.scan` (`benchmarks/sudoku_rrn.py`);
  PyG: a `MessagePassing` layer with the message MLP on `[x_j, x_i]`, `aggr="add"`, the update MLP
  and `torch.nn.LSTMCell`, looped over the steps. jraph's and PyG's weights are gnkit's, mapped
  layer by layer, so the three outputs are checked equal before timing.

Host only (builds jitted functions).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import relation_network as rn
from benchmarks.contenders import (
    Workload,
    cross_entropy,
    dense_pairs,
    jax_contender,
    load_linear,
    to_torch,
    torch_mlp,
    torch_variants,
)
from benchmarks.sudoku_rrn import JraphSudokuRRN
from gnkit.demos.sudoku.models import SudokuRRN
from gnkit.graph import node_graph_index
from gnkit.nn import RelationNetwork
from gnkit.tasks import sudoku

# ----------------------------------------------------------------------------- W4: RN


def _torch_relation_network(params: dict):
    """The relation network in torch on gnkit's weights: the first pair layer on the
    concatenated `[sender, receiver, question]` (gnkit's three projections stacked)."""
    import torch
    from torch_geometric.utils import scatter

    p = params["params"]
    sender_kernel, receiver_kernel = np.split(np.asarray(p["pair_0_objects"]["kernel"]), 2, -1)
    first_kernel = np.concatenate(
        [sender_kernel, receiver_kernel, np.asarray(p["pair_0_question"]["kernel"])], axis=0
    )
    rest = dense_pairs(p, "pair_1", "pair_2", "pair_3")
    output = dense_pairs(p, "output/dense_0", "output/dense_1", "output/dense_2")

    class TorchRelationNetwork(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(*first_kernel.shape)
            load_linear(self.first, first_kernel, p["pair_0_bias"])
            self.rest = torch_mlp(rest)
            self.output = torch_mlp(output)

        def forward(self, objects, questions, edge_index, pair_scene, n_scene):
            senders, receivers = edge_index
            rows = torch.cat([objects[senders], objects[receivers], questions[pair_scene]], dim=-1)
            pairs = torch.relu(self.rest(torch.relu(self.first(rows))))
            return self.output(scatter(pairs, pair_scene, dim=0, dim_size=n_scene, reduce="sum"))

    return TorchRelationNetwork()


def make_relation_network(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W4: a relation network training step on a batch of CLEVR-sized scenes."""
    batch_size, width = (4, 8) if quick else (64, 128)
    inputs = rn.make_inputs(batch_size)
    module = RelationNetwork(
        pair_features=(width,) * 4, output_features=(width, width, rn.NUM_ANSWERS)
    )
    dense_inputs = (inputs["objects"], inputs["questions"], inputs["mask"])
    params = module.init(jax.random.key(0), *dense_inputs, method=RelationNetwork.dense)
    answers = jnp.asarray(inputs["answers"])
    graph = inputs["graph"]

    forwards = {"gnkit": (lambda p, batch: module.apply(p, batch[0]), params, (graph, answers))}
    if ablations:
        forwards["gnkit dense"] = (
            lambda p, batch: module.apply(p, *batch[0], method=RelationNetwork.dense),
            params,
            (dense_inputs, answers),
        )
    forwards["jraph"] = (
        lambda p, batch: rn.jraph_model(p, batch[0], batch_size),
        rn.jraph_params(params, width),
        (inputs["jraph_graph"], answers),
    )
    contenders = {
        name: jax_contender(forward, cross_entropy, weights, batch)
        for name, (forward, weights, batch) in forwards.items()
    }
    if pyg:
        import torch

        edge_index = torch.stack([to_torch(graph.senders), to_torch(graph.receivers)]).long()
        pair_scene = to_torch(node_graph_index(graph)).long()[edge_index[0]]
        torch_answers = to_torch(answers).long()

        def build():
            return (
                _torch_relation_network(params),
                lambda out: torch.nn.functional.cross_entropy(out, torch_answers),
                [
                    to_torch(graph.nodes),
                    to_torch(graph.globals),
                    edge_index,
                    pair_scene,
                    batch_size,
                ],
            )

        contenders.update(torch_variants("pyg eager", build, torch_threads))
    return Workload(
        "W4 relation network",
        f"{batch_size} scenes of 3-10 objects ({inputs['pairs']} pairs), g 4 x {width}, "
        f"f {width}, {width}, {rn.NUM_ANSWERS}, cross-entropy",
        contenders,
    )


# ----------------------------------------------------------------------------- W5: Sudoku RRN


def _stack(*kernels) -> jax.Array:
    return jnp.concatenate([jnp.asarray(kernel) for kernel in kernels], axis=0)


def jraph_rrn_params(params: dict) -> dict:
    """gnkit's `SudokuRRN` parameters as `JraphSudokuRRN`'s: the factorised first message and
    update layers become kernels over the concatenated inputs; the message layer applied after
    the sum is the per-edge MLP's last layer."""
    p, rrn = params["params"], params["params"]["rrn"]
    sender_kernel, receiver_kernel = jnp.split(rrn["message_0_nodes"]["kernel"], 2, axis=-1)
    return {
        "params": {
            "Embed_0": p["digit_embed"],
            "Embed_1": p["row_embed"],
            "Embed_2": p["col_embed"],
            "MLP_0": rrn["encoder"],
            "Scan_JraphStep_0": {
                "lstm": rrn["lstm"],
                "message": {
                    "dense_0": {
                        "kernel": _stack(sender_kernel, receiver_kernel),
                        "bias": rrn["message_0_bias"],
                    },
                    "dense_1": rrn["message_1"],
                    "dense_2": {
                        "kernel": rrn["message_2"]["kernel"],
                        "bias": rrn["message_2_bias"],
                    },
                },
                "update": {
                    "dense_0": {
                        "kernel": _stack(rrn["update_0_x"]["kernel"], rrn["update_0_m"]["kernel"]),
                        "bias": rrn["update_0_x"]["bias"],
                    },
                    "dense_1": rrn["update_1"],
                    "dense_2": rrn["update_2"],
                },
                "readout": rrn["readout"]["dense_0"],
            },
        }
    }


def _torch_rrn(jraph_params: dict, num_steps: int):
    """The Sudoku RRN in PyG on the jraph model's (that is, gnkit's) weights."""
    import torch
    from torch_geometric.nn import MessagePassing

    p = jraph_params["params"]
    step = p["Scan_JraphStep_0"]

    def mlp(tree):
        return torch_mlp(dense_pairs(tree, "dense_0", "dense_1", "dense_2"))

    class Messages(MessagePassing):
        def __init__(self):
            super().__init__(aggr="add")
            self.mlp = mlp(step["message"])

        def forward(self, h, edge_index):
            return self.propagate(edge_index, h=h)

        def message(self, h_j, h_i):
            return self.mlp(torch.cat([h_j, h_i], dim=-1))

    class TorchSudokuRRN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.digit, self.row, self.col = (
                torch.nn.Embedding.from_pretrained(
                    to_torch(p[f"Embed_{index}"]["embedding"]), freeze=False
                )
                for index in range(3)
            )
            self.encoder = mlp(p["MLP_0"])
            self.messages = Messages()
            self.update = mlp(step["update"])
            hidden = step["readout"]["kernel"].shape[0]
            self.lstm = torch.nn.LSTMCell(hidden, hidden)
            gates = ("i", "f", "g", "o")  # torch's gate order
            lstm = step["lstm"]
            with torch.no_grad():
                self.lstm.weight_ih.copy_(
                    to_torch(np.concatenate([lstm[f"i{g}"]["kernel"] for g in gates], 1)).T
                )
                self.lstm.weight_hh.copy_(
                    to_torch(np.concatenate([lstm[f"h{g}"]["kernel"] for g in gates], 1)).T
                )
                self.lstm.bias_hh.copy_(
                    to_torch(np.concatenate([lstm[f"h{g}"]["bias"] for g in gates]))
                )
                self.lstm.bias_ih.zero_()
            self.readout = torch.nn.Linear(hidden, 9)
            load_linear(self.readout, step["readout"]["kernel"], step["readout"]["bias"])

        def forward(self, quizzes, rows, cols, edge_index):
            batch = quizzes.shape[0]
            position = torch.cat([self.row(rows), self.col(cols)], dim=-1).repeat(batch, 1)
            x = self.encoder(torch.cat([self.digit(quizzes.reshape(-1)), position], dim=-1))
            h, c = x, torch.zeros_like(x)
            logits = []
            for _ in range(num_steps):
                update = self.update(torch.cat([x, self.messages(h, edge_index)], dim=-1))
                h, c = self.lstm(update, (h, c))
                logits.append(self.readout(h))
            return torch.stack(logits).reshape(num_steps, batch, sudoku.NUM_CELLS, 9)

    return TorchSudokuRRN()


def _cell_loss(logits, batch):
    return jnp.mean(sudoku.cell_loss(logits, batch[1]))


def make_sudoku_rrn(
    quick: bool, pyg: bool, ablations: bool = False, torch_threads: Sequence[int] = (1,)
) -> Workload:
    """W5: a Sudoku RRN training step, the loss on every step."""
    del ablations
    batch_size, num_steps = (2, 2) if quick else (16, 16)
    pool = sudoku.read_puzzles(sudoku.shipped_data(sudoku.TRAIN_POOL))
    quizzes, solutions = sudoku.sample_puzzles(
        np.random.default_rng(0), *pool, batch_size, range(17, 35)
    )
    batch = (jnp.asarray(quizzes, jnp.int32), jnp.asarray(solutions, jnp.int32))
    model, jraph_model = SudokuRRN(), JraphSudokuRRN()
    params = model.init(jax.random.key(0), batch[0][:1], 1)
    jraph_params = jraph_rrn_params(params)
    contenders = {
        "gnkit": jax_contender(
            lambda p, batch: model.apply(p, batch[0], num_steps), _cell_loss, params, batch
        ),
        "jraph": jax_contender(
            lambda p, batch: jraph_model.apply(p, batch[0], num_steps),
            _cell_loss,
            jraph_params,
            batch,
        ),
    }
    if pyg:
        import torch

        graph = sudoku.batch_graph(batch_size)
        edge_index = torch.stack([to_torch(graph.senders), to_torch(graph.receivers)]).long()
        cells = np.arange(sudoku.NUM_CELLS)
        targets = to_torch(np.asarray(solutions).reshape(-1) - 1).long()

        def loss(out):
            flat = out.reshape(num_steps, -1, 9)
            return (
                sum(torch.nn.functional.cross_entropy(flat[t], targets) for t in range(num_steps))
                / num_steps
            )

        def build():
            return (
                _torch_rrn(jraph_params, num_steps),
                loss,
                [
                    to_torch(np.asarray(quizzes)).long(),
                    to_torch(cells // 9).long(),
                    to_torch(cells % 9).long(),
                    edge_index,
                ],
            )

        contenders.update(torch_variants("pyg eager", build, torch_threads))
    return Workload(
        "W5 Sudoku RRN",
        f"{batch_size} puzzles, {num_steps} steps, hidden 96, 3-layer MLPs, LSTM, loss on every "
        "step",
        contenders,
    )
