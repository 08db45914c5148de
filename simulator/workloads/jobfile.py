"""Reading fio job files (the ini format fio takes on its command line).

::

    ; comment            # comment too
    [global]
    ioengine=libaio
    direct=1
    time_based           <- a bare flag means "set"
    runtime=60

    [randread-qd32]
    rw=randread
    iodepth = 32

Rules follow fio: ``[global]`` options apply to the jobs that come after that ``[global]``
section (a later ``[global]`` changes only later jobs), ``key=value`` (spaces around ``=`` allowed),
bare flags, ``;`` and ``#`` start a comment line, an option given twice in one section keeps the
last value. Leniency beyond fio: a ``;`` or ``#`` preceded by whitespace starts a trailing comment.
Not supported: ``include`` and ``$VAR`` expansion (both are errors naming the line).

:func:`parse_jobfile` returns plain mappings of option -> value (``None`` for a bare flag) that
also carry where each option was written, so :func:`simulator.workloads.options.resolve_jobs`
names ``[section] option (line N)`` in its errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError

__all__ = ["JobSection", "load_jobfile", "parse_jobfile", "parse_jobfile_text"]

#: largest job file read, bytes
MAX_JOBFILE_BYTES = 2 * 2**20
#: most job sections in one file (fio runs at most 4096 job threads)
MAX_SECTIONS = 4096
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-.]*$")
_TRAILING_COMMENT = re.compile(r"\s+[;#].*$")


class JobSection(dict):
    """A section's options (option -> value string, ``None`` for a bare flag).

    ``section`` is the section name; ``labels`` maps each option to "[section] option (line N)";
    ``source`` is the file.
    """

    def __init__(self, section: str, source: str | None = None):
        super().__init__()
        self.section = section
        self.source = source
        self.labels: dict[str, str] = {}
        self.lines: dict[str, int] = {}

    def set(self, key: str, value: Any, line: int, section: str | None = None) -> None:
        self[key] = value
        self.lines[key] = line
        self.labels[key] = f"[{section or self.section}] {key} (line {line})"


def parse_jobfile_text(text: str, source: str | None = None) -> tuple[JobSection, list[JobSection]]:
    """Parse job-file text; see :func:`parse_jobfile`. Error messages name the line, never repeat it."""
    if len(text) > MAX_JOBFILE_BYTES:
        raise ConfigError(f"larger than {MAX_JOBFILE_BYTES // 2**20} MiB; not a fio job file", source=source)
    glob = JobSection("global", source)
    later_global: JobSection | None = None  # a [global] after the first job
    jobs: list[JobSection] = []
    cur: JobSection | None = None
    seen_job = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip().lstrip("\ufeff")
        if not line or line[0] in ";#":
            continue
        line = _TRAILING_COMMENT.sub("", line).strip()
        if line.startswith("["):
            if not line.endswith("]"):
                raise ConfigError(
                    "malformed section header (expected [name])",
                    source=source,
                    field=f"line {lineno}",
                )
            name = line[1:-1].strip()
            if not name or "[" in name or "]" in name:
                raise ConfigError(
                    "malformed section header (expected [name])", source=source, field=f"line {lineno}"
                )
            if name == "global":
                if seen_job:
                    # applies to the jobs that follow it (fio)
                    later_global = JobSection("global", source) if later_global is None else later_global
                    cur = later_global
                else:
                    cur = glob
            else:
                seen_job = True
                if len(jobs) >= MAX_SECTIONS:
                    raise ConfigError(f"more than {MAX_SECTIONS} job sections", source=source, field=f"line {lineno}")
                cur = JobSection(name, source)
                if later_global is not None:
                    for k, v in later_global.items():
                        cur[k] = v
                        cur.lines[k] = later_global.lines[k]
                        cur.labels[k] = later_global.labels[k]
                jobs.append(cur)
            continue
        if cur is None:
            raise ConfigError(
                "option outside of a [section] (fio job files start with [global] or [jobname])",
                source=source,
                field=f"line {lineno}",
            )
        if line.startswith("include ") or line == "include":
            raise ConfigError(
                "'include' is not supported; inline the included file", source=source, field=f"line {lineno}"
            )
        key, eq, value = line.partition("=")
        key = key.strip()
        if not _NAME_RE.match(key):
            raise ConfigError(
                "malformed line (expected option=value or a bare flag)",
                source=source,
                field=f"line {lineno}",
            )
        if "$" in value and re.search(r"\$\{?[A-Za-z_]", value):
            raise ConfigError(
                "environment variable expansion ($VAR) is not supported",
                source=source,
                field=f"line {lineno}",
            )
        if cur is later_global and seen_job:
            # a later [global]: the jobs already defined keep their options; following jobs get it
            cur.set(key, value.strip() if eq else None, lineno, "global")
        else:
            cur.set(key, value.strip() if eq else None, lineno)
    if not jobs:
        raise ConfigError(
            "no job sections (a fio job file needs at least one [jobname] section)", source=source
        )
    return glob, jobs


def parse_jobfile(path: str | Path) -> tuple[dict, list[dict]]:
    """Read a fio job file: ``([global] options, [job options, ...])``.

    Each job mapping holds the options of its section (and of any ``[global]`` written after the
    first job and before it). The job's name is its section name unless it sets ``name=``.
    Malformed input raises :class:`ConfigError` naming the file and the line.
    """
    p = Path(path)
    try:
        if p.is_file() and p.stat().st_size > MAX_JOBFILE_BYTES:
            raise ConfigError(f"larger than {MAX_JOBFILE_BYTES // 2**20} MiB; not a fio job file", source=str(path))
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source=str(path)) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a fio job file", source=str(path)) from None
    except PermissionError:
        raise ConfigError("cannot read file: permission denied", source=str(path)) from None
    except OSError as e:
        raise ConfigError(f"cannot read file ({e.strerror or type(e).__name__})", source=str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start}); not a fio job file", source=str(path)) from None
    return parse_jobfile_text(text, source=str(path))


def load_jobfile(path: str | Path):
    """Parse and resolve a job file into validated :class:`~simulator.workloads.options.FioJob` s."""
    from simulator.workloads.options import resolve_jobs

    g, jobs = parse_jobfile(path)
    return resolve_jobs(g, jobs, source=str(path), style="ini")
