"""Base of every configuration model, YAML loading and dotted-key editing.

YAML is read by the one bounded loader in :mod:`simulator.yamlio`.

Config is data: frozen pydantic models with ``extra="forbid"``; every field carries a description
with its unit and default. Human units are parsed by the types in ``simulator.units``.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from simulator.errors import ConfigError, pydantic_error_to_config_error
from simulator.yamlio import load_yaml_file, load_yaml_text

#: largest magnitude any number in a configuration may have: 2**64 (a 64-bit seed; 16 EiB). Fields
#: carry tighter, physical bounds of their own; this one stops 1e300 and 310-digit integers at the root.
MAX_NUMBER = float(2**64)


def _number_problem(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float):
        if not math.isfinite(v):
            return "must be a finite number (not NaN or infinity)"
        if abs(v) > MAX_NUMBER:
            return f"{v:.3g} is beyond any physical quantity the simulator models (|x| <= {MAX_NUMBER:.3g})"
    elif isinstance(v, int) and abs(v) > MAX_NUMBER:
        digits = len(str(abs(v))) if abs(v) < 10**5000 else 5000
        return f"a {digits}-digit integer is beyond any physical quantity the simulator models (|x| <= 2**64)"
    return None


def check_numbers(data: Any, path: str = "") -> None:
    """Raise ``PydanticCustomError('sim_number')`` for the first non-finite or absurdly large number
    anywhere in ``data`` (mappings and lists walked iteratively); ``ctx['path']`` names it."""
    stack: list[tuple[Any, str]] = [(data, path)]
    seen = 0
    while stack:
        v, p = stack.pop()
        seen += 1
        if seen > 1_000_000:
            return
        if isinstance(v, dict):
            stack.extend((x, f"{p}.{k}" if p else str(k)) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, f"{p}.{i}" if p else str(i)) for i, x in enumerate(v))
        else:
            msg = _number_problem(v)
            if msg:
                raise PydanticCustomError("sim_number", "{msg}", {"msg": msg, "path": p})


class ConfigModel(BaseModel):
    """Frozen, strict base model: unknown keys are errors; instances are immutable and hashable.

    Every number, in the input and after unit parsing, must be finite and within ``MAX_NUMBER``
    (NaN, infinity, 1e300 and 310-digit integers are refused here, for every model); each field
    adds its own physical bounds.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_default=True, populate_by_name=True, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _finite_input_numbers(cls, data: Any) -> Any:
        check_numbers(data)
        return data

    @model_validator(mode="after")
    def _finite_field_numbers(self) -> Any:
        for name in type(self).model_fields:
            v = getattr(self, name, None)
            if isinstance(v, (int, float, tuple, list)) and not isinstance(v, bool):
                check_numbers(v, name)
        return self


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file with the package's one safe, bounded loader (:mod:`simulator.yamlio`)."""
    return load_yaml_file(path)


def validate(model: type[BaseModel], data: Any, source: str | None, prefix: str = "") -> Any:
    """Validate ``data`` against ``model``; errors become one ConfigError naming source and field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise pydantic_error_to_config_error(e, source, prefix) from None


def parse_scalar(text: str) -> Any:
    """Interpret a ``--set key=value`` value with YAML rules (numbers, bools, lists, strings)."""
    try:
        return load_yaml_text(text, "command line (--set)", remember=False)
    except ConfigError:
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
