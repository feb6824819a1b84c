"""The molecules demo's models: an encoder (D-MPNN, GINE, GCN, GAT or GPS), a readout over
atoms, an FFN to one output per task; the loss, the optimiser and the jitted train and predict
steps."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from gnkit.batching import get_graph_padding_mask
from gnkit.demos.molecules.config import POSITIONAL_WIDTH, MoleculesConfig
from gnkit.graph import GraphsTuple
from gnkit.nn import DMPNN, GAT, GCN, GINE, GPS, MLP, graph_readout


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
    """Graph `->` one prediction per graph `[G]` (in standardised target units, or a logit for
    classification), or `[G, tasks]` for several `tasks`. Jittable.

    `dmpnn`: chemprop's D-MPNN (`gnkit.nn.DMPNN`) on the float features. `gine`, `gcn`, `gat`:
    atoms (and, for GINE, bonds) embedded to `hidden_size`, then `depth` layers with ReLU
    between them. `gps`: `gnkit.nn.GPS` on the atoms and bonds (OGB's integer features embedded
    to `gps_hidden_size` first) and each atom's `positional` encoding `[N, k]`, with layer norm
    and no dropout, so the model is a pure function of its parameters and the batch (the
    Laplacian encodings' random signs are drawn on the host, `data.train_batches`); attention
    slots for `max_atoms` atoms a molecule. Then the `readout` over atoms, with `descriptors`
    the graph's globals (the normalised descriptors) beside it, and an MLP of `ffn_layers`
    layers of `ffn_hidden_size` to one output per task, as chemprop's FFN.
    """

    config: MoleculesConfig
    max_atoms: int = 0
    tasks: int = 1

    @nn.compact
    def __call__(self, graph: GraphsTuple, positional: jax.Array | None = None) -> jax.Array:
        config = self.config
        width = config.hidden_size
        ogb = config.features == "ogb"
        if config.model == "dmpnn":
            graph = DMPNN(hidden_size=width, depth=config.depth)(graph)
        elif config.model == "gps":
            graph = self._gps(graph, positional)
        else:
            from gnkit.chem import features  # the chem extra, imported once a model is built

            atoms = features.OGB_ATOM_VOCABULARY if ogb else None
            bonds = features.OGB_BOND_VOCABULARY if ogb else None
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
        head = MLP((config.ffn_hidden_size,) * config.ffn_layers + (self.tasks,), name="ffn")
        outputs = head(pooled)
        return outputs[:, 0] if self.tasks == 1 else outputs

    def _gps(self, graph: GraphsTuple, positional: jax.Array | None) -> GraphsTuple:
        config = self.config
        if positional is None or self.max_atoms < 1:
            raise ValueError(
                f"MoleculeModel: model=gps needs the positional encodings and max_atoms >= 1 "
                f"(max_atoms={self.max_atoms}, positional given: {positional is not None})"
            )
        if config.features == "ogb":
            from gnkit.chem import features

            width = config.gps_hidden_size
            atoms = AtomEmbedding(width, features.OGB_ATOM_VOCABULARY)(graph.nodes)
            bonds = AtomEmbedding(width, features.OGB_BOND_VOCABULARY)(graph.edges)
            graph = graph._replace(nodes=atoms, edges=bonds)
        rwse = config.positional == "rwse"
        gps = GPS(
            channels=config.gps_hidden_size,
            num_layers=config.gps_layers,
            num_heads=config.gps_heads,
            max_nodes=self.max_atoms,
            laplacian_features=0 if rwse else POSITIONAL_WIDTH,
            random_walk_features=POSITIONAL_WIDTH if rwse else 0,
            norm="layer_norm",
        )
        if rwse:
            return gps(graph, random_walk_pe=positional)
        return gps(graph, laplacian_pe=positional)


def init_params(
    config: MoleculesConfig, example: dict, seed: int, max_atoms: int = 0, tasks: int = 1
):
    """Initial parameters of replicate `seed` for batches shaped like `example` (`max_atoms`:
    the GPS attention's bucket, see `MoleculeModel`; `tasks` outputs)."""
    model = MoleculeModel(config, max_atoms, tasks)
    return model.init(jax.random.PRNGKey(seed), example["graph"], example.get("positional"))


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


def masked_loss(outputs, targets, mask, classification: bool = False):
    """The mean over the known labels (`mask`) of the squared error of `outputs` (standardised
    targets) or, for `classification`, of the binary cross-entropy of the logits `outputs`
    against labels 0 / 1, as chemprop's (each known label weighs the same). All `[G, tasks]`
    (or `[G]`). Jittable."""
    if classification:
        per_label = optax.sigmoid_binary_cross_entropy(outputs, targets)
    else:
        per_label = (outputs - targets) ** 2
    return jnp.sum(jnp.where(mask, per_label, 0.0)) / jnp.maximum(mask.sum(), 1)


def make_loss(
    config: MoleculesConfig, max_atoms: int = 0, tasks: int = 1, classification: bool = False
):
    """`loss_fn(params, batch) -> (loss, {})`: `masked_loss` over the batch's real molecules'
    known labels (`batch["mask"]`, `[G]` or `[G, tasks]`). Jittable."""
    model = MoleculeModel(config, max_atoms, tasks)

    def loss_fn(params, batch):
        outputs = model.apply(params, batch["graph"], batch.get("positional"))
        outputs = outputs.reshape(outputs.shape[0], -1)
        targets = batch["targets"].reshape(outputs.shape)
        mask = batch["mask"].reshape(outputs.shape)
        return masked_loss(outputs, targets, mask, classification), {}

    return loss_fn


def make_train_step(
    config: MoleculesConfig, tx: optax.GradientTransformation, max_atoms=0, tasks: int = 1
):
    """Jitted `step(params, opt_state, batch) -> (params, opt_state, {"loss"})` of `make_loss`
    (regression) and `tx`."""
    loss_fn = make_loss(config, max_atoms, tasks)

    @jax.jit
    def step(params, opt_state, batch):
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"loss": loss}

    return step


def make_predict(config: MoleculesConfig, max_atoms: int = 0, tasks: int = 1):
    """Jitted `predict(params, graph, positional=None) -> [G]` (`[G, tasks]` for several)
    standardised predictions or logits (padding graphs masked to 0; `positional` `[N, k]` for
    model=gps)."""
    model = MoleculeModel(config, max_atoms, tasks)

    @jax.jit
    def predict(params, graph, positional=None):
        outputs = model.apply(params, graph, positional)
        real = get_graph_padding_mask(graph).reshape(-1, *[1] * (outputs.ndim - 1))
        return jnp.where(real, outputs, 0.0)

    return predict
