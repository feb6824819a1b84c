"""Results and plots: `--json` files, a verb's results in its run directory, matplotlib on demand.

matplotlib is imported only inside `pyplot()`, so `import gnkit.experiments` stays light. Host.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(results: Mapping[str, Any]) -> str:
    """`results` as indented JSON (NumPy scalars and arrays, paths and dataclasses converted)."""
    return json.dumps(results, indent=2, default=_jsonable) + "\n"


def write_json(path: str | Path, results: Mapping[str, Any]) -> None:
    """Write `results` to `path` atomically (`-` prints them to stdout instead)."""
    text = to_json(results)
    if str(path) == "-":
        sys.stdout.write(text)
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def pyplot():
    """matplotlib's pyplot, imported on first use: on the Agg backend (files only) unless
    `MPLBACKEND` names one, as Jupyter's kernel does (so a notebook's own plots still show
    after a demo has drawn its figures)."""
    import matplotlib

    if not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path: str | Path, dpi: int = 110) -> Path | None:
    """Save a matplotlib `figure` to `path` (parent folders created), close it, return the path.

    A figure that cannot be drawn or written is a `RuntimeWarning` naming it, and `None` is
    returned: a plot never costs a verb its results.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=dpi)
    except Exception as error:  # noqa: BLE001 - any drawing failure: warn, keep the results
        warnings.warn(
            f"figure {path} not saved: {type(error).__name__}: {error}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    finally:
        pyplot().close(figure)
    return path
