"""fio JSON output (2.x and 3.x, ``json`` and ``json+``, client/server ``client_stats``) -> :class:`FioRun`.

Tolerant of what real fio writes and hardened against what it does not: wrong types, non-finite or
absurd numbers, huge histograms; only :class:`~simulator.errors.ConfigError` leaves this module."""

from __future__ import annotations

import contextlib
import json
import math
import re
from typing import Any

from simulator.errors import ConfigError
from simulator.fio.run import FioRun, _f, _i, _num_or_int, _str_dict, plat_idx_to_val
from simulator.metrics.ci import CI
from simulator.metrics.hdr import HdrHist
from simulator.metrics.stats import (
    DDIR_NAMES,
    LAT_BUCKET_KEYS,
    LAT_KINDS,
    DirResult,
    JobResult,
    LatStats,
    SampleStats,
    percentile_key,
)

__all__ = ["find_json", "parse_fio_json"]

#: most jobs read from one file (fio runs at most 4096 job threads)
MAX_JOBS = 4096
#: most histogram bins read per latency (fio 3.x json+ writes at most 1856 per direction)
MAX_BINS = 100_000


def _lat_from_json(obj: Any, scale: float, n_default: int, with_bins: bool = True) -> LatStats:
    if not isinstance(obj, dict):
        return LatStats()
    ls = LatStats(
        n=_i(obj.get("N"), n_default) if obj.get("N") is not None else n_default,
        min_ns=_num_or_int(_f(obj.get("min")) * scale),
        max_ns=_num_or_int(_f(obj.get("max")) * scale),
        mean_ns=_f(obj.get("mean")) * scale,
        stddev_ns=_f(obj.get("stddev")) * scale,
    )
    pct = obj.get("percentile")
    if isinstance(pct, dict):
        for k, v in pct.items():
            try:
                pk = float(k)
            except ValueError:
                continue
            if not 0.0 < pk <= 100.0:  # fio 2.x pads unused list slots with "0.00" : 0
                continue
            ls.percentiles[percentile_key(pk)] = _num_or_int(_f(v) * scale)
    bins = obj.get("bins")
    if with_bins and isinstance(bins, dict) and bins:
        h = HdrHist()
        if len(bins) > MAX_BINS:
            raise ConfigError(f"a latency histogram with more than {MAX_BINS:,} bins is not fio output")
        if "FIO_IO_U_PLAT_BITS" in bins:  # fio 2.x json+: index -> count
            bits = _i(bins.get("FIO_IO_U_PLAT_BITS"), 6)
            for k, c in bins.items():
                if not isinstance(k, str) or k.startswith("FIO_") or len(k) > 12 or not k.lstrip("-").isdigit():
                    continue
                cnt = _i(c)
                v = plat_idx_to_val(int(k), bits) * scale
                if cnt > 0 and math.isfinite(v):
                    h.record(v, cnt)
        else:  # fio 3.x json+: value (ns) -> count
            for k, c in bins.items():
                cnt = _i(c)
                v = _f(k, -1.0)
                if cnt > 0 and v >= 0:
                    h.record(v * scale, cnt)
        if h.total_count:
            ls.hist = h
            if obj.get("N") is None:
                ls.n = h.total_count
    return ls


def _dir_from_json(d: Any, ddir: int) -> DirResult:
    if not isinstance(d, dict):
        return DirResult(ddir)
    ns = any(f"{k}_ns" in d for k in LAT_KINDS)
    legacy = not ns and any(k in d for k in LAT_KINDS)
    scale = 1000.0 if legacy else 1.0  # fio 2.x latencies are usec
    runtime_ms = _f(d.get("runtime"))
    iops = _f(d.get("iops"))
    if "total_ios" in d:
        total = _i(d.get("total_ios"))
    else:
        total = int(round(iops * runtime_ms / 1000.0))
    if total <= 0 and iops <= 0:
        return DirResult(ddir)
    io_bytes = _f(d.get("io_bytes"))
    if "io_kbytes" not in d and legacy:
        io_bytes *= 1024.0  # fio 2.x: io_bytes in KiB
    bw_bytes = _f(d.get("bw_bytes")) if "bw_bytes" in d else _f(d.get("bw")) * 1024.0
    dr = DirResult(
        ddir=ddir,
        total_ios=total,
        io_bytes=int(round(io_bytes)),
        runtime_s=runtime_ms / 1000.0,
        iops=iops,
        bw_bytes=bw_bytes,
        short_ios=_i(d.get("short_ios")),
        drop_ios=_i(d.get("drop_ios")),
    )
    for kind in LAT_KINDS:
        obj = d.get(f"{kind}_ns") if not legacy else d.get(kind)
        setattr(dr, kind, _lat_from_json(obj, scale, total))
    dr.bw_samples = SampleStats(
        _num_or_int(_f(d.get("bw_min"))),
        _num_or_int(_f(d.get("bw_max"))),
        _f(d.get("bw_mean")),
        _f(d.get("bw_dev")),
        _i(d.get("bw_samples")),
    )
    dr.iops_samples = SampleStats(
        _num_or_int(_f(d.get("iops_min"))),
        _num_or_int(_f(d.get("iops_max"))),
        _f(d.get("iops_mean")),
        _f(d.get("iops_stddev")),
        _i(d.get("iops_samples")),
    )
    return dr


_JOB_KEYS_CONSUMED = {
    "jobname", "groupid", "error", "eta", "elapsed", "job options", "read", "write", "trim", "sync",
    "job_runtime", "latency_ns", "latency_us", "latency_ms", "latency_depth", "latency_target",
    "latency_percentile", "latency_window", "hostname", "port",
}  # fmt: skip


def _sim_lat(ls: LatStats, s: Any) -> None:
    if not isinstance(s, dict):
        return
    if isinstance(s.get("hdr"), str):
        with contextlib.suppress(Exception):  # a damaged blob only loses the histogram
            ls.hist = HdrHist.decode(s["hdr"])
    ls.mean_ci = CI.from_dict(s.get("mean_ci"))
    pci = s.get("percentile_ci")
    if isinstance(pci, dict):
        ls.percentile_ci = {k: c for k, c in ((k, CI.from_dict(v)) for k, v in pci.items()) if c is not None}


def _apply_sim(job: JobResult, sj: Any) -> None:
    if not isinstance(sj, dict):
        return
    w = sj.get("window")
    if isinstance(w, list) and len(w) == 2:
        job.window = (_f(w[0]), _f(w[1]))
    if "job_runtime_s" in sj:
        job.job_runtime_s = _f(sj["job_runtime_s"])
    if "jobs" in sj:
        job.jobs = max(_i(sj["jobs"], 1), 1)
    for dr in job.dirs:
        sd = sj.get(dr.name)
        if not isinstance(sd, dict) or not dr.present:
            continue
        if "runtime_s" in sd:
            dr.runtime_s = _f(sd["runtime_s"])
        if "bw_bytes" in sd:
            dr.bw_bytes = _f(sd["bw_bytes"])
        dr.iops_ci = CI.from_dict(sd.get("iops_ci"))
        dr.bw_ci = CI.from_dict(sd.get("bw_ci"))
        for kind in LAT_KINDS:
            _sim_lat(dr.latency(kind), sd.get(kind))
    if job.sync.n:
        _sim_lat(job.sync, sj.get("sync"))


def _job_from_json(j: dict, idx: int, n_entries: int, global_options: dict[str, str]) -> JobResult:
    options = _str_dict(j.get("job options"))
    dirs = [_dir_from_json(j.get(name), d) for d, name in enumerate(DDIR_NAMES)]
    unified = isinstance(j.get("mixed"), dict)
    if unified and not any(d.present for d in dirs):  # unified_rw_reporting: one "mixed" section
        dirs[0] = _dir_from_json(j.get("mixed"), 0)
    sync = LatStats()
    sj = j.get("sync")
    if isinstance(sj, dict):
        n = _i(sj.get("total_ios"))
        obj = sj.get("lat_ns")
        scale = 1.0
        if obj is None and isinstance(sj.get("lat"), dict):
            obj, scale = sj.get("lat"), 1000.0
        if n > 0 or (isinstance(obj, dict) and _f(obj.get("max")) > 0):
            sync = _lat_from_json(obj, scale, n)
    buckets: dict[str, dict[str, float]] = {}
    for name in LAT_BUCKET_KEYS:
        b = j.get(name)
        if isinstance(b, dict):
            buckets[name] = {str(k): _f(v) for k, v in b.items()}
    if "job_runtime" in j:
        job_runtime = _f(j.get("job_runtime")) / 1000.0
    else:
        job_runtime = max((d.runtime_s for d in dirs), default=0.0)
    numjobs = _i(options.get("numjobs", global_options.get("numjobs", "1")), 1)
    extra = {k: v for k, v in j.items() if k not in _JOB_KEYS_CONSUMED and not (unified and k == "mixed")}
    if unified:
        extra["unified_rw_reporting"] = True
    return JobResult(
        name=str(j.get("jobname", f"job{idx}")),
        options=options,
        groupid=_i(j.get("groupid")),
        jobs=max(numjobs, 1) if n_entries == 1 else 1,
        error=_i(j.get("error")),
        read=dirs[0],
        write=dirs[1],
        trim=dirs[2],
        sync=sync,
        job_runtime_s=job_runtime,
        latency_buckets=buckets,
        extra=extra,
    )


def parse_fio_json(doc: Any, source: str = "<json>") -> FioRun:
    """Build a :class:`FioRun` from a parsed fio JSON document; anything that is not fio output
    is a ConfigError naming ``source`` (never another exception)."""
    try:
        return _parse_fio_json(doc, source)
    except ConfigError as e:
        if e.source:
            raise
        raise ConfigError(e.message, source=source, field=e.field) from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, ZeroDivisionError, RecursionError):
        raise ConfigError("not fio output: a value has a form fio does not write", source=source) from None


def _parse_fio_json(doc: Any, source: str) -> FioRun:
    if not isinstance(doc, dict):
        raise ConfigError("JSON, but not fio output (top level is not an object)", source=source)
    raw_jobs = doc.get("jobs")
    if raw_jobs is None and isinstance(doc.get("client_stats"), list):
        cs = [j for j in doc["client_stats"] if isinstance(j, dict)]
        raw_jobs = [j for j in cs if j.get("jobname") != "All clients"] or cs
    if not isinstance(raw_jobs, list):
        raise ConfigError("JSON, but not fio output (no 'jobs' list)", source=source, field="jobs")
    if len(raw_jobs) > MAX_JOBS:
        raise ConfigError(f"more than {MAX_JOBS} jobs; fio runs at most {MAX_JOBS}", source=source, field="jobs")
    global_options = _str_dict(doc.get("global options"))
    jobs = []
    for i, j in enumerate(raw_jobs):
        if not isinstance(j, dict):
            raise ConfigError("a job entry is not an object", source=source, field=f"jobs.{i}")
        jobs.append(_job_from_json(j, i, len(raw_jobs), global_options))
    sim = doc.get("sim") if isinstance(doc.get("sim"), dict) else None
    if sim is not None and isinstance(sim.get("job_stats"), list):
        for job, sj in zip(jobs, sim["job_stats"], strict=False):
            if isinstance(sj, dict) and sj.get("jobname", job.name) == job.name:
                _apply_sim(job, sj)
    ts = doc.get("timestamp")
    return FioRun(
        path=source,
        fio_version=str(doc.get("fio version", "")),
        time=str(doc.get("time", "")),
        timestamp=_i(ts) if ts is not None else None,
        global_options=global_options,
        jobs=jobs,
        source_format="json",
        sim=sim,
        disk_util=list(doc.get("disk_util", [])) if isinstance(doc.get("disk_util"), list) else [],
    )


def find_json(text: str) -> Any:
    """The fio JSON document in ``text`` (possibly surrounded by other lines), or None."""
    s = text.strip()
    if s.startswith("{"):
        try:
            return json.loads(s)
        except (ValueError, RecursionError):
            pass
    dec = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, flags=re.M):
        try:
            obj, _end = dec.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and ("jobs" in obj or "client_stats" in obj or "fio version" in obj):
            return obj
    if s.startswith("{"):
        return NOT_FIO_JSON
    return None


NOT_FIO_JSON = object()
