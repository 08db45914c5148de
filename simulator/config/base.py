"""Base of every configuration model, YAML loading and dotted-key editing.

Config is data: frozen pydantic models with ``extra="forbid"``; every field carries a description
with its unit and default. Human units are parsed by the types in ``simulator.units``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from simulator.errors import ConfigError, pydantic_error_to_config_error


class ConfigModel(BaseModel):
    """Frozen, strict base model: unknown keys are errors; instances are immutable and hashable."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, populate_by_name=True)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (a silent override is a classic YAML trap)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file; any problem becomes a ConfigError naming the file (and line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=str(path)) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a YAML file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read file: {e}", source=str(path)) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"not valid YAML: {problem}", source=str(path), field=where) from None


def validate(model: type[BaseModel], data: Any, source: str | None, prefix: str = "") -> Any:
    """Validate ``data`` against ``model``; errors become one ConfigError naming source and field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise pydantic_error_to_config_error(e, source, prefix) from None


def parse_scalar(text: str) -> Any:
    """Interpret a ``--set key=value`` value with YAML rules (numbers, bools, lists, strings)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def set_dotted(data: Any, key: str, value: Any, source: str = "command line") -> Any:
    """Return a deep copy of ``data`` with ``key`` (``a.b.0.c``) set to ``value``.

    Missing mapping keys are created; list indices must exist. Errors name the key.
    """
    out = copy.deepcopy(data)
    parts = key.split(".")
    if not key or any(p == "" for p in parts):
        raise ConfigError("empty component in dotted key", source=source, field=key)
    cur = out
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(cur, list):
            try:
                idx = int(part)
                if last:
                    cur[idx] = value
                else:
                    cur = cur[idx]
            except (ValueError, IndexError):
                raise ConfigError(
                    f"{part!r} is not a valid index of a list of {len(cur)}", source=source, field=key
                ) from None
        elif isinstance(cur, dict):
            if last:
                cur[part] = value
            else:
                if part not in cur or cur[part] is None:
                    cur[part] = {}
                cur = cur[part]
        else:
            raise ConfigError(
                f"cannot descend into {'.'.join(parts[:i])!r}: it is a value, not a section",
                source=source,
                field=key,
            )
    return out


def get_dotted(data: Any, key: str, default: Any = None) -> Any:
    cur = data
    for part in key.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return default
        elif isinstance(cur, dict):
            if part not in cur:
                return default
            cur = cur[part]
        else:
            return default
    return cur


def apply_overrides(data: Any, overrides: dict[str, Any] | list[tuple[str, Any]], source: str = "command line") -> Any:
    items = overrides.items() if isinstance(overrides, dict) else overrides
    for k, v in items:
        data = set_dotted(data, k, v, source=source)
    return data
