"""The `Example:` sections of `gnkit.nn`'s modules: every module class has one, and each runs
as a doctest (a tiny graph, `init`, `apply`, the output's shape)."""

import doctest
import inspect

import pytest

import gnkit.nn

CLASSES = [name for name in gnkit.nn.__all__ if inspect.isclass(getattr(gnkit.nn, name))]


@pytest.mark.parametrize("name", CLASSES)
def test_every_module_class_has_an_example_that_runs(name):
    cls = getattr(gnkit.nn, name)
    (test,) = doctest.DocTestFinder(recurse=False).find(cls, name, globs={})
    assert len(test.examples) >= 4, f"gnkit.nn.{name} has no example"
    assert test.examples[-1].want.strip(), "the example ends without showing an output"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"gnkit.nn.{name}'s example fails"
