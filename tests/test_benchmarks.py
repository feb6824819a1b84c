"""The benchmark suite runs at tiny size; the fast paths it measures compute the right values."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import __main__ as bench
from benchmarks import workloads
from gnkit import attention, tuning
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
        "W4 relation network",
        "W5 Sudoku RRN",
        "RRN remat",
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
        "W4 relation network",
        "W5 Sudoku RRN",
        "segment-sum probe",
    }
    for workload in timed.values():
        for row in workload["rows"].values():
            assert row["min_s"] <= row["median_s"] <= row["max_s"]
            assert row["page_faults_per_step"] >= 0
            # Every workload has a roofline bound: gnkit's XLA cost, or the probe's bytes.
            assert row["roofline_fraction"] == pytest.approx(workload["bound_s"] / row["median_s"])
    assert timed["segment-sum probe"]["cost"]["flops"] == 0.0
    assert timed["W1 graph network"]["cost"]["flops"] > 0
    assert "roof %" in printed and "peak f32 matmul" in printed
    # Every peer of every workload appears in the summary, with its speed-ups.
    peers = {(row["workload"], row["peer"]) for row in result["summary"]}
    assert ("W1 graph network", "jraph") in peers
    assert ("W3 GCN", "jraph") in peers
    assert ("W4 relation network", "jraph") in peers
    assert ("W5 Sudoku RRN", "jraph") in peers
    for row in result["summary"]:
        assert row["speedup"] == pytest.approx(row["peer_best_s"] / row["gnkit_best_s"])
        assert row["speedup_default"] == pytest.approx(
            row["peer_best_s"] / row["gnkit_default_s"]
        )
    if result["settings"]["current"]["pyg"]:
        # PyG ran at 1 and 2 intra-op threads; the summary keeps one row for it, at its best.
        rows = timed["W2 GAT"]["rows"]
        assert {"pyg eager, 1 thread", "pyg eager, 2 threads"} <= set(rows)
        (pyg,) = [row for row in result["summary"] if row["workload"] == "W2 GAT"
                  and row["peer"] == "pyg eager"]
        best = min(rows[f"pyg eager, {n}"]["median_s"] for n in ("1 thread", "2 threads"))
        assert pyg["peer_best_s"] == best
        assert pyg["peer_best_setting"] in ("current, 1 thread", "current, 2 threads")


def _timed(rows):
    """A hand-made result of one allocator setting: `{name: (peer, setting, median_s)}`."""
    return {
        "timed": {
            "W2 GAT": {
                "rows": {
                    name: {"peer": peer, "setting": setting, "median_s": median}
                    for name, (peer, setting, median) in rows.items()
                }
            }
        }
    }


def test_summary_takes_each_library_at_its_best_setting_and_gnkit_default_first():
    settings = {
        "default": _timed({
            "gnkit": ("gnkit", "", 0.028),
            "jraph": ("jraph", "", 0.066),
            "pyg eager, 1 thread": ("pyg eager", "1 thread", 0.050),
            "pyg eager, 2 threads": ("pyg eager", "2 threads", 0.0264),
        }),
        "tuned": _timed({
            "gnkit": ("gnkit", "", 0.0147),
            "jraph": ("jraph", "", 0.064),
            "pyg eager, 1 thread": ("pyg eager", "1 thread", 0.053),
            "pyg eager, 2 threads": ("pyg eager", "2 threads", 0.030),
        }),
    }
    summary = {row["peer"]: row for row in bench.summarise(settings)}
    assert set(summary) == {"jraph", "pyg eager"}
    pyg = summary["pyg eager"]
    assert pyg["peer_best_setting"] == "default, 2 threads"
    assert pyg["peer_best_s"] == 0.0264
    assert pyg["gnkit_default_s"] == 0.028
    assert (pyg["gnkit_best_setting"], pyg["gnkit_best_s"]) == ("tuned", 0.0147)
    assert pyg["speedup_default"] == pytest.approx(0.0264 / 0.028)
    assert pyg["speedup"] == pytest.approx(0.0264 / 0.0147)
    assert summary["jraph"]["peer_best_setting"] == "tuned"
    (allocators,) = bench.allocator_table(settings)
    assert allocators["times_s"] == {"default": 0.028, "tuned": 0.0147}
    assert allocators["best_setting"] == "tuned"
    assert allocators["default_over_best"] == pytest.approx(0.028 / 0.0147)


def test_roofline_bound_is_the_slower_of_compute_and_memory_at_the_measured_rates():
    from benchmarks import roofline

    peaks = {"matmul_gflops": 100.0, "copy_gbs": 10.0}
    # 2 GFLOP at 100 GFLOP/s: 20 ms; 1 GB at 10 GB/s: 100 ms; the bound is memory's.
    assert roofline.bound_seconds({"flops": 2e9, "bytes": 1e9}, peaks) == pytest.approx(0.1)
    assert roofline.bound_seconds({"flops": 5e10, "bytes": 1e9}, peaks) == pytest.approx(0.5)
    result = {"rows": {"gnkit": {"median_s": 0.2}, "jraph": {"median_s": 0.4}}}
    roofline.annotate(result, {"flops": 2e9, "bytes": 1e9}, peaks)
    assert result["bound_by"] == "memory" and result["bound_s"] == pytest.approx(0.1)
    assert result["rows"]["gnkit"]["roofline_fraction"] == pytest.approx(0.5)
    assert result["rows"]["jraph"]["roofline_fraction"] == pytest.approx(0.25)
    untouched = {"rows": {"gnkit": {"median_s": 0.2}}}
    roofline.annotate(untouched, None, peaks)
    assert untouched == {"rows": {"gnkit": {"median_s": 0.2}}}


def test_roofline_cost_is_xla_count_of_a_matmul_and_the_summary_uses_the_default_bound():
    from benchmarks import roofline

    side = 64
    a = jnp.ones((side, side), jnp.float32)
    cost = roofline.cost_of(jax.jit(jnp.dot).lower(a, a).compile())
    # A [64, 64] @ [64, 64] matmul: 2 * 64^3 FLOPs; two inputs and one output of 16 KB each.
    assert cost == {"flops": 2.0 * side**3, "bytes": 3.0 * side * side * 4}
    # A scan of 8 such matmuls: XLA counts the loop body once, and the trip count is recorded.
    scanned = jax.jit(lambda x: jax.lax.scan(lambda c, _: (c @ a, None), x, None, length=8)[0])
    looped = roofline.cost_of(scanned.lower(a).compile())
    assert looped["loop_trip_counts"] == [8]
    assert looped["flops"] == pytest.approx(2.0 * side**3, rel=1e-3)
    settings = {
        "default": _timed({"gnkit": ("gnkit", "", 0.02), "jraph": ("jraph", "", 0.05)}),
        "system": _timed({"gnkit": ("gnkit", "", 0.01), "jraph": ("jraph", "", 0.04)}),
    }
    settings["default"]["timed"]["W2 GAT"]["bound_s"] = 0.005
    (row,) = bench.summarise(settings)
    assert row["roofline_gnkit_default"] == pytest.approx(0.005 / 0.02)
    assert row["roofline_gnkit_best"] == pytest.approx(0.005 / 0.01)
    assert row["roofline_peer_best"] == pytest.approx(0.005 / 0.04)
    probe = workloads.Workload(
        "probe", "", {"gnkit": workloads.Contender(step=lambda: None, forward=None)},
        bytes_moved=1000,
    )
    assert bench.workload_cost(probe) == {"flops": 0.0, "bytes": 1000.0}


def test_best_setting_picks_the_fastest_and_the_first_of_a_tie():
    assert bench.best_setting({"a": 2.0, "b": 1.0, "c": 1.5}) == ("b", 1.0)
    assert bench.best_setting({"a": 1.0, "b": 1.0}) == ("a", 1.0)


def test_allocator_settings_and_thread_counts_parse():
    args = bench._parse(["--torch-threads", "1,2,4"])
    assert args.torch_threads == (1, 2, 4)
    assert args.malloc == "all"
    assert bench.ALLOCATOR_SETTINGS[args.malloc] == ("default", "system", "tuned", "hugepages")
    assert set(bench.ALLOCATOR_ENV) == set(bench.ALLOCATOR_SETTINGS["all"])
    # gnkit's default is the environment as `import gnkit` finds it; the others opt out of it.
    assert bench.ALLOCATOR_ENV["default"] == {}
    for setting in ("system", "tuned", "hugepages"):
        assert bench.ALLOCATOR_ENV[setting]["GNKIT_SYSTEM_MALLOC"] == "1"
    assert bench.ALLOCATOR_SETTINGS["tuned"] == ("tuned",)
    assert bench._parse(["--quick"]).malloc == "current"
    assert bench._parse(["--tolerance", "0.02"]).tolerance == 0.02


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


def test_a_peer_whose_step_raises_is_left_out_and_named():
    def broken():
        raise RuntimeError("no compiler")

    workload = workloads.Workload(
        "toy",
        "",
        {
            "gnkit": workloads.Contender(step=lambda: None, forward=lambda: np.ones(2)),
            "peer": workloads.Contender(step=broken, forward=lambda: np.ones(2)),
            "other": workloads.Contender(step=lambda: None, forward=None),
        },
    )
    result = bench.time_workload(workload, reps=2, warmup=1)
    assert set(result["rows"]) == {"gnkit", "other"}
    assert result["failed"] == {"peer": "RuntimeError: no compiler"}
    workload.contenders["gnkit"] = workloads.Contender(step=broken, forward=lambda: np.ones(2))
    with pytest.raises(RuntimeError, match="no compiler"):
        bench.time_workload(workload, reps=2, warmup=1)


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


@pytest.mark.slow
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


def test_device_script_writes_json_and_markdown_at_tiny_size_on_cpu(tmp_path, monkeypatch):
    from benchmarks import device

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setitem(workloads.WORKLOADS, "broken", broken)
    device.main([str(tmp_path), "--quick", "--only", "w2,broken,w3", "--reps", "1"])
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["backend"]["platform"] == "cpu"
    assert result["tolerance"] == 1e-3
    assert set(result["timed"]) == {"W2 GAT", "W3 GCN"}
    assert result["errors"] == {"broken": "RuntimeError: out of memory"}
    assert set(result["seconds"]) == {"w2", "broken", "w3"}
    assert {(row["workload"], row["peer"]) for row in result["summary"]} >= {
        ("W2 GAT", "jraph"),
        ("W3 GCN", "jraph"),
    }
    table = (tmp_path / "results.md").read_text()
    for row in result["summary"]:
        assert f"| {row['workload']} | {row['peer']} | " in table
    assert "| W3 GCN | gnkit | " in table
    assert "broken failed: RuntimeError: out of memory" in table


def test_atoms_potentials_workloads_match_ase_and_the_peer_input_has_ase_vectors():
    ase_neighborlist = pytest.importorskip("ase.neighborlist")
    from ase.build import bulk

    from benchmarks import atoms_potentials

    arrays = atoms_potentials.workload_arrays("cu32")
    atoms = bulk("Cu", "fcc", a=3.6, cubic=True) * (2, 2, 2)
    atoms.rattle(stdev=0.05, seed=0)
    i, j, vectors = ase_neighborlist.neighbor_list("ijD", atoms, atoms_potentials.CUTOFF)
    assert len(arrays["positions"]) == 32
    pairs = sorted(zip(arrays["senders"].tolist(), arrays["receivers"].tolist(), strict=True))
    assert pairs == sorted(zip(i.tolist(), j.tolist(), strict=True))
    torch = pytest.importorskip("torch")
    data = atoms_potentials._torch_data(arrays, "mace", torch, (29,))
    sender, receiver = data["edge_index"].numpy()
    positions = data["positions"].numpy()
    got = positions[receiver] - positions[sender] + data["shifts"].numpy()

    def canonical(first, second, edge_vectors):  # a pair can repeat through periodic images
        rounded = np.round(edge_vectors, 3)
        return edge_vectors[np.lexsort((*rounded.T[::-1], second, first))]

    np.testing.assert_allclose(canonical(sender, receiver, got), canonical(i, j, vectors),
                               atol=1e-4)
    assert atoms_potentials.mean_neighbors(arrays) == pytest.approx(len(i) / 32)


def test_atoms_potentials_runs_as_a_script_without_gnkit_as_the_peers_venv_runs_its_workers():
    import subprocess
    import sys

    from benchmarks import atoms_potentials

    blocked = f"""
import runpy, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("gnkit", "jax", "torch"):
            raise ImportError(name + " is blocked")
sys.meta_path.insert(0, Blocked())
sys.argv = ["atoms_potentials.py", "--help"]
runpy.run_path({atoms_potentials.__file__!r}, run_name="__main__")
"""
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--peers-python" in result.stdout


@pytest.mark.parametrize("argv, message", [
    (["--models", "mace,schnet"], "--models: ['schnet'] not among ('mace', 'nequip')"),
    (["--modes", "jit"], "--modes: ['jit'] not among ('eager', 'script')"),
    (["--malloc", "jemalloc"], "--malloc: ['jemalloc'] not among ('default', 'tuned')"),
    (["--xla-flags", "fast"], "--xla_flags: ['fast'] not among ('gnkit', 'xla')"),
    (["--reps", "0"], "--reps must be at least 1, got 0"),
    (["--steps", "-1"], "--steps must be at least 1, got -1"),
    (["--threads", "1.5"], "--threads: expected positive integers, got '1.5'"),
    (["--workloads", "aspirin8,cu-5"], "--workloads: workload 'cu-5' is not aspirinN"),
    (["--workloads", "aspirin0"], "--workloads: workload 'aspirin0' is not aspirinN"),
    (["--workloads", "aspirin1801"], "(N from 1 to 1800)"),
])
def test_atoms_potentials_bad_arguments_are_named_before_anything_runs(argv, message, capsys):
    from benchmarks import atoms_potentials

    with pytest.raises(SystemExit) as exit_info:
        atoms_potentials.main(["--no-peers", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_atoms_potentials_summary_takes_each_peer_at_its_best_and_gnkit_default_first():
    from benchmarks import atoms_potentials

    rows = {
        "gnkit jit, default malloc": {"side": "gnkit", "malloc": "default", "xla_flags": "gnkit",
                                      "best_s": 0.04},
        "gnkit jit, tuned malloc": {"side": "gnkit", "malloc": "tuned", "xla_flags": "gnkit",
                                    "best_s": 0.03},
        "gnkit jit, XLA's flags, default malloc": {"side": "gnkit", "malloc": "default",
                                                   "xla_flags": "xla", "best_s": 0.035},
        "mace-torch eager, 1 thr": {"side": "mace-torch", "malloc": "default", "best_s": 0.12},
        "mace-torch script, 2 thr": {"side": "mace-torch", "malloc": "default", "best_s": 0.09},
    }
    (entry,) = atoms_potentials.summarise(rows)
    assert entry["peer_best_setting"] == "mace-torch script, 2 thr"
    assert entry["gnkit_best_setting"] == "gnkit jit, tuned malloc"
    assert entry["speedup_default"] == pytest.approx(0.09 / 0.04)
    assert entry["speedup"] == pytest.approx(0.09 / 0.03)


@pytest.mark.slow  # a worker process importing JAX and compiling MACE: minutes under load
def test_atoms_potentials_quick_gnkit_run_writes_its_record(tmp_path, capsys):
    from benchmarks import atoms_potentials

    path = tmp_path / "atoms.json"
    record = atoms_potentials.main(["--quick", "--no-peers", "--workloads", "aspirin2",
                                    "--models", "mace", "--reps", "2", "--steps", "1",
                                    "--malloc", "default", "--xla-flags", "xla,gnkit",
                                    "--json", str(path)])
    assert json.loads(path.read_text()) == json.loads(json.dumps(record))
    (pair,) = record["pairs"]
    assert (pair["n_graphs"], pair["n_atoms"]) == (2, 42)
    row, xla_row = pair["rows"].values()  # gnkit's flags first
    assert tuning.CPU_REDUCTIONS_FLAG in row["xla_flags_env"]
    assert tuning.CPU_REDUCTIONS_FLAG not in xla_row["xla_flags_env"]
    assert xla_row["finite"] and xla_row["compiles_while_timed"] == 0
    assert row["finite"] and row["calls"] == 2 and row["compiles_while_timed"] == 0
    assert row["structures_per_s"] == pytest.approx(2 / row["best_s"])
    assert row["params"] > 0 and row["peak_rss_mb"] >= row["rss_after_imports_mb"]
    assert "mace on aspirin2" in capsys.readouterr().out
