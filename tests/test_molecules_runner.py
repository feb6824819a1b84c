"""The molecules demo on the comparison runner: a tiny run stopped and resumed gives the same
records and results as one run through, eval reproduces train's report, each replicate trains
on its own seed's split, the GPS model's positional encodings are batched per molecule, its
loss falls on a tiny set and (slow) its predictions do not depend on the padding."""

import dataclasses
import json

import numpy as np
import optax
import pytest

pytest.importorskip("rdkit")

from gnkit import chem, experiments, positional  # noqa: E402
from gnkit import train as training  # noqa: E402
from gnkit.demos.molecules import DEMO, models  # noqa: E402
from gnkit.demos.molecules.config import CONFIGS  # noqa: E402
from gnkit.demos.molecules.data import eval_batches, molecule_data, train_batches  # noqa: E402
from gnkit.demos.molecules.data import make_batch as data_batch  # noqa: E402
from gnkit.demos.molecules.training import make_batch, replicate  # noqa: E402

SMILES = (
    "CCO", "c1ccccc1O", "CC(=O)N", "CCCCCC", "OCC(O)CO", "c1ccncc1", "CC(C)Cl", "C1CCCCC1",
    "CC#N", "COC(=O)C", "c1ccc2ccccc2c1", "NCCN", "CCOCC", "OC(=O)c1ccccc1", "CCS", "FC(F)F",
)  # fmt: skip


def _metrics(path, kind="eval"):
    """A metrics file's records of `kind` without their clocks."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        {k: v for k, v in r.items() if not k.endswith("_minutes")}
        for r in records
        if r["kind"] == kind
    ]


def _without_clocks(results):
    results = json.loads(json.dumps(results))
    results.pop("cpu_minutes"), results.pop("figures")
    for entry in results["seeds"].values():
        entry.pop("cpu_minutes")
    return results


def test_a_stopped_run_resumes_exactly_and_eval_reproduces_its_report(tmp_path):
    config = dataclasses.replace(CONFIGS["tiny"], descriptors=False, max_molecules=48)
    whole = experiments.run_verb(DEMO, "train", config, tmp_path / "whole", progress=False)
    polls = iter(range(10**6))  # a stop request at the 5th poll: inside seed0's second epoch
    with pytest.raises(training.TrainingStopped):
        experiments.run_verb(
            DEMO, "train", config, tmp_path / "cut", progress=False,
            should_stop=lambda: next(polls) >= 4,
        )  # fmt: skip
    saved = training.latest_checkpoint(tmp_path / "cut" / "checkpoints" / "seed0")
    assert saved.name == "checkpoint_000000004.msgpack"  # 3 updates an epoch, stopped in the 2nd
    assert not (tmp_path / "cut" / "metrics_seed1.jsonl").exists()
    resumed = experiments.run_verb(DEMO, "train", config, tmp_path / "cut", progress=False)
    assert _without_clocks(resumed) == _without_clocks(whole)
    for name in ("seed0", "seed1"):  # every validation the same (the stop logs one more loss)
        assert _metrics(tmp_path / "cut" / f"metrics_{name}.jsonl") == _metrics(
            tmp_path / "whole" / f"metrics_{name}.jsonl"
        )
    # Replicate s trained on chemprop's random split of seed s.
    parts = ("train", "val", "test")
    for seed, split in enumerate(chem.read_splits_file(tmp_path / "whole" / "splits.json")):
        expected = chem.random_split(48, config.sizes, seed)
        for part in parts:
            np.testing.assert_array_equal(split[part], expected[part])
        assert whole["seeds"][str(seed)]["sizes"] == [len(expected[part]) for part in parts]
    assert whole["seeds"]["0"]["test_rmse"] != whole["seeds"]["1"]["test_rmse"]
    evaluated = experiments.run_verb(DEMO, "eval", None, tmp_path / "whole", progress=False)
    assert _without_clocks(evaluated) == _without_clocks(whole)


def _data(config, targets=None):
    graphs = chem.molecule_graphs(SMILES, config.features, descriptors=config.descriptors)
    targets = np.arange(len(SMILES), dtype=np.float64) if targets is None else targets
    dataset = chem.MoleculeDataset("small", SMILES, targets, None)
    splits = {s: chem.random_split(len(SMILES), config.sizes, s) for s in config.replicate_seeds}
    return molecule_data(config, dataset, graphs, splits)


def test_each_replicate_draws_its_batches_from_its_own_split():
    config = dataclasses.replace(CONFIGS["tiny"], descriptors=False, batch_size=4, seed=3, seeds=2)
    data = _data(config)  # target i on molecule i, so a batch's targets name its molecules
    assert config.models == ("seed3", "seed4")
    for name, seed in (("seed3", 3), ("seed4", 4)):
        run = replicate(config, data, name)
        train = chem.random_split(len(SMILES), config.sizes, seed)["train"]
        np.testing.assert_array_equal(data.splits[seed]["train"], train)
        assert run.steps_per_epoch == 3 and run.updates == 3 * config.epochs  # 12 / 4
        mean, std = data.scaling(seed)
        batches = make_batch(name, run, data)
        drawn = [
            np.rint(b["targets"][b["mask"]] * std + mean).astype(int)
            for b in map(batches, range(3))
        ]
        assert sorted(np.concatenate(drawn)) == sorted(train)
    first = [make_batch(n, replicate(config, data, n), data)(0)["targets"] for n in config.models]
    assert not np.array_equal(*first)


def _per_molecule(encode, features):
    return np.concatenate([encode(chem.smiles_to_graph(s, features)) for s in SMILES])


def test_gps_batches_carry_each_molecules_own_encodings():
    config = dataclasses.replace(CONFIGS["tiny"], model="gps", descriptors=False, batch_size=4)
    data = _data(config)
    expected = _per_molecule(lambda g: positional.random_walk_pe(g, 16), "chemprop")
    np.testing.assert_allclose(data.positional, expected, rtol=1e-6, atol=1e-7)
    rows = [5, 0, 10]
    (_, batch), *_ = eval_batches(config, data.graphs, rows, None, data.positional)
    starts = data.graphs.node_offsets
    atoms = np.concatenate([np.arange(starts[r], starts[r + 1]) for r in rows])
    np.testing.assert_array_equal(batch["positional"][: len(atoms)], data.positional[atoms])
    assert not batch["positional"][len(atoms) :].any()
    # Laplacian eigenvectors: each training molecule's columns with one random sign each.
    lappe = dataclasses.replace(config, positional="lappe")
    data = _data(lappe)
    np.testing.assert_allclose(
        data.positional, _per_molecule(lambda g: positional.laplacian_pe(g, 8), "chemprop"),
        atol=1e-6,
    )  # fmt: skip
    batch = train_batches(lappe, data, 0)(0)
    graph = batch["graph"]
    offsets = np.concatenate([[0], np.cumsum(graph.n_node)])
    flips = []
    order = np.random.default_rng([0, 0]).permutation(data.splits[0]["train"])[:4]
    for index, molecule in enumerate(order):
        drawn = batch["positional"][offsets[index] : offsets[index + 1]]
        own = data.positional[starts[molecule] : starts[molecule + 1]]
        signs = np.sign(np.sum(drawn * own, axis=0))
        np.testing.assert_allclose(drawn, own * np.where(signs == 0, 1, signs), atol=1e-6)
        flips.append(signs)
    assert (np.concatenate(flips) < 0).any()


@pytest.mark.slow
def test_gps_loss_falls_on_a_tiny_set():
    config = dataclasses.replace(
        CONFIGS["tiny"], model="gps", descriptors=False, gps_hidden_size=32, gps_layers=2,
        gps_heads=2, ffn_hidden_size=32, batch_size=16,
    )  # fmt: skip
    targets = np.array([len(s) % 5 for s in SMILES], np.float64)
    data = _data(config, targets)
    (_, batch), *_ = eval_batches(config, data.graphs, range(16), None, data.positional)
    batch["targets"][:16] = (targets - targets.mean()) / targets.std()
    tx = optax.adam(3e-3)
    params = models.init_params(config, batch, 0, data.max_atoms)
    opt_state = tx.init(params)
    step = models.make_train_step(config, tx, data.max_atoms)
    losses = []
    for _ in range(80):
        params, opt_state, metrics = step(params, opt_state, batch)
        losses.append(float(metrics["loss"]))
    assert losses[-1] < 0.05 * losses[0]


def test_a_tiny_gps_run_trains_and_predicts(tmp_path):
    config = dataclasses.replace(
        CONFIGS["tiny"], model="gps", seeds=1, gps_hidden_size=32, gps_layers=1, gps_heads=2,
        max_molecules=48,
    )  # fmt: skip
    results = experiments.run_verb(DEMO, "train", config, tmp_path / "run", progress=False)
    assert results["model"] == "gps" and np.isfinite(results["test_rmse"]["mean"])
    records = _metrics(tmp_path / "run" / "metrics_seed0.jsonl")
    assert [r["step"] for r in records] == [3, 6, 9]  # 38 // 16 + 1
    assert list((tmp_path / "run" / "features").glob("positional_rwse16_*.npy"))
    predicted = experiments.run_verb(
        DEMO, "predict", None, tmp_path / "run", progress=False, smiles=["CCO", "C" * 40]
    )  # a molecule larger than any of the data set's still gets its own attention slots
    assert all(np.isfinite(p["mean"]) for p in predicted["predictions"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rwse", "lappe"])
def test_gps_predicts_the_same_for_any_padding(kind):
    config = dataclasses.replace(
        CONFIGS["tiny"], model="gps", positional=kind, gps_hidden_size=32, gps_layers=2,
        gps_heads=2,
    )  # fmt: skip
    data = _data(config)
    rows, reference = [0, 3, 10, 14], data.descriptor_reference[0]
    small = _padded(data, rows, 5, reference)
    large = _padded(data, rows, 9, reference)
    params = models.init_params(config, small, 0, data.max_atoms)
    predict = models.make_predict(config, data.max_atoms)
    first = np.asarray(predict(params, small["graph"], small["positional"]))
    second = np.asarray(predict(params, large["graph"], large["positional"]))
    np.testing.assert_allclose(first[:4], second[:4], rtol=1e-5, atol=1e-6)
    assert np.ptp(first[:4]) > 0 and not first[4:].any() and not second[4:].any()


def _padded(data, rows, n_graph, reference):
    zeros = np.zeros(len(data.graphs), np.float32)
    return data_batch(data.graphs, rows, zeros, n_graph, reference, data.positional)
