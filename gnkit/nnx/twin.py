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
from `rngs.params()`. An option that is itself a twin (an `LCMAggregation` as a `GraphNetwork`'s
aggregator, an `RGCNEncoder` as a `KGEmbedding`'s encoder) stays an NNX submodule of that name,
holding its own parameters, as in linen, where its parameters sit under the attribute's name.
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
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gnkit.graph import GraphsTuple

_TWINS: dict[type, type] = {}
_ADOPTED: contextvars.ContextVar = contextvars.ContextVar("adopted", default=None)


def _is_variable(value: Any) -> bool:
    return isinstance(value, nnx.Variable)


def _hashable(value: Any) -> Any:
    """Lists become tuples: linen attributes are static parts of an NNX graph, so hashable."""
    return tuple(value) if isinstance(value, list) else value


def _shapes(tree: Any) -> Any:
    return jax.tree.map(np.shape, tree)


class Twin(nnx.Module):
    """Base of the `gnkit.nnx` modules: an NNX module holding a `gnkit.nn` module's parameters.

    Attributes:
      linen_module: the linen module whose `apply` computes this module's outputs (static).
      params: the linen `params` collection as a nested dict of `nnx.Param`, except the
        parameters of twin submodules, which those hold themselves.
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
    ) -> None:
        """Build `linen_class(**options)`, initialise it on `sample` (the arguments of `method`,
        default `__call__`; compiled, as an eager init runs op by op) and hold its parameters."""
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
        init = jax.jit(lambda key: module.init(key, *sample, method=method))
        variables = init(rngs.params())
        params = flax.core.unfreeze(variables.get("params", {}))
        for name, child in children.items():
            expected = _shapes(params.pop(name, {}))
            found = _shapes(child.linen_params())
            if expected != found:
                raise ValueError(
                    f"{type(self).__name__}: the {type(child).__name__} given as {name!r} holds "
                    f"parameters of shapes {found}, but here it needs {expected}; build it "
                    "for this module's input sizes."
                )
        self._adopt(module, params, children)

    def _adopt(self, module: nn.Module, params: dict, children: Mapping[str, Twin]) -> None:
        self.linen_module = module
        self.params = nnx.data(jax.tree.map(nnx.Param, params))
        for name, child in children.items():
            setattr(self, name, child)
        self.child_names = tuple(children)

    def linen_params(self) -> dict:
        """The linen `params` collection of this module and its twin submodules (arrays, or
        tracers inside a transform)."""
        params = jax.tree.map(
            lambda variable: variable.get_value(), self.params, is_leaf=_is_variable
        )
        for name in self.child_names:
            params[name] = getattr(self, name).linen_params()
        return params

    def _apply(self, *args, method: str | Callable | None = None, **kwargs) -> Any:
        """The linen twin's `apply` with this module's parameters."""
        variables = {"params": self.linen_params()}
        return self.linen_module.apply(variables, *args, method=method, **kwargs)


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
def _adopting(module: nn.Module, params: dict, children: dict) -> Iterator[None]:
    token = _ADOPTED.set((module, params, children))
    try:
        yield
    finally:
        _ADOPTED.reset(token)


def from_linen(module: nn.Module, variables: Mapping[str, Any]) -> Twin:
    """The `gnkit.nnx` twin of the `gnkit.nn` module `module`, holding the weights `variables`.

    `variables` is what `module.init` returns (or a checkpoint of it): `{"params": ...}`. The
    twin's outputs and gradients are the linen module's with those weights. Submodules given as
    attributes (an aggregator, an encoder) become twin submodules. Host function; the arrays are
    shared, not copied.

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
    params = flax.core.unfreeze(variables["params"])
    children = {}
    for field in dataclasses.fields(module):
        value = getattr(module, field.name, None)
        if field.name not in ("parent", "name") and isinstance(value, nn.Module):
            children[field.name] = from_linen(value, {"params": params.pop(field.name, {})})
    with _adopting(module, params, children):
        return twin_class()


def to_linen_variables(module: Twin) -> dict:
    """The linen variables `{"params": ...}` of an NNX twin, for its `linen_module`'s `apply`
    (or a linen checkpoint). Host function; the arrays are shared, not copied."""
    if not isinstance(module, Twin):
        raise TypeError(
            f"to_linen_variables: expected a gnkit.nnx module, got {type(module).__name__}"
        )
    return {"params": module.linen_params()}


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
