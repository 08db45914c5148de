"""Human units, parsed once at the configuration boundary.

Inside the simulator every quantity is SI: seconds, bytes, bytes per second, revolutions per
second. Users write "4KiB", "1TB", "100us", "7200rpm", "10Gbit/s"; the pydantic types defined here
turn those into plain ``float``/``int`` values during validation and say what they accept in the
JSON schema.

Size suffixes follow fio: ``k``/``KiB`` = 1024 (fio's default ``kb_base=1024``); the explicit
decimal forms ``KB``/``MB``/``GB``/``TB`` are 1000-based *only* when written with a capital ``B``
and a capital prefix, as disk vendors write them ("1TB" drive = 10^12 bytes). Lower-case fio forms
(``4k``, ``1g``, ``1m``) are binary, as fio treats them.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

__all__ = [
    "RPM",
    "Bytes",
    "BytesPerSecond",
    "Rate",
    "Seconds",
    "format_bytes",
    "format_seconds",
    "parse_bandwidth",
    "parse_rpm",
    "parse_size",
    "parse_time",
]

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

#: Absolute limits of the unit parsers: no device, cluster or run the simulator models comes near
#: them, and beyond them arithmetic overflows or a run never ends. Fields carry tighter, physical
#: bounds of their own.
MAX_BYTES = 2**60  # 1 EiB
MAX_SECONDS = 1e9  # ~32 years
MAX_RPM = 1e6
MAX_BYTES_PER_SECOND = 1e15  # 1 PB/s
_MAX_DIGITS = 40  # longer numerals are refused before float()/int() see them


def _number(text: str, what: str) -> float:
    """A numeral matched by _NUM -> finite float, refusing absurdly long numerals."""
    if len(text) > _MAX_DIGITS:
        raise ValueError(f"{what}: a numeral of {len(text)} characters is not a plausible value")
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite")
    return v


def _bounded(v: float, limit: float, what: str, unit: str) -> float:
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite (not NaN or infinity)")
    if abs(v) > limit:
        raise ValueError(f"{what} of {v:.3g} {unit} is beyond anything the simulator models (limit {limit:.3g} {unit})")
    return v

_BIN = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_DEC = {"K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4, "P": 1000**5}

_SIZE_RE = re.compile(rf"^\s*{_NUM}\s*([a-zA-Z]*)\s*$")


def _size_factor(suffix: str) -> int:
    if suffix in ("", "b", "B"):
        return 1
    # binary explicit: KiB, MiB, Ki, ki
    m = re.fullmatch(r"([kKmMgGtTpP])i[bB]?", suffix)
    if m:
        return _BIN[m.group(1).lower()]
    # vendor decimal: KB MB GB TB (capital prefix + capital B)
    m = re.fullmatch(r"([KMGTP])B", suffix)
    if m:
        return _DEC[m.group(1)]
    # fio style: k, K, m, M, g, kb, mb (binary, fio kb_base=1024)
    m = re.fullmatch(r"([kKmMgGtTpP])[bB]?", suffix)
    if m:
        return _BIN[m.group(1).lower()]
    raise ValueError("unknown size unit (use e.g. 4KiB, 4k, 1TB, 512)")


def parse_size(value: Any) -> int:
    """Parse a size to bytes: ``4096``, ``"4k"``, ``"4KiB"``, ``"1TB"`` (10^12), ``"1.5GiB"``."""
    if isinstance(value, bool):
        raise ValueError("a size must be a number or a string such as '4KiB'")
    if isinstance(value, (int, float)):
        return int(round(_bounded(value, MAX_BYTES, "a size", "bytes")))
    if not isinstance(value, str):
        raise ValueError(f"a size must be a number or a string such as '4KiB', not {type(value).__name__}")
    m = _SIZE_RE.match(value) if len(value) <= 80 else None
    if not m:
        raise ValueError("cannot read the value as a size (use e.g. 4KiB, 4k, 1TB)")
    num, suffix = _number(m.group(1), "a size"), m.group(2)
    return int(round(_bounded(num * _size_factor(suffix), MAX_BYTES, "a size", "bytes")))


_TIME = {
    "": 1.0,  # bare number in a string = seconds
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "msec": 1e-3,
    "us": 1e-6,
    "usec": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "nsec": 1e-9,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_TIME_RE = re.compile(rf"^\s*{_NUM}\s*([a-zA-Zµ]*)\s*$")


def parse_time(value: Any) -> float:
    """Parse a duration to seconds: ``0.004``, ``"4ms"``, ``"100us"``, ``"900s"``, ``"15m"``."""
    if isinstance(value, bool):
        raise ValueError("a duration must be a number of seconds or a string such as '100us'")
    if isinstance(value, (int, float)):
        return _bounded(float(value), MAX_SECONDS, "a duration", "s")
    if not isinstance(value, str):
        raise ValueError(f"a duration must be a number or a string such as '4ms', not {type(value).__name__}")
    m = _TIME_RE.match(value) if len(value) <= 80 else None
    if not m or m.group(2) not in _TIME:
        raise ValueError("cannot read the value as a duration (use e.g. 100us, 4.2ms, 900s)")
    return _bounded(_number(m.group(1), "a duration") * _TIME[m.group(2)], MAX_SECONDS, "a duration", "s")


_RPM_RE = re.compile(rf"^\s*{_NUM}\s*(rpm|RPM|rps|RPS)?\s*$")


def parse_rpm(value: Any) -> float:
    """Parse a spindle speed to revolutions per minute: ``7200``, ``"7200rpm"``, ``"120rps"``."""
    if isinstance(value, bool):
        raise ValueError("a spindle speed must be a number or a string such as '7200rpm'")
    if isinstance(value, (int, float)):
        return _bounded(float(value), MAX_RPM, "a spindle speed", "rpm")
    if not isinstance(value, str):
        raise ValueError("a spindle speed must be a number or a string such as '7200rpm'")
    m = _RPM_RE.match(value) if len(value) <= 80 else None
    if not m:
        raise ValueError("cannot read the value as a spindle speed (use e.g. 7200rpm)")
    v = _number(m.group(1), "a spindle speed")
    v = v * 60.0 if (m.group(2) or "").lower() == "rps" else v
    return _bounded(v, MAX_RPM, "a spindle speed", "rpm")


_BW_RE = re.compile(rf"^\s*{_NUM}\s*([a-zA-Z]*)\s*(/s|ps)?\s*$")


def parse_bandwidth(value: Any) -> float:
    """Parse a bandwidth to bytes/second: ``"163MB/s"``, ``"10Gbit/s"``, ``"6Gb/s"``, ``"1.2GiB/s"``.

    ``bit``/``b`` (lower-case b after a prefix, e.g. ``Gb``) means bits; ``B`` means bytes.
    Link rates written as ``Gb/s`` or ``Gbit/s`` are decimal (10 Gbit/s = 1.25e9 B/s).
    """
    if isinstance(value, bool):
        raise ValueError("a bandwidth must be a number (B/s) or a string such as '200MB/s'")
    if isinstance(value, (int, float)):
        return _bounded(float(value), MAX_BYTES_PER_SECOND, "a bandwidth", "B/s")
    if not isinstance(value, str):
        raise ValueError("a bandwidth must be a number (B/s) or a string such as '200MB/s'")
    m = _BW_RE.match(value) if len(value) <= 80 else None
    if not m:
        raise ValueError("cannot read the value as a bandwidth (use e.g. 200MB/s, 10Gbit/s)")
    num, unit = _number(m.group(1), "a bandwidth"), m.group(2)
    bits = re.fullmatch(r"([kKmMgGtT]?)(bit|b)", unit)
    if bits:
        prefix = bits.group(1).upper()
        return _bounded(num * (_DEC.get(prefix, 1)) / 8.0, MAX_BYTES_PER_SECOND, "a bandwidth", "B/s")
    return _bounded(float(num * _size_factor(unit)), MAX_BYTES_PER_SECOND, "a bandwidth", "B/s")


def _schema(example: str, desc: str) -> WithJsonSchema:
    return WithJsonSchema(
        {"anyOf": [{"type": "number"}, {"type": "string"}], "examples": [example], "description": desc}
    )


Bytes = Annotated[int, BeforeValidator(parse_size), _schema("4KiB", "size in bytes or with a unit (4KiB, 4k, 1TB)")]
Seconds = Annotated[
    float, BeforeValidator(parse_time), _schema("100us", "duration in seconds or with a unit (100us, 4ms, 900s)")
]
RPM = Annotated[float, BeforeValidator(parse_rpm), _schema("7200rpm", "spindle speed in rev/min (7200rpm)")]
BytesPerSecond = Annotated[
    float,
    BeforeValidator(parse_bandwidth),
    _schema("200MB/s", "bandwidth in bytes/s or with a unit (200MB/s, 10Gbit/s)"),
]
Rate = BytesPerSecond


def format_bytes(n: float) -> str:
    """Short human form of a byte count using binary prefixes (4096 -> '4KiB')."""
    for unit, f in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= f:
            v = n / f
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{int(n)}B"


def format_seconds(t: float) -> str:
    """Short human form of a duration (0.0042 -> '4.2ms')."""
    a = abs(t)
    if a >= 1:
        return f"{t:.3g}s"
    if a >= 1e-3:
        return f"{t * 1e3:.3g}ms"
    if a >= 1e-6:
        return f"{t * 1e6:.3g}us"
    return f"{t * 1e9:.3g}ns"
