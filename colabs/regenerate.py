"""Execute notebooks with today's code at their default size and save their outputs in place.

    python colabs/regenerate.py                 # every notebook in colabs/
    python colabs/regenerate.py sort physics    # some of them, by name

Each notebook runs top to bottom in a fresh kernel from colabs/ (plots inline, embedded in the
saved file), at its default size: the smoke-test switch the tests set is removed from the
environment. The commit the outputs come from and the kernel's CPU-minutes are written into the
notebook's metadata (`gnkit_outputs`) and printed. A notebook whose run fails is left unchanged.
"""

import argparse
import os
import pathlib
import resource
import subprocess
import sys
import time

import nbclient
import nbformat

COLABS = pathlib.Path(__file__).resolve().parent
SMOKE_TEST_VARIABLE = "GNKIT_NOTEBOOK_SMOKE_TEST"


def source_commit() -> str:
    """HEAD's commit, with `+modified` when gnkit/ differs from it."""
    root = COLABS.parent
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    changes = subprocess.run(
        ["git", "status", "--porcelain", "--", "gnkit"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return commit + ("+modified" if changes.strip() else "")


def children_cpu_seconds() -> float:
    """CPU seconds of the finished child processes (the kernels) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def regenerate(path: pathlib.Path, timeout: int) -> dict:
    """Execute one notebook in a fresh kernel and write it back with its outputs."""
    notebook = nbformat.read(path, as_version=4)
    commit = source_commit()
    cpu, wall = children_cpu_seconds(), time.perf_counter()
    client = nbclient.NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(COLABS)}},
    )
    client.execute()
    record = {
        "commit": commit,
        "cpu_minutes": round((children_cpu_seconds() - cpu) / 60, 2),
        "wall_minutes": round((time.perf_counter() - wall) / 60, 2),
    }
    notebook.metadata["gnkit_outputs"] = record
    nbformat.write(notebook, path)
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="notebook names without .ipynb (default: all)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [COLABS / f"{name}.ipynb" for name in args.names] or sorted(COLABS.glob("*.ipynb"))
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        parser.error(f"no such notebook in {COLABS}: {', '.join(missing)}")
    os.environ.pop(SMOKE_TEST_VARIABLE, None)
    os.environ.pop("MPLBACKEND", None)
    failed = []
    for path in paths:
        try:
            record = regenerate(path, args.timeout)
        except nbclient.exceptions.CellExecutionError as error:
            failed.append(path.stem)
            print(f"{path.stem}: failed, left unchanged\n{error}", file=sys.stderr)
            continue
        print(
            f"{path.stem}: {record['cpu_minutes']} CPU-minutes, "
            f"{record['wall_minutes']} minutes, outputs of {record['commit']}",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
