"""Demo configs: frozen dataclasses with simple declared constraints, saved as JSON.

A field declares a lower bound with `setting(default, minimum=1)` (every number inside a tuple
is checked too); a config may also define `validate(self)` that raises `ValueError` for rules
across fields. `check_config` runs both and turns a failure into a one-line `UsageError` that
names the key and where its value came from (`--set`, `--seed` or the preset). Host.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gnkit.experiments.errors import UsageError, file_error
from gnkit.experiments.overrides import field_types, type_name

_MINIMUM = "gnkit.minimum"
_HELP = "gnkit.help"


def setting(default: Any, *, minimum: float | None = None, help: str | None = None) -> Any:
    """A config field with a `default`, an optional inclusive `minimum` and a `help` line.

    `updates: int = setting(2_500, minimum=1)`; for a tuple field the minimum applies to every
    number in it (`train_sizes: tuple[int, int] = setting((8, 16), minimum=1)`).
    """
    metadata = {_MINIMUM: minimum, _HELP: help}
    return dataclasses.field(default=default, metadata=metadata)


def _numbers(value: Any) -> Iterable[float]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _numbers(item)


def _below_minimum(config: Any) -> tuple[str, float] | None:
    for field in dataclasses.fields(config):
        minimum = field.metadata.get(_MINIMUM)
        if minimum is None:
            continue
        if any(number < minimum for number in _numbers(getattr(config, field.name))):
            return field.name, minimum
    return None


def check_config(config: Any, sources: Mapping[str, str] | None = None) -> Any:
    """`config` unchanged if every declared minimum and `config.validate()` hold.

    `sources` maps a key to the flag that set it (`"--set updates=0"`); a failure is a
    `UsageError` such as `--set updates=0: updates must be >= 1`.
    """
    sources = sources or {}
    failure = _below_minimum(config)
    if failure is not None:
        key, minimum = failure
        value = getattr(config, key)
        where = sources.get(key, f"config value {key}={value!r}")
        number = f"every number in {key}" if isinstance(value, tuple) else key
        raise UsageError(f"{where}: {number} must be >= {minimum:g}")
    validate = getattr(config, "validate", None)
    if validate is not None:
        try:
            validate()
        except ValueError as error:
            given = "; ".join(sources.values())
            raise UsageError(f"{given or 'config'}: {error}") from None
    return config


def config_dict(config: Any) -> dict[str, Any]:
    """The config as JSON-ready values (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def _as_tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_as_tuples(item) for item in value)
    return value


def differing_keys(saved: Mapping[str, Any], config: Any) -> list[str]:
    """Keys whose saved (JSON) value differs from `config`'s, or that only one side has
    (retired options saved at their no-op value count as absent)."""
    retired = getattr(type(config), "RETIRED_SETTINGS", {})
    saved = {k: v for k, v in saved.items() if k not in retired or v != retired[k]}
    current = config_dict(config)
    keys = saved.keys() | current.keys()
    return sorted(key for key in keys if saved.get(key) != current.get(key))


def read_config_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path` (a run's `config.json`); `UsageError` if it is not one."""
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise file_error(path, f"a config JSON object ({type(error).__name__})") from None
    if not isinstance(values, dict):
        raise file_error(path, "a config JSON object")
    return values


def _without_retired(config_type: type, values: Mapping[str, Any], path: Path) -> dict:
    """`values` without the options `config_type.RETIRED_SETTINGS` names (a mapping from a
    removed field to the value that made it a no-op), so a run saved before an option was
    removed still loads; a run that had a removed option switched on is refused."""
    retired = getattr(config_type, "RETIRED_SETTINGS", {})
    for key in sorted(set(values) & set(retired)):
        if values[key] != retired[key]:
            raise file_error(
                path,
                f"a {config_type.__name__} without {key}={values[key]!r} (that option was "
                "removed after it measured no gain; the demo's results page names the commit "
                "that has it)",
            )
    return {key: value for key, value in values.items() if key not in retired}


def config_from_dict(config_type: type, values: Mapping[str, Any], path: Path) -> Any:
    """A `config_type` from saved JSON values (lists become tuples; absent keys: defaults;
    retired options at their no-op value: dropped)."""
    values = _without_retired(config_type, values, path)
    unknown = sorted(set(values) - set(field_types(config_type)))
    if unknown:
        keys = ", ".join(unknown)
        raise file_error(path, f"fields of {config_type.__name__}, found unknown {keys}")
    try:
        return config_type(**{key: _as_tuples(value) for key, value in values.items()})
    except (TypeError, ValueError) as error:
        raise file_error(path, f"a {config_type.__name__} ({error})") from None


def setting_help(config_type: type, name: str) -> str | None:
    """The `help` line that `setting` gave field `name` of `config_type`, or None."""
    field = next(field for field in dataclasses.fields(config_type) if field.name == name)
    return field.metadata.get(_HELP)


def describe_fields(config: Any) -> str:
    """One line per field: `name: type = value  help`, for a verb's `--help`."""
    lines = []
    for field in dataclasses.fields(config):
        annotation = type_name(field_types(type(config))[field.name])
        line = f"  {field.name}: {annotation} = {getattr(config, field.name)!r}"
        minimum = field.metadata.get(_MINIMUM)
        notes = [note for note in (field.metadata.get(_HELP),) if note]
        if minimum is not None:
            notes.append(f">= {minimum:g}")
        lines.append(line + (f"  ({'; '.join(notes)})" if notes else ""))
    return "\n".join(lines)
