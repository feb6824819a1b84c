"""The molecules demo's models: an encoder (D-MPNN, GINE, GCN or GAT), a readout over atoms, an
FFN to one target; the loss, the optimiser and the jitted train and predict steps."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from gnkit import chem
from gnkit.batching import get_graph_padding_mask
from gnkit.demos.molecules.config import MoleculesConfig
from gnkit.graph import GraphsTuple
from gnkit.nn import DMPNN, GAT, GCN, GINE, MLP, graph_readout


class AtomEmbedding(nn.Module):
    """Input features to width `features`: a Dense for float (chemprop) features, a sum of
    one embedding table per column for integer (OGB) features `[n, columns]`."""

    features: int
    vocabulary: tuple[int, ...] | None = None

    @nn.compact
    def __call__(self, values: jax.Array) -> jax.Array:
        if self.vocabulary is None:
            return nn.Dense(self.features)(values)
        tables = [nn.Embed(size, self.features) for size in self.vocabulary]
        return sum(table(values[:, column]) for column, table in enumerate(tables))


class MoleculeModel(nn.Module):
    """Graph `->` one prediction per graph `[G]` (in standardised target units). Jittable.

    `dmpnn`: chemprop's D-MPNN (`gnkit.nn.DMPNN`) on the float features. `gine`, `gcn`, `gat`:
    atoms (and, for GINE, bonds) embedded to `hidden_size`, then `depth` layers with ReLU
    between them. Then the `readout` over atoms, with `descriptors` the graph's globals (the
    normalised descriptors) beside it, and an MLP of `ffn_layers` layers of `ffn_hidden_size`
    to one output, as chemprop's FFN.
    """

    config: MoleculesConfig

    @nn.compact
    def __call__(self, graph: GraphsTuple) -> jax.Array:
        config = self.config
        width = config.hidden_size
        ogb = config.features == "ogb"
        if config.model == "dmpnn":
            graph = DMPNN(hidden_size=width, depth=config.depth)(graph)
        else:
            atoms = chem.features.OGB_ATOM_VOCABULARY if ogb else None
            bonds = chem.features.OGB_BOND_VOCABULARY if ogb else None
            graph = graph._replace(nodes=AtomEmbedding(width, atoms)(graph.nodes))
            if config.model == "gine":
                graph = graph._replace(edges=AtomEmbedding(width, bonds)(graph.edges))
            for layer in range(config.depth):
                if config.model == "gine":
                    graph = GINE((width, width))(graph)
                elif config.model == "gcn":
                    graph = GCN(width)(graph)
                else:
                    graph = GAT(width)(graph)
                if layer < config.depth - 1:
                    graph = graph._replace(nodes=nn.relu(graph.nodes))
        pooled = graph_readout(graph, config.readout)
        if config.descriptors:
            pooled = jnp.concatenate([pooled, graph.globals], axis=-1)
        head = MLP((config.ffn_hidden_size,) * config.ffn_layers + (1,), name="ffn")
        return head(pooled)[:, 0]


def init_params(config: MoleculesConfig, example: dict, seed: int):
    """Initial parameters of replicate `seed` for batches shaped like `example`."""
    return MoleculeModel(config).init(jax.random.PRNGKey(seed), example["graph"])


def optimizer(config: MoleculesConfig, per_epoch: int) -> optax.GradientTransformation:
    """Adam with chemprop's Noam-like schedule: linear from `init_lr` to `max_lr` over
    `warmup_epochs`, then exponential decay to `final_lr` at the last update."""
    warmup = config.warmup_epochs * per_epoch
    cooldown = (config.epochs - config.warmup_epochs) * per_epoch
    decay = optax.exponential_decay(config.max_lr, cooldown, config.final_lr / config.max_lr)
    if not warmup:
        return optax.adam(decay)
    rise = optax.linear_schedule(config.init_lr, config.max_lr, warmup)
    return optax.adam(optax.join_schedules([rise, decay], [warmup]))


def make_train_step(config: MoleculesConfig, tx: optax.GradientTransformation):
    """Jitted `step(params, opt_state, batch) -> (params, opt_state, {"loss"})`: the mean
    squared error over the batch's real molecules."""
    model = MoleculeModel(config)

    def loss_fn(params, batch):
        predictions = model.apply(params, batch["graph"])
        mask = batch["mask"]
        errors = jnp.where(mask, predictions - batch["targets"], 0.0)
        return jnp.sum(errors**2) / jnp.maximum(mask.sum(), 1)

    @jax.jit
    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"loss": loss}

    return step


def make_predict(config: MoleculesConfig):
    """Jitted `predict(params, graph) -> [G]` standardised predictions (padding graphs masked
    to 0)."""
    model = MoleculeModel(config)

    @jax.jit
    def predict(params, graph):
        return jnp.where(get_graph_padding_mask(graph), model.apply(params, graph), 0.0)

    return predict
