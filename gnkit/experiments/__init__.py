"""A small experiment framework: every gnkit demo gets the same verbs, flags and run directories.

A demo declares a typed config (a frozen dataclass, named presets `default`, `quick`, `paper`,
`tiny`) and its verbs; `run(demo, argv)` does the rest (`run_verb(demo, verb, config, run_dir)`
calls one verb the same way from Python). A demo that trains and compares named models gets its
`train` and `eval` verbs from the comparison runner, `gnkit.experiments.runner`:

- flags with one meaning everywhere: `--config PRESET`, `--set KEY=VALUE` (repeatable, parsed by
  the field's declared type: bool, int, float, str, tuples, `Literal[...]`, unions such as
  `bool | Literal["block"]` or `int | None`), `--seed`, `--run-dir`, `--json`, `--plot`,
  `--parallel single|pmap|mesh`, `--no-progress`, `--verbose`, plus each verb's own flags (a
  mistyped flag is named with the nearest one);
- run directories (`config.json`, `metrics.jsonl`, `checkpoints/`, `<verb>.json`): a run of
  another config is refused naming the keys that differ, the same config resumes, and nothing
  is written before the verb asks for a path;
- bad input of any kind (out-of-range value, unknown key, wrong type, unusable run directory or
  output path, unreadable data file or checkpoint) is one line naming the flag or file, exit
  status 2, no traceback: verbs raise `UsageError` (helpers: `file_error`, `reading_file`,
  `check_shape`), and declared minimums (`setting(..., minimum=1)`) or `validate()` are
  checked before anything runs;
- `--json` results, figures only where asked or into the run directory (`Options.plot_path`),
  matplotlib imported on first use (`pyplot`); nothing is ever written inside the gnkit package;
- verbs that take no config (`Verb(configured=False)`: their model comes from a flag) get no
  config flags; `at_least(minimum)` types a verb's own numeric flags;
- SIGINT / SIGTERM handled by the entry point only (`gnkit.train.stop_on_signals`): verbs poll
  `options.should_stop()` or pass it to `gnkit.train.fit`; a stopped command exits with 130
  (SIGINT) or 143 (SIGTERM), and a second Ctrl-C interrupts at once.

Typed values are parsed with tyro's constructor registry (see `overrides` for why tyro, and why
argparse lays out the verbs). Host.
"""

from gnkit.experiments.checkpoints import load_model_state
from gnkit.experiments.cli import PARALLEL_MODES, build_parser, run, run_verb
from gnkit.experiments.config import check_config, setting
from gnkit.experiments.demo import Demo, Options, Verb
from gnkit.experiments.errors import UsageError, check_shape, file_error, reading_file
from gnkit.experiments.flags import at_least
from gnkit.experiments.overrides import parse_override, parse_value
from gnkit.experiments.results import pyplot, save_figure, to_json, write_json
from gnkit.experiments.run_dir import RunDir, check_outside_package, check_writable

__all__ = [
    "PARALLEL_MODES",
    "Demo",
    "Options",
    "RunDir",
    "UsageError",
    "Verb",
    "at_least",
    "build_parser",
    "check_outside_package",
    "check_config",
    "check_shape",
    "check_writable",
    "file_error",
    "load_model_state",
    "parse_override",
    "parse_value",
    "pyplot",
    "reading_file",
    "run",
    "run_verb",
    "save_figure",
    "setting",
    "to_json",
    "write_json",
]
