"""The run records beside the results pages (`docs/results/<demo>.json`): the numbers a slow
test's fresh run of a demo's documented command is compared with."""

import json
import pathlib

RESULTS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "results"


def run_record(demo: str, run: str = "default") -> dict:
    """Run `run` of the record: its `command`, `commit`, `cpu_minutes` and `results`."""
    return json.loads((RESULTS / f"{demo}.json").read_text())["runs"][run]


def recorded(demo: str, run: str = "default") -> dict:
    """The `results` (the demo's `--json` layout) of run `run` of the record."""
    return run_record(demo, run)["results"]
