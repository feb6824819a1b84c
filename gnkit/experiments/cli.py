"""The entry point every demo shares: `run(demo, argv)` parses, checks, runs a verb, reports.

Common flags, the same everywhere: `--config PRESET`, `--set KEY=VALUE` (repeatable, typed by
the field), `--seed N` (sets `seed`), `--run-dir DIR`, `--json PATH` (the verb's results; `-`
for stdout), `--plot PATH`, `--parallel single|pmap|mesh`, `--no-progress`. Everything the user
can get wrong is checked before the verb runs and before anything is written; a `UsageError`
(from here or from the verb) becomes one line on stderr and exit status 2. Host.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gnkit.experiments.config import check_config, describe_fields
from gnkit.experiments.demo import Demo, Options, Verb
from gnkit.experiments.errors import UsageError
from gnkit.experiments.overrides import parse_override
from gnkit.experiments.results import write_json
from gnkit.experiments.run_dir import RunDir, check_writable, open_existing, open_for_config
from gnkit.parallel import MODES
from gnkit.train import StopRequest, TrainingStopped, exit_status, stop_on_signals

PARALLEL_MODES = MODES
_COMMON = ("verb", "config", "set", "seed", "run_dir", "json", "plot", "parallel", "no_progress")


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are `UsageError`s (one line), not usage text and `exit(2)`."""

    def error(self, message: str):
        raise UsageError(message)


def _epilog(demo: Demo, verb: Verb) -> str | None:
    if not verb.configured:
        return None
    presets = ", ".join(demo.presets)
    fields = describe_fields(demo.presets[demo.default])
    start = "; this verb starts from the run's config.json" if verb.run_dir == "existing" else ""
    return (
        f"presets: {presets} (default {demo.default})\n"
        f"config fields for --set KEY=VALUE (values of preset {demo.default}{start}):\n{fields}"
    )


def _add_config_flags(parser: argparse.ArgumentParser, demo: Demo, verb: Verb) -> None:
    if verb.run_dir != "existing":
        parser.add_argument(
            "--config",
            choices=list(demo.presets),
            default=demo.default,
            metavar="PRESET",
            help=f"config preset: {', '.join(demo.presets)}",
        )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable); typed by the field",
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
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON (- for stdout)")
    parser.add_argument("--plot", type=Path, metavar="PATH", help="save the figure here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_parser(demo: Demo) -> argparse.ArgumentParser:
    """`gnkit DEMO VERB [flags]`: one subcommand per verb, common flags plus the verb's own."""
    parser = _Parser(prog=f"gnkit {demo.name}", description=demo.description)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in demo.verbs:
        sub = verbs.add_parser(
            verb.name,
            help=verb.help,
            description=verb.help,
            epilog=_epilog(demo, verb),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common_flags(sub, demo, verb)
        if verb.add_flags is not None:
            verb.add_flags(sub)
    return parser


def _overrides(demo: Demo, args: argparse.Namespace) -> tuple[dict, dict[str, str]]:
    """`({key: typed value}, {key: the flag that set it})` from `--set` and `--seed`."""
    changes, sources = {}, {}
    for item in args.set:
        key, value = parse_override(demo.config_type, item)
        changes[key], sources[key] = value, f"--set {item}"
    if args.seed is not None:
        changes["seed"], sources["seed"] = args.seed, f"--seed {args.seed}"
    return changes, sources


def _resolve(demo: Demo, verb: Verb, args: argparse.Namespace) -> tuple[Any, RunDir | None]:
    """The verb's config (checked) and run directory (checked, not yet written)."""
    if not verb.configured:
        return None, None
    earlier = open_existing(args.run_dir, demo.config_type) if verb.run_dir == "existing" else None
    base = earlier.config if earlier is not None else demo.presets[args.config]
    changes, sources = _overrides(demo, args)
    try:
        config = dataclasses.replace(base, **changes)
    except ValueError as error:
        raise UsageError(f"{'; '.join(sources.values())}: {error}") from None
    check_config(config, sources)
    if verb.run_dir == "create":
        return config, open_for_config(args.run_dir, config)
    return config, earlier


def _check_outputs(args: argparse.Namespace) -> None:
    if args.json is not None and args.json != "-":
        check_writable(Path(args.json), "--json", directory=False)
    if args.plot is not None:
        check_writable(args.plot, "--plot", directory=False)


def _options(args: argparse.Namespace, should_stop: StopRequest) -> Options:
    own = {key: value for key, value in vars(args).items() if key not in _COMMON}
    return Options(
        verb=args.verb,
        preset=getattr(args, "config", None),
        parallel=getattr(args, "parallel", "single"),
        json_path=args.json,
        plot=args.plot,
        progress=not args.no_progress,
        flags=argparse.Namespace(**own),
        should_stop=should_stop,
    )


def _report(results: Mapping[str, Any] | None, run_dir: RunDir | None, args) -> None:
    if results is None:
        return
    if not isinstance(results, Mapping):
        raise TypeError(f"verb {args.verb} returned {type(results).__name__}, expected a dict")
    if run_dir is not None and run_dir.exists:
        write_json(run_dir.file(f"{args.verb}.json"), results)
    if args.json is not None:
        write_json(args.json, results)


def _run_verb(demo: Demo, argv: Sequence[str], should_stop: StopRequest) -> int:
    from gnkit import tuning

    tuning.use_fast_allocator_for_training()
    args = build_parser(demo).parse_args(argv)
    verb = demo.verb(args.verb)
    config, run_dir = _resolve(demo, verb, args)
    try:
        _check_outputs(args)
        results = verb.function(config, run_dir, _options(args, should_stop))
        _report(results, run_dir, args)
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

    `config` is checked like a preset with `--set` applied (`UsageError` if it breaks a rule);
    `run_dir` is opened as the verb declares: a new directory or the same config to resume
    (`"create"`), an earlier run whose saved config is used when `config` is None
    (`"existing"`). `flags` are the verb's own flags. Returns the verb's results, also written
    to `<verb>.json` in the run directory. Errors are raised, not turned into exit statuses.
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
        _report(results, earlier, argparse.Namespace(verb=verb_name, json=None))
    finally:
        if earlier is not None:
            earlier.release()
    return results


def run(demo: Demo, argv: Sequence[str] | None = None) -> int:
    """Run `gnkit DEMO ARGV...` and return the exit status.

    0 on success; 2 for bad input (`UsageError`, argparse errors), reported as one line,
    `gnkit DEMO: error: ...`, on stderr; after a stop request, 130 (SIGINT) or 143 (SIGTERM),
    whether the verb returned or let `gnkit.train.TrainingStopped` out (`fit` has printed the
    line naming the step saved). Before anything else, glibc's malloc is set to reuse freed memory
    (`gnkit.tuning.use_fast_allocator_for_training`; `GNKIT_SYSTEM_MALLOC=1` opts out).
    SIGINT / SIGTERM while the verb runs set `options.should_stop`
    (`gnkit.train.stop_on_signals`, entered here and nowhere else); the first signal puts the
    previous handlers back, so a second Ctrl-C interrupts at once (status 130).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with stop_on_signals() as should_stop:
            return _run_verb(demo, argv, should_stop)
    except UsageError as error:
        print(f"gnkit {demo.name}: error: {error}", file=sys.stderr)
        return 2
    except TrainingStopped as stopped:
        return stopped.exit_code
    except KeyboardInterrupt:
        print(f"gnkit {demo.name}: interrupted", file=sys.stderr)
        return exit_status(signal.SIGINT)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 0
