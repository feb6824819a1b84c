"""The `gnkit` command as a new user meets it: the demo list, `--version`, `python -m gnkit`,
a mistyped demo or verb, and a base install without the `demos` extra (tyro, matplotlib or
rich made unimportable in a child interpreter by a meta-path blocker)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from gnkit import cli

_BLOCKED_RUN = """
import importlib.abc, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
{call}
print("modules:", sorted(m for m in sys.modules if m.startswith(("gnkit.demos", "tyro"))))
sys.exit(status)
"""


def _run_blocked(blocked: set[str], call: str, cwd) -> subprocess.CompletedProcess:
    script = _BLOCKED_RUN.format(blocked=blocked, call=textwrap.dedent(call))
    return subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_help_describes_every_demo(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, about) in cli.DEMOS.items():
        assert f"  {name}" in out and about in out
    assert cli.main([]) == 0 and capsys.readouterr().out == out


def test_version_from_the_command_and_from_python_m(capsys):
    version = metadata.version("gnkit")
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"gnkit {version}\n"
    done = subprocess.run(
        [sys.executable, "-m", "gnkit", "--version"], capture_output=True, text=True, timeout=300
    )
    assert (done.returncode, done.stdout) == (0, f"gnkit {version}\n")


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["sodoku", "demo"],
            "gnkit: error: unknown demo 'sodoku'; did you mean 'sudoku'? (demos: sudoku, sort, ",
        ),
        (["frobnicate"], "gnkit: error: unknown demo 'frobnicate' (demos: sudoku, sort, "),
        (["sort"], "gnkit sort: error: expected a verb first: train, eval (`gnkit sort --help`"),
        (["sort", "trian"], "gnkit sort: error: unknown verb 'trian'; did you mean 'train'? "),
    ],
)
def test_a_mistyped_name_is_one_line_on_stderr(capsys, argv, message):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(message) and captured.err.count("\n") == 1, captured.err


@pytest.mark.parametrize(
    "blocked", ["tyro", "matplotlib", pytest.param("rich", marks=pytest.mark.slow)]
)
def test_without_the_demos_extra_one_line_names_the_install_before_any_work(tmp_path, blocked):
    done = _run_blocked(
        {blocked},
        "from gnkit import cli\n"
        "status = cli.main(['sort', 'train', '--config', 'tiny', '--run-dir', 'run'])\n",
        tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f'gnkit sort: error: the demos need {blocked} (not installed): pip install "gnkit[demos]"\n'
    )
    assert "modules: []" in done.stdout  # no demo module (and no tyro) imported
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_without_the_demos_extra_the_demo_list_still_works(tmp_path):
    done = _run_blocked(
        {"tyro", "matplotlib", "rich"},
        "from gnkit import cli\nstatus = cli.main(['--help'])\n",
        tmp_path,
    )
    assert done.returncode == 0 and "sort-of-clevr" in done.stdout and done.stderr == ""


@pytest.mark.slow
def test_a_demo_run_directly_checks_the_extra_too(tmp_path):
    """`python -m gnkit.demos.sort` (tyro present, matplotlib not): the same line, exit 2,
    before training, instead of training and losing the report when the plot is drawn."""
    done = _run_blocked(
        {"matplotlib"},
        "from gnkit.demos import sort\n"
        "status = sort.main(['train', '--config', 'tiny', '--run-dir', 'run'])\n",
        tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith('need matplotlib (not installed): pip install "gnkit[demos]"\n')
    assert not (tmp_path / "run").exists()


def test_a_mistyped_flag_of_a_demo_verb_names_the_nearest_flag(capsys):
    assert cli.main(["molecules", "train", "--dataa", "freesolv"]) == 2
    assert capsys.readouterr().err == (
        "gnkit molecules: error: unrecognized arguments: --dataa freesolv; did you mean "
        "'--data'? (`gnkit molecules train --help`)\n"
    )


@pytest.mark.parametrize("name", list(cli.DEMOS))
def test_every_demo_describes_each_preset_in_its_help(name, capsys):
    demo = importlib.import_module(cli.DEMOS[name][0]).DEMO
    configured = next(verb.name for verb in demo.verbs if verb.configured)
    assert cli.main([name, configured, "--help"]) == 0
    out = capsys.readouterr().out
    for preset in demo.presets:
        note = demo.preset_notes.get(preset, "")
        assert note and f"\n  {preset}: {note}\n" in out, preset
