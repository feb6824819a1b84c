"""The entry point every demo shares: `run(demo, argv)` parses, checks, runs a verb, reports.

Common flags, the same everywhere: `--config PRESET` (default: the run directory's saved
config when it holds one, else the demo's default preset), `--set KEY=VALUE` (repeatable, typed
by the field), `--seed N` (sets `seed`), `--run-dir DIR`, `--json PATH` (the verb's results;
`-` for stdout, which then carries the JSON alone: everything else the verb prints goes to
stderr), `--plot PATH`, `--parallel single|pmap|mesh`, `--no-progress`, `--verbose` (a line
per evaluation while training), and for verbs that read an earlier run, `--untrained`.
Everything the user can get wrong is checked before the verb runs and before anything is
written; a `UsageError` (from here or from the verb), a mistyped flag (named with the verb's
nearest flag) or a missing extra becomes one line on stderr and exit status 2.

A verb that reads an earlier run (`eval`) first names the checkpoint and update of each model
it will use, and refuses a run whose models are at update 0 (nothing trained) unless
`--untrained`. A verb that trains ends with where its outputs went (run directory, checkpoint
and update, figures) and the command that evaluates them. Host.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gnkit import extras
from gnkit.cli import demo_extras_message, missing_demo_extras
from gnkit.experiments.checkpoints import report_checkpoints, trained_updates
from gnkit.experiments.config import check_config, describe_fields, setting_help
from gnkit.experiments.demo import Demo, Options, Verb
from gnkit.experiments.errors import UsageError
from gnkit.experiments.overrides import parse_override
from gnkit.experiments.results import to_json, write_json
from gnkit.experiments.run_dir import (
    RunDir,
    check_writable,
    open_existing,
    open_for_config,
    saved_config,
)
from gnkit.parallel import MODES
from gnkit.train import StopRequest, TrainingStopped, exit_status, stop_on_signals

PARALLEL_MODES = MODES
_COMMON = (
    "verb",
    "config",
    "set",
    "seed",
    "run_dir",
    "json",
    "plot",
    "parallel",
    "no_progress",
    "verbose",
    "untrained",
)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are `UsageError`s (one line), not usage text and `exit(2)`."""

    def error(self, message: str):
        raise UsageError(message)


def _epilog(demo: Demo, verb: Verb, preset: str | None) -> str | None:
    if not verb.configured:
        return None
    presets = ", ".join(demo.presets)
    notes = "".join(f"  {name}: {note}\n" for name, note in demo.preset_notes.items())
    shown = preset if preset in demo.presets and verb.run_dir != "existing" else demo.default
    fields = describe_fields(demo.presets[shown])
    start = "; this verb starts from the run's config.json" if verb.run_dir == "existing" else ""
    return (
        f"presets: {presets} (default {demo.default})\n{notes}"
        f"config fields for --set KEY=VALUE (values of preset {shown}{start}):\n{fields}"
    )


_FIELD_DEST = "config_field_"


def _field_flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def _add_config_flags(parser: argparse.ArgumentParser, demo: Demo, verb: Verb) -> None:
    if verb.run_dir != "existing":
        parser.add_argument(
            "--config",
            choices=list(demo.presets),
            metavar="PRESET",
            help=f"config preset: {', '.join(demo.presets)} (default: the --run-dir's saved "
            f"config if it holds one, else {demo.default})",
        )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable); typed by the field",
    )
    for field in demo.flag_fields:
        about = setting_help(demo.config_type, field) or f"the config's {field}"
        parser.add_argument(
            _field_flag(field),
            dest=_FIELD_DEST + field,
            metavar="VALUE",
            help=f"{about} (--set {field}=VALUE)",
        )
    parser.add_argument("--seed", type=int, help="random seed (sets the config's seed)")
    parser.add_argument(
        "--parallel",
        choices=PARALLEL_MODES,
        default="single",
        help="one device, or data-parallel over all devices (pmap or mesh)",
    )


def _add_common_flags(parser: argparse.ArgumentParser, demo: Demo, verb: Verb) -> None:
    if verb.configured:
        _add_config_flags(parser, demo, verb)
    if verb.run_dir is not None:
        parser.add_argument(
            "--run-dir",
            type=Path,
            default=demo.default_run_dir,
            help=f"run directory (default {demo.default_run_dir})",
        )
    if verb.run_dir == "existing":
        parser.add_argument(
            "--untrained",
            action="store_true",
            help="run even if the run's models are at update 0 (nothing trained)",
        )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="write the results as JSON (- for stdout: the JSON alone, the report on stderr)",
    )
    parser.add_argument("--plot", type=Path, metavar="PATH", help="save the figure here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--verbose", action="store_true", help="a line per evaluation while training"
    )


def build_parser(demo: Demo, preset: str | None = None) -> argparse.ArgumentParser:
    """`gnkit DEMO VERB [flags]`: one subcommand per verb, common flags plus the verb's own.

    A verb's help lists the config fields with the values of `preset` (the `--config` given on
    the command line), else of the demo's default preset.
    """
    parser = _Parser(prog=f"gnkit {demo.name}", description=demo.description)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in demo.verbs:
        sub = verbs.add_parser(
            verb.name,
            help=verb.help,
            description=verb.help,
            epilog=_epilog(demo, verb, preset),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common_flags(sub, demo, verb)
        if verb.add_flags is not None:
            verb.add_flags(sub)
    return parser


def _overrides(demo: Demo, args: argparse.Namespace) -> tuple[dict, dict[str, str]]:
    """`({key: typed value}, {key: the flag that set it})` from `--set`, the demo's field
    flags (`Demo.flag_fields`) and `--seed`, later ones winning."""
    changes, sources = {}, {}
    for item in args.set:
        key, value = parse_override(demo.config_type, item)
        changes[key], sources[key] = value, f"--set {item}"
    for field in demo.flag_fields:
        text = getattr(args, _FIELD_DEST + field, None)
        if text is not None:
            flag = f"{_field_flag(field)} {text}"
            key, value = parse_override(demo.config_type, f"{field}={text}", flag)
            changes[key], sources[key] = value, flag
    if args.seed is not None:
        changes["seed"], sources["seed"] = args.seed, f"--seed {args.seed}"
    return changes, sources


def _resolve(
    demo: Demo, verb: Verb, args: argparse.Namespace
) -> tuple[Any, RunDir | None, str | None]:
    """The verb's config (checked), run directory (checked, not yet written) and the preset
    the config started from (None when it came from the run directory's `config.json`)."""
    if not verb.configured:
        return None, None, None
    earlier = open_existing(args.run_dir, demo.config_type) if verb.run_dir == "existing" else None
    saved = None
    if earlier is None and args.config is None and verb.run_dir is not None:
        saved = saved_config(args.run_dir, demo.config_type)
    if earlier is not None or saved is not None:
        preset, base = None, earlier.config if earlier is not None else saved
    else:
        preset = args.config or demo.default
        base = demo.presets[preset]
    changes, sources = _overrides(demo, args)
    try:
        config = dataclasses.replace(base, **changes)
    except ValueError as error:
        raise UsageError(f"{'; '.join(sources.values())}: {error}") from None
    check_config(config, sources)
    if verb.run_dir == "create":
        return config, open_for_config(args.run_dir, config), preset
    return config, earlier, preset


def _check_outputs(args: argparse.Namespace) -> None:
    if args.json is not None and args.json != "-":
        check_writable(Path(args.json), "--json", directory=False)
    if args.plot is not None:
        check_writable(args.plot, "--plot", directory=False)


def _options(args: argparse.Namespace, preset: str | None, should_stop: StopRequest) -> Options:
    own = {key: value for key, value in vars(args).items() if key not in _COMMON}
    return Options(
        verb=args.verb,
        preset=preset,
        parallel=getattr(args, "parallel", "single"),
        json_path=args.json,
        plot=args.plot,
        progress=not args.no_progress,
        flags=argparse.Namespace(**own),
        should_stop=should_stop,
        verbose=args.verbose,
    )


def _report(results: Mapping[str, Any] | None, run_dir: RunDir | None, args, stdout) -> None:
    """Write the results to `<verb>.json` in the run directory and to `--json` (`-`: `stdout`)."""
    if results is None:
        return
    if not isinstance(results, Mapping):
        raise TypeError(f"verb {args.verb} returned {type(results).__name__}, expected a dict")
    if run_dir is not None and run_dir.exists:
        write_json(run_dir.file(f"{args.verb}.json"), results)
    if args.json == "-":
        stdout.write(to_json(results))
        stdout.flush()
    elif args.json is not None:
        write_json(args.json, results)


def _describe(checkpoints: Mapping[str, tuple[Path, int | None]], run_path: Path) -> str:
    """`model checkpoints/x/best.msgpack (update 40), ...` for the closing and eval lines."""
    parts = []
    for name, (path, step) in checkpoints.items():
        where = path.relative_to(run_path) if path.is_relative_to(run_path) else path
        update = "update unknown" if step is None else f"update {step}"
        parts.append(f"{name + ' ' if name else ''}{where} ({update})")
    return ", ".join(parts)


def _check_trained(demo: Demo, args: argparse.Namespace) -> None:
    """Before a verb that reads an earlier run: name the checkpoints it will use (a run without
    `checkpoints/` is left to the verb); `UsageError` if a model was never trained (its latest
    checkpoint is at update 0, whichever state the report uses), unless `--untrained`."""
    run_path = Path(args.run_dir)
    checkpoints = report_checkpoints(run_path)
    train = f"gnkit {demo.name} train --run-dir {shlex.quote(str(run_path))}"
    untrained = [name or "the model" for name in checkpoints
                 if trained_updates(run_path, name) == 0]
    if untrained and not args.untrained:
        raise UsageError(
            f"--run-dir {run_path}: {', '.join(untrained)} at update 0 (nothing trained); "
            f"train first ({train}), or pass --untrained to evaluate the initial parameters"
        )
    if checkpoints:
        print(f"{args.verb}: {run_path}: {_describe(checkpoints, run_path)}", flush=True)


def _next_command(demo: Demo, run_path: Path) -> str | None:
    """The command that evaluates the run at `run_path`: the demo's `eval` verb, reading the
    run with `--run-dir` or, for an `eval` without a run directory, `--checkpoint`."""
    names = [verb.name for verb in demo.verbs]
    if "eval" not in names:
        return None
    verb = demo.verb("eval")
    path = shlex.quote(str(run_path))
    if verb.run_dir == "existing":
        return f"gnkit {demo.name} eval --run-dir {path}"
    parser = argparse.ArgumentParser(add_help=False)
    if verb.add_flags is not None:
        verb.add_flags(parser)
    options = {option for action in parser._actions for option in action.option_strings}
    return f"gnkit {demo.name} eval --checkpoint {path}" if "--checkpoint" in options else None


def _closing_lines(demo: Demo, run_dir: RunDir, args: argparse.Namespace) -> str:
    """Where a training command's outputs went, and what to run next."""
    run_path = run_dir.path
    checkpoints = report_checkpoints(run_path)
    lines = [f"run directory: {run_path}"]
    if checkpoints:
        lines.append(f"  checkpoints: {_describe(checkpoints, run_path)}")
    figures = sorted(path.name for path in run_path.glob("*.png"))
    if args.plot is not None and Path(args.plot).exists():
        figures = [str(args.plot), *figures]
    if figures:
        lines.append(f"  figures: {', '.join(figures)}")
    results = run_path / f"{args.verb}.json"
    if results.exists():
        lines.append(f"  results: {results.name}")
    command = _next_command(demo, run_path)
    if command is not None:
        lines.append(f"next: {command}")
    return "\n".join(lines)


def _verb_list(demo: Demo) -> str:
    names = ", ".join(verb.name for verb in demo.verbs)
    return f"{names} (`gnkit {demo.name} --help` describes each)"


def _preset_in(argv: Sequence[str]) -> str | None:
    """The value of `--config` in `argv` (before parsing, for the help's field values)."""
    for index, item in enumerate(argv):
        if item == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if item.startswith("--config="):
            return item.split("=", 1)[1]
    return None


def _parse(demo: Demo, argv: Sequence[str]) -> argparse.Namespace:
    names = [verb.name for verb in demo.verbs]
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        raise UsageError(f"expected a verb first: {_verb_list(demo)}")
    if argv[0] not in names and not argv[0].startswith("-"):
        nearest = difflib.get_close_matches(argv[0], names, n=1, cutoff=0.5)
        hint = f"did you mean {nearest[0]!r}? " if nearest else ""
        raise UsageError(f"unknown verb {argv[0]!r}; {hint}the verbs: {_verb_list(demo)}")
    parser = build_parser(demo, _preset_in(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        raise UsageError(_unrecognized(unknown, _verb_parser(parser, args.verb)))
    return args


def _verb_parser(parser: argparse.ArgumentParser, verb: str) -> argparse.ArgumentParser:
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return subparsers.choices[verb]


def _unrecognized(unknown: Sequence[str], verb_parser: argparse.ArgumentParser) -> str:
    """`unrecognized arguments: ...`, and the verb's flag nearest to the first mistyped one."""
    flags = [option for action in verb_parser._actions for option in action.option_strings]
    message = f"unrecognized arguments: {' '.join(unknown)}"
    for item in unknown:
        if item.startswith("--"):
            nearest = difflib.get_close_matches(item.split("=", 1)[0], flags, n=1, cutoff=0.6)
            if nearest:
                return f"{message}; did you mean {nearest[0]!r}? (`{verb_parser.prog} --help`)"
    return f"{message} (`{verb_parser.prog} --help` lists the flags)"


def _run_verb(demo: Demo, argv: Sequence[str], should_stop: StopRequest) -> int:
    args = _parse(demo, argv)
    if demo.extra is not None:
        extras.require(demo.extra, f"the {demo.name} demo")
    verb = demo.verb(args.verb)
    config, run_dir, preset = _resolve(demo, verb, args)
    stdout = sys.stdout
    human = sys.stderr if args.json == "-" else sys.stdout
    try:
        with contextlib.redirect_stdout(human):
            _check_outputs(args)
            if verb.run_dir == "existing":
                _check_trained(demo, args)
            if run_dir is not None and run_dir.extended is not None:
                key = run_dir.extended
                print(f"continuing {run_dir.path} to {key}={getattr(config, key)}", flush=True)
            results = verb.function(config, run_dir, _options(args, preset, should_stop))
            _report(results, run_dir, args, stdout)
            if verb.run_dir == "create" and run_dir.exists and not should_stop():
                print(_closing_lines(demo, run_dir, args), flush=True)
    finally:
        if run_dir is not None:
            run_dir.release()
    return should_stop.exit_code if should_stop() else 0


def run_verb(
    demo: Demo,
    verb_name: str,
    config: Any = None,
    run_dir: str | Path | None = None,
    *,
    parallel: str = "single",
    progress: bool = True,
    plot: str | Path | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    **flags: Any,
) -> Mapping[str, Any] | None:
    """Run one verb from Python (a notebook, a test) as `run` does from the command line.

    Errors are raised, not turned into exit statuses.

    Args:
      demo: the demo.
      verb_name: the verb to run (`train`, `eval`, ...).
      config: the demo's config, checked like a preset with `--set` applied (`UsageError` if it
        breaks a rule); None means the default preset, or for an `"existing"` verb the config
        saved in `run_dir`. Ignored by a verb that takes no config.
      run_dir: opened as the verb declares: a new directory or the same config to resume
        (`"create"`), an earlier run (`"existing"`); unused by a verb without a run directory.
      parallel: as `--parallel`: `single`, `pmap` or `mesh`.
      progress: print progress (False: as `--no-progress`).
      plot: as `--plot`: where the verb's main figure goes; None means the run directory.
      should_stop: polled by the verb; True asks it to stop (as a signal does on the command
        line).
      **flags: the verb's own flags, by their argparse names (`options.flags`).

    Returns:
      The verb's results (or None), also written to `<verb>.json` in the run directory.
    """
    verb = demo.verb(verb_name)
    earlier = None
    if verb.run_dir == "existing":
        earlier = open_existing(Path(run_dir), demo.config_type)
        config = earlier.config if config is None else config
    if verb.configured:
        config = check_config(demo.presets[demo.default] if config is None else config)
    if verb.run_dir == "create":
        earlier = open_for_config(Path(run_dir), config)
    options = Options(
        verb=verb_name,
        preset=None,
        parallel=parallel,
        json_path=None,
        plot=None if plot is None else Path(plot),
        progress=progress,
        flags=argparse.Namespace(**flags),
        should_stop=should_stop,
    )
    try:
        results = verb.function(config, earlier, options)
        _report(results, earlier, argparse.Namespace(verb=verb_name, json=None), sys.stdout)
    finally:
        if earlier is not None:
            earlier.release()
    return results


def run(demo: Demo, argv: Sequence[str] | None = None) -> int:
    """Run `gnkit DEMO ARGV...` and return the exit status.

    0 on success; 2 for bad input (`UsageError`, argparse errors), reported as one line,
    `gnkit DEMO: error: ...`, on stderr; after a stop request, 130 (SIGINT) or 143 (SIGTERM),
    whether the verb returned or let `gnkit.train.TrainingStopped` out (`fit` has printed the
    line naming the step saved). SIGINT / SIGTERM while the verb runs set `options.should_stop`
    (`gnkit.train.stop_on_signals`, entered here and nowhere else); the first signal puts the
    previous handlers back, so a second Ctrl-C interrupts at once (status 130). A missing
    package of the `demos` extra, or of the demo's own (`Demo.extra`), is one line naming the
    install command, status 2, before anything runs (`--help` works without the demo's own).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    missing = missing_demo_extras()
    if missing:
        print(f"gnkit {demo.name}: error: {demo_extras_message(missing)}", file=sys.stderr)
        return 2
    try:
        with stop_on_signals() as should_stop:
            return _run_verb(demo, argv, should_stop)
    except (UsageError, extras.MissingExtraError) as error:
        print(f"gnkit {demo.name}: error: {error}", file=sys.stderr)
        return 2
    except TrainingStopped as stopped:
        return stopped.exit_code
    except KeyboardInterrupt:
        print(f"gnkit {demo.name}: interrupted", file=sys.stderr)
        return exit_status(signal.SIGINT)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 0
