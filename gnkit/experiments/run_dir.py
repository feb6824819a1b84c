"""Run directories: one config per directory, created on first write, resumed when it matches.

`RunDir.check` only reads: it refuses a path that is a file, a directory that cannot be written,
a path inside the installed gnkit package (where output would replace shipped files or, in an
editable install, tracked files), and a directory whose `config.json` holds another config
(naming the differing keys). Nothing is
written until the verb asks for a path to write (`RunDir.file`, `metrics_path`,
`checkpoint_dir`), so a command rejected before that leaves no directory or `config.json` behind.
Layout: `config.json`, `metrics.jsonl` (one JSON record a line, `gnkit.train.fit`'s format),
`checkpoints/`, `<verb>.json` (the verb's results) and any plots the verb writes. Host.

A run directory opened to train (`open_for_config`) is locked while its verb runs (an exclusive
`flock` on `.lock`, holding the owner's process id), so a second process training into the same
directory is refused instead of interleaving checkpoints and metrics with the first.

A run is continued by giving it a larger length alone (`--set updates=N`, or `epochs` where a
demo counts those): the saved config is rewritten with the new length when the verb first
writes, and training resumes from the last checkpoint up to N. A schedule that depends on the
length (cosine decay, a warm-up fraction, a decay start) is that of the N-update run, read from
the resumed update on; so a cosine schedule that had decayed to zero at the old end resumes at
the longer run's value there. Any other change, or a smaller length, is still refused.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from gnkit.experiments.config import (
    config_dict,
    config_from_dict,
    differing_keys,
    read_config_json,
)
from gnkit.experiments.errors import UsageError

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_DIR = "checkpoints"
LOCK_FILE = ".lock"
LENGTH_KEYS = ("updates", "epochs")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_outside_package(path: Path, flag: str) -> None:
    """`UsageError` naming `flag` if `path` lies inside the installed gnkit package (symlinks and
    `..` resolved): nothing is ever written there."""
    package = Path(str(resources.files("gnkit"))).resolve()
    resolved = Path(path).resolve()
    if resolved == package or package in resolved.parents:
        raise UsageError(
            f"{flag} {path}: inside the gnkit package ({package}); nothing is written there, "
            "choose a directory outside it"
        )


def check_writable(path: Path, flag: str, directory: bool) -> None:
    """`UsageError` unless `path` can be created or written (a directory if `directory`).

    Reads only: an existing path must be of the right kind and writable; a new one must lie
    under a writable directory; no path may lie inside the gnkit package.
    """
    path = Path(path)
    check_outside_package(path, flag)
    if path.exists():
        if directory and not path.is_dir():
            raise UsageError(f"{flag} {path}: is a file, expected a directory")
        if not directory and path.is_dir():
            raise UsageError(f"{flag} {path}: is a directory, expected a file path")
        target = path if directory else path.parent
    else:
        target = _nearest_existing(path)
        if not target.is_dir():
            raise UsageError(f"{flag} {path}: {target} is a file, expected a directory")
    if not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: {target} is not writable")


def _lock(path: Path) -> int:
    """An open descriptor of `path/.lock` holding its exclusive lock; `UsageError` naming the
    owner's process id if another process holds it."""
    descriptor = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.read(descriptor, 32).decode(errors="replace").strip() or "unknown"
        os.close(descriptor)
        raise UsageError(
            f"--run-dir {path}: in use by another running process (pid {owner}); "
            "wait for it to finish, or use another --run-dir"
        ) from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, str(os.getpid()).encode())
    return descriptor


@dataclasses.dataclass
class RunDir:
    """The run directory of one command, holding `config`; created lazily on first write.

    Attributes:
      path: the directory (it need not exist yet).
      config: the run's config, written to `config.json` on the first write.
      exclusive: whether the run holds the directory's lock (opened to train): taken on creation
        (or on opening, when an earlier run left one) and kept until `release`.
      extended: the length key (`updates`) of a run continued to a larger value, whose
        `config.json` is rewritten with the new value on the first write; None otherwise.
    """

    path: Path
    config: Any
    exclusive: bool = False
    extended: str | None = None
    _lock_descriptor: int | None = dataclasses.field(default=None, repr=False, compare=False)

    def acquire(self) -> None:
        """Take the directory's lock if this run is exclusive and does not hold it yet."""
        if self.exclusive and self._lock_descriptor is None:
            self._lock_descriptor = _lock(self.path)

    def release(self) -> None:
        """Give the directory's lock back (a no-op when not held)."""
        if self._lock_descriptor is not None:
            os.close(self._lock_descriptor)
            self._lock_descriptor = None

    @property
    def exists(self) -> bool:
        """Whether the directory holds this run's `config.json` (written now or earlier)."""
        return (self.path / CONFIG_FILE).exists()

    def create(self) -> Path:
        """Make the directory and write `config.json` if it is not there (rewrite it for a run
        continued to a larger length); return the path."""
        config_path = self.path / CONFIG_FILE
        if self.extended is not None or not config_path.exists():
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                temporary = self.path / f".{CONFIG_FILE}.tmp"
                temporary.write_text(json.dumps(config_dict(self.config), indent=2) + "\n")
                os.replace(temporary, config_path)
            except OSError as error:
                reason = error.strerror or type(error).__name__
                raise UsageError(f"--run-dir {self.path}: cannot write ({reason})") from None
            self.extended = None
        self.acquire()
        return self.path

    def file(self, name: str) -> Path:
        """`path/name`, creating the run directory first."""
        return self.create() / name

    @property
    def metrics_path(self) -> Path:
        """`metrics.jsonl` (created directory): one JSON record a line."""
        return self.file(METRICS_FILE)

    @property
    def checkpoint_dir(self) -> Path:
        """`checkpoints/` (the run directory is created; the folder is left to the writer)."""
        return self.file(CHECKPOINT_DIR)


def open_for_config(path: Path, config: Any) -> RunDir:
    """A `RunDir` for a run of `config` at `path`: new, or the same config to resume.

    `UsageError` if `path` is a file or not writable, holds a run with another config (the
    message names the keys that differ and both values; a larger length alone, `updates` or
    `epochs`, continues the run instead), or is locked by another process. The caller
    `release`s the lock when the run ends.
    """
    check_writable(path, "--run-dir", directory=True)
    config_path = path / CONFIG_FILE
    extended = None
    if config_path.exists():
        saved = read_config_json(config_path)
        keys = differing_keys(saved, config)
        extended = _longer(keys, saved, config)
        if keys and extended is None:
            current = config_dict(config)
            changes = ", ".join(
                f"{key} {saved.get(key, '(absent)')!r} there, {current.get(key, '(absent)')!r} here"
                for key in keys
            )
            raise UsageError(
                f"--run-dir {path} holds a run with another config ({changes}); "
                "use another --run-dir, or the same settings to resume (a larger "
                f"{' or '.join(LENGTH_KEYS)} alone continues the run)"
            )
    run_dir = RunDir(path, config, exclusive=True, extended=extended)
    if (path / LOCK_FILE).exists():
        run_dir.acquire()
    return run_dir


def _longer(keys: list[str], saved: dict[str, Any], config: Any) -> str | None:
    """The length key when `keys` is that key alone and `config` makes it larger, else None."""
    if len(keys) != 1 or keys[0] not in LENGTH_KEYS:
        return None
    before, after = saved.get(keys[0]), getattr(config, keys[0], None)
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (before, after))
    return keys[0] if numbers and after > before else None


def saved_config(path: Path, config_type: type) -> Any | None:
    """The config saved in the run directory `path` (`config.json`), or None if it has none."""
    config_path = Path(path) / CONFIG_FILE
    if not config_path.is_file():
        return None
    return config_from_dict(config_type, read_config_json(config_path), config_path)


def open_existing(path: Path, config_type: type) -> RunDir:
    """The `RunDir` of an earlier run at `path`, with the config saved there."""
    config_path = path / CONFIG_FILE
    if not path.is_dir():
        raise UsageError(f"--run-dir {path}: expected the directory of an earlier run")
    if not config_path.exists():
        raise UsageError(f"--run-dir {path}: no {CONFIG_FILE}; expected the directory of a run")
    values = read_config_json(config_path)
    return RunDir(path, config_from_dict(config_type, values, config_path))
