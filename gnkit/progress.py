"""Progress bars for long host loops (training, evaluation), drawn with rich (a flax dependency).

`ProgressBar` is a context manager around one `rich.progress.Progress` task: a bar, a count, the
rate, elapsed and remaining time, and a free-text status (the latest metrics). `write` prints a
line above the bar without breaking it. On a terminal the bar redraws in place; in a log file or
CI it is printed once at the end. rich is imported when the first bar is made, so code that
imports this module (`gnkit.train`) but draws no bar runs where rich is absent. Host-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class ProgressBar:
    """One progress bar: `update(n)`, `set_status(metrics)`, `write(line)`, `close()`.

    Host; drawn with rich on the terminal.

    Args:
      total: the number of units (steps, batches).
      initial: units already done (a resumed run), so the rate and remaining time count only this
        session's work.
      description: the text before the bar.
      unit: the name of one unit in the rate shown.
      transient: erase the bar when it is closed.
    """

    def __init__(
        self,
        total: int,
        *,
        initial: int = 0,
        description: str = "",
        unit: str = "step",
        transient: bool = False,
    ):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        def whole(width: int) -> Column:
            return Column(no_wrap=True, min_width=width)

        # On a narrow terminal only the status is cut (with an ellipsis), never a count or time.
        self._progress = Progress(
            TextColumn("[bold]{task.description}", table_column=whole(len(description))),
            BarColumn(bar_width=16, table_column=whole(16)),
            MofNCompleteColumn(table_column=whole(2 * len(str(total)) + 1)),
            TextColumn("{task.fields[rate]}", table_column=whole(len(unit) + 8)),
            TimeElapsedColumn(table_column=whole(7)),
            TextColumn("eta", table_column=whole(3)),
            TimeRemainingColumn(table_column=whole(7)),
            TextColumn(
                "{task.fields[status]}",
                table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis"),
            ),
            console=Console(stderr=True),
            refresh_per_second=2,
            transient=transient,
        )
        self._unit = unit
        self._task = self._progress.add_task(
            description, total=total, completed=initial, rate="", status=""
        )
        self._initial = initial
        self._progress.start()

    def update(self, advance: int = 1) -> None:
        self._progress.advance(self._task, advance)
        task = self._progress.tasks[self._task]
        elapsed = task.elapsed or 0.0
        done = task.completed - self._initial
        if elapsed > 0 and done > 0:
            rate = done / elapsed
            if rate >= 1:
                text = f"{_short(rate)} {self._unit}/s"
            else:
                text = f"{_short(1 / rate)} s/{self._unit}"
            self._progress.update(self._task, rate=text)

    def set_status(self, values: Mapping[str, Any]) -> None:
        """Show `values` (e.g. the latest loss) after the bar, `key=value` with 4 digits."""
        text = " ".join(f"{key}={float(value):.4g}" for key, value in values.items())
        self._progress.update(self._task, status=text)

    def write(self, line: str) -> None:
        """Print `line` above the bar."""
        self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        self._progress.stop()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _short(value: float) -> str:
    """`value` (>= 1) in at most 5 characters: 3 significant digits and a k / M / G / T suffix."""
    for suffix in ("", "k", "M", "G", "T"):
        if value < 999.5:
            return f"{value:.3g}{suffix}"
        value /= 1000
    return ">1P"


def track(items: Iterable[T], total: int, description: str, unit: str = "batch") -> Iterator[T]:
    """Iterate over `items` with a progress bar of `total` units that vanishes when done.

    Args:
      items: what to iterate over.
      total: the bar's length, in units (the number of items expected).
      description: the text before the bar.
      unit: the name of one unit in the rate shown.

    Returns:
      A generator of `items`' elements, one unit of the bar per element.
    """
    with ProgressBar(total, description=description, unit=unit, transient=True) as bar:
        for item in items:
            yield item
            bar.update()
