"""Stop requests for a command-line entry point: SIGINT / SIGTERM set a flag, nothing more.

Only the entry point (`gnkit.experiments.run`) enters `stop_requests`; library code never
installs signal handlers. The first signal sets the flag, prints a notice and puts the previous
handlers back, so a second Ctrl-C interrupts at once. Outside the main thread signals cannot be
caught, and the flag never turns. Host.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_requests() -> Iterator[Callable[[], bool]]:
    """Within the block, SIGINT and SIGTERM set a flag; yields `should_stop() -> bool`."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    requested = threading.Event()
    installed = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    previous = {number: handler for number, handler in installed.items() if handler is not None}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    def request_stop(number, frame) -> None:
        del frame
        requested.set()
        restore()
        name = signal.Signals(number).name
        print(f"{name}: stopping at the next safe point (again to abort)", file=sys.stderr)

    for number in previous:
        signal.signal(number, request_stop)
    try:
        yield requested.is_set
    finally:
        restore()
