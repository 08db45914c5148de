"""Reading a user's file with a size bound: every problem becomes one ConfigError naming the file."""

from __future__ import annotations

from pathlib import Path

from simulator.errors import ConfigError

__all__ = ["read_bounded"]


def read_bounded(path: str | Path, limit: int, expected: str) -> bytes:
    """The bytes of ``path``, refused when larger than ``limit`` bytes.

    ``expected`` says what the file should be ("a YAML file", "fio output") in the messages; the file's
    contents never appear in them.
    """
    p = Path(path)
    src = str(path)
    too_big = f"larger than {limit // 2**20} MiB; not {expected}"
    try:
        if p.is_file() and p.stat().st_size > limit:
            raise ConfigError(too_big, source=src)
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source=src) from None
    except IsADirectoryError:
        raise ConfigError(f"is a directory, expected {expected}", source=src) from None
    except PermissionError:
        raise ConfigError("cannot read file: permission denied", source=src) from None
    except OSError as e:
        raise ConfigError(f"cannot read file ({e.strerror or type(e).__name__})", source=src) from None
    if len(raw) > limit:
        raise ConfigError(too_big, source=src)
    return raw
