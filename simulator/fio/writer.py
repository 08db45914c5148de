"""The document ``fio --output-format=json`` would print, from simulated :class:`JobResult`s.

Layout and units follow fio 3.x (3.12): ``io_bytes`` in bytes, ``bw`` in KiB/s, ``bw_bytes`` in
B/s, ``runtime``/``job_runtime`` in ms, latencies in ns (``slat_ns``, ``clat_ns``, ``lat_ns``),
percentiles under the latency kind fio reports them for (``clat_ns`` by default), ``"%f"``
percentile keys, fio's ``latency_ns``/``latency_us``/``latency_ms`` buckets. With ``plus=True``
the latency objects also carry json+ ``bins`` (value in ns -> count, one entry per non-empty HDR
bucket, keyed by the bucket's lowest value).

A top-level ``"sim"`` section carries what fio has no field for: simulator version, seed and
whatever the caller passes in ``sim_meta`` (device utilisation, queue depths, ...), plus per job
the exact window, per direction the exact runtime/bandwidth, confidence intervals and the HDR
histograms in the standard compressed base64 encoding. :func:`simulator.fio.read_fio` reads it
all back (round trip).
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.metrics.ci import CI
from simulator.metrics.stats import (
    LAT_BUCKET_KEYS,
    LAT_KINDS,
    DirResult,
    JobResult,
    LatStats,
    percentile_key,
    percentile_list_of,
)

__all__ = ["FIO_FORMAT_VERSION", "jsonable", "lat_object", "to_fio_json"]

FIO_FORMAT_VERSION = "fio-3.12"  # the fio JSON layout written (keys and units of fio 3.12)


def jsonable(obj: Any) -> Any:
    """Recursively convert to plain JSON types (numpy scalars/arrays, tuples, CI; NaN/inf -> None)."""
    if isinstance(obj, CI):
        return jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


def _int(x: float) -> int:
    return int(round(x)) if math.isfinite(x) else 0


def lat_object(ls: LatStats, *, with_percentiles: bool, plus: bool = False) -> dict[str, Any]:
    """fio's ``{min, max, mean, stddev, N[, percentile][, bins]}`` object (ns)."""
    d: dict[str, Any] = {
        "min": _int(ls.min_ns),
        "max": _int(ls.max_ns),
        "mean": float(ls.mean_ns),
        "stddev": float(ls.stddev_ns),
        "N": int(ls.n),
    }
    if with_percentiles:
        d["percentile"] = {k: _int(v) for k, v in ls.percentiles.items()}
    if plus and ls.hist is not None and ls.hist.total_count:
        lo, _w, cnt = ls.hist.distribution()
        d["bins"] = {str(int(v)): int(c) for v, c in zip(lo, cnt, strict=True)}
    return d


def _dir_object(
    dr: DirResult, pct_kinds: set[str], plist: Sequence[float], plus: bool, group_bw: float
) -> dict[str, Any]:
    runtime_ms = _int(dr.runtime_s * 1000.0)
    d: dict[str, Any] = {
        "io_bytes": int(dr.io_bytes),
        "io_kbytes": int(dr.io_bytes) >> 10,
        "bw_bytes": _int(dr.bw_bytes),
        "bw": _int(dr.bw_bytes) >> 10,
        "iops": float(dr.iops),
        "runtime": runtime_ms,
        "total_ios": int(dr.total_ios),
        "short_ios": int(dr.short_ios),
        "drop_ios": int(dr.drop_ios),
    }
    for kind in LAT_KINDS:
        ls = dr.latency(kind)
        obj = lat_object(ls, with_percentiles=kind in pct_kinds, plus=plus)
        if kind in pct_kinds and not ls.percentiles:  # fio prints a zero table for idle directions
            obj["percentile"] = {percentile_key(p): 0 for p in plist}
        d[f"{kind}_ns"] = obj
    bw, io = dr.bw_samples, dr.iops_samples
    d.update(
        {
            "bw_min": _int(bw.min),
            "bw_max": _int(bw.max),
            "bw_agg": (100.0 * dr.bw_bytes / group_bw) if group_bw > 0 else 0.0,
            "bw_mean": float(bw.mean),
            "bw_dev": float(bw.stddev),
            "bw_samples": int(bw.samples),
            "iops_min": _int(io.min),
            "iops_max": _int(io.max),
            "iops_mean": float(io.mean),
            "iops_stddev": float(io.stddev),
            "iops_samples": int(io.samples),
        }
    )
    return d


def _pct_kinds(job: JobResult) -> set[str]:
    kinds = {k for k in LAT_KINDS for d in job.dirs if d.latency(k).percentiles}
    return kinds or {"clat"}


def _sim_lat(ls: LatStats) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ls.hist is not None and ls.hist.total_count:
        out["hdr"] = ls.hist.encode()
    if ls.mean_ci is not None:
        out["mean_ci"] = ls.mean_ci.to_dict()
    if ls.percentile_ci:
        out["percentile_ci"] = {k: ci.to_dict() for k, ci in ls.percentile_ci.items()}
    return out


def _sim_job(job: JobResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "jobname": job.name,
        "groupid": job.groupid,
        "jobs": job.jobs,
        "job_runtime_s": job.job_runtime_s,
        "window": list(job.window) if job.window is not None else None,
    }
    for dr in job.dirs:
        if not dr.present:
            continue
        dd: dict[str, Any] = {"runtime_s": dr.runtime_s, "bw_bytes": dr.bw_bytes}
        if dr.iops_ci is not None:
            dd["iops_ci"] = dr.iops_ci.to_dict()
        if dr.bw_ci is not None:
            dd["bw_ci"] = dr.bw_ci.to_dict()
        for kind in LAT_KINDS:
            s = _sim_lat(dr.latency(kind))
            if s:
                dd[kind] = s
        out[dr.name] = dd
    if job.sync.n:
        out["sync"] = _sim_lat(job.sync)
    return out


def _zero_buckets() -> dict[str, dict[str, float]]:
    return {name: dict.fromkeys(keys, 0.0) for name, keys in LAT_BUCKET_KEYS.items()}


def to_fio_json(
    job_results: Sequence[JobResult],
    global_options: dict,
    *,
    time_str: str,
    sim_meta: dict,
    plus: bool = False,
    timestamp: int | None = None,
) -> dict:
    """fio-3.x-shaped JSON document (a dict ready for ``json.dump``) plus a ``"sim"`` section.

    ``time_str`` is fio's ``"time"`` field (e.g. ``"Mon Jan  6 00:14:25 2020"``); ``timestamp``
    (epoch seconds) defaults to ``sim_meta["timestamp"]`` or, failing that, ``time_str`` parsed in
    fio's ctime format, else 0. ``sim_meta`` goes into ``"sim"`` (plus ``version``).
    """
    from simulator import __version__

    if timestamp is None:
        timestamp = sim_meta.get("timestamp") if isinstance(sim_meta, dict) else None
    if timestamp is None:
        try:
            timestamp = int(_time.mktime(_time.strptime(" ".join(time_str.split()), "%a %b %d %H:%M:%S %Y")))
        except (ValueError, OverflowError, AttributeError):
            timestamp = 0
    group_bw: dict[int, float] = {}
    for job in job_results:
        group_bw[job.groupid] = group_bw.get(job.groupid, 0.0) + sum(d.bw_bytes for d in job.dirs)
    jobs_out = []
    for job in job_results:
        pct = _pct_kinds(job)
        plist = percentile_list_of(job.options)
        j: dict[str, Any] = {
            "jobname": job.name,
            "groupid": int(job.groupid),
            "error": int(job.error),
            "eta": 0,
            "elapsed": math.ceil(job.job_runtime_s) if job.job_runtime_s > 0 else 0,
            "job options": {str(k): str(v) for k, v in job.options.items()},
        }
        gbw = group_bw.get(job.groupid, 0.0)
        for dr in job.dirs:
            j[dr.name] = _dir_object(dr, pct, plist, plus, gbw)
        sync = lat_object(job.sync, with_percentiles=True, plus=plus)
        if not job.sync.percentiles:
            sync["percentile"] = {percentile_key(p): 0 for p in plist}
        j["sync"] = {"lat_ns": sync, "total_ios": int(job.sync.n)}
        j["job_runtime"] = _int(job.job_runtime_s * 1000.0)
        buckets = job.latency_buckets or _zero_buckets()
        for name in ("latency_ns", "latency_us", "latency_ms"):
            j[name] = {k: float(v) for k, v in buckets.get(name, {}).items()}
        iodepth = job.options.get("iodepth", global_options.get("iodepth", "1"))
        try:
            depth = int(float(str(iodepth)))
        except ValueError:
            depth = 1
        j.setdefault("latency_depth", depth)
        j.setdefault("latency_target", 0)
        j.setdefault("latency_percentile", 100.0)
        j.setdefault("latency_window", 0)
        for k, v in job.extra.items():  # measured fields (cpu, iodepth levels, ...) pass through
            if k not in j:
                j[k] = v
        jobs_out.append(j)
    sim: dict[str, Any] = {"version": __version__}
    sim.update(sim_meta or {})
    sim["job_stats"] = [_sim_job(job) for job in job_results]
    doc = {
        "fio version": f"{FIO_FORMAT_VERSION} (simulated: storage-perf-simulator {__version__})",
        "timestamp": int(timestamp),
        "timestamp_ms": int(timestamp) * 1000,
        "time": time_str,
        "global options": {str(k): str(v) for k, v in (global_options or {}).items()},
        "jobs": jobs_out,
        "sim": sim,
    }
    return jsonable(doc)
