"""Every public jraph 0.0.6 name exists in gnkit with a compatible signature.

Semantics are compared name by name against jraph in the module tests (test_segment,
test_batching, test_models_jraph); this file checks the surface, and that graphs cross over.
"""

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

jraph = pytest.importorskip("jraph")
import gnkit  # noqa: E402

# jraph exports these at top level without listing them in __all__.
UNLISTED = ("segment_mean", "segment_min", "segment_normalize", "segment_variance")
JRAPH_NAMES = sorted(set(jraph.__all__) | set(UNLISTED))


@pytest.mark.parametrize("name", JRAPH_NAMES)
def test_name_exists_with_compatible_signature(name):
    assert hasattr(gnkit, name), f"gnkit lacks jraph's {name}"
    assert name in gnkit.__all__
    ours, theirs = getattr(gnkit, name), getattr(jraph, name)
    if not inspect.isfunction(theirs):
        return
    our_params = inspect.signature(ours).parameters
    their_params = inspect.signature(theirs).parameters
    assert list(our_params)[: len(their_params)] == list(their_params), name
    for param_name, theirs_param in their_params.items():
        ours_param = our_params[param_name]
        assert ours_param.kind == theirs_param.kind, (name, param_name)
        their_default = theirs_param.default
        if callable(their_default):
            assert ours_param.default.__name__ == their_default.__name__, (name, param_name)
        else:
            assert ours_param.default == their_default, (name, param_name)
    for extra in list(our_params)[len(their_params):]:
        assert our_params[extra].default is not inspect.Parameter.empty or (
            our_params[extra].kind is inspect.Parameter.VAR_KEYWORD
        ), f"{name}: added parameter {extra} must have a default"


def test_graphs_tuple_fields_match_jraph():
    assert gnkit.GraphsTuple._fields == jraph.GraphsTuple._fields


def _pair(module):
    return [
        module.GraphsTuple(
            nodes=jnp.arange(6.0).reshape(3, 2),
            edges=jnp.ones((2, 1)),
            senders=jnp.array([0, 1]),
            receivers=jnp.array([1, 2]),
            globals=jnp.zeros((1, 4)),
            n_node=jnp.array([3]),
            n_edge=jnp.array([2]),
        ),
        module.GraphsTuple(
            nodes=jnp.arange(4.0).reshape(2, 2),
            edges=jnp.ones((1, 1)),
            senders=jnp.array([1]),
            receivers=jnp.array([0]),
            globals=jnp.ones((1, 4)),
            n_node=jnp.array([2]),
            n_edge=jnp.array([1]),
        ),
    ]


def test_gnkit_graphs_go_into_jraph_and_back():
    from_jraph = jraph.batch(_pair(gnkit))
    from_gnkit = gnkit.batch(_pair(jraph))
    for ours, theirs in zip(from_gnkit, from_jraph, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    network = jraph.GraphConvolution(lambda nodes: nodes * 2.0)
    ours = gnkit.GraphConvolution(lambda nodes: nodes * 2.0)
    np.testing.assert_allclose(network(from_gnkit).nodes, ours(from_jraph).nodes)
