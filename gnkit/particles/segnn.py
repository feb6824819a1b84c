"""SEGNN, the steerable E(3)-equivariant graph network (Brandstetter et al. 2022), as a particle
simulator on the input graphs of GNS (`gnkit.particles.gns.particle_graph`,
`gnkit.particles.rollout.device_particle_graph`).

Every node and message is an e3nn-jax `IrrepsArray` (scalars `0e` and vectors `1o`, up to
`lmax_hidden`); every layer is a steerable linear map: the tensor product of its input with a
geometric attribute (spherical harmonics up to `lmax_attributes`), then an equivariant linear
map (`e3nn.flax.Linear`, biases on the scalars), gated (`e3nn.gate`: SiLU on the scalars, each
vector scaled by the sigmoid of a scalar of its own) except where it ends a block. The edge
attribute is the harmonics of the displacement to the receiver; the node attribute the
harmonics of the mean (or last) input velocity plus the mean of the incoming edges' attributes,
its scalar set to 1, as in LagrangeBench's `SEGNN`. A 2D case lives in the x-y plane of 3D
(zero z components), so its outputs rotate and reflect with its inputs in that plane.

The widths follow LagrangeBench (`weight_balanced_irreps`): the hidden irreps hold `n` copies
of every irrep up to `lmax_hidden`, the smallest `n` whose tensor product with the attributes
has at least `scalar_units**2` weights (`balanced_hidden_irreps`).

Needs the `particles` extra (e3nn-jax, and the neighbour lists of `gnkit.atoms`).
"""

from __future__ import annotations

from typing import Literal

import e3nn_jax as e3nn
import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.graph import GraphsTuple
from gnkit.particles._checks import check_count


def balanced_hidden_irreps(scalar_units: int, lmax_hidden: int = 1,
                           lmax_attributes: int = 1) -> e3nn.Irreps:
    """Hidden irreps `n x (0e + 1o + 2e ...)` up to `lmax_hidden`, with the smallest `n` whose
    fully connected tensor product with the attributes (spherical harmonics up to
    `lmax_attributes`) into the same irreps has at least `scalar_units**2` weights.

    Args:
      scalar_units: the width a scalar MLP of this size would have (LagrangeBench's
        `latent_dim`), at least 1.
      lmax_hidden: the highest degree of the hidden irreps, at least 0.
      lmax_attributes: the highest degree of the attributes, at least 0.

    Returns:
      Irreps sorted by degree, e.g. `32x0e+32x1o` for `(64, 1, 1)` (four paths of `n**2`
      weights each: 0e x 0e -> 0e, 0e x 1o -> 1o, 1o x 0e -> 1o, 1o x 1o -> 0e).
    """
    for name, value, least in (("scalar_units", scalar_units, 1),
                               ("lmax_hidden", lmax_hidden, 0),
                               ("lmax_attributes", lmax_attributes, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    one = e3nn.Irreps.spherical_harmonics(lmax_hidden)
    attributes = e3nn.Irreps.spherical_harmonics(lmax_attributes)
    paths = sum(1 for _, left in one for _, right in attributes for _, out in one
                if out in left * right)
    copies = 1
    while paths * copies**2 < scalar_units**2:
        copies += 1
    return (one * copies).sort().irreps.simplify()


def _irreps(irreps: e3nn.Irreps, array: jax.Array) -> e3nn.IrrepsArray:
    return e3nn.IrrepsArray(irreps, array)


class SteerableLinear(nn.Module):
    """`x (x) attributes`, then an equivariant linear map to `irreps_out`, biases on the
    scalars; gated (`e3nn.gate`) when `gated`.

    Attributes:
      irreps_out: the output irreps (a gated layer also makes one gate scalar per non-scalar).
      gated: SiLU on the output scalars and a sigmoid gate on every non-scalar.
    """

    irreps_out: str
    gated: bool = True

    @nn.compact
    def __call__(self, x: e3nn.IrrepsArray, attributes: e3nn.IrrepsArray) -> e3nn.IrrepsArray:
        """`x` `[..., x.irreps.dim]` and `attributes` `[..., attributes.irreps.dim]` to
        `[..., irreps_out.dim]`."""
        irreps_out = e3nn.Irreps(self.irreps_out)
        if self.gated:
            gates = irreps_out.num_irreps - irreps_out.filter(keep=["0e"]).num_irreps
            target = (e3nn.Irreps(f"{gates}x0e") + irreps_out).regroup()
        else:
            target = irreps_out
        product = e3nn.tensor_product(x, attributes, filter_ir_out=target)
        y = e3nn.flax.Linear(target, biases=True)(product)
        if self.gated:
            y = e3nn.gate(y, even_act=jax.nn.silu)
        return y


def steerable_attributes(velocity: jax.Array, displacement: jax.Array, receivers: jax.Array,
                         lmax: int) -> tuple[e3nn.IrrepsArray, e3nn.IrrepsArray]:
    """SEGNN's node and edge attributes (LagrangeBench's). Jittable.

    Args:
      velocity: one velocity per node `[N, 3]` (the mean or last of the history).
      displacement: one vector per edge `[E, 3]`.
      receivers: the node each edge ends at, int `[E]`.
      lmax: highest degree of the spherical harmonics.

    Returns:
      `(nodes [N, (lmax + 1)**2], edges [E, (lmax + 1)**2])`: the edges' harmonics of their
      direction (e3nn-jax's `integral` normalisation, zero beyond degree 0 for a zero vector);
      each node's harmonics of its velocity plus the mean of its incoming edges' (zero without
      edges), its degree-0 component then set to 1.

    Raises:
      ValueError: `lmax` is not an integer of at least 0, or the shapes disagree (named).
    """
    check_count("lmax", lmax, minimum=0)
    if velocity.ndim != 2 or velocity.shape[1] != 3:
        raise ValueError(f"velocity must be [N, 3], got shape {tuple(velocity.shape)}")
    if displacement.ndim != 2 or displacement.shape[1] != 3:
        raise ValueError(f"displacement must be [E, 3], got shape {tuple(displacement.shape)}")
    if receivers.shape != displacement.shape[:1]:
        raise ValueError(f"receivers must be [E] = [{displacement.shape[0]}] (one per "
                         f"displacement), got shape {tuple(receivers.shape)}")
    irreps = e3nn.Irreps.spherical_harmonics(lmax)
    edges = e3nn.spherical_harmonics(irreps, displacement, normalize=True,
                                     normalization="integral")
    n_node = velocity.shape[0]
    total = jax.ops.segment_sum(edges.array, receivers, n_node)
    degree = jax.ops.segment_sum(jnp.ones_like(receivers, total.dtype), receivers, n_node)
    nodes = (e3nn.spherical_harmonics(irreps, velocity, normalize=True,
                                      normalization="integral").array
             + total / jnp.maximum(degree, 1.0)[:, None])
    return _irreps(irreps, nodes.at[:, 0].set(1.0)), edges


class SEGNN(nn.Module):
    """SEGNN: a steerable embedding, residual message-passing layers, a steerable decoder; a
    normalised acceleration `[N, dim]` per particle.

    Each of the `num_message_passing_steps` layers forms messages from `[sender, receiver,
    edge features]` (edge features: the displacement `1o` and distance `0e` of the input graph)
    by `blocks` gated steerable layers on the edge attribute, sums them at the receivers, and
    updates each node from `[node, summed messages]` by `blocks - 1` gated layers and one linear
    layer on the node attribute, added to the node (residual). The decoder has `blocks` gated
    layers and a linear one to `1x1o`. Parameters are the layers' `e3nn.flax.Linear` weights.

    Attributes:
      dim: spatial dimension, 2 or 3.
      history: input velocities per node (the graph's first `history * dim` node features).
      external_force: the node features end with a body force `[dim]` (RPF).
      scalar_units: sets the hidden irreps (`balanced_hidden_irreps`); LagrangeBench's
        `latent_dim`.
      lmax_hidden: highest degree of the hidden irreps.
      lmax_attributes: highest degree of the attributes' spherical harmonics.
      num_message_passing_steps: message-passing layers (at least 1).
      blocks: steerable layers per message and update function (at least 1).
      velocity_aggregate: the node attribute's velocity: the mean of the history (`avg`) or
        its last (`last`).
    """

    dim: int = 2
    history: int = 5
    external_force: bool = False
    scalar_units: int = 64
    lmax_hidden: int = 1
    lmax_attributes: int = 1
    num_message_passing_steps: int = 10
    blocks: int = 2
    velocity_aggregate: Literal["avg", "last"] = "avg"

    def _check(self) -> None:
        if self.dim not in (2, 3) or isinstance(self.dim, bool):
            raise ValueError(f"SEGNN: dim must be 2 or 3, got {self.dim!r}")
        for name in ("history", "num_message_passing_steps", "blocks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"SEGNN: {name} must be an integer of at least 1, got {value!r}")
        if self.velocity_aggregate not in ("avg", "last"):
            raise ValueError("SEGNN: velocity_aggregate must be 'avg' or 'last', got "
                             f"{self.velocity_aggregate!r}")

    def _in_3d(self, vectors: jax.Array) -> jax.Array:
        """`[..., dim]` with zero components up to 3."""
        padding = [(0, 0)] * (vectors.ndim - 1) + [(0, 3 - self.dim)]
        return jnp.pad(vectors, padding)

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        """Accelerations `[N, dim]` for a graph of `particle_graph` or `device_particle_graph`
        (nodes `[N, history * dim (+ dim)]`, edges `[E, dim + 1]`). Jittable."""
        self._check()
        n_node, width = graph.nodes.shape
        expected = (self.history + self.external_force) * self.dim
        if width != expected:
            raise ValueError(f"SEGNN: nodes have {width} features, expected {expected} "
                             f"(history {self.history} x dim {self.dim}"
                             f"{' + the force' if self.external_force else ''})")
        if graph.edges.shape[-1] != self.dim + 1:
            raise ValueError(f"SEGNN: edges have {graph.edges.shape[-1]} features, expected "
                             f"dim + 1 = {self.dim + 1}")
        senders, receivers = graph.senders, graph.receivers
        hidden = balanced_hidden_irreps(self.scalar_units, self.lmax_hidden,
                                        self.lmax_attributes)
        velocities = self._in_3d(graph.nodes[:, : self.history * self.dim].reshape(
            n_node, self.history, self.dim))
        displacement = self._in_3d(graph.edges[:, : self.dim])
        velocity = velocities.mean(axis=1) if self.velocity_aggregate == "avg" else \
            velocities[:, -1]
        node_attributes, edge_attributes = steerable_attributes(
            velocity, displacement, receivers, self.lmax_attributes)

        features = [velocities.reshape(n_node, 3 * self.history)]
        irreps = f"{self.history}x1o"
        if self.external_force:
            features.append(self._in_3d(graph.nodes[:, self.history * self.dim:]))
            irreps += "+1x1o"
        nodes = _irreps(e3nn.Irreps(irreps), jnp.concatenate(features, axis=1))
        edge_features = _irreps(e3nn.Irreps("1x1o+1x0e"),
                                jnp.concatenate([displacement, graph.edges[:, self.dim:]], 1))

        x = SteerableLinear(str(hidden), gated=False, name="embedding")(nodes, node_attributes)
        for step in range(self.num_message_passing_steps):
            message = e3nn.concatenate([_irreps(hidden, x.array[senders]),
                                        _irreps(hidden, x.array[receivers]), edge_features])
            for block in range(self.blocks):
                message = SteerableLinear(str(hidden), name=f"message_{step}_{block}")(
                    message, edge_attributes)
            summed = _irreps(hidden, jax.ops.segment_sum(message.array, receivers, n_node))
            update = e3nn.concatenate([x, summed])
            for block in range(self.blocks - 1):
                update = SteerableLinear(str(hidden), name=f"update_{step}_{block}")(
                    update, node_attributes)
            update = SteerableLinear(str(hidden), gated=False,
                                     name=f"update_{step}_{self.blocks - 1}")(
                update, node_attributes)
            x = x + update
        for block in range(self.blocks):
            x = SteerableLinear(str(hidden), name=f"decoder_{block}")(x, node_attributes)
        out = SteerableLinear("1x1o", gated=False, name="output")(x, node_attributes)
        return out.array[:, : self.dim]
