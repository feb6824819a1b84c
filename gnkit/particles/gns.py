"""A GNS particle simulator (Sanchez-Gonzalez et al. 2020) on LagrangeBench-layout data.

Encode-process-decode over a radius graph of particles, the paper's processor: the graph comes
from gnkit's periodic neighbour list (`gnkit.atoms.neighbor_list`, vesin; a 2D box is the
periodic x-y plane of a 3D cell), nodes carry the last `history` normalised velocities, edges
the wrapped displacement and distance over the connectivity radius; an encoder embeds nodes and
edges, `num_message_passing_steps` interaction blocks, each with its own parameters, update
edges from their two nodes and nodes from their summed incoming edges with residual
connections, and a decoder reads the normalised acceleration of every particle off the last
node latents, LagrangeBench's one-step target: with v_t = x_t - x_{t-1} (wrapped, per frame),
a_t = v_{t+1} - v_t, normalised by the dataset's `acc_mean` / `acc_std` (velocities by
`vel_mean` / `vel_std`).

Needs the `particles` extra (h5py; ASE and vesin for the neighbour list). Graph building is
host-side NumPy; the model and the training step are jittable.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from gnkit.atoms.neighbor_list import neighbor_list
from gnkit.graph import GraphsTuple
from gnkit.nn import MLP, GraphNetwork
from gnkit.particles.data import ParticleDataset, periodic_displacements


@dataclasses.dataclass(frozen=True)
class Normalisation:
    """Per-frame velocity and acceleration statistics [dim] (LagrangeBench's metadata)."""

    vel_mean: np.ndarray
    vel_std: np.ndarray
    acc_mean: np.ndarray
    acc_std: np.ndarray

    @classmethod
    def from_metadata(cls, metadata: dict) -> Normalisation:
        """The statistics of `metadata.json`."""
        return cls(*(np.asarray(metadata[key], np.float32)
                     for key in ("vel_mean", "vel_std", "acc_mean", "acc_std")))

    def isotropic(self) -> Normalisation:
        """The same statistics equal along every axis (LagrangeBench's `isotropic_norm`): each
        mean averaged over the axes, each standard deviation the root of the mean variance, so
        normalising commutes with rotations (what an equivariant model such as SEGNN needs)."""
        def mean(values):
            return np.full_like(values, values.mean())

        def std(values):
            return np.full_like(values, np.sqrt(np.mean(values**2)))

        return Normalisation(mean(self.vel_mean), std(self.vel_std), mean(self.acc_mean),
                             std(self.acc_std))


def _cell_3d(box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 3D cell and pbc for a periodic 2D or 3D box [dim]."""
    box = np.asarray(box, np.float64)
    lengths = np.ones(3)
    lengths[: len(box)] = box
    pbc = np.arange(3) < len(box)
    return np.diag(lengths), pbc


def particle_graph(window: np.ndarray, box: np.ndarray, radius: float,
                   stats: Normalisation) -> GraphsTuple:
    """The input graph of one sample: a radius graph at the window's last frame (host, NumPy).

    Args:
        window: positions [history + 1, N, dim]; the last frame is the current one.
        box: periodic box lengths [dim] (the box starts at 0).
        radius: connectivity radius (LagrangeBench: `default_connectivity_radius`).
        stats: velocity normalisation.

    Returns:
        A one-graph `GraphsTuple`: nodes float32 [N, history * dim] (normalised velocities,
        oldest first), edges float32 [E, dim + 1] (wrapped x_receiver - x_sender over `radius`,
        and the distance over `radius`), senders / receivers int32 [E] (every ordered pair
        closer than `radius`, no self pairs), globals zeros [1, 1].
    """
    window = np.asarray(window, np.float64)
    dim = window.shape[-1]
    velocities = periodic_displacements(window, box)
    nodes = ((velocities - stats.vel_mean) / stats.vel_std).transpose(1, 0, 2)
    current = np.zeros((window.shape[1], 3))
    current[:, :dim] = window[-1]
    cell, pbc = _cell_3d(box)
    pairs = neighbor_list(current, cell, pbc, radius)
    keep = pairs.senders != pairs.receivers
    senders, receivers = pairs.senders[keep], pairs.receivers[keep]
    vectors = current[receivers] - current[senders] + pairs.shifts[keep] @ cell
    vectors = vectors[:, :dim] / radius
    edges = np.concatenate([vectors, np.linalg.norm(vectors, axis=1, keepdims=True)], axis=1)
    return GraphsTuple(
        nodes=nodes.reshape(window.shape[1], -1).astype(np.float32),
        edges=edges.astype(np.float32),
        senders=senders.astype(np.int32),
        receivers=receivers.astype(np.int32),
        globals=np.zeros((1, 1), np.float32),
        n_node=np.array([window.shape[1]], np.int32),
        n_edge=np.array([len(senders)], np.int32),
    )


def target_acceleration(window: np.ndarray, box: np.ndarray, stats: Normalisation) -> np.ndarray:
    """Normalised acceleration [N, dim] at frame -2 of `window` [>= 3, N, dim] (host, NumPy)."""
    velocities = periodic_displacements(window[-3:], box)
    return ((velocities[1] - velocities[0] - stats.acc_mean) / stats.acc_std).astype(np.float32)


class GNS(nn.Module):
    """GNS: encoder, residual interaction blocks, decoder; a normalised acceleration [N, dim].

    Every MLP has `num_layers` Dense layers of `latent_size` units with ReLU between them (the
    decoder's last layer has `dim`), and all but the decoder end in LayerNorm, as in the GNS
    paper and LagrangeBench's `GNS`. Each of the `num_message_passing_steps` blocks is a
    `gnkit.nn.GraphNetwork` without globals (edges from `[edge, sender, receiver]`, nodes from
    `[node, summed incoming edges]`) with its own parameters, added to its input (residual).
    The graph's globals are not read.

    Attributes:
        dim: spatial dimension (the output width, at least 1).
        latent_size: width of every MLP layer and of the latent graph (at least 1).
        num_layers: Dense layers per MLP (at least 1).
        num_message_passing_steps: interaction blocks (at least 1).
    """

    dim: int = 2
    latent_size: int = 64
    num_layers: int = 2
    num_message_passing_steps: int = 3

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Accelerations [N, dim] for a graph from `particle_graph`. Jittable."""
        for name in ("dim", "latent_size", "num_layers", "num_message_passing_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GNS: {name} must be an integer of at least 1, got {value!r}")
        hidden = (self.latent_size,) * self.num_layers
        nodes = MLP(hidden, layer_norm=True, name="node_encoder")(graph.nodes)
        edges = MLP(hidden, layer_norm=True, name="edge_encoder")(graph.edges)
        for step in range(self.num_message_passing_steps):
            updated = GraphNetwork(hidden, hidden, use_globals=False, layer_norm=True,
                                   name=f"processor_{step}")(
                graph._replace(nodes=nodes, edges=edges))
            nodes, edges = nodes + updated.nodes, edges + updated.edges
        return MLP((*hidden[:-1], self.dim), name="decoder")(nodes)


def one_step_samples(dataset: ParticleDataset, split: str, history: int, count: int,
                     seed: int = 0) -> list[tuple[GraphsTuple, np.ndarray]]:
    """`count` random (graph, target) pairs of one split (host, NumPy).

    Args:
        dataset: a LagrangeBench-layout dataset.
        split: "train", "valid" or "test".
        history: velocities per node (LagrangeBench: input_seq_length 6 gives 5).
        count: samples to draw (trajectory and start frame uniform, seeded).
        seed: NumPy seed.

    Returns:
        Pairs of a `particle_graph` over frames [t - history, t] and the normalised acceleration
        at frame t (from frames t - 1, t, t + 1).
    """
    stats = Normalisation.from_metadata(dataset.metadata)
    radius = float(dataset.metadata["default_connectivity_radius"])
    rng = np.random.default_rng(seed)
    trajectories = dataset.splits[split]
    samples = []
    for _ in range(count):
        positions = trajectories[rng.integers(len(trajectories))].positions
        frame = int(rng.integers(history, positions.shape[0] - 1))
        window = positions[frame - history: frame + 2]
        samples.append((particle_graph(window[:-1], dataset.box, radius, stats),
                        target_acceleration(window, dataset.box, stats)))
    return samples


def make_train_step(model: GNS, optimizer: optax.GradientTransformation):
    """A jitted step `(params, opt_state, graph, target) -> (params, opt_state, loss)`: MSE."""

    def loss_fn(params, graph, target):
        return jnp.mean((model.apply(params, graph) - target) ** 2)

    @jax.jit
    def step(params, opt_state, graph, target):
        loss, grads = jax.value_and_grad(loss_fn)(params, graph, target)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def train_one_step(dataset: ParticleDataset, steps: int, history: int = 5,
                   learning_rate: float = 1e-3, train_samples: int = 16,
                   valid_samples: int = 4, seed: int = 0, model: GNS | None = None) -> dict:
    """Train `model` on one-step accelerations; report train and validation MSE (host driver).

    One sample (one graph) per step, cycling over `train_samples` drawn windows; each graph's
    edge count differs, so each new count compiles the step once (at most `train_samples`).

    Returns:
        {"params", "losses" (per step), "valid_mse" (normalised), "valid_mse_zero" (the MSE of
        predicting the mean acceleration, i.e. zeros after normalisation)}.
    """
    model = model or GNS(dim=int(dataset.metadata["dim"]))
    train = one_step_samples(dataset, "train", history, train_samples, seed)
    valid = one_step_samples(dataset, "valid", history, valid_samples, seed + 1)
    params = model.init(jax.random.key(seed), train[0][0])
    optimizer = optax.adam(learning_rate)
    opt_state = optimizer.init(params)
    step = make_train_step(model, optimizer)
    losses = []
    for index in range(steps):
        graph, target = train[index % len(train)]
        params, opt_state, loss = step(params, opt_state, graph, target)
        losses.append(float(loss))
    predict = jax.jit(model.apply)
    valid_mse = np.mean([np.mean((np.asarray(predict(params, g)) - t) ** 2) for g, t in valid])
    valid_zero = np.mean([np.mean(t**2) for _, t in valid])
    return {"params": params, "losses": losses, "valid_mse": float(valid_mse),
            "valid_mse_zero": float(valid_zero)}
