"""benchmarks/mlip_train.py without mlip: the worker's settings carry the preset (sizes, E0s,
scale / shift, padding bounds and schedule computed by hand from the written split files), its
process environments, and the frames it hands to mlip's reader."""

import math

import numpy as np
import pytest

pytest.importorskip("ase")

from benchmarks import mace_torch_train  # noqa: E402
from benchmarks import mlip_train as bench  # noqa: E402

OVERRIDES = {"max_train": 12, "n_validation": 7, "test_frames": 5}
FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    from gnkit.demos.potentials.data import load_data

    config = mace_torch_train.run_config("quick", 3, OVERRIDES)
    paths = mace_torch_train.write_split(config, tmp_path_factory.mktemp("split"))
    return config, load_data(config, None, False), paths


def _distances(frames: dict) -> list[np.ndarray]:
    """Each structure's `[n_atoms, n_atoms]` distance matrix, from `read_frames`' arrays."""
    starts = np.cumsum(frames["n_atoms"]) - frames["n_atoms"]
    return [
        np.linalg.norm(frames["positions"][start:start + n][:, None]
                       - frames["positions"][start:start + n][None], axis=-1)
        for start, n in zip(starts, frames["n_atoms"], strict=True)
    ]


def _directed_edges(frames: dict) -> np.ndarray:
    """Ordered atom pairs closer than 5 Å in each structure of `read_frames`' arrays."""
    # less the zero self-distances
    return np.array([np.sum(d < 5.0) - len(d) for d in _distances(frames)])


def test_settings_carry_the_preset(written):
    config, data, paths = written
    settings = bench.mlip_settings(config, data)
    assert settings["model"] == {
        "num_layers": 2, "num_channels": 32, "node_symmetry": 1, "l_max": 2, "correlation": 2,
        "num_rbf": 8, "radial_envelope": "polynomial_envelope",
        "radial_mlp_hidden": [64, 64, 64], "readout_irreps": ["16x0e", "0e"],
        "residual_connection_first_layer": False,
    }
    # 12 training frames in batches of 5: 3 updates an epoch, 30 in 10 epochs; the warm-up is
    # a tenth of them, and the cosine ends at 0.01 / 20.
    assert settings["optimizer"] == {
        "peak_learning_rate": 0.01, "warmup_steps": 3, "decay_steps": 30,
        "final_learning_rate": 0.0005, "grad_norm": 10.0,
    }
    assert settings["training"] == {"num_epochs": 10, "run_eval_at_start": False,
                                    "ema_decay": 0.99, "use_ema_params_for_eval": True}
    assert settings["loss"] == {"energy": 1000.0, "forces": 1000.0}
    assert (settings["steps_per_epoch"], settings["seed"], settings["eval_batch_size"]) == (
        3, 3, 25)

    builder = settings["builder"]
    frames = {split: mace_torch_train.read_frames(path) for split, path in paths.items()}
    edges = np.concatenate([_directed_edges(split) for split in frames.values()])
    assert builder["max_n_node"] == 21  # every aspirin frame: C9H8O4
    assert builder["max_n_edge"] == math.ceil(edges.max() / 2)  # undirected, as mlip counts
    train = frames["train"]
    assert builder["avg_num_neighbors"] == pytest.approx(
        _directed_edges(train).sum() / train["n_atoms"].sum(), rel=1e-6)
    shortest = [np.min(d[d > 0]) for d in _distances(train)]
    assert builder["avg_r_min_angstrom"] == pytest.approx(np.mean(shortest), rel=1e-5)
    assert (builder["graph_cutoff_angstrom"], builder["batch_size"]) == (5.0, 5)
    assert builder["use_formation_energies"] is True


def test_settings_pass_the_e0s_scale_and_shift(written):
    config, data, paths = written
    info = bench.mlip_settings(config, data)["dataset_info"]
    assert info["atomic_energies_map"] == dict(
        zip((1, 6, 8), data.reference_energies.tolist(), strict=True))
    train = mace_torch_train.read_frames(paths["train"])
    assert info["scaling_stdev"] == pytest.approx(np.sqrt(np.mean(train["forces"] ** 2)), 1e-6)
    structures = np.split(train["atomic_numbers"], np.cumsum(train["n_atoms"])[:-1])
    counts = np.array([[np.sum(numbers == z) for z in (1, 6, 8)] for numbers in structures])
    per_atom = (train["energy"] - counts @ data.reference_energies) / train["n_atoms"]
    assert info["scaling_mean"] == pytest.approx(np.mean(per_atom), abs=1e-6)


def test_no_moving_average_validates_the_trained_weights(written):
    import dataclasses

    config, data, _ = written
    settings = bench.mlip_settings(dataclasses.replace(config, ema_decay=0.0), data)
    assert settings["training"] == {"num_epochs": 10, "run_eval_at_start": False,
                                    "use_ema_params_for_eval": False}


def test_environments_give_gnkits_process_settings_or_none():
    host = {"PATH": "/bin", "XLA_FLAGS": f"--xla_dump_to=/tmp {FLAG}"}
    assert bench.mlip_environment("gnkit", host) == {
        **host, "MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_MAX_": "0",
        "MALLOC_TRIM_THRESHOLD_": "2147483647"}
    kept = {**host, "GNKIT_SYSTEM_MALLOC": "1"}
    assert bench.mlip_environment("gnkit", kept) == kept
    tuned = {**host, "MALLOC_ARENA_MAX": "1"}
    assert bench.mlip_environment("system", tuned) == {
        "PATH": "/bin", "XLA_FLAGS": "--xla_dump_to=/tmp"}
    with pytest.raises(ValueError, match="kind must be one of"):
        bench.mlip_environment("tuned", host)


def test_labelled_frames_carry_the_reference_values(written):
    _, _, paths = written
    frames = bench._labelled_frames(str(paths["test"]))
    reference = mace_torch_train.read_frames(paths["test"])
    np.testing.assert_array_equal([atoms.get_potential_energy() for atoms in frames],
                                  reference["energy"])
    np.testing.assert_array_equal(np.concatenate([atoms.get_forces() for atoms in frames]),
                                  reference["forces"])
