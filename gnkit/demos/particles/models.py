"""The particles demo's models: GNS and SEGNN at the config's sizes, as flax linen or their NNX
twins, all seen by the runner as `init(key) -> params` and `apply(params, graph) ->
accelerations`."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax

from gnkit.demos.particles.config import ParticlesConfig
from gnkit.demos.particles.data import ParticlesData


@dataclasses.dataclass(frozen=True)
class Model:
    """A model as pure functions.

    Attributes:
      init: `key -> params` (a pytree of arrays: linen's variables, or the NNX state as a pure
        dict).
      apply: `(params, graph) -> [n_node, dim]` normalised accelerations. Jittable.
      isotropic: the model reads the isotropic normalisation (`ParticlesData.isotropic_stats`),
        as an equivariant model must.
    """

    init: Callable[[jax.Array], object]
    apply: Callable[[object, object], jax.Array]
    isotropic: bool = False


def input_widths(config: ParticlesConfig, data: ParticlesData) -> tuple[int, int]:
    """Node and edge feature widths: `history * dim` (+ `dim` with a force), `dim + 1`."""
    force = data.dim if data.external_force is not None else 0
    return config.history * data.dim + force, data.dim + 1


# Built models by (name, config, id(data)), so their `apply` is one object per run and the
# rollouts jitted on it compile once.
_BUILT: dict[tuple, tuple[ParticlesData, Model]] = {}


def build_model(name: str, config: ParticlesConfig, data: ParticlesData) -> Model:
    """Model `name` (`gns`, `segnn`) for `config.api`: linen's `GNS` / `SEGNN` or the NNX twin
    of `gnkit.particles.nnx`, whose state is split once and merged inside `apply`. The same
    arguments give the same `Model` object."""
    key = (name, config, id(data))
    if key not in _BUILT:
        if len(_BUILT) >= 8:
            _BUILT.clear()
        _BUILT[key] = (data, _build(name, config, data))
    return _BUILT[key][1]


def _build(name: str, config: ParticlesConfig, data: ParticlesData) -> Model:
    if name == "gns":
        from gnkit.particles import gns
        from gnkit.particles import nnx as twins

        options = dict(dim=data.dim, latent_size=config.latent_size,
                       num_layers=config.num_layers, num_message_passing_steps=config.steps)
        nodes, edges = input_widths(config, data)
        linen, twin = gns.GNS, functools.partial(
            twins.GNS, in_node_features=nodes, in_edge_features=edges)
        isotropic = False
    elif name == "segnn":
        from gnkit.particles import nnx as twins
        from gnkit.particles import segnn

        options = dict(dim=data.dim, history=config.history,
                       external_force=data.external_force is not None,
                       scalar_units=config.latent_size, lmax_hidden=config.lmax_hidden,
                       lmax_attributes=config.lmax_attributes,
                       num_message_passing_steps=config.steps, blocks=config.num_layers)
        linen, twin, isotropic = segnn.SEGNN, twins.SEGNN, True
    else:
        raise ValueError(f"unknown model {name!r}")
    if config.api == "linen":
        from gnkit.nnx.twin import sample_graph

        module = linen(**options)
        nodes, edges = input_widths(config, data)
        sample = sample_graph(nodes=nodes, edges=edges, globals_=1)
        return Model(init=lambda key: module.init(key, sample), apply=module.apply,
                     isotropic=isotropic)
    from flax import nnx

    def make(key):
        return twin(rngs=nnx.Rngs(params=key), **options)

    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: make(jax.random.key(0))))

    def init(key):
        return nnx.to_pure_dict(nnx.state(make(key)))

    def apply(params, graph):
        state = jax.tree.map(lambda leaf: leaf, abstract)
        nnx.replace_by_pure_dict(state, params)
        return nnx.merge(graphdef, state)(graph)

    return Model(init=init, apply=apply, isotropic=isotropic)
