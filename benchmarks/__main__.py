"""gnkit's benchmark suite: gnkit vs jraph (and PyG when installed), measured in one run.

    python -m benchmarks [--quick] [--json PATH] [--reps 5] [--only w1,w2,...]
                         [--malloc all|both|default|system|tuned|hugepages|current]
                         [--ablations] [--no-pyg] [--torch-threads 1,2] [--tolerance T]

Workloads (see `benchmarks/workloads.py`): W1 a graph-network step on Sudoku graphs, W1 x 8 the
same step repeated with shared weights (`scan`), W2 a 3-layer GAT on molecule-sized graphs, W3 a
2-layer GCN on one 1.2 M-edge graph, W4 a relation network on CLEVR-sized scenes and W5 the
Sudoku recurrent relational network (`benchmarks/relational_workloads.py`), a sorted segment-sum
bandwidth probe beside a memory copy, the Sudoku RRN's memory and compile time at 8 vs 64 remat
steps and the bucketed-padding stream (`benchmarks/bucketing.py`).

Every contender's forward output is checked against gnkit's on the same weights first. Then each
contender is warmed up and timed `--reps` times, interleaved (one step of each in turn), and the
table gives the median / min / max step time, the ratio peer median / gnkit median (above 1:
gnkit is faster), the compile time, XLA's peak-memory estimate, the minor page faults per
timed step (getrusage; a fresh 4 KB page touched is one fault) and the fraction of the
workload's roofline bound reached (`benchmarks/roofline.py`: gnkit's FLOPs and bytes from XLA's
cost analysis against the peak matmul rate and copy bandwidth measured at the start of the same
run). PyG runs once per torch intra-op thread count in `--torch-threads` (eager, and
`torch.compile` where the workload has it). With `--malloc all` (the default for full runs)
everything runs four times, in subprocesses: under gnkit's default (the allocator setting
`import gnkit` applies, "default"), under glibc's own defaults (`GNKIT_SYSTEM_MALLOC=1`,
"system"), with `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736` in the environment
("tuned") and with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (large blocks on transparent huge
pages, "hugepages"), the last two on top of glibc's defaults; `--malloc both` runs the first
two. Every setting applies to the whole process, peers included. The summary gives gnkit's time
under its default first, then each library's best (allocator x thread count) setting, naming
the winner, with each one's roofline fraction. `--quick` runs everything at tiny size in this
process (the tests use it). Host only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import roofline, workloads
from gnkit import tuning

SYSTEM_MALLOC = {tuning.SYSTEM_MALLOC_ENV: "1"}
TUNED_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}
HUGE_PAGES = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
# The environment each allocator setting's process starts with (on top of the caller's, less
# these variables): "default" is what `import gnkit` sets up, the others keep glibc's defaults
# and add their own variables.
ALLOCATOR_ENV = {
    "default": {},
    "system": SYSTEM_MALLOC,
    "tuned": SYSTEM_MALLOC | TUNED_MALLOC,
    "hugepages": SYSTEM_MALLOC | HUGE_PAGES,
}
# `--malloc` values and the settings each runs, one process per setting.
ALLOCATOR_SETTINGS = {
    "all": ("default", "system", "tuned", "hugepages"),
    "both": ("default", "system"),
} | {setting: (setting,) for setting in ALLOCATOR_ENV}
# Set in a setting's own process to its name: that process runs the workloads itself.
_SETTING_ENV = "GNKIT_BENCHMARK_SETTING"


def _block(value) -> None:
    if isinstance(value, jax.Array):
        value.block_until_ready()
    elif value is not None and hasattr(value, "item"):
        value.item()


def _reference_name(names: Sequence[str]) -> str:
    return next(name for name in names if name.startswith("gnkit"))


def check_agreement(workload: workloads.Workload) -> dict[str, float]:
    """Relative max difference of every contender's forward output to gnkit's; raises if off."""
    reference_name = _reference_name(list(workload.contenders))
    reference = workload.contenders[reference_name].forward()
    scale = max(float(np.max(np.abs(reference))), 1e-6)
    errors = {}
    for name, contender in workload.contenders.items():
        if contender.forward is None:
            continue
        output = contender.forward()
        errors[name] = float(np.max(np.abs(output - reference))) / scale
        if output.shape != reference.shape or errors[name] > workload.tolerance:
            raise AssertionError(
                f"{workload.name}: {name} disagrees with {reference_name} "
                f"(relative max difference {errors[name]:.2e}, shapes {output.shape} vs "
                f"{reference.shape})"
            )
    return errors


def _warm_up(workload: workloads.Workload, warmup: int) -> tuple[dict, dict]:
    """`warmup` steps of each contender: `({name: first-call seconds}, {name: error})`. A peer
    whose step raises (a `torch.compile` backend missing, say) is left out, with its error;
    gnkit's error is raised."""
    reference = _reference_name(list(workload.contenders))
    first_call, failed = {}, {}
    for name, contender in workload.contenders.items():
        try:
            for index in range(warmup):
                start = time.perf_counter()
                _block(contender.step())
                if index == 0:
                    first_call[name] = time.perf_counter() - start
        except Exception as error:
            if name == reference:
                raise
            failed[name] = f"{type(error).__name__}: {error}"
            print(f"{workload.name}: {name} left out, its step raised {failed[name]}", flush=True)
    return first_call, failed


def time_workload(workload: workloads.Workload, reps: int, warmup: int) -> dict:
    """Interleaved timing of every contender: one step of each in turn, `reps` rounds."""
    errors = check_agreement(workload)
    first_call, failed = _warm_up(workload, warmup)
    names = [name for name in workload.contenders if name not in failed]
    times = {name: [] for name in names}
    faults = dict.fromkeys(names, 0)
    for round_index in range(reps):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            _block(workload.contenders[name].step())
            times[name].append(time.perf_counter() - start)
            faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    reference = statistics.median(times[_reference_name(names)])
    rows = {}
    for name in names:
        contender = workload.contenders[name]
        median = statistics.median(times[name])
        compile_s = contender.compile_s
        if compile_s is None:
            compile_s = max(first_call[name] - median, 0.0)
        rows[name] = {
            "peer": contender.peer or name,
            "setting": contender.setting,
            "median_s": median,
            "min_s": min(times[name]),
            "max_s": max(times[name]),
            "ratio": median / reference,
            "compile_s": compile_s,
            "peak_bytes": contender.peak_bytes,
            "relative_error": errors.get(name),
            "page_faults_per_step": faults[name] / reps,
        }
    result = {"description": workload.description, "rows": rows}
    if failed:
        result["failed"] = failed
    if workload.bytes_moved:
        result["bytes_moved"] = workload.bytes_moved
        for row in rows.values():
            row["gb_per_s"] = workload.bytes_moved / row["median_s"] / 1e9
    return result


def workload_cost(workload: workloads.Workload) -> dict[str, float] | None:
    """The work the roofline counts for a workload: XLA's FLOPs and bytes of gnkit's compiled
    step, or, for a workload without one but with a byte count (the segment-sum probe), those
    bytes and no FLOPs."""
    cost = workload.contenders[_reference_name(list(workload.contenders))].cost
    if cost is None and workload.bytes_moved:
        return {"flops": 0.0, "bytes": float(workload.bytes_moved)}
    return cost


def rrn_memory(quick: bool) -> dict:
    """Compile time and XLA peak memory of a Sudoku RRN training gradient, 8 vs 64 steps, with
    per-step remat, blocked (sqrt-T) remat and none. `logits_bytes` is the `[T, B, 81, 9]` output
    the per-step loss needs (a temporary of the gradient, counted in `temp_bytes`)."""
    from gnkit.demos.sudoku.models import SudokuRRN
    from gnkit.tasks import sudoku

    batch, hidden, layers, cell = (1, 8, 1, "mlp") if quick else (8, 96, 3, "lstm")
    quizzes = jnp.zeros((batch, sudoku.NUM_CELLS), jnp.int32)
    solutions = jnp.ones((batch, sudoku.NUM_CELLS), jnp.int32)
    rows = {}
    names = {True: "remat", "block": "block remat", False: "no remat"}
    settings = ((True, 8), (True, 64), ("block", 8), ("block", 64))
    settings += () if quick else ((False, 8), (False, 64))
    for remat, steps in settings:
        model = SudokuRRN(
            hidden_size=hidden,
            encoder_layers=layers,
            message_layers=layers + 1,
            update_layers=layers,
            cell=cell,
            remat=remat,
        )
        params = model.init(jax.random.PRNGKey(0), quizzes, 1)

        def loss(params, model=model, steps=steps):
            return jnp.mean(sudoku.cell_loss(model.apply(params, quizzes, steps), solutions))

        start = time.perf_counter()
        compiled = jax.jit(jax.grad(loss)).lower(params).compile()
        compile_s = time.perf_counter() - start
        memory = compiled.memory_analysis()
        rows[f"{names[remat]}, {steps} steps"] = {
            "compile_s": compile_s,
            "temp_bytes": int(memory.temp_size_in_bytes),
            "logits_bytes": steps * batch * sudoku.NUM_CELLS * 9 * 4,
            "peak_bytes": int(
                memory.temp_size_in_bytes
                + memory.argument_size_in_bytes
                + memory.output_size_in_bytes
            ),
        }
    description = f"SudokuRRN gradient, batch {batch}, hidden {hidden}, {layers}-layer MLPs, {cell}"
    return {"description": description, "rows": rows}


def bucketing_stream(quick: bool) -> dict | None:
    """Compiles and padding of a random batch stream (`benchmarks/bucketing.py`), if present."""
    try:
        from benchmarks import bucketing
    except ImportError:
        return None
    n_batches = 10 if quick else 60
    table = bucketing.bucketing_table(0, n_batches, run_jit=not quick)
    return {"description": f"stream of {n_batches} random batches", "rows": table}


def machine() -> dict:
    info = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "jax": jax.__version__,
        "platform": jax.devices()[0].platform,
        "allocator": {
            key: os.environ.get(key, "unset") for key in SYSTEM_MALLOC | TUNED_MALLOC | HUGE_PAGES
        },
    }
    try:
        with open("/proc/cpuinfo") as stream:
            model = next(line for line in stream if line.startswith("model name"))
        info["cpu"] = model.split(":", 1)[1].strip()
    except (OSError, StopIteration):
        pass
    for module in ("jraph", "torch", "torch_geometric"):
        try:
            info[module] = __import__(module).__version__
        except ImportError:
            info[module] = None
    return info


def run(args) -> dict:
    """Every selected workload in this process."""
    pyg = workloads.have_pyg() and not args.no_pyg
    warmup = 1 if args.quick else 2
    results = {"machine": machine(), "pyg": pyg, "timed": {}}
    peaks = roofline.machine_peaks(args.quick)
    results["machine"]["roofline"] = peaks
    print_peaks(peaks)
    results["machine"]["torch_threads"] = args.torch_threads if pyg else None
    results["machine"]["torch_device"] = workloads.torch_device() if pyg else None
    selected = args.only.split(",") if args.only else list(workloads.WORKLOADS) + [
        "rrn",
        "bucketing",
    ]
    for key in selected:
        if key in workloads.WORKLOADS:
            workload = workloads.WORKLOADS[key](
                args.quick, pyg, args.ablations, torch_threads=args.torch_threads
            )
            if args.tolerance is not None:
                workload.tolerance = args.tolerance
            results["timed"][workload.name] = time_workload(workload, args.reps, warmup)
            roofline.annotate(results["timed"][workload.name], workload_cost(workload), peaks)
            print_timed(workload.name, results["timed"][workload.name])
        elif key == "rrn":
            results["rrn_memory"] = rrn_memory(args.quick)
            print_rrn_memory(results["rrn_memory"])
        elif key == "bucketing":
            results["bucketing"] = bucketing_stream(args.quick)
            print_bucketing(results["bucketing"])
        else:
            raise ValueError(f"unknown workload {key!r}")
    return results


def _mb(value) -> str:
    return "-" if value is None else f"{value / 2**20:.0f}"


def _percent(fraction) -> str:
    return "-" if fraction is None else f"{fraction * 100:.1f}"


def print_peaks(peaks: dict) -> None:
    print(
        f"machine: peak f32 matmul {peaks['matmul_gflops']:.1f} GFLOP/s (jnp.dot "
        f"{peaks['matmul_side']}^2), copy {peaks['copy_gbs']:.1f} GB/s read + written "
        f"({peaks['copy_bytes'] / 2**20:.0f} MB)",
        flush=True,
    )


def _loop_note(cost: dict) -> str:
    counts = cost.get("loop_trip_counts")
    if not counts:
        return ""
    return (f"; loops of {', '.join(map(str, counts))} iterations counted once by XLA: the bound "
            "and roof % are lower bounds")


def print_timed(name: str, result: dict) -> None:
    print(f"\n{name}: {result['description']}", flush=True)
    if "cost" in result:
        print(
            f"gnkit's step: {result['cost']['flops'] / 1e9:.3f} GFLOP, "
            f"{result['cost']['bytes'] / 1e6:.1f} MB accessed; roofline bound "
            f"{result['bound_s'] * 1e3:.2f} ms ({result['bound_by']})"
            + _loop_note(result["cost"])
        )
    header = (
        f"{'contender':28s} {'median ms':>10s} {'min ms':>9s} {'max ms':>9s} "
        f"{'x gnkit':>8s} {'compile s':>9s} {'peak MB':>8s} {'faults':>7s} {'roof %':>6s}"
    )
    if "bytes_moved" in result:
        header += f" {'GB/s':>6s}"
    print(header)
    for contender, row in result["rows"].items():
        line = (
            f"{contender:28s} {row['median_s'] * 1e3:10.1f} {row['min_s'] * 1e3:9.1f} "
            f"{row['max_s'] * 1e3:9.1f} {row['ratio']:8.2f} {row['compile_s']:9.2f} "
            f"{_mb(row['peak_bytes']):>8s} {row['page_faults_per_step']:7.0f} "
            f"{_percent(row.get('roofline_fraction')):>6s}"
        )
        if "gb_per_s" in row:
            line += f" {row['gb_per_s']:6.2f}"
        print(line, flush=True)


def print_rrn_memory(result: dict) -> None:
    print(f"\nRRN remat: {result['description']}")
    print(f"{'setting':24s} {'compile s':>9s} {'temp MB':>8s} {'logits MB':>9s} {'peak MB':>8s}")
    for name, row in result["rows"].items():
        print(
            f"{name:24s} {row['compile_s']:9.2f} {_mb(row['temp_bytes']):>8s} "
            f"{row['logits_bytes'] / 2**20:9.1f} {_mb(row['peak_bytes']):>8s}"
        )
    rows = result["rows"]
    for long, short in (
        ("remat, 64 steps", "remat, 8 steps"),
        ("block remat, 64 steps", "block remat, 8 steps"),
        ("block remat, 64 steps", "remat, 8 steps"),
    ):
        print(
            f"{long} / {short}: peak memory "
            f"x{rows[long]['peak_bytes'] / rows[short]['peak_bytes']:.2f}, compile time "
            f"x{rows[long]['compile_s'] / rows[short]['compile_s']:.2f}",
            flush=True,
        )


def print_bucketing(result: dict | None) -> None:
    if result is None:
        print("\nBucketing stream: benchmarks/bucketing.py not present, skipped")
        return
    print(f"\nBucketed padding: {result['description']}")
    print(f"{'strategy':44s} {'compiles':>8s} {'nodes x':>7s} {'edges x':>7s} {'jit s':>7s}")
    for name, row in result["rows"].items():
        print(
            f"{name:44s} {row['compiles']:8d} {row['nodes']:7.2f} {row['edges']:7.2f} "
            f"{row['jit_s']:7.2f}",
            flush=True,
        )


def best_setting(candidates: dict[str, float]) -> tuple[str, float]:
    """The fastest of `{setting label: median seconds}`: `(label, seconds)`; the first listed
    wins a tie."""
    label = min(candidates, key=lambda key: candidates[key])
    return label, candidates[label]


def _label(allocator: str, setting: str) -> str:
    return f"{allocator}, {setting}" if setting else allocator


def peer_candidates(settings: dict[str, dict], workload: str) -> dict[str, dict[str, float]]:
    """`{peer: {setting label: median seconds}}` for one workload over every allocator setting
    and every setting of the peer (torch thread counts); labels read `"tuned, 2 threads"`."""
    candidates: dict[str, dict[str, float]] = {}
    for allocator, result in settings.items():
        for name, row in result["timed"][workload]["rows"].items():
            label = _label(allocator, row.get("setting", ""))
            candidates.setdefault(row.get("peer", name), {})[label] = row["median_s"]
    return candidates


def summarise(settings: dict[str, dict]) -> list[dict]:
    """Per workload and peer: gnkit under the default allocator, gnkit's best setting and the
    peer's best setting (allocator x thread count), with the speed-ups peer best / gnkit default
    and peer best / gnkit best (above 1: gnkit is faster) and the fraction of the roofline bound
    each of the three reaches (`roofline_*`: the bound of the default setting's run over the
    time; None where the workload has no bound)."""
    summary = []
    default = "default" if "default" in settings else next(iter(settings))
    for workload in next(iter(settings.values()))["timed"]:
        candidates = peer_candidates(settings, workload)
        reference = _reference_name(list(candidates))
        gnkit_default = candidates[reference][default]
        gnkit_setting, gnkit_best = best_setting(candidates[reference])
        bound = settings[default]["timed"][workload].get("bound_s")

        def fraction(seconds, bound=bound):
            return None if bound is None else bound / seconds

        for peer, timings in candidates.items():
            if peer == reference:
                continue
            peer_setting, peer_best = best_setting(timings)
            summary.append(
                {
                    "workload": workload,
                    "gnkit": reference,
                    "peer": peer,
                    "gnkit_default_s": gnkit_default,
                    "gnkit_best_s": gnkit_best,
                    "gnkit_best_setting": gnkit_setting,
                    "peer_best_s": peer_best,
                    "peer_best_setting": peer_setting,
                    "speedup_default": peer_best / gnkit_default,
                    "speedup": peer_best / gnkit_best,
                    "bound_s": bound,
                    "roofline_gnkit_default": fraction(gnkit_default),
                    "roofline_gnkit_best": fraction(gnkit_best),
                    "roofline_peer_best": fraction(peer_best),
                }
            )
    return summary


def allocator_table(settings: dict[str, dict]) -> list[dict]:
    """gnkit's time and page faults per step per workload under each allocator setting, and
    default / best time."""
    table = []
    default = "default" if "default" in settings else next(iter(settings))
    for workload in next(iter(settings.values()))["timed"]:
        candidates = peer_candidates(settings, workload)
        reference = _reference_name(list(candidates))
        times = candidates[reference]
        best_label, best = best_setting(times)
        table.append(
            {
                "workload": workload,
                "times_s": times,
                "page_faults_per_step": {
                    allocator: result["timed"][workload]["rows"][reference].get(
                        "page_faults_per_step"
                    )
                    for allocator, result in settings.items()
                },
                "best_setting": best_label,
                "default_over_best": times[default] / best,
            }
        )
    return table


def print_summary(summary: list[dict], allocators: list[dict], peaks: dict[str, dict]) -> None:
    """The allocator table, the best-vs-best table with roofline fractions, and each setting's
    measured machine rates (`peaks`: `{setting: machine_peaks() of its run}`)."""
    print(
        "\ngnkit under each allocator setting: ms and page faults per step (default / best: "
        "the cost of staying with gnkit's default)"
    )
    for row in allocators:
        times = ", ".join(
            f"{label} {value * 1e3:.1f} ms {row['page_faults_per_step'][label] or 0:.0f} faults"
            for label, value in row["times_s"].items()
        )
        print(f"{row['workload']:22s} {times}; default / best {row['default_over_best']:.2f}")
    if allocators:
        worst = max(allocators, key=lambda row: row["default_over_best"])
        print(
            f"worst default / best: {worst['default_over_best']:.2f} ({worst['workload']}, "
            f"best: {worst['best_setting']})"
        )
    print("\nMachine rates measured in each setting's run (the roofline's peaks):")
    for setting, rates in peaks.items():
        print(f"  {setting:10s} ", end="")
        print_peaks(rates)
    print(
        "\nBest setting vs best setting, gnkit under its default allocator first "
        "(speed-up above 1: gnkit is faster); roof %: the fraction of the roofline bound "
        "reached (the default run's bound from gnkit's FLOPs and bytes, for every library)"
    )
    print(
        f"{'workload':20s} {'peer':24s} {'gnkit default':>13s} {'x':>5s} "
        f"{'gnkit best':>10s} {'x':>5s} {'peer best':>9s} {'roof % default/best/peer':>24s}"
        "  peer's best setting"
    )
    for row in summary:
        fractions = "/".join(
            _percent(row.get(f"roofline_{key}")) for key in ("gnkit_default", "gnkit_best",
                                                              "peer_best")
        )
        print(
            f"{row['workload']:20s} {row['peer']:24s} {row['gnkit_default_s'] * 1e3:11.1f}ms "
            f"{row['speedup_default']:5.2f} {row['gnkit_best_s'] * 1e3:8.1f}ms "
            f"{row['speedup']:5.2f} {row['peer_best_s'] * 1e3:7.1f}ms {fractions:>24s}  "
            f"{row['peer_best_setting']} (gnkit best: {row['gnkit_best_setting']})"
        )


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the tests")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--reps", type=int, help="timed rounds (default 5, quick 2)")
    parser.add_argument("--only", help="comma-separated: w1,w1x8,w2,w3,w4,w5,probe,rrn,bucketing")
    parser.add_argument(
        "--malloc",
        choices=(*ALLOCATOR_SETTINGS, "current"),
        help="allocator settings, each run in its own process started with that setting's "
        "environment (default: all; quick: current, this process as it is)",
    )
    parser.add_argument("--ablations", action="store_true", help="also time each fast path off")
    parser.add_argument("--no-pyg", action="store_true", help="skip PyTorch Geometric")
    parser.add_argument(
        "--torch-threads",
        default="1,2",
        help="torch intra-op thread counts to time PyG at, comma-separated (default 1,2: on a "
        "quiet 2-core machine 2 threads won, on a loaded one 1)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        help="relative max difference from gnkit's output allowed in the agreement check "
        "(default: each workload's, 1e-3)",
    )
    args = parser.parse_args(argv)
    args.torch_threads = tuple(int(count) for count in args.torch_threads.split(","))
    if args.reps is None:
        args.reps = 2 if args.quick else 5
    if args.malloc is None:
        args.malloc = "current" if args.quick else "all"
    return args


def _run_in_subprocess(setting: str, argv: Sequence[str] | None) -> dict:
    """One allocator setting's run in a fresh process, its environment set before Python
    starts."""
    given = list(argv if argv is not None else sys.argv[1:])
    forwarded = [arg for index, arg in enumerate(given) if not _is_json_arg(given, index)]
    controlled = SYSTEM_MALLOC | TUNED_MALLOC | HUGE_PAGES
    env = {key: value for key, value in os.environ.items() if key not in controlled}
    env.update(ALLOCATOR_ENV[setting], **{_SETTING_ENV: setting})
    print(f"\n===== allocator: {setting} =====", flush=True)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "result.json")
        command = [sys.executable, "-m", "benchmarks", *forwarded]
        command += ["--malloc", setting, "--json", path]
        subprocess.run(command, env=env, check=True)
        with open(path) as stream:
            return json.load(stream)["settings"][setting]


def main(argv: Sequence[str] | None = None) -> dict:
    args = _parse(argv)
    if args.malloc in ALLOCATOR_SETTINGS and os.environ.get(_SETTING_ENV) != args.malloc:
        settings = {
            setting: _run_in_subprocess(setting, argv)
            for setting in ALLOCATOR_SETTINGS[args.malloc]
        }
    else:
        settings = {args.malloc: run(args)}
    summary = summarise(settings)
    peaks = {setting: result["machine"]["roofline"] for setting, result in settings.items()}
    print_summary(summary, allocator_table(settings), peaks)
    output = {"settings": settings, "summary": summary}
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(output, stream, indent=2)
    return output


def _is_json_arg(args: list[str], index: int) -> bool:
    """Whether `args[index]` is `--json`, its value, or `--json=...`/`--malloc...`."""
    flag = args[index]
    if flag.startswith(("--json", "--malloc")):
        return True
    return index > 0 and args[index - 1] in ("--json", "--malloc")


if __name__ == "__main__":
    main()
