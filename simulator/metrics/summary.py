"""Flat per-run summary rows (one line of summary.csv) and their combination over replications.

For each direction with IOs a row has (keys ``<direction>.<metric>``, e.g. ``read.iops``,
``write.p99_ms``)

``total_ios``, ``iops``, ``bw_MBps`` (10^6 B/s), ``bw_MiBps`` (2^20 B/s, what fio 2.x printed as MB/s), ``lat_mean_ms``, ``p50_ms``, ``p90_ms``,
``p99_ms``, ``p99.9_ms``, ``p99.99_ms``, and when the run has enough IOPS samples ``steady`` (1 = the
MSER truncation lies in the first half of the measured window, 0 = the run has not reached steady
state) and ``warmup_s`` (the truncation, seconds; :mod:`simulator.metrics.steady`)

and for each of those but ``total_ios`` a ``<key>_ci`` column: the CI half-width at 95 % (batch means within the
run; across replications, after :func:`combine_replications`, the Student-t half-width). Missing
values are None (an empty CSV cell). Latency is fio's completion latency (clat), the kind fio
prints percentiles for, unless the job has percentiles only for total latency
(``lat_percentiles=1``); ``kind`` overrides. Jobs with fsyncs add ``sync.total_ios``,
``sync.lat_mean_ms`` and ``sync.p99_ms``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from simulator.metrics.ci import CI, t_interval
from simulator.metrics.stats import CONFIDENCE, LAT_KINDS, JobResult, LatStats, merge, percentile_key
from simulator.metrics.steady import detect_series

__all__ = ["SUMMARY_PERCENTILES", "combine_replications", "summary_row"]

SUMMARY_PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def _hw(ci: CI | None, factor: float = 1.0) -> float | None:
    return None if ci is None else ci.half_width * factor


def _num(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _kind_of(job: JobResult, kind: str) -> str:
    if kind != "auto":
        if kind not in LAT_KINDS:
            raise ValueError(f"kind must be 'auto' or one of {LAT_KINDS}")
        return kind
    for k in ("clat", "lat", "slat"):
        if any(d.latency(k).percentiles for d in job.present_dirs()):
            return k
    return "clat"


def summary_row(
    result: JobResult | Sequence[JobResult], *, kind: str = "auto", **extra: Any
) -> dict[str, Any]:
    """One flat row for ``result`` (several jobs are merged first, as group_reporting does).

    ``extra`` key/values (e.g. ``qd=16, replication=0``) come first in the row.
    """
    job = result if isinstance(result, JobResult) else merge(list(result))
    k = _kind_of(job, kind)
    row: dict[str, Any] = dict(extra)
    row["job"] = job.name
    row["jobs"] = job.jobs
    for d in job.present_dirs():
        pre = d.name
        ls: LatStats = d.latency(k)
        row[f"{pre}.total_ios"] = d.total_ios
        row[f"{pre}.iops"] = d.iops
        row[f"{pre}.iops_ci"] = _hw(d.iops_ci)
        row[f"{pre}.bw_MBps"] = d.bw_bytes / 1e6
        row[f"{pre}.bw_MBps_ci"] = _hw(d.bw_ci, 1e-6)
        row[f"{pre}.bw_MiBps"] = d.bw_bytes / 2**20  # fio's "MB/s" (kb_base=1024)
        row[f"{pre}.bw_MiBps_ci"] = _hw(d.bw_ci, 2**-20)
        row[f"{pre}.lat_mean_ms"] = ls.mean_ns / 1e6
        row[f"{pre}.lat_mean_ms_ci"] = _hw(ls.mean_ci, 1e-6)
        for p in SUMMARY_PERCENTILES:
            name = f"{pre}.p{p:g}_ms"
            row[name] = _num(ls.percentile_ns(p) / 1e6)
            row[f"{name}_ci"] = _hw(ls.percentile_ci.get(percentile_key(p)), 1e-6)
        st = detect_series(d.series, d.series.t0 + d.runtime_s) if d.series is not None else None
        if st is not None and st.steady is not None:  # MSER verdict (simulator.metrics.steady)
            row[f"{pre}.steady"] = 1.0 if st.steady else 0.0
            row[f"{pre}.warmup_s"] = st.warmup_s
    if job.sync.n:
        row["sync.total_ios"] = job.sync.n
        row["sync.lat_mean_ms"] = job.sync.mean_ns / 1e6
        row["sync.p99_ms"] = _num(job.sync.percentile_ns(99.0) / 1e6)
    return row


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def combine_replications(rows: Sequence[dict[str, Any]], level: float = CONFIDENCE) -> dict[str, Any]:
    """Combine rows of independent replications: every numeric column becomes the mean over the
    replications and its ``_ci`` column the Student-t half-width over them (for a single row the
    row is returned with its own within-run CIs). Non-numeric columns are kept when all rows agree.
    Adds ``replications``.
    """
    rows = list(rows)
    if not rows:
        return {}
    if len(rows) == 1:
        out = dict(rows[0])
        out["replications"] = 1
        return out
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    out: dict[str, Any] = {}
    for key in keys:
        if key.endswith("_ci") and key[:-3] in keys:
            continue
        vals = [r.get(key) for r in rows]
        if all(_is_num(v) for v in vals):
            ci = t_interval([float(v) for v in vals], level)  # type: ignore[arg-type]
            out[key] = sum(float(v) for v in vals) / len(vals)  # type: ignore[arg-type]
            if f"{key}_ci" in keys:
                out[f"{key}_ci"] = ci.half_width if ci is not None else None
        else:
            present = [v for v in vals if v is not None]
            if present and all(v == present[0] for v in present) and len(present) == len(vals):
                out[key] = present[0]
            elif all(_is_num(v) for v in present) and present:
                out[key] = sum(float(v) for v in present) / len(present)
                if f"{key}_ci" in keys:
                    ci = t_interval([float(v) for v in present], level)
                    out[f"{key}_ci"] = ci.half_width if ci is not None else None
            else:
                out[key] = None
    out["replications"] = len(rows)
    return out
