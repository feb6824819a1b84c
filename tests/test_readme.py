"""The README's Quickstart is two commands, and CI runs the second one verbatim."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _quickstart_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:bash|sh)\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quickstart_has_two_commands():
    commands = _quickstart_commands()
    assert len(commands) == 2, commands
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _quickstart_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_readme_python_example_runs_and_prints_what_it_says(capsys):
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    expected = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    assert capsys.readouterr().out.strip() == expected
