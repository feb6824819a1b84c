"""The roofline of each benchmark workload: how close every contender gets to the machine's bound.

The machine's two rates are measured in the same run as the workloads: the peak f32 matmul rate
(GFLOP/s of a jitted square `jnp.dot`, the best of a few calls) and the copy bandwidth (GB/s of
bytes read + written: the faster of NumPy's copy into a buffer allocated once and a jitted
in-place `x + 1` on a donated array). A workload's work is XLA's `cost_analysis()` of gnkit's
compiled training step: its FLOPs and bytes accessed. Its bound is the time the machine needs at
best, `max(flops / peak rate, bytes / bandwidth)`, and each contender's fraction of the bound is
`bound / its median step time` (1: at the roofline). XLA's cost analysis counts the body of a
loop (`lax.scan`, `nn.scan`) once, not once per iteration: for a step with loops the cost
records their trip counts (`loop_trip_counts`), and its bound and fractions are lower bounds
(W1 x 8 and the Sudoku RRN). Peers are measured against gnkit's FLOPs
and bytes, the same work count for every library; a peer that does more work (concatenated
first layers, per-edge outputs) shows a lower fraction for it. Workloads without a compiled
gnkit step but with a byte count (the segment-sum probe) are bound by bandwidth alone. Host only.
"""

from __future__ import annotations

import re
import time

import jax
import jax.numpy as jnp
import numpy as np

# Sizes of the two probes: a square matmul's side and the bytes copied (read, and as many
# written), at full and at quick (test) size.
MATMUL_SIDE = {False: 2048, True: 128}
COPY_BYTES = {False: 256 * 2**20, True: 4 * 2**20}


def cost_of(compiled) -> dict[str, float] | None:
    """`{"flops", "bytes"}` of a compiled JAX executable from XLA's cost analysis, or None where
    the backend gives none; with `"loop_trip_counts"` (each `while` loop's known trip count)
    where the executable has loops, whose bodies the analysis counts once. Host only."""
    try:
        analysis = compiled.cost_analysis()
    except Exception:  # some backends raise instead of returning nothing
        return None
    if isinstance(analysis, (list, tuple)):  # older jax: one dict per computation
        analysis = analysis[0] if analysis else None
    if not analysis or "flops" not in analysis:
        return None
    cost = {"flops": float(analysis["flops"]), "bytes": float(analysis.get("bytes accessed", 0.0))}
    trip_counts = _loop_trip_counts(compiled)
    if trip_counts:
        cost["loop_trip_counts"] = trip_counts
    return cost


def _loop_trip_counts(compiled) -> list[int]:
    """The known trip counts of the `while` loops in a compiled executable's HLO text."""
    try:
        text = compiled.as_text()
    except Exception:  # an executable without HLO text: no loops known
        return []
    loops = [line for line in text.splitlines() if " while(" in line]
    return [int(count) for line in loops
            for count in re.findall(r'"known_trip_count":\{"n":"(\d+)"', line)]


def _best_seconds(call, reps: int) -> float:
    call()  # warm-up: compiles, and touches the pages once
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def peak_matmul_gflops(side: int, reps: int = 5) -> float:
    """GFLOP/s of a jitted `[side, side] @ [side, side]` f32 matmul, `2 side^3` FLOPs, at its
    fastest of `reps` calls. Host only."""
    a = jnp.asarray(np.random.default_rng(0).normal(size=(side, side)), jnp.float32)
    dot = jax.jit(jnp.dot)
    seconds = _best_seconds(lambda: dot(a, a).block_until_ready(), reps)
    return 2 * side**3 / seconds / 1e9


def copy_bandwidth_gbs(n_bytes: int, reps: int = 5) -> float:
    """GB/s of bytes read + written when copying `n_bytes`: the faster of NumPy's copy into a
    buffer allocated once and a jitted in-place `x + 1` on a donated f32 array. Host only."""
    source = np.ones(n_bytes // 4, np.float32)
    target = np.empty_like(source)
    numpy_s = _best_seconds(lambda: np.copyto(target, source), reps)
    add_one = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    state = [jnp.asarray(source)]

    def in_place():
        state[0] = add_one(state[0])
        state[0].block_until_ready()

    jax_s = _best_seconds(in_place, reps)
    return 2 * n_bytes / min(numpy_s, jax_s) / 1e9


def machine_peaks(quick: bool) -> dict[str, float]:
    """The machine's measured rates: `{"matmul_gflops", "copy_gbs", "matmul_side",
    "copy_bytes"}` (quick: tiny probes, for the tests). Host only."""
    side, n_bytes = MATMUL_SIDE[quick], COPY_BYTES[quick]
    return {
        "matmul_gflops": peak_matmul_gflops(side),
        "copy_gbs": copy_bandwidth_gbs(n_bytes),
        "matmul_side": side,
        "copy_bytes": n_bytes,
    }


def bound_seconds(cost: dict[str, float], peaks: dict[str, float]) -> float:
    """The roofline time of `cost` (`{"flops", "bytes"}`) on a machine with `peaks`:
    `max(flops / peak rate, bytes / bandwidth)`, in seconds."""
    compute_s = cost["flops"] / (peaks["matmul_gflops"] * 1e9)
    memory_s = cost["bytes"] / (peaks["copy_gbs"] * 1e9)
    return max(compute_s, memory_s)


def annotate(result: dict, cost: dict[str, float] | None, peaks: dict[str, float]) -> None:
    """Add the roofline to one timed workload's `result` in place: `result["cost"]` (gnkit's
    FLOPs and bytes), `result["bound_s"]`, `result["bound_by"]` (`"compute"` or `"memory"`) and
    every row's `"roofline_fraction"` (bound / median seconds). Nothing is added without a
    cost."""
    if cost is None:
        return
    bound = bound_seconds(cost, peaks)
    compute_bound = cost["flops"] / (peaks["matmul_gflops"] * 1e9) >= bound
    result.update(cost=cost, bound_s=bound, bound_by="compute" if compute_bound else "memory")
    for row in result["rows"].values():
        row["roofline_fraction"] = bound / row["median_s"]
