"""The field's own jraph code runs on gnkit by an import: jax-md's graph potentials, unchanged.

jax-md (PyPI `jax-md`) builds its graph potentials on jraph: `partition.to_jraph` turns a sparse
neighbour list into a `jraph.GraphsTuple`, `energy.graph_network_neighbor_list` runs
`jraph.GraphMapFeatures` and `jraph.GraphNetwork`, and NequIP (`energy.nequip_neighbor_list`)
sums atomic energies with `jraph.segment_sum`. Each model is built with a fixed seed and gives
energies and forces on two of gnkit's shipped rMD17 aspirin frames and a rattled periodic silicon
cell twice, in fresh processes: once with the real jraph, once with `import jraph` served by gnkit
through the test-only shim `_jraph_shim`. The outputs must agree bit for bit: same XLA, same CPU,
same operations, so any difference would be a difference in gnkit's jraph names. The graph
network's energies are also checked against jax-md's own dense implementation (no jraph), same
weights.

This file doubles as the worker: `python test_atoms_field_code.py {jraph,gnkit} OUT.npz` writes
one process's outputs.

mace-jax (the MACE on jraph) is not on PyPI, and jax-md's MACE wrapper imports it, so MACE is not
run here; InstaDeep's `mlip` has its own graph type and no longer imports jraph.
"""

import importlib.util
import lzma
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
# Species index of each element in the one-hot node features.
SPECIES = {1: 0, 6: 1, 8: 2, 14: 3}
CUTOFF = 2.6  # Å; below half the 5.43 Å silicon cell, as jax-md's minimum image needs
SKIN = 0.1  # Å; dr_threshold > 0 takes to_jraph's masked, reordered-edges path

needs_jax_md = pytest.mark.skipif(
    importlib.util.find_spec("jax_md") is None or importlib.util.find_spec("jraph") is None,
    reason="jax-md and jraph are not installed",
)


def _structures():
    """(name, [ase.Atoms frames of one composition], periodic) for each system."""
    import ase.build
    import ase.io

    from gnkit.atoms.datasets.aspirin import aspirin_path

    with lzma.open(aspirin_path("train"), "rt") as stream:  # ase.io.read on the .xz is slow
        molecules = ase.io.read(stream, index=":2", format="extxyz")
    silicon = ase.build.bulk("Si", "diamond", a=5.43, cubic=True)
    silicon.rattle(0.05, seed=0)
    return [("molecule", molecules, False), ("silicon", [silicon], True)]


def _energies_and_forces(structure, model, energy_fn, neighbors, positions, *params):
    """{"<structure><frame>/<model>/energy": [], ".../forces": [n_atoms, 3]} for each frame.

    `energy_fn(*params, position [n_atoms, 3], neighbors)` is jitted once with its gradient; the
    neighbour list is updated (same capacity, so no recompile) for each frame.
    """
    import jax

    energy_and_gradient = jax.jit(jax.value_and_grad(energy_fn, argnums=len(params)))
    outputs = {}
    for index, position in enumerate(positions):
        updated = neighbors.update(position)
        assert not updated.did_buffer_overflow
        value, gradient = energy_and_gradient(*params, position, updated)
        outputs[f"{structure}{index}/{model}/energy"] = np.asarray(value)
        outputs[f"{structure}{index}/{model}/forces"] = -np.asarray(gradient)
    return outputs


def _jax_md_outputs(backend: str) -> dict[str, np.ndarray]:
    """Energies [] and forces [n_atoms, 3] of jax-md's GraphNetwork and NequIP potentials.

    Host-side driver; the models run jitted. With `backend == "gnkit"` the jraph shim is
    installed first, and the run checks that jax-md really got gnkit's objects.
    """
    if backend == "gnkit":
        import _jraph_shim

        shim = _jraph_shim.install()
    import jax
    import jax.numpy as jnp
    from jax_md import energy, partition, space
    from jax_md import nn as jax_md_nn
    from jax_md._nn import nequip

    if backend == "gnkit":
        import gnkit

        assert partition.jraph is shim and jax_md_nn.jraph is shim and nequip.jraph is shim
        assert not [name for name in sys.modules if name.startswith("jraph.")]
        assert jax_md_nn.jraph.GraphNetwork is gnkit.GraphNetwork

    nequip_config = nequip.default_config()
    nequip_config.update(dict(
        r_max=CUTOFF, hidden_irreps="8x0e + 4x1e", graph_net_steps=2, n_elements=len(SPECIES),
        radial_net_n_hidden=8, shift=0.1, scale=1.3,
    ))
    outputs = {}
    for name, frames, periodic in _structures():
        positions = [jnp.asarray(frame.positions, jnp.float32) for frame in frames]
        species = jnp.array([SPECIES[number] for number in frames[0].numbers])
        one_hot = jax.nn.one_hot(species, len(SPECIES))
        if periodic:
            box = jnp.float32(frames[0].cell[0, 0])
            displacement, _ = space.periodic(box)
        else:
            box = jnp.float32(100.0)
            displacement, _ = space.free()
        neighbor_kwargs = dict(disable_cell_list=True, capacity_multiplier=1.5)

        neighbor_fn, graph_energy = energy.graph_network_neighbor_list(
            displacement, box, CUTOFF, SKIN, key=jax.random.PRNGKey(0), nodes=one_hot,
            mlp_sizes=(16, 16), **neighbor_kwargs,
        )
        neighbors = neighbor_fn.allocate(positions[0])
        graph = partition.to_jraph(neighbors)
        assert type(graph).__module__.split(".")[0] == ("gnkit" if backend == "gnkit" else "jraph")
        outputs.update(_energies_and_forces(name, "graph_network", graph_energy, neighbors,
                                            positions))
        # The same weights (same key) on jax-md's own dense graph network, which uses no jraph.
        neighbor_fn, graph_energy = energy.graph_network_neighbor_list(
            displacement, box, CUTOFF, SKIN, key=jax.random.PRNGKey(0), nodes=one_hot,
            mlp_sizes=(16, 16), format=partition.Dense, **neighbor_kwargs,
        )
        outputs.update(_energies_and_forces(name, "dense_graph_network", graph_energy,
                                            neighbor_fn.allocate(positions[0]), positions))

        neighbor_fn, init_fn, nequip_energy = energy.nequip_neighbor_list(
            displacement, box, nequip_config, atoms=one_hot, **neighbor_kwargs,
        )
        neighbors = neighbor_fn.allocate(positions[0])
        params = jax.jit(init_fn)(jax.random.PRNGKey(1), positions[0], neighbors)
        outputs.update(_energies_and_forces(name, "nequip", nequip_energy, neighbors, positions,
                                            params))
    return outputs


def _outputs_in_fresh_process(backend: str, tmp_path: pathlib.Path) -> dict[str, np.ndarray]:
    out = tmp_path / f"{backend}.npz"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).resolve()), backend, str(out)],
        cwd=HERE.parent, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert result.returncode == 0, f"{backend} run failed:\n{result.stderr[-4000:]}"
    with np.load(out) as arrays:
        return dict(arrays)


def test_the_shim_serves_jraphs_public_names_from_gnkit():
    jraph = pytest.importorskip("jraph")
    import _jraph_shim

    import gnkit

    public = sorted(name for name in dir(jraph) if not name.startswith("__"))
    assert sorted(_jraph_shim.JRAPH_NAMES) == public
    shim = _jraph_shim.make_module()
    for name in public:
        assert getattr(shim, name) is getattr(gnkit, name), name
    with pytest.raises(AttributeError, match="jraph.GraphsTupel is not one"):
        shim.GraphsTupel  # noqa: B018
    with pytest.raises(RuntimeError, match="real jraph is already imported"):
        _jraph_shim.install()


@pytest.mark.slow
@needs_jax_md
def test_jax_md_potentials_give_the_same_energies_and_forces_on_gnkit(tmp_path):
    with_jraph = _outputs_in_fresh_process("jraph", tmp_path)
    with_gnkit = _outputs_in_fresh_process("gnkit", tmp_path)
    assert sorted(with_gnkit) == sorted(with_jraph)
    assert len(with_jraph) == 2 * 3 * 3  # (energy, forces) x 3 models x 3 frames
    for key, expected in with_jraph.items():
        assert np.all(np.isfinite(expected)), key
        np.testing.assert_array_equal(with_gnkit[key], expected, err_msg=key)
    # Energies against jax-md's own jraph-free dense network, as jax-md's energy_test.py compares
    # them and at its tolerance. (Forces of the two paths differ by up to ~0.07 eV/Å on aspirin,
    # with jraph as with gnkit, so that comparison belongs to jax-md, not here.)
    for key in [key for key in with_gnkit if "/graph_network/energy" in key]:
        dense = with_gnkit[key.replace("/graph_network/", "/dense_graph_network/")]
        np.testing.assert_allclose(with_gnkit[key], dense, rtol=2e-4, atol=2e-4, err_msg=key)
    # Forces are not all zero: the comparison covers the gradient path through the graph ops.
    assert np.abs(with_jraph["silicon0/nequip/forces"]).max() > 1e-4
    assert np.abs(with_jraph["molecule0/graph_network/forces"]).max() > 1e-4


if __name__ == "__main__":
    backend_name, out_path = sys.argv[1], sys.argv[2]
    np.savez(out_path, **_jax_md_outputs(backend_name))
