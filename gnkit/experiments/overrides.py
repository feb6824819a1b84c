"""Typed `--set key=value` overrides: each value is parsed by its config field's declared type.

The string-to-value step is tyro's (`tyro.constructors.ConstructorRegistry`, the public rule
registry behind `tyro.cli`): it turns command-line tokens into `bool`, `int`, `float`, `str`,
fixed and variable tuples (nested too), `Literal[...]` and unions such as
`bool | Literal["block"]` or `int | None`, and knows each type's choices and token count. Why
not all of tyro, simple-parsing, ml_collections or absl flags for the whole CLI: a demo keeps
named presets and `--set KEY=VALUE`, and every bad input must be one line naming the key.
`tyro.cli` builds one flag per field (`--hidden-size 64`), picks presets through subcommands and
reports errors as a multi-line panel; simple-parsing's union and `Literal` support is thinner;
ml_collections parses `--config.key` by the *current* value's type (so `int | None = None`
cannot take an int) and, like absl flags, registers flags in a process-wide registry that does
not suit `run(demo, argv)` called many times from tests. So argparse lays out the verbs and
flags, and tyro parses each value.

Value syntax: the text after the first `=` is the value; tuples take comma- or space-separated
items, brackets and parentheses ignored (`train_sizes=8,16`, `test_sizes=[[8,16],[16,32]]`);
`None`, `True` and `False` are spelled as in Python (`true` / `false` also work for a bool).
Host.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from gnkit.experiments.errors import UsageError

if TYPE_CHECKING:
    import tyro.constructors

_ITEM_SEPARATORS = re.compile(r"[\s,()\[\]]+")


@functools.cache
def field_types(config_type: type) -> dict[str, Any]:
    """`{field name: declared type}` of a config dataclass, string annotations resolved."""
    hints = typing.get_type_hints(config_type)
    return {field.name: hints[field.name] for field in dataclasses.fields(config_type)}


def type_name(annotation: Any) -> str:
    """A short readable name: `int | None`, `bool | Literal['block']`, `tuple[int, int]`."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(argument) for argument in arguments)
    if origin is Literal:
        return "Literal[" + ", ".join(repr(argument) for argument in arguments) + "]"
    if origin is not None:
        inner = ", ".join("..." if item is Ellipsis else type_name(item) for item in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    return getattr(annotation, "__name__", str(annotation))


@functools.cache
def _registry() -> tyro.constructors.ConstructorRegistry:
    """tyro's rules, imported on first use: only parsing a value needs tyro."""
    import tyro.constructors

    return tyro.constructors.ConstructorRegistry()


def _spec(annotation: Any) -> tyro.constructors.PrimitiveConstructorSpec:
    import tyro.constructors

    info = tyro.constructors.PrimitiveTypeInfo.make(annotation, set())
    spec = _registry().get_primitive_spec(info)
    if isinstance(spec, tyro.constructors.UnsupportedTypeAnnotationError):
        detail = f": {spec}" if str(spec) else ""
        raise TypeError(f"config fields of type {type_name(annotation)} cannot be set{detail}")
    return spec


def check_settable(config_type: type) -> None:
    """Raise `TypeError` naming the first field whose type `--set` cannot parse."""
    for name, annotation in field_types(config_type).items():
        try:
            _spec(annotation)
        except TypeError as error:
            raise TypeError(f"{config_type.__name__}.{name}: {error}") from error


def _tokens(text: str, nargs: int | tuple[int, ...] | str) -> list[str]:
    if nargs == 1:
        return [text]
    return [item for item in _ITEM_SEPARATORS.split(text) if item]


def _count_fits(count: int, nargs: int | tuple[int, ...] | str) -> bool:
    if isinstance(nargs, int):
        return count == nargs
    if isinstance(nargs, tuple):
        return count in nargs
    return nargs == "*" or count >= 1


def _match_choice(token: str, choices: Sequence[str]) -> str | None:
    if token in choices:
        return token
    folded = [choice for choice in choices if choice.lower() == token.lower()]
    return folded[0] if len(folded) == 1 else None


def parse_value(annotation: Any, text: str) -> Any:
    """`text` parsed as a value of type `annotation`; `ValueError` if it is not one."""
    spec = _spec(annotation)
    tokens = _tokens(text, spec.nargs)
    if not _count_fits(len(tokens), spec.nargs):
        raise ValueError(f"{len(tokens)} items")
    if spec.choices is not None:
        matched = [_match_choice(token, tuple(spec.choices)) for token in tokens]
        if None in matched:
            raise ValueError("not a choice")
        tokens = matched
    return spec.instance_from_str(tokens)


def _expected(annotation: Any) -> str:
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(str(choice) for choice in typing.get_args(annotation))
    spec = _spec(annotation)
    if spec.nargs == 1:
        return type_name(annotation)
    return f"{type_name(annotation)}, items separated by commas"


def parse_override(config_type: type, assignment: str, flag: str | None = None
                   ) -> tuple[str, Any]:
    """`"key=value"` -> `(key, typed value)` for a field of `config_type`; else `UsageError`.

    The error is one line naming the flag as written (`flag`, default `--set KEY=VALUE`), the
    key and the expected type, or the known keys.
    """
    key, separator, text = assignment.partition("=")
    key = key.strip()
    known = field_types(config_type)
    written = flag or f"--set {assignment}"
    if not separator:
        raise UsageError(f"{written}: expected KEY=VALUE")
    if key not in known:
        raise UsageError(
            f"{written}: unknown key {key!r}; keys: {', '.join(sorted(known))}"
        )
    annotation = known[key]
    try:
        return key, parse_value(annotation, text)
    except ValueError:
        raise UsageError(f"{written}: expected {_expected(annotation)}") from None
