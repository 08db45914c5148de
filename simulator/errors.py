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

    def __init__(self, message: str, source: str | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.source:
            where.append(str(self.source))
        if self.field:
            where.append(str(self.field))
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


def pydantic_error_to_config_error(exc: Any, source: str | None, prefix: str = "") -> ConfigError:
    """Turn a pydantic ``ValidationError`` into one ConfigError naming the first bad field.

    All problems are listed, one per line, but the first one names the field in the header.
    """
    errors = exc.errors()
    lines = []
    first_field = None
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if not str(p).startswith("function-"))
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        msg = e.get("msg", "invalid")
        if e.get("type") == "extra_forbidden":
            msg = "unknown key (not a field of this section; check the spelling or `simrun schema`)"
        msg = msg.removeprefix("Value error, ")
        if first_field is None:
            first_field = loc
            lines.append(msg)
        else:
            lines.append(f"also {loc}: {msg}")
    return ConfigError("\n  ".join(lines), source=source, field=first_field)
