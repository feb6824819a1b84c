"""The benchmark suite on whatever JAX backend is present (a GPU where there is one), written as
JSON and a Markdown table into a directory.

    python -m benchmarks.device OUTDIR [--quick] [--only w1,w1x8,w2,w3,w4,w5,probe,rrn]
                                [--reps 5] [--no-pyg] [--torch-threads 1] [--tolerance T]

Made for a machine that reaches nothing outside itself: it downloads nothing and needs only
what `python -m benchmarks` needs (jax, flax, jraph; torch and torch_geometric for the PyG rows,
which run on CUDA when torch sees a GPU). Each workload runs on its own and both files are
rewritten after each, so a run stopped by a time limit keeps the workloads it finished; a
workload that raises is recorded with its error and the next one runs. Off the CPU the
agreement check allows a relative difference of 2e-2 (`--tolerance`): XLA's GPU matmuls run in
TF32 by default, torch's in f32. Times are absolute
(milliseconds per training step), beside the ratio to gnkit and the compile time. JAX is told
not to preallocate GPU memory, so torch can share the device. Host code driving any backend.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Sequence  # noqa: E402

import jax  # noqa: E402

from benchmarks import __main__ as suite  # noqa: E402

DEFAULT_WORKLOADS = "w1,w1x8,w2,w3,w4,w5,probe,rrn"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="directory for results.json and results.md")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the tests")
    parser.add_argument("--only", default=DEFAULT_WORKLOADS, help="comma-separated workloads")
    parser.add_argument("--reps", type=int, help="timed rounds (default 5, quick 2)")
    parser.add_argument("--no-pyg", action="store_true", help="skip PyTorch Geometric")
    parser.add_argument("--ablations", action="store_true", help="also time each fast path off")
    parser.add_argument(
        "--torch-threads", default="1", help="torch intra-op thread counts (default 1)"
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        help="relative max difference allowed in the agreement check (default: 1e-3 on the "
        "CPU, 2e-2 elsewhere)",
    )
    return parser.parse_args(argv)


def _suite_args(args: argparse.Namespace, key: str) -> argparse.Namespace:
    argv = ["--malloc", "current", "--only", key, "--torch-threads", args.torch_threads]
    argv += ["--tolerance", str(args.tolerance)]
    argv += ["--quick"] if args.quick else []
    argv += ["--reps", str(args.reps)] if args.reps else []
    argv += ["--no-pyg"] if args.no_pyg else []
    argv += ["--ablations"] if args.ablations else []
    return suite._parse(argv)


def backend() -> dict:
    """The JAX backend the suite runs on: platform, device kind and count, jax version."""
    devices = jax.devices()
    return {
        "platform": devices[0].platform,
        "device_kind": devices[0].device_kind,
        "device_count": len(devices),
        "jax": jax.__version__,
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g}" if seconds < 0.1 else f"{seconds * 1e3:.0f}"


def markdown(results: dict) -> str:
    """The results as Markdown: the backend, the per-contender table, the best-vs-best summary,
    the RRN remat table if it ran, and any contender or workload that failed."""
    info = results["backend"]
    lines = [
        f"Backend: {info['platform']} ({info['device_kind']} x {info['device_count']}), "
        f"jax {info['jax']}, torch {results['machine'].get('torch')} on "
        f"{results['machine'].get('torch_device')}.",
        "",
        "| workload | contender | median ms (min-max) | x gnkit | compile s | peak MB |",
        "|---|---|---|---|---|---|",
    ]
    for workload, result in results["timed"].items():
        for name, row in result["rows"].items():
            lines.append(
                f"| {workload} | {name} | {_ms(row['median_s'])} ({_ms(row['min_s'])}-"
                f"{_ms(row['max_s'])}) | {row['ratio']:.2f} | {row['compile_s']:.1f} | "
                f"{suite._mb(row['peak_bytes'])} |"
            )
    lines += [
        "",
        "| workload | peer | gnkit ms | peer best ms | peer's best setting | speed-up |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["summary"]:
        lines.append(
            f"| {row['workload']} | {row['peer']} | {_ms(row['gnkit_best_s'])} | "
            f"{_ms(row['peer_best_s'])} | {row['peer_best_setting']} | {row['speedup']:.2f} |"
        )
    if "rrn_memory" in results:
        lines += ["", "| RRN gradient | compile s | peak MB |", "|---|---|---|"]
        for name, row in results["rrn_memory"]["rows"].items():
            lines.append(f"| {name} | {row['compile_s']:.1f} | {suite._mb(row['peak_bytes'])} |")
    for workload, result in results["timed"].items():
        for name, error in result.get("failed", {}).items():
            lines += ["", f"{workload}: {name} left out, its step raised {error}"]
    for key, error in results["errors"].items():
        lines += ["", f"{key} failed: {error}"]
    return "\n".join(lines) + "\n"


def _write(out: pathlib.Path, results: dict) -> None:
    timed = {key: value for key, value in results.items() if key != "summary"}
    results["summary"] = suite.summarise({results["backend"]["platform"]: timed})
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "results.md").write_text(markdown(results))


def main(argv: Sequence[str] | None = None) -> dict:
    """Run each selected workload in turn; rewrite OUT/results.json and OUT/results.md after
    each. Returns the results."""
    args = _parse(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"backend": backend(), "timed": {}, "errors": {}, "seconds": {}}
    if args.tolerance is None:
        args.tolerance = 1e-3 if results["backend"]["platform"] == "cpu" else 2e-2
    results["tolerance"] = args.tolerance
    for key in args.only.split(","):
        start = time.perf_counter()
        try:
            result = suite.run(_suite_args(args, key))
        except Exception as error:  # recorded; the next workload runs
            traceback.print_exc()
            results["errors"][key] = f"{type(error).__name__}: {error}"
        else:
            results["machine"] = result.pop("machine")
            results["timed"].update(result.pop("timed"))
            results.update(result)
        results["seconds"][key] = time.perf_counter() - start
        results.setdefault("machine", {})
        _write(out, results)
    return results


if __name__ == "__main__":
    main()
