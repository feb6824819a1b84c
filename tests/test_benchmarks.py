"""The benchmark suite runs at tiny size; the fast paths it measures compute the right values."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import __main__ as bench
from benchmarks import workloads
from gnkit import attention
from gnkit.graph import GraphsTuple


def test_quick_run_prints_every_workload_and_writes_json(tmp_path, capsys):
    path = tmp_path / "bench.json"
    bench.main(["--quick", "--json", str(path)])
    printed = capsys.readouterr().out
    for title in (
        "W1 graph network",
        "W1 x 3 recurrent",
        "W2 GAT",
        "W3 GCN",
        "segment-sum probe",
        "RRN remat",
        "Sudoku RRN throughput",
        "Bucketed padding",
        "Best setting vs best setting",
    ):
        assert title in printed
    result = json.loads(path.read_text())
    timed = result["settings"]["current"]["timed"]
    assert set(timed) == {
        "W1 graph network",
        "W1 x 3 recurrent",
        "W2 GAT",
        "W3 GCN",
        "segment-sum probe",
    }
    for workload in timed.values():
        for row in workload["rows"].values():
            assert row["min_s"] <= row["median_s"] <= row["max_s"]
    # Every peer of every workload appears in the summary, with its speed-up.
    peers = {(row["workload"], row["peer"]) for row in result["summary"]}
    assert ("W1 graph network", "jraph") in peers
    assert ("W3 GCN", "jraph") in peers
    for row in result["summary"]:
        expected = row["peer_best_s"] / row["gnkit_best_s"]
        assert row["speedup"] == pytest.approx(expected)


def test_agreement_check_rejects_a_wrong_contender():
    def contender(values):
        return workloads.Contender(step=lambda: None, forward=lambda: np.asarray(values))

    workload = workloads.Workload(
        "toy",
        "",
        {"gnkit": contender([1.0, 2.0]), "peer": contender([1.0, 2.5])},
    )
    with pytest.raises(AssertionError, match="peer disagrees"):
        bench.check_agreement(workload)
    workload.contenders["peer"] = contender([1.0, 2.0 + 1e-5])
    assert bench.check_agreement(workload)["peer"] == pytest.approx(0.5e-5)


def _numpy_gat(nodes, senders, receivers, kernel, source, target, heads):
    """GAT by hand: per-edge logits, softmax over each receiver's edges, weighted sum."""
    z = (nodes @ kernel).reshape(nodes.shape[0], heads, -1)
    logits = np.einsum("ehd,hd->eh", z[senders], source) + np.einsum(
        "ehd,hd->eh", z[receivers], target
    )
    logits = np.where(logits > 0, logits, 0.2 * logits)
    out = np.zeros_like(z)
    for node in range(nodes.shape[0]):
        incoming = np.flatnonzero(receivers == node)
        if incoming.size:
            weights = np.exp(logits[incoming] - logits[incoming].max(axis=0))
            weights /= weights.sum(axis=0)
            out[node] = np.einsum("eh,ehd->hd", weights, z[senders[incoming]])
    return out.reshape(nodes.shape[0], -1)


def test_gat_split_logits_match_numpy_and_the_per_edge_path():
    rng = np.random.default_rng(0)
    heads, head_size = 2, 3
    senders = np.array([1, 2, 3, 0, 2, 0])
    receivers = np.array([0, 0, 1, 2, 2, 3])
    nodes = rng.normal(size=(5, 4)).astype(np.float32)  # node 4 receives nothing
    kernel = rng.normal(size=(4, heads * head_size)).astype(np.float32)
    source, target = rng.normal(size=(2, heads, head_size)).astype(np.float32)
    graph = GraphsTuple(
        nodes=jnp.asarray(nodes),
        edges=None,
        receivers=jnp.asarray(receivers),
        senders=jnp.asarray(senders),
        globals=None,
        n_node=jnp.array([5]),
        n_edge=jnp.array([6]),
    )
    split = attention.gat(
        lambda x: x @ kernel,
        sender_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, source),
        receiver_logit_fn=lambda z: jnp.einsum("nhd,hd->nh", z, target),
        num_heads=heads,
        indices_are_sorted=True,
    )
    per_edge = attention.gat(
        lambda x: x @ kernel,
        lambda sender_nodes, receiver_nodes: jnp.einsum("ehd,hd->eh", sender_nodes, source)
        + jnp.einsum("ehd,hd->eh", receiver_nodes, target),
        num_heads=heads,
    )
    expected = _numpy_gat(nodes, senders, receivers, kernel, source, target, heads)
    np.testing.assert_allclose(jax.jit(split)(graph).nodes, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(per_edge(graph).nodes, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(expected[4], 0.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"sender_logit_fn": lambda z: z[..., 0]},
        {"logit_fn": lambda **k: 0.0, "sender_logit_fn": lambda z: z[..., 0],
         "receiver_logit_fn": lambda z: z[..., 0]},
    ],
)
def test_gat_needs_one_way_of_computing_logits(kwargs):
    with pytest.raises(ValueError, match="logit_fn"):
        attention.gat(lambda x: x, **kwargs)


def test_relational_memory_benchmark_quick_runs_every_version(capsys):
    from benchmarks import relational_memory

    summary = relational_memory.main(["--quick"])
    assert set(summary["results"]) == {
        "gnkit dense",
        "gnkit graph",
        "flax dot_product_attention",
        "flax MultiHeadDotProductAttention",
    }
    assert "gnkit dense" in capsys.readouterr().out
