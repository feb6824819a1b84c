"""gnkit.atoms.nn's species-dependent linear map against e3nn-jax's indexed `Linear`: the same
parameters (names, shapes, initial values) and the same outputs and gradients, float64."""

from __future__ import annotations

import numpy as np
import pytest

e3nn = pytest.importorskip("e3nn_jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from gnkit.atoms.nn._species_linear import SpeciesLinear  # noqa: E402

CASES = [
    ("16x0e + 16x1o + 16x2e", "16x0e + 16x1o + 16x2e", False),
    ("4x0e + 4x0o + 4x1e + 4x1o", "4x0e + 4x0o + 4x1e + 4x1o", True),
    ("8x0e + 4x1o", "3x0e + 5x1o + 2x2e", False),
    ("8x0e + 4x1o", "3x0e + 5x1o + 2x2e", True),   # 2e unreachable: zeros kept
    ("2x0e + 2x1o", "2x0e + 2x0e + 2x1o", True),    # the output's chunks as asked
]


@pytest.mark.parametrize("irreps_in, irreps_out, force", CASES)
def test_equals_e3nn_indexed_linear(irreps_in, irreps_out, force):
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        n_atoms, num_species = 13, 3
        features = e3nn.IrrepsArray(
            irreps_in, jnp.asarray(rng.normal(size=(n_atoms, e3nn.Irreps(irreps_in).dim))))
        species = jnp.asarray(rng.integers(0, num_species, n_atoms))
        reference = e3nn.flax.Linear(irreps_out, num_indexed_weights=num_species,
                                     force_irreps_out=force)
        linear = SpeciesLinear(irreps_out, num_species, force_irreps_out=force)
        params = reference.init(jax.random.key(1), species, features)
        ours = linear.init(jax.random.key(1), species, features)
        assert jax.tree.structure(ours) == jax.tree.structure(params)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(params), strict=True):
            np.testing.assert_array_equal(a, b)

        def outputs(module, params, array):
            return module.apply(params, species, e3nn.IrrepsArray(irreps_in, array))

        expected, got = outputs(reference, params, features.array), outputs(linear, params,
                                                                             features.array)
        assert got.irreps == expected.irreps
        np.testing.assert_allclose(got.array, expected.array, rtol=1e-12, atol=1e-12)
        probe = jnp.asarray(rng.normal(size=expected.shape))

        def gradient(module):
            return jax.grad(lambda p, x: jnp.sum(outputs(module, p, x).array * probe),
                            argnums=(0, 1))(params, features.array)

        for a, b in zip(jax.tree.leaves(gradient(linear)), jax.tree.leaves(gradient(reference)),
                        strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
