"""A read fio output file (:class:`FioRun`) and the tolerant value helpers both readers share.

Measured files are data from outside: every helper here turns odd, missing, non-finite or absurd
values into a default instead of an exception (see :func:`_f`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import ConfigError
from simulator.metrics.stats import JobResult, merge

__all__ = ["FioRun", "job_options_of", "plat_idx_to_val"]

#: largest magnitude a figure read from fio output may have (beyond it the file is damaged):
#: 1e18 ns is 31 years, 1e18 bytes an exabyte
MAX_FIGURE = 1e18


@dataclass
class FioRun:
    """One fio output file: its jobs as :class:`JobResult` (measured), options and metadata.

    ``source_format`` is "json" or "text"; ``sim`` is the simulator's section when the file was
    written by the simulator (else None); ``disk_util`` is fio's list, raw.
    """

    path: str
    fio_version: str = ""
    time: str = ""
    timestamp: int | None = None
    global_options: dict[str, str] = field(default_factory=dict)
    jobs: list[JobResult] = field(default_factory=list)
    source_format: str = "json"
    sim: dict[str, Any] | None = None
    disk_util: list[Any] = field(default_factory=list)

    @property
    def version_tuple(self) -> tuple[int, int]:
        return _version_tuple(self.fio_version)

    def job_options(self, job: int | str = 0) -> dict[str, str]:
        return job_options_of(self, job)

    def merged(self) -> JobResult:
        """All jobs aggregated as fio's group_reporting would."""
        if not self.jobs:
            raise ConfigError("no jobs in fio output", source=self.path)
        return merge(self.jobs)

    def job(self, job: int | str = 0) -> JobResult:
        if isinstance(job, str):
            for j in self.jobs:
                if j.name == job:
                    return j
            raise ConfigError(f"no job named {job!r} (the file has {len(self.jobs)} jobs)", source=self.path)
        try:
            return self.jobs[job]
        except IndexError:
            raise ConfigError(f"no job #{job}: the file has {len(self.jobs)}", source=self.path) from None


def job_options_of(run: FioRun, job: int | str = 0) -> dict[str, str]:
    """Effective fio options of one job: global options overridden by the job's own.

    The result is a plain ``{option: value}`` dict in fio's spelling, so a measured run doubles as
    an experiment definition (workload reconstruction).
    """
    opts = dict(run.global_options)
    opts.update(run.job(job).options)
    return opts


# ---------------------------------------------------------------------------------------------
# helpers


def _version_tuple(v: str) -> tuple[int, int]:
    m = re.search(r"fio-(\d+)\.(\d+)", v or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _f(x: Any, default: float = 0.0) -> float:
    """Tolerant float: numbers, numeric strings; anything else -> default."""
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, int):
        return float(x) if abs(x) <= MAX_FIGURE else default
    if isinstance(x, float):
        return x if math.isfinite(x) and abs(x) <= MAX_FIGURE else default
    if isinstance(x, str) and len(x) <= 64:
        try:
            v = float(x.strip().rstrip("%"))
        except ValueError:
            return default
        return v if math.isfinite(v) and abs(v) <= MAX_FIGURE else default
    return default


def _i(x: Any, default: int = 0) -> int:
    return int(round(_f(x, float(default))))


def _num_or_int(v: float) -> float | int:
    return int(v) if float(v).is_integer() else v


def _str_dict(d: Any) -> dict[str, str]:
    if not isinstance(d, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in d.items()}


def plat_idx_to_val(idx: int, bits: int = 6) -> float:
    """Value (midpoint) of fio's latency histogram bucket ``idx`` (fio's ``plat_idx_to_val``).

    Indices and bit counts beyond what fio writes (bits 1..16, idx < 2**16) give NaN."""
    if not 1 <= bits <= 16 or not 0 <= idx < (1 << 16):
        return float("nan")
    val = 1 << bits
    if idx < (val << 1):
        return float(idx)
    error_bits = (idx >> bits) - 1
    base = 1 << (error_bits + bits)
    k = idx % val
    return base + (k + 0.5) * (1 << error_bits)
