"""Errors the user sees. Every bad input ends in exactly one of these: one clear message that names
the file and the field, exit code 2, no traceback (see ``simulator.cli``)."""

from __future__ import annotations

from typing import Any


class SimError(Exception):
    """Base class of all errors the simulator reports to the user."""

    exit_code = 2


class ConfigError(SimError):
    """Invalid input: a YAML experiment or profile, a fio job file, fio JSON, or a CLI flag.

    ``source`` names the file (or "command line"), ``field`` the dotted key / option / line.
    """

    def __init__(
        self, message: str, source: str | None = None, field: str | None = None, position: tuple[int, int] | None = None
    ):
        self.message = message
        self.source = source
        self.field = field
        self.position = position  # (line, column) of the field in a YAML source, when known
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.source:
            where.append(str(self.source))
        if self.field:
            pos = f" (line {self.position[0]}, column {self.position[1]})" if self.position else ""
            where.append(f"{self.field}{pos}")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


def _short_path(loc: str) -> str:
    """A dotted field path with over-long components (keys written in a file) shortened, so that a
    file's text never reaches a message through a key name."""
    parts = loc.split(".")
    if all(len(p) <= 60 for p in parts) and len(loc) <= 300:
        return loc
    return ".".join(p if len(p) <= 60 else p[:57] + "..." for p in parts)[:300]


def field_position(source: str | None, field: str | None) -> tuple[int, int] | None:
    """(line, column) of ``field`` when the YAML file ``source`` was read by :mod:`simulator.yamlio`
    and the field (or its nearest written parent) is in it."""
    if not field:
        return None
    from simulator.yamlio import position

    return position(source, field)


def pydantic_error_to_config_error(exc: Any, source: str | None, prefix: str = "") -> ConfigError:
    """Turn a pydantic ``ValidationError`` into one ConfigError naming the first bad field.

    All problems are listed, one per line, but the first one names the field in the header.
    """
    errors = exc.errors()
    lines = []
    first_field = None
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if not str(p).startswith("function-"))
        if e.get("type") == "sim_number":  # raised at a model's root: ctx names the nested key
            sub = str((e.get("ctx") or {}).get("path", ""))
            loc = f"{loc}.{sub}" if loc and sub else (loc or sub)
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        loc = _short_path(loc)
        msg = e.get("msg", "invalid")
        if e.get("type") == "extra_forbidden":
            msg = "unknown key (not a field of this section; check the spelling or `simrun schema`)"
        msg = msg.removeprefix("Value error, ")
        if first_field is None:
            first_field = loc
            lines.append(msg)
        else:
            lines.append(f"also {loc}: {msg}")
    return ConfigError("\n  ".join(lines), source=source, field=first_field, position=field_position(source, first_field))
