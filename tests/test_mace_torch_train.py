"""benchmarks/mace_torch_train.py without mace-torch: the split files hold the demo's frames, the
mace-torch arguments carry the preset's settings, the errors and epoch times are computed as
written by hand."""

import ast
import json

import numpy as np
import pytest

pytest.importorskip("ase")

from benchmarks import mace_torch_train as bench  # noqa: E402

OVERRIDES = {"max_train": 12, "n_validation": 7, "test_frames": 5}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    from gnkit.demos.potentials.data import load_data

    config = bench.run_config("quick", 3, OVERRIDES)
    paths = bench.write_split(config, tmp_path_factory.mktemp("split"))
    return config, load_data(config, None, False), paths


def test_written_frames_are_the_demos_split(written):
    config, data, paths = written
    assert [len(data.splits[split]) for split in ("train", "validation", "test")] == [12, 7, 5]
    for split, path in paths.items():
        frames = bench.read_frames(path)
        graphs = data.splits[split]
        assert frames["n_atoms"].tolist() == [int(graph.n_node[0]) for graph in graphs]
        np.testing.assert_array_equal(
            frames["atomic_numbers"], np.concatenate([g.nodes["atomic_numbers"] for g in graphs]))
        # The graphs are float32: positions and forces agree to float32 rounding.
        np.testing.assert_allclose(
            frames["positions"], np.concatenate([g.nodes["positions"] for g in graphs]),
            rtol=0, atol=1e-5)
        np.testing.assert_allclose(
            frames["forces"], np.concatenate([g.nodes["forces"] for g in graphs]),
            rtol=0, atol=1e-5)
        relative = np.array([float(g.globals["energy"][0]) for g in graphs])
        np.testing.assert_allclose(frames["energy"], relative + data.reference[split], atol=1e-4)
        assert np.all(frames["energy"] < -17_000)  # total DFT energies, E0s not taken off


def test_mace_arguments_carry_the_preset(written, tmp_path):
    config, data, paths = written
    arguments = bench.mace_arguments(config, data, paths, tmp_path)
    assert arguments[-1] == "--ema"  # a switch; every other flag takes a value
    flags = dict(zip(arguments[:-1:2], arguments[1:-1:2], strict=True))
    assert flags["--hidden_irreps"] == "32x0e + 32x1o"
    expected = {
        "--max_ell": "2", "--correlation": "2", "--num_interactions": "2", "--r_max": "5.0",
        "--num_radial_basis": "8", "--num_cutoff_basis": "5", "--MLP_irreps": "16x0e",
        "--radial_MLP": "[64, 64, 64]", "--batch_size": "5", "--max_num_epochs": "10",
        "--lr": "0.01", "--clip_grad": "10.0", "--energy_weight": "1000.0",
        "--forces_weight": "1000.0", "--loss": "weighted", "--model": "ScaleShiftMACE",
        "--interaction_first": "RealAgnosticInteractionBlock", "--seed": "3",
        "--default_dtype": "float32", "--weight_decay": "0", "--eval_interval": "1",
        "--energy_key": "REF_energy", "--forces_key": "REF_forces", "--ema_decay": "0.99",
    }
    assert {key: flags[key] for key in expected} == expected
    assert flags["--train_file"] == str(paths["train"])
    assert flags["--valid_file"] == str(paths["validation"])
    assert ast.literal_eval(flags["--E0s"]) == dict(
        zip((1, 6, 8), data.reference_energies.tolist(), strict=True))
    # Scale and shift as mace's rms_forces_scaling defines them, from the written training file.
    train = bench.read_frames(paths["train"])
    assert float(flags["--std"]) == pytest.approx(np.sqrt(np.mean(train["forces"] ** 2)), 1e-6)
    structures = np.split(train["atomic_numbers"], np.cumsum(train["n_atoms"])[:-1])
    counts = np.array([[np.sum(numbers == z) for z in (1, 6, 8)] for numbers in structures])
    per_atom = (train["energy"] - counts @ data.reference_energies) / train["n_atoms"]
    assert float(flags["--mean"]) == pytest.approx(np.mean(per_atom), abs=1e-6)


def test_exponential_gamma_matches_the_mean_learning_rate():
    config = bench.run_config("quick", 0)
    assert config.updates == 400
    # gnkit's quick schedule by hand: 40 warm-up updates from 0, then 360 of cosine to 1/20.
    warmup = np.arange(40) / 40
    cosine = 1 / 20 + (1 - 1 / 20) * 0.5 * (1 + np.cos(np.pi * np.arange(360) / 360))
    target = np.mean(np.concatenate([warmup, cosine]))
    gamma = bench.exponential_gamma(config)
    assert np.mean(gamma ** np.arange(10)) == pytest.approx(target, abs=1e-6)


def test_errors_equal_a_hand_computation():
    reference = {"energy": np.array([1.1, 2.0]), "n_atoms": np.array([2, 5]),
                 "forces": np.zeros((7, 3))}
    forces = np.full((7, 3), 0.003)
    forces[4, 1] = -0.006
    errors = bench.test_errors(np.array([1.0, 2.5]), forces, reference)
    assert errors["energy_mae"] == pytest.approx(300.0)  # |-100| and |500| meV
    assert errors["energy_rmse"] == pytest.approx(np.sqrt(130_000.0))
    assert errors["energy_per_atom_mae"] == pytest.approx(75.0)  # 50 and 100 meV/atom
    assert errors["forces_mae"] == pytest.approx(66 / 21)  # 20 components of 3, one of 6
    assert errors["forces_rmse"] == pytest.approx(np.sqrt(216 / 21))


def test_gnkit_epoch_seconds_leave_out_evaluations(tmp_path):
    records = [("train", 1.0, 0.5), ("train", 1.1, 0.6), ("eval", 1.3, 0.9),
               ("train", 1.4, 1.0)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(
        json.dumps({"kind": kind, "wall_minutes": wall, "cpu_minutes": cpu}) + "\n"
        for kind, wall, cpu in records))
    walls, cpus = bench.gnkit_epoch_seconds(path)
    np.testing.assert_allclose(walls, [60.0, 6.0, 6.0])
    np.testing.assert_allclose(cpus, [30.0, 6.0, 6.0])


def test_both_sides_validate_every_epoch():
    assert bench.run_config("quick", 0).eval_every_epochs == 1  # the preset's own is 2
    with pytest.raises(ValueError, match="eval_every_epochs must be 1"):
        bench.run_config("quick", 0, {"eval_every_epochs": 2})


def test_sides_are_a_subset_of_gnkit_and_mace():
    assert bench._parse(["--sides", "mace"]).sides == ["mace"]
    assert bench._parse(["--sides", "mace,gnkit"]).sides == ["gnkit", "mace"]
    with pytest.raises(SystemExit):
        bench._parse(["--sides", "mace,torch"])


def test_gnkit_side_alone_records_no_speed_ratio(tmp_path, capsys):
    record = bench.main(["--config", "tiny", "--seeds", "0", "--sides", "gnkit",
                         "--work", str(tmp_path), "--json", str(tmp_path / "r.json")])
    assert list(record["runs"]) == ["gnkit"] and "speed_ratio" not in record["summary"]
    assert len(record["runs"]["gnkit"][0]["epoch_wall_s"]) == 2  # tiny: 2 epochs
    assert json.loads((tmp_path / "r.json").read_text())["sides"] == ["gnkit"]
    assert "force MAE mean: gnkit " in capsys.readouterr().out
