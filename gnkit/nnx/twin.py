"""How a `gnkit.nnx` module holds its `gnkit.nn` twin's parameters, and weights moving both ways.

Every module of `gnkit.nnx` is a `Twin`: an NNX module whose parameters are `nnx.Param`
variables laid out as the linen twin's `params` collection (same names, same nesting), and whose
methods run the linen twin's pure `apply` on them. So the math is the linen module's, which is
itself thin over the functional blocks: there is one implementation of every layer, the two APIs
give the same numbers, and a checkpoint of either loads in the other:

    nnx_model = from_linen(linen_module, variables)      # same weights, NNX
    variables = to_linen_variables(nnx_model)            # {"params": ...} for linen's apply

Under `nnx.jit`, `nnx.grad` and the other NNX transforms the parameters are traced like those of
any NNX module, and the linen `apply` inside traces to the same program as the linen module's.

A twin is declared with its linen class and builds that class from its arguments:

    class GCN(Twin, linen=layers.GCN):
        def __init__(self, in_features, features, *, rngs, **options):
            self._build(layers.GCN, dict(features=features, **options), rngs,
                        (sample_graph(nodes=in_features),))

        def __call__(self, graph):
            return self._apply(graph)

`_build` initialises the linen module on a one-node sample of the given input sizes with a key
from `rngs.params()`. A linen module with batch norm also has a `batch_stats` collection, held as
`nnx.BatchStat`; one with a training mode (dropout, batch statistics) is a `TrainingTwin`
(`gnkit.nnx.training_twin`), which follows NNX's `model.train()` / `model.eval()` and feeds
linen's `'dropout'` rng stream.
An option that is itself a twin (an `LCMAggregation` as a `GraphNetwork`'s aggregator, an
`RGCNEncoder` as a `KGEmbedding`'s encoder) stays an NNX submodule of that name, holding its own
variables, as in linen, where its variables sit under the attribute's name.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import flax.core
import flax.errors
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gnkit.graph import GraphsTuple
from gnkit.nn.input_width import InputWidthError

_TWINS: dict[type, type] = {}
COLLECTIONS = ("params", "batch_stats")
_ADOPTED: contextvars.ContextVar = contextvars.ContextVar("adopted", default=None)


def _is_variable(value: Any) -> bool:
    return isinstance(value, nnx.Variable)


def _hashable(value: Any) -> Any:
    """Lists become tuples: linen attributes are static parts of an NNX graph, so hashable."""
    return tuple(value) if isinstance(value, list) else value


def _shapes(tree: Any) -> Any:
    return jax.tree.map(np.shape, tree)


class Twin(nnx.Module):
    """Base of the `gnkit.nnx` modules: an NNX module holding a `gnkit.nn` module's variables.

    Attributes:
      linen_module: the linen module whose `apply` computes this module's outputs (static).
      params: the linen `params` collection as a nested dict of `nnx.Param`, except the
        parameters of twin submodules, which those hold themselves.
      batch_stats: the linen `batch_stats` collection as a nested dict of `nnx.BatchStat`;
        only on modules that have one (batch norm in `GPSLayer` and `GPS`).
    """

    def __init_subclass__(cls, *, linen: type | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if linen is not None:
            _TWINS[linen] = cls
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _adoptable(init)
            parameters = list(inspect.signature(init).parameters.values())[1:]
            cls.__signature__ = inspect.Signature(parameters)

    def _build(
        self,
        linen_class: type,
        options: Mapping[str, Any],
        rngs: nnx.Rngs,
        sample: tuple,
        method: str | Callable | None = None,
        sample_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Build `linen_class(**options)`, initialise it on `sample` and `sample_options` (the
        positional and keyword arguments of `method`, default `__call__`; compiled, as an eager
        init runs op by op) and hold its variables."""
        if not isinstance(rngs, nnx.Rngs):
            raise TypeError(
                f"{type(self).__name__}: rngs must be an nnx.Rngs, got {type(rngs).__name__}"
            )
        children = {name: value for name, value in options.items() if isinstance(value, Twin)}
        attributes = {
            name: value.linen_module if name in children else _hashable(value)
            for name, value in options.items()
        }
        module = linen_class(**attributes)
        sample_options = dict(sample_options or {})
        init = jax.jit(lambda key: module.init(key, *sample, method=method, **sample_options))
        variables = flax.core.unfreeze(init(rngs.params()))
        for name, child in children.items():
            found = _shapes(child.linen_variables())
            expected = {collection: _shapes(variables.get(collection, {}).pop(name, {}))
                        for collection in found}
            if expected != found:
                raise ValueError(
                    f"{type(self).__name__}: the {type(child).__name__} given as {name!r} holds "
                    f"variables of shapes {found}, but here it needs {expected}; build it "
                    "for this module's input sizes."
                )
        self._adopt(module, variables, children)

    def _adopt(self, module: nn.Module, variables: dict, children: Mapping[str, Twin]) -> None:
        unknown = sorted(set(variables) - set(COLLECTIONS))
        if unknown:
            raise ValueError(
                f"{type(self).__name__}: the linen module has variable collections {unknown}; "
                f"a twin holds only {list(COLLECTIONS)}"
            )
        self.linen_module = module
        self.params = nnx.data(jax.tree.map(nnx.Param, variables.get("params", {})))
        if variables.get("batch_stats"):
            self.batch_stats = nnx.data(jax.tree.map(nnx.BatchStat, variables["batch_stats"]))
        for name, child in children.items():
            setattr(self, name, child)
        self.child_names = tuple(children)

    def _collection(self, collection: str) -> dict:
        """One linen collection of this module and its twin submodules (arrays, or tracers
        inside a transform); `{}` when none of them holds it."""
        tree = jax.tree.map(
            lambda variable: variable.get_value(), getattr(self, collection, {}),
            is_leaf=_is_variable,
        )
        for name in self.child_names:
            child = getattr(self, name)._collection(collection)
            if child:
                tree[name] = child
        return tree

    def linen_params(self) -> dict:
        """The linen `params` collection of this module and its twin submodules (arrays, or
        tracers inside a transform)."""
        return self._collection("params")

    def linen_variables(self) -> dict:
        """The linen variables of this module and its twin submodules: `{"params": ...}`, and
        `"batch_stats"` where a module holds batch statistics."""
        variables = {collection: self._collection(collection) for collection in COLLECTIONS}
        return {name: tree for name, tree in variables.items() if tree or name == "params"}

    def _write_batch_stats(self, stats: Mapping[str, Any]) -> None:
        """Set this module's and its submodules' `nnx.BatchStat` values to linen's `stats`."""
        own = {name: tree for name, tree in stats.items() if name not in self.child_names}
        jax.tree.map(lambda variable, value: variable.set_value(value),
                     getattr(self, "batch_stats", {}), own, is_leaf=_is_variable)
        for name in self.child_names:
            if name in stats:
                getattr(self, name)._write_batch_stats(stats[name])

    def _apply(
        self,
        *args,
        method: str | Callable | None = None,
        training: bool = False,
        rngs: nnx.Rngs | nnx.RngStream | jax.Array | None = None,
        **kwargs,
    ) -> Any:
        """The linen twin's `apply` with this module's variables.

        With `training`, as linen's `apply(..., rngs={"dropout": key}, mutable=["batch_stats"])`:
        the `'dropout'` key comes from `rngs` (an `nnx.Rngs`, a stream or a key used as is) or
        from the stream the module keeps (`rngs` attribute), and the updated batch statistics
        are written to the `nnx.BatchStat` variables. The linen module's own training argument
        (`train=`, `deterministic=`) is the caller's, among `kwargs`. An input of another
        width than the module was built for raises the linen module's `InputWidthError`, naming
        this module's constructor argument for that width (`in_features=2`).
        """
        try:
            return self._apply_linen(args, method, training, rngs, kwargs)
        except InputWidthError as error:
            if error.path:
                raise
            raise error.naming_argument() from None

    def _apply_linen(self, args, method, training, rngs, kwargs) -> Any:
        variables = self.linen_variables()
        if not training:
            return self.linen_module.apply(variables, *args, method=method, **kwargs)
        key = _dropout_key(rngs if rngs is not None else getattr(self, "rngs", None))
        mutable = [name for name in variables if name != "params"]
        try:
            outputs, updates = self.linen_module.apply(
                variables, *args, method=method, mutable=mutable,
                rngs=None if key is None else {"dropout": key}, **kwargs,
            )
        except flax.errors.InvalidRngError as error:
            raise ValueError(
                f"{type(self).__name__}: dropout in training mode needs rngs: pass rngs= (an "
                "nnx.Rngs or a key) to the call, or build the module with rngs"
            ) from error
        self._write_batch_stats(updates.get("batch_stats", {}))
        return outputs


def _dropout_key(rngs: nnx.Rngs | nnx.RngStream | jax.Array | None) -> jax.Array | None:
    if rngs is None or isinstance(rngs, jax.Array):
        return rngs
    if isinstance(rngs, nnx.Rngs):
        return rngs.dropout()
    return rngs()


def _adoptable(init: Callable) -> Callable:
    """`init`, or, inside `from_linen`, taking the linen module and parameters given there."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        adopted = _ADOPTED.get()
        if adopted is None:
            init(self, *args, **kwargs)
        else:
            self._adopt(*adopted)

    return __init__


@contextlib.contextmanager
def _adopting(module: nn.Module, variables: dict, children: dict) -> Iterator[None]:
    token = _ADOPTED.set((module, variables, children))
    try:
        yield
    finally:
        _ADOPTED.reset(token)


def from_linen(module: nn.Module, variables: Mapping[str, Any]) -> Twin:
    """The `gnkit.nnx` twin of the `gnkit.nn` module `module`, holding the weights `variables`.

    `variables` is what `module.init` returns (or a checkpoint of it): `{"params": ...}`, and
    `"batch_stats"` for a module with batch norm. The twin's outputs and gradients are the linen
    module's with those weights. Submodules given as attributes (an aggregator, an encoder)
    become twin submodules. Host function; the arrays are shared, not copied.

    Raises a `TypeError` for a module that has no twin in `gnkit.nnx`.
    """
    twin_class = _TWINS.get(type(module))
    if twin_class is None:
        raise TypeError(
            f"from_linen: {type(module).__name__} has no twin in gnkit.nnx (twins exist for "
            f"{sorted(cls.__name__ for cls in _TWINS)})"
        )
    if "params" not in variables:
        raise ValueError(
            f"from_linen: variables must hold a 'params' collection, got {sorted(variables)}"
        )
    variables = flax.core.unfreeze(dict(variables))
    children = {}
    for field in dataclasses.fields(module):
        value = getattr(module, field.name, None)
        if field.name not in ("parent", "name") and isinstance(value, nn.Module):
            own = {collection: tree.pop(field.name, {}) for collection, tree in variables.items()}
            children[field.name] = from_linen(value, own)
    with _adopting(module, variables, children):
        return twin_class()


def to_linen_variables(module: Twin) -> dict:
    """The linen variables of an NNX twin, `{"params": ...}` and `"batch_stats"` where it holds
    them, for its `linen_module`'s `apply` (or a linen checkpoint). Host function; the arrays
    are shared, not copied."""
    if not isinstance(module, Twin):
        raise TypeError(
            f"to_linen_variables: expected a gnkit.nnx module, got {type(module).__name__}"
        )
    return module.linen_variables()


def sample_graph(
    nodes: int | None = None,
    edges: int | None = None,
    globals_: int | None = None,
    relation_ids: bool = False,
    n_node: int = 1,
) -> GraphsTuple:
    """A graph of `n_node` nodes and one edge (node 0 to itself) with zero features of the
    given widths: the input that initialises a twin's linen module.

    Args:
      nodes: node feature width, or None for `nodes=None`.
      edges: edge feature width, or None for `edges=None`.
      globals_: global feature width (one graph), or None for `globals=None`.
      relation_ids: make the edges int32 relation ids `[1]` instead (an R-GCN's input).
      n_node: nodes in the graph.

    Returns:
      The `GraphsTuple`, zeros throughout.
    """
    edge_features = None
    if relation_ids:
        edge_features = jnp.zeros((1,), jnp.int32)
    elif edges is not None:
        edge_features = jnp.zeros((1, edges))
    return GraphsTuple(
        nodes=None if nodes is None else jnp.zeros((n_node, nodes)),
        edges=edge_features,
        receivers=jnp.zeros((1,), jnp.int32),
        senders=jnp.zeros((1,), jnp.int32),
        globals=None if globals_ is None else jnp.zeros((1, globals_)),
        n_node=jnp.array([n_node], jnp.int32),
        n_edge=jnp.array([1], jnp.int32),
    )
