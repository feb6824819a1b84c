"""The benchmark suite's workload names and module layout: descriptive names with the short
names of earlier runs as aliases, and no import cycle between the two workload modules."""

import ast
from pathlib import Path

from benchmarks import relational_workloads, workloads

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _imported_modules(name: str) -> set[str]:
    tree = ast.parse((BENCHMARKS / name).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_descriptive_names_listed_and_short_names_resolve_to_the_same_maker():
    assert list(workloads.WORKLOADS) == [
        "graph-network",
        "recurrent-graph-network",
        "gat",
        "gcn-large-graph",
        "relation-network",
        "sudoku-rrn",
        "segment-sum-probe",
    ]
    expected = {
        "w1": workloads.make_graph_network,
        "w1x8": workloads.make_recurrent_graph_network,
        "w2": workloads.make_gat,
        "w3": workloads.make_gcn,
        "w4": relational_workloads.make_relation_network,
        "w5": relational_workloads.make_sudoku_rrn,
        "probe": workloads.make_segment_probe,
    }
    for alias, maker in expected.items():
        assert alias in workloads.WORKLOADS and workloads.WORKLOADS[alias] is maker
        assert workloads.WORKLOADS[workloads.WORKLOADS.aliases[alias]] is maker
    assert "w6" not in workloads.WORKLOADS


def test_the_workload_modules_share_the_harness_module_not_each_other():
    assert "benchmarks.workloads" not in _imported_modules("relational_workloads.py")
    assert not {"benchmarks.workloads", "benchmarks.relational_workloads"} & _imported_modules(
        "contenders.py"
    )
    assert "benchmarks.relational_workloads" in _imported_modules("workloads.py")
