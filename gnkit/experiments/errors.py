"""`UsageError`: bad input that the entry point reports as one line and exit status 2.

A verb raises `UsageError` for anything the user can fix on the command line: a data file that is
binary, truncated or of the wrong shape, a checkpoint that does not fit the config, a value out
of range. The message names the flag or file and says what was expected; `gnkit.experiments.run`
prints it as `error: <message>` on stderr, without a traceback, and returns 2. Host.
"""

from __future__ import annotations

import contextlib
import csv
import lzma
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path


class UsageError(Exception):
    """Bad user input: the entry point prints the message as one line and exits with status 2."""


def file_error(path: str | Path, expected: str, flag: str | None = None) -> UsageError:
    """A `UsageError` naming `path` (and the `flag` it came from) and what it should hold.

    `raise file_error("q.csv", "rows of 81 digits", "--data")` reads
    `--data q.csv: expected rows of 81 digits`.
    """
    where = f"{flag} {path}" if flag else str(path)
    return UsageError(f"{where}: expected {expected}")


_UNREADABLE = (OSError, ValueError, KeyError, TypeError, EOFError, lzma.LZMAError, zlib.error)


@contextlib.contextmanager
def reading_file(path: str | Path, expected: str, flag: str | None = None) -> Iterator[None]:
    """Turn a failure to read or decode `path` inside the block into `file_error`.

    Wrap the code that opens and parses one data file or checkpoint: a missing, binary,
    truncated or corrupt file (an `OSError`, a decoding or parsing error, `csv.Error`, a
    msgpack or LZMA error, a structure mismatch raised as `ValueError` / `KeyError`) becomes
    one line such as `--checkpoint run/best.msgpack: expected a checkpoint of this config
    (ValueError: ...)`.
    """
    try:
        yield
    except UsageError:
        raise
    except (*_UNREADABLE, csv.Error) as error:
        reason = str(error).splitlines()[0] if str(error) else ""
        detail = f"{type(error).__name__}: {reason}" if reason else type(error).__name__
        raise file_error(path, f"{expected} ({detail})", flag) from error


def check_shape(
    shape: Sequence[int], expected: Sequence[int | None], path: str | Path, flag: str | None = None
) -> None:
    """Raise `file_error` unless `shape` matches `expected` (`None` matches any size).

    `check_shape(quizzes.shape, (None, 81), "q.csv", "--data")` accepts `[P, 81]` arrays.

    Args:
      shape: the array's shape.
      expected: the sizes it must have, `None` for any.
      path: the file it came from (named in the error).
      flag: the flag that named the file, if any.

    Raises:
      UsageError: naming the file, the expected and the found shape.
    """
    fits = len(shape) == len(expected) and all(
        want is None or want == have for have, want in zip(shape, expected, strict=True)
    )
    if not fits:
        wanted = "[" + ", ".join("any" if want is None else str(want) for want in expected) + "]"
        found = "[" + ", ".join(str(have) for have in shape) + "]"
        raise file_error(path, f"an array of shape {wanted}, found {found}", flag)
