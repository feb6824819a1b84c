"""The relational GNN: an encoder per table, a temporal encoding, typed GraphSAGE, a head.

Each node set's rows are encoded by their own table's columns (`TableEncoder`: a Dense layer of
the standardised numbers and their NULL flags, plus an embedding per categorical column) and by
how long before the seed time they happened (`age_features`); then `layers` rounds of
`gnkit.nn.HeteroConv` with a `gnkit.nn.GraphSAGE` of its own per edge set (summed per
receiving node set, as `to_hetero` makes it; a layer norm per node set and ReLU after each
round, as RelBench's GraphSAGE), and an MLP reads the seed rows out. Jittable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from gnkit.nn import MLP, GraphSAGE, HeteroConv
from gnkit.rdl.tasks import SEED_SET
from gnkit.typed_graph import TypedGraph
from gnkit.typed_graph.types import module_name


def age_features(seed_time: jax.Array, time: jax.Array) -> jax.Array:
    """`[N, 2]`: the years from each row's time to its seed's time (0 for rows known at every
    time and for padding), scaled by 1/10, and `log(1 + years)`. Jittable."""
    always = jnp.iinfo(jnp.int32).min
    years = jnp.where(time == always, 0, seed_time - time).astype(jnp.float32)
    years = jnp.maximum(years, 0.0)
    return jnp.stack([years / 10.0, jnp.log1p(years)], axis=-1)


class TableEncoder(nn.Module):
    """One table's rows `[N, ...]` to `[N, features]`: Dense of `[numerical, missing, age]` plus
    one embedding per categorical column (`categories`: each column's number of indices)."""

    features: int
    categories: Sequence[int]

    @nn.compact
    def __call__(self, columns: Mapping[str, jax.Array], age: jax.Array) -> jax.Array:
        inputs = jnp.concatenate([columns["numerical"], columns["missing"], age], axis=-1)
        hidden = nn.Dense(self.features, name="columns")(inputs)
        for index, size in enumerate(self.categories):
            hidden = hidden + nn.Embed(size, self.features, name=f"category_{index}")(
                columns["categorical"][:, index]
            )
        return hidden


class RelationalGNN(nn.Module):
    """Scores `[S]` (logits or values) of the `S` seed slots of a temporal sample.

    Called with the sample's `TypedGraph` (features as `gnkit.rdl.database_graph` writes them,
    `time` on every node set) and `roots`, each node set's rows' seed slot (-1 for padding).

    Attributes:
      hidden: the width of every encoder and layer.
      layers: rounds of typed GraphSAGE.
      categories: `(table, categorical column sizes)` pairs.
      edge_sets: the edge sets the sampler draws (the others are left out).
      num_seeds: the seed slots `S`, the first rows of the seed set.
    """

    hidden: int
    layers: int
    categories: Sequence[tuple[str, Sequence[int]]]
    edge_sets: Sequence
    num_seeds: int

    @nn.compact
    def __call__(self, graph: TypedGraph, roots: Mapping[str, jax.Array]) -> jax.Array:
        seeds = graph.nodes[SEED_SET]
        num_seeds = self.num_seeds
        slot_time = jnp.asarray(seeds.time[:num_seeds])
        nodes = {}
        for name, node_set in graph.nodes.items():
            root = roots[name]
            seed_time = jnp.where(root >= 0, slot_time[jnp.maximum(root, 0)], node_set.time)
            encoder = TableEncoder(self.hidden, tuple(dict(self.categories).get(name, ())),
                                   name=f"encode_{name}")
            features = encoder(node_set.features, age_features(seed_time, node_set.time))
            nodes[name] = node_set._replace(features=features)
        graph = graph._replace(nodes=nodes, edges={key: graph.edges[key] for key in self.edge_sets})
        keys = list(self.edge_sets)
        for layer in range(self.layers):
            sage = {module_name(key, keys): GraphSAGE(self.hidden, parent=None) for key in keys}
            graph = HeteroConv(sage, name=f"layer_{layer}")(graph)
            updated = {}
            for name, node_set in graph.nodes.items():
                features = nn.LayerNorm(name=f"norm_{layer}_{name}")(node_set.features)
                updated[name] = node_set._replace(features=nn.relu(features))
            graph = graph._replace(nodes=updated)
        readout = graph.nodes[SEED_SET].features[:num_seeds]
        return MLP((self.hidden, 1), name="head")(readout)[:, 0]
