"""The README's Quickstart is two commands, and CI runs the second one verbatim."""

import pathlib
import re

import pytest

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


def _python_examples():
    readme = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", readme, re.S)


def _matches(printed: str, expected: str) -> bool:
    """Same words and integers; percentages within 2 points (training results vary by JAX
    version)."""
    number = r"-?\d+(?:\.\d+)?%?"
    if re.sub(number, "#", printed) != re.sub(number, "#", expected):
        return False
    for got, want in zip(re.findall(number, printed), re.findall(number, expected), strict=True):
        if want.endswith("%"):
            if abs(float(got[:-1]) - float(want[:-1])) > 2:
                return False
        elif got != want:
            return False
    return True


def test_readme_has_a_graph_example_and_a_training_example():
    examples = _python_examples()
    assert len(examples) == 2
    assert "optax" in examples[1] and "gn.nnx." in examples[1]  # the training example is NNX


@pytest.mark.parametrize("index", [0, 1])
def test_readme_python_example_runs_and_prints_what_it_says(index, capsys):
    code = _python_examples()[index]
    exec(compile(code, "README.md", "exec"), {})
    expected = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    assert _matches(capsys.readouterr().out.strip(), expected)


def test_matching_allows_only_small_percentage_changes():
    assert _matches("(64, 4) 16", "(64, 4) 16")
    assert not _matches("(64, 4) 17", "(64, 4) 16")
    assert _matches("test accuracy 98%", "test accuracy 99%")
    assert not _matches("test accuracy 90%", "test accuracy 99%")
    assert not _matches("train accuracy 99%", "test accuracy 99%")
