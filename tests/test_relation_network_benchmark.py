"""The relation-network benchmark runs at tiny size, and its three contenders compute the same
logits from the same weights."""

import json

import jax
import numpy as np
import pytest

from benchmarks import relation_network as bench
from gnkit.nn import RelationNetwork

pytest.importorskip("jraph")


def test_quick_run_prints_every_contender_and_writes_json(tmp_path, capsys):
    path = tmp_path / "rn.json"
    bench.main(["--quick", "--json", str(path)])
    printed = capsys.readouterr().out
    for name in ("gnkit dense", "gnkit edge list", "jraph RelationNetwork"):
        assert name in printed
    results = json.loads(path.read_text())["results"]
    for name in ("gnkit dense", "gnkit edge list", "jraph RelationNetwork"):
        entry = results[name]
        assert entry["min_s"] <= entry["seconds_per_step"] <= entry["max_s"]
        assert entry["questions_per_s"] == pytest.approx(4 / entry["seconds_per_step"])
    assert results["dense_pairs"] == 4 * 100 and 4 * 9 <= results["pairs"] <= 4 * 100


def test_contenders_give_the_same_logits():
    inputs = bench.make_inputs(6, seed=3)
    width = 8
    module = RelationNetwork(pair_features=(width,) * 4,
                             output_features=(width, width, bench.NUM_ANSWERS))
    args = inputs["objects"], inputs["questions"], inputs["mask"]
    params = module.init(jax.random.key(2), *args, method=RelationNetwork.dense)
    dense = module.apply(params, *args, method=RelationNetwork.dense)
    edge_list = module.apply(params, inputs["graph"])
    jraph_logits = bench.jraph_model(bench.jraph_params(params, width), inputs["jraph_graph"], 6)
    assert dense.shape == (6, bench.NUM_ANSWERS)
    np.testing.assert_allclose(edge_list, dense, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jraph_logits, dense, rtol=1e-4, atol=1e-5)
    assert inputs["pairs"] == int((inputs["mask"].sum(1) ** 2).sum())
