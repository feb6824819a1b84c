"""What a demo declares: presets of a typed config, and verbs; what a verb receives: `Options`.

A verb is `function(config, run_dir, options) -> results dict | None`. `config` is the resolved
config (preset or saved run, `--seed` and `--set` applied, constraints checked); `run_dir` the
`RunDir` (`None` for verbs without one); `options` the common flags, the verb's own flags and
`should_stop`, a callable that turns true once the user asked the process to stop (SIGINT or
SIGTERM; a `gnkit.train.StopRequest` under `run`): a training loop checks it between updates,
saves and returns, or passes it to `gnkit.train.fit`, whose `TrainingStopped` the entry point
turns into the exit status. Host.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from gnkit.experiments.overrides import check_settable, field_types
from gnkit.experiments.run_dir import RunDir
from gnkit.extras import EXTRAS

RunDirUse = Literal["create", "existing"] | None


@dataclasses.dataclass(frozen=True)
class Options:
    """The parsed common flags of one command, the verb's own flags, and the stop hook.

    Attributes:
      verb: the verb's name.
      preset: the `--config` name (`None` when the config came from an earlier run).
      parallel: `--parallel`: `single`, `pmap` or `mesh`.
      json_path: `--json` (`-` for stdout), or None.
      plot: `--plot`, or None.
      progress: false with `--no-progress`.
      flags: the flags the verb added itself (`Verb.add_flags`).
      should_stop: a callable that turns true once the user asked the process to stop.
      verbose: `--verbose`: a line per evaluation while training (`gnkit.train.fit`'s
        `log_evals`); without it, the progress bar alone (none with `--no-progress`).
    """

    verb: str
    preset: str | None
    parallel: str
    json_path: str | None
    plot: Path | None
    progress: bool
    flags: argparse.Namespace
    should_stop: Callable[[], bool] = lambda: False
    verbose: bool = False

    def plot_path(self, run_dir: RunDir | None, name: str, main: bool = True) -> Path | None:
        """Where to save the figure `name` (e.g. `training.png`), or `None` for no figure.

        With `--plot PATH` the verb's main figure goes to PATH and any other beside it as
        `<PATH stem>_<name>`; without it, figures go into the run directory, and a verb
        without a run directory draws nothing (never into the working directory unasked).
        """
        if self.plot is not None:
            if main:
                return self.plot
            return self.plot.with_name(f"{self.plot.stem}_{Path(name).stem}{self.plot.suffix}")
        return run_dir.file(name) if run_dir is not None else None


VerbFunction = Callable[[Any, RunDir | None, Options], Mapping[str, Any] | None]


@dataclasses.dataclass(frozen=True)
class Verb:
    """One command of a demo (`train`, `eval`, `demo`, `solve`, ...).

    Attributes:
      name: the verb as typed (`gnkit DEMO NAME`).
      function: `(config, run_dir, options) -> results dict | None`.
      help: its one-line help.
      run_dir: `"create"` (a run of the resolved config: a new directory, or the same config
        to resume; other configs are refused), `"existing"` (an earlier run: the config saved
        there, `--set` applied on top and not saved), or `None` (no run directory).
      add_flags: `parser -> None`, adding the verb's own argparse flags; their values arrive in
        `options.flags`.
      configured: False for a verb that takes no config (its model comes from a checkpoint
        flag, say): it gets no `--config`, `--set`, `--seed` or `--parallel`, and `config` is
        None.
    """

    name: str
    function: VerbFunction
    help: str
    run_dir: RunDirUse = "create"
    add_flags: Callable[[argparse.ArgumentParser], None] | None = None
    configured: bool = True

    def __post_init__(self):
        if not self.configured and self.run_dir is not None:
            raise ValueError(f"verb {self.name}: a verb without a config has no run directory")


@dataclasses.dataclass(frozen=True)
class Demo:
    """A demo: what `gnkit NAME` runs.

    Presets mean the same in every demo: `default`, the recipe that reaches the paper's number
    on a CPU where one is known (else the best measured CPU run); `quick`, a first look in a few
    minutes; `paper`, the paper's recipe, for an accelerator; `tiny`, for tests. Conventions
    shared by every demo's config: `seed`, `updates` (optimiser steps of training) and `steps`
    (message-passing steps), when the demo has them.

    Attributes:
      name: the command name (`gnkit NAME`).
      description: a one-line description.
      presets: configs by preset name: frozen dataclasses of one type, with a `seed` field.
      verbs: its verbs (`Verb`).
      default_preset: the preset used without `--config` (default: the first).
      preset_notes: a line for each preset, shown by `--help` (what it is for and what it
        costs); every preset needs one.
      flag_fields: config fields that also get a flag of their own, `--FIELD VALUE`
        (underscores as dashes), the same as `--set FIELD=VALUE`: the one or two fields a
        user changes on most runs.
      extra: the gnkit extra the verbs need beyond `demos` (a key of `gnkit.extras.EXTRAS`,
        e.g. `"chem"`), checked before a verb runs; the demo's `--help` works without it.
    """

    name: str
    description: str
    presets: Mapping[str, Any]
    verbs: Sequence[Verb]
    default_preset: str | None = None
    preset_notes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    flag_fields: tuple[str, ...] = ()
    extra: str | None = None

    def __post_init__(self):
        if not self.presets:
            raise ValueError(f"demo {self.name}: no config presets")
        types = {type(config) for config in self.presets.values()}
        if len(types) != 1:
            raise TypeError(f"demo {self.name}: presets of several types {sorted(map(str, types))}")
        config_type = types.pop()
        if not dataclasses.is_dataclass(config_type) or not config_type.__dataclass_params__.frozen:
            raise TypeError(f"demo {self.name}: {config_type.__name__} is not a frozen dataclass")
        if "seed" not in field_types(config_type):
            raise TypeError(f"demo {self.name}: {config_type.__name__} has no `seed` field")
        check_settable(config_type)
        names = [verb.name for verb in self.verbs]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"demo {self.name}: verb names must be unique and non-empty: {names}")
        if self.default_preset is not None and self.default_preset not in self.presets:
            raise ValueError(f"demo {self.name}: default preset {self.default_preset!r} unknown")
        unknown = sorted(set(self.preset_notes) - set(self.presets))
        if unknown:
            raise ValueError(f"demo {self.name}: notes for unknown presets {unknown}")
        undescribed = [name for name in self.presets if name not in self.preset_notes]
        if undescribed:
            raise ValueError(
                f"demo {self.name}: preset_notes has no line for presets {undescribed} "
                "(--help describes every preset)"
            )
        unknown = sorted(set(self.flag_fields) - set(field_types(config_type)))
        if unknown:
            raise ValueError(f"demo {self.name}: flag_fields {unknown} are not config fields")
        if self.extra is not None and self.extra not in EXTRAS:
            raise ValueError(f"demo {self.name}: extra {self.extra!r} unknown; expected one of "
                             f"{', '.join(EXTRAS)}")

    @property
    def config_type(self) -> type:
        """The config dataclass of every preset."""
        return type(next(iter(self.presets.values())))

    @property
    def default(self) -> str:
        """The preset used without `--config`."""
        return self.default_preset or next(iter(self.presets))

    @property
    def default_run_dir(self) -> Path:
        """`runs/<name>` (dashes become underscores)."""
        return Path("runs") / self.name.replace("-", "_")

    def verb(self, name: str) -> Verb:
        """The verb called `name`."""
        return next(verb for verb in self.verbs if verb.name == name)
