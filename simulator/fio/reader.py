"""Reading real fio output into the simulator's result types.

:func:`read_fio` accepts

* fio JSON as fio 2.x and 3.x print it (``--output-format=json`` and ``json+``): latencies in
  usec (``clat``, fio 2.x) or ns (``clat_ns``, fio 3.x), ``io_bytes`` in KiB (2.x) or bytes
  (3.x), percentile tables, json+ ``bins`` (2.x: keyed by fio's histogram index with the
  ``FIO_IO_U_PLAT_*`` constants; 3.x: keyed by value in ns) which become an HDR histogram, several
  jobs, ``client_stats`` of fio's client/server mode, ``unified_rw_reporting``'s ``mixed``
  section (read as direction 0, flagged in ``extra``), the ``sync`` section, and the ``"sim"``
  section of files written by :func:`simulator.metrics.fiojson.to_fio_json` (exact round trip);
* fio's normal text output (2.x and 3.x) for the fields it carries: IOPS, bandwidth, runtime,
  issued totals, slat/clat/lat min/max/avg/stdev, percentile blocks, bw/iops sample lines,
  latency buckets, cpu.

Leading or trailing non-JSON lines (fio warnings) are skipped. Missing or odd fields default to
zero/empty. A file that is neither raises :class:`simulator.errors.ConfigError` naming the file.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
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
    merge,
    percentile_key,
)

__all__ = ["FioRun", "job_options_of", "parse_fio_json", "parse_fio_text", "plat_idx_to_val", "read_fio"]


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
            raise ConfigError(f"no job named {job!r} (jobs: {[j.name for j in self.jobs]})", source=self.path)
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
    if isinstance(x, (int, float)):
        return float(x) if math.isfinite(float(x)) else default
    if isinstance(x, str):
        try:
            v = float(x.strip().rstrip("%"))
            return v if math.isfinite(v) else default
        except ValueError:
            return default
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
    """Value (midpoint) of fio's latency histogram bucket ``idx`` (fio's ``plat_idx_to_val``)."""
    val = 1 << bits
    if idx < (val << 1):
        return float(idx)
    error_bits = (idx >> bits) - 1
    base = 1 << (error_bits + bits)
    k = idx % val
    return base + (k + 0.5) * (1 << error_bits)


# ---------------------------------------------------------------------------------------------
# JSON


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
        if "FIO_IO_U_PLAT_BITS" in bins:  # fio 2.x json+: index -> count
            bits = _i(bins.get("FIO_IO_U_PLAT_BITS"), 6)
            for k, c in bins.items():
                if k.startswith("FIO_") or not k.lstrip("-").isdigit():
                    continue
                cnt = _i(c)
                if cnt > 0:
                    h.record(plat_idx_to_val(int(k), bits) * scale, cnt)
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
    """Build a :class:`FioRun` from a parsed fio JSON document."""
    if not isinstance(doc, dict):
        raise ConfigError("JSON, but not fio output (top level is not an object)", source=source)
    raw_jobs = doc.get("jobs")
    if raw_jobs is None and isinstance(doc.get("client_stats"), list):
        cs = [j for j in doc["client_stats"] if isinstance(j, dict)]
        raw_jobs = [j for j in cs if j.get("jobname") != "All clients"] or cs
    if not isinstance(raw_jobs, list):
        raise ConfigError("JSON, but not fio output (no 'jobs' list)", source=source, field="jobs")
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


def _find_json(text: str) -> Any:
    """The fio JSON document in ``text`` (possibly surrounded by other lines), or None."""
    s = text.strip()
    if s.startswith("{"):
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            pass
    dec = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, flags=re.M):
        try:
            obj, _end = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and ("jobs" in obj or "client_stats" in obj or "fio version" in obj):
            return obj
    if s.startswith("{"):
        return _NOT_FIO_JSON
    return None


_NOT_FIO_JSON = object()


# ---------------------------------------------------------------------------------------------
# text

_SI = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "m": 1e6,
    "M": 1e6,
    "g": 1e9,
    "G": 1e9,
    "t": 1e12,
    "T": 1e12,
    "p": 1e15,
    "P": 1e15,
}
_TIME_SCALE = {"nsec": 1.0, "usec": 1e3, "msec": 1e6, "sec": 1e9, "s": 1e9}

_RE_VERSION = re.compile(r"^\s*(fio-\d[\w.\-+]*)\s*$")
_RE_OPTHDR = re.compile(r"^(?P<name>\S[^:]*): \(g=(?P<g>\d+)\): (?P<rest>.*)$")
_RE_JOBHDR = re.compile(
    r"^(?P<name>\S[^:]*): \(groupid=(?P<gid>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)"
    r"(?:: pid=(?P<pid>\d+))?(?:: (?P<time>.*))?$"
)
_RE_DIR3 = re.compile(
    r"^\s*(?P<dir>read|write|trim|mixed)\s*:\s*IOPS=(?P<iops>[\d.]+[kKMGTP]?),\s*BW=(?P<bw>[\d.]+)(?P<bwu>[A-Za-z]*)/s"
    r"(?:\s*\([^)]*\))?(?:\s*\((?P<io>[\d.]+)(?P<iou>[A-Za-z]*)/(?P<rt>\d+)msec\))?"
)
_RE_DIR2 = re.compile(
    r"^\s*(?P<dir>read|write|trim|mixed)\s*:\s*io=(?P<io>[\d.]+)(?P<iou>[A-Za-z]*),\s*bw=(?P<bw>[\d.]+)(?P<bwu>[A-Za-z]*)/s,"
    r"\s*iops=(?P<iops>[\d.]+[kKMGTP]?),\s*runt=\s*(?P<rt>\d+)msec"
)
_RE_LAT = re.compile(
    r"^\s*(?P<kind>slat|clat|lat|sync)\s*\((?P<unit>nsec|usec|msec|sec|s)\)\s*:\s*(?P<kv>min=.*)$"
)
_RE_PCT = re.compile(
    r"^\s*(?P<kind>slat|clat|lat|sync)\s+percentiles\s*\((?P<unit>nsec|usec|msec|sec|s)\)\s*:?"
)
_RE_PCT_ITEM = re.compile(r"(\d+(?:\.\d+)?)th=\[\s*([\d.]+)([kKMG]?)\s*\]")
_RE_BW = re.compile(r"^\s*bw\s*\(\s*(?P<unit>[A-Za-z ]*?)\s*/s\)\s*:\s*(?P<kv>.*)$")
_RE_IOPS = re.compile(r"^\s*iops\s*:\s*(?P<kv>min=.*)$")
_RE_BUCKETS = re.compile(r"^\s*lat\s*\((?P<unit>nsec|usec|msec)\)\s*:\s*(?P<kv>.*%.*)$")
_RE_CPU = re.compile(r"^\s*cpu\s*:\s*(?P<kv>.*)$")
_RE_DEPTHS = re.compile(r"^\s*(?P<what>IO depths|submit|complete)\s*:\s*(?P<kv>.*)$")
_RE_ISSUED3 = re.compile(
    r"^\s*issued\s+rwts?\s*:\s*total=(?P<total>[\d,]+)\s+short=(?P<short>[\d,]+)\s+dropped=(?P<drop>[\d,]+)"
)
_RE_ISSUED2 = re.compile(
    r"^\s*issued\s*:\s*total=(?P<total>[^ ,]+(?:/[^ ,]+)*),\s*short=(?P<short>[^ ,]+),\s*drop=(?P<drop>\S+)"
)
_RE_SYNC_HDR = re.compile(r"^\s*fsync/fdatasync/sync_file_range\s*:")


def _si(s: str) -> float:
    s = s.strip()
    m = re.fullmatch(r"([\d.]+(?:[eE][-+]?\d+)?)\s*([kKmMgGtTpP]?)", s)
    if not m:
        return _f(s)
    return float(m.group(1)) * _SI[m.group(2)]


def _kv(text: str) -> dict[str, str]:
    out = {}
    for part in re.split(r",\s*", text.strip()):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _bytes(value: float, unit: str, v3: bool) -> float:
    """Bytes from fio's text units: KiB/MiB binary; kB/MB decimal in fio 3, binary in fio 2."""
    u = unit.strip()
    if not u or u == "B":
        return value
    p = u[0].upper()
    power = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5}.get(p)
    if power is None:
        return value
    binary = "i" in u or not v3
    return value * ((1024 if binary else 1000) ** power)


def _parse_bs(rest: str) -> dict[str, str]:
    """rw/bs/ioengine/iodepth from fio's job header line."""
    out: dict[str, str] = {}
    m = re.search(r"rw=([^,]+)", rest)
    if m:
        out["rw"] = m.group(1).strip()
    m = re.search(r"ioengine=([^,]+)", rest)
    if m:
        out["ioengine"] = m.group(1).strip()
    m = re.search(r"iodepth=(\d+)", rest)
    if m:
        out["iodepth"] = m.group(1)
    m = re.search(r"bs=(.*?),\s*ioengine=", rest) or re.search(r"bs=(\S+)", rest)
    if m:
        from simulator.units import parse_size

        ranges = re.findall(r"(\d[\w.]*)-(\d[\w.]*)", m.group(1))
        try:
            sizes = [(parse_size(a), parse_size(b)) for a, b in ranges]
        except ValueError:
            sizes = []
        if sizes:
            if all(a == b for a, b in sizes):
                vals = [str(a) for a, _ in sizes]
                out["bs"] = vals[0] if len(set(vals)) == 1 else ",".join(vals)
            else:
                out["bsrange"] = ",".join(f"{a}-{b}" for a, b in sizes)
    return out


class _TextJob:
    def __init__(self, name: str, gid: int, jobs: int, err: int):
        self.name, self.gid, self.jobs, self.err = name, gid, jobs, err
        self.dirs: dict[int, dict[str, Any]] = {}
        self.sync: dict[str, Any] = {}
        self.buckets: dict[str, dict[str, float]] = {}
        self.extra: dict[str, Any] = {}
        self.totals: list[int] | None = None
        self.shorts: list[int] | None = None
        self.drops: list[int] | None = None


def parse_fio_text(text: str, source: str = "<text>") -> FioRun | None:
    """Parse fio's normal (human) output; None when no job block is found."""
    version = ""
    headers: dict[str, dict[str, str]] = {}
    jobs: list[_TextJob] = []
    cur: _TextJob | None = None
    target: dict[str, Any] | None = None  # dir dict or sync dict receiving lat lines
    pct: tuple[dict[str, float], float] | None = None
    time_str = ""
    for line in text.splitlines():
        m = _RE_VERSION.match(line)
        if m and not version:
            version = m.group(1)
            continue
        m = _RE_JOBHDR.match(line)
        if m:
            cur = _TextJob(
                m.group("name").strip(), int(m.group("gid")), int(m.group("jobs")), int(m.group("err"))
            )
            jobs.append(cur)
            target, pct = None, None
            if m.group("time") and not time_str:
                time_str = m.group("time").strip()
            continue
        m = _RE_OPTHDR.match(line)
        if m:
            headers.setdefault(m.group("name").strip(), _parse_bs(m.group("rest")))
            continue
        if line.startswith("Run status group") or line.startswith("Disk stats"):
            cur, target, pct = None, None, None
            continue
        if cur is None:
            continue
        v3 = _version_tuple(version)[0] != 2
        m = _RE_DIR3.match(line) or _RE_DIR2.match(line)
        if m:
            ddir = 0 if m.group("dir") == "mixed" else DDIR_NAMES.index(m.group("dir"))
            d: dict[str, Any] = {
                "iops": _si(m.group("iops")),
                "bw": _bytes(float(m.group("bw")), m.group("bwu"), v3),
            }
            if m.group("io") is not None:
                d["io"] = _bytes(float(m.group("io")), m.group("iou"), v3)
            if m.group("rt") is not None:
                d["runtime_ms"] = float(m.group("rt"))
            cur.dirs[ddir] = d
            target, pct = d, None
            continue
        if _RE_SYNC_HDR.match(line):
            target, pct = cur.sync, None
            continue
        m = _RE_LAT.match(line)
        if m and target is not None:
            kind = "lat" if m.group("kind") == "sync" else m.group("kind")
            sc = _TIME_SCALE[m.group("unit")]
            kv = _kv(m.group("kv"))
            target[kind] = {
                "min": _si(kv.get("min", "0")) * sc,
                "max": _si(kv.get("max", "0")) * sc,
                "mean": _f(kv.get("avg")) * sc,
                "stddev": _f(kv.get("stdev")) * sc,
                "percentiles": {},
            }
            if "N" in kv:
                target[kind]["N"] = _i(_si(kv["N"]))
            continue
        m = _RE_PCT.match(line)
        if m and target is not None:
            kind = "lat" if m.group("kind") == "sync" else m.group("kind")
            entry = target.setdefault(
                kind, {"min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0, "percentiles": {}}
            )
            pct = (entry["percentiles"], _TIME_SCALE[m.group("unit")])
            continue
        if pct is not None and line.lstrip().startswith("|"):
            for p, v, suf in _RE_PCT_ITEM.findall(line):
                pct[0][percentile_key(float(p))] = _num_or_int(float(v) * _SI[suf] * pct[1])
            continue
        pct = None
        m = _RE_BW.match(line)
        if m and target is not None and target is not cur.sync:
            kv = _kv(m.group("kv"))
            unit = m.group("unit").replace(" ", "")
            to_kib = _bytes(1.0, unit, v3) / 1024.0
            target["bw_samples"] = SampleStats(
                _num_or_int(_si(kv.get("min", "0")) * to_kib),
                _num_or_int(_si(kv.get("max", "0")) * to_kib),
                _f(kv.get("avg")) * to_kib,
                _f(kv.get("stdev")) * to_kib,
                _i(kv.get("samples")),
            )
            continue
        m = _RE_IOPS.match(line)
        if m and target is not None and target is not cur.sync:
            kv = _kv(m.group("kv"))
            target["iops_samples"] = SampleStats(
                _num_or_int(_si(kv.get("min", "0"))),
                _num_or_int(_si(kv.get("max", "0"))),
                _f(kv.get("avg")),
                _f(kv.get("stdev")),
                _i(kv.get("samples")),
            )
            continue
        m = _RE_BUCKETS.match(line)
        if m:
            name = {"nsec": "latency_ns", "usec": "latency_us", "msec": "latency_ms"}[m.group("unit")]
            b = cur.buckets.setdefault(name, dict.fromkeys(LAT_BUCKET_KEYS[name], 0.0))
            for k, v in _kv(m.group("kv")).items():
                b[k] = _f(v.lstrip("<"))
            continue
        m = _RE_CPU.match(line)
        if m:
            kv = _kv(m.group("kv"))
            for src, dst in (("usr", "usr_cpu"), ("sys", "sys_cpu")):
                if src in kv:
                    cur.extra[dst] = _f(kv[src])
            for k in ("ctx", "majf", "minf"):
                if k in kv:
                    cur.extra[k] = _i(kv[k])
            continue
        m = _RE_DEPTHS.match(line)
        if m:
            key = {"IO depths": "iodepth_level", "submit": "iodepth_submit", "complete": "iodepth_complete"}[
                m.group("what")
            ]
            cur.extra[key] = {k: _f(v) for k, v in _kv(m.group("kv")).items()}
            continue
        m = _RE_ISSUED3.match(line)
        if m:
            cur.totals = [int(x) for x in m.group("total").split(",") if x]
            cur.shorts = [int(x) for x in m.group("short").split(",") if x]
            cur.drops = [int(x) for x in m.group("drop").split(",") if x]
            continue
        m = _RE_ISSUED2.match(line)
        if m:

            def _rwd(s: str) -> list[int]:
                return [int(x) for x in re.findall(r"=(\d+)", s)]

            cur.totals, cur.shorts, cur.drops = (
                _rwd(m.group("total")),
                _rwd(m.group("short")),
                _rwd(m.group("drop")),
            )
            continue
    if not jobs:
        return None
    out_jobs = [_job_from_text(tj, headers.get(tj.name, {}), len(jobs)) for tj in jobs]
    return FioRun(path=source, fio_version=version, time=time_str, timestamp=None, global_options={},
                  jobs=out_jobs, source_format="text")  # fmt: skip


def _text_lat(d: dict[str, Any] | None, n: int) -> LatStats:
    if not d:
        return LatStats()
    return LatStats(
        n=_i(d.get("N"), n) if "N" in d else n,
        min_ns=_num_or_int(round(d["min"], 3)),
        max_ns=_num_or_int(round(d["max"], 3)),
        mean_ns=d["mean"],
        stddev_ns=d["stddev"],
        percentiles=dict(d.get("percentiles", {})),
    )


def _job_from_text(tj: _TextJob, options: dict[str, str], n_jobs: int) -> JobResult:
    bs = None
    if "bs" in options and "," not in options["bs"]:
        bs = int(options["bs"])
    dirs = []
    for ddir in range(3):
        d = tj.dirs.get(ddir)
        total = tj.totals[ddir] if tj.totals and len(tj.totals) > ddir else None
        if d is None or (total == 0 and not d.get("iops")):
            dirs.append(DirResult(ddir))
            continue
        runtime_s = d.get("runtime_ms", 0.0) / 1000.0
        if total is None:
            total = int(round(d["iops"] * runtime_s))
        iops = total / runtime_s if runtime_s > 0 and total else d["iops"]
        if bs is not None and total:
            io_bytes = float(total * bs)
        else:
            io_bytes = d.get("io", d["bw"] * runtime_s)
        bw = io_bytes / runtime_s if runtime_s > 0 else d["bw"]
        dr = DirResult(
            ddir=ddir,
            total_ios=total,
            io_bytes=int(round(io_bytes)),
            runtime_s=runtime_s,
            iops=iops,
            bw_bytes=bw,
            short_ios=tj.shorts[ddir] if tj.shorts and len(tj.shorts) > ddir else 0,
            drop_ios=tj.drops[ddir] if tj.drops and len(tj.drops) > ddir else 0,
            slat=_text_lat(d.get("slat"), total),
            clat=_text_lat(d.get("clat"), total),
            lat=_text_lat(d.get("lat"), total),
        )
        if "bw_samples" in d:
            dr.bw_samples = d["bw_samples"]
        if "iops_samples" in d:
            dr.iops_samples = d["iops_samples"]
        dirs.append(dr)
    n_sync = tj.totals[3] if tj.totals and len(tj.totals) > 3 else 0
    sync = _text_lat(tj.sync.get("lat"), n_sync) if tj.sync else LatStats()
    return JobResult(
        name=tj.name,
        options=dict(options),
        groupid=tj.gid,
        jobs=tj.jobs,
        error=tj.err,
        read=dirs[0],
        write=dirs[1],
        trim=dirs[2],
        sync=sync,
        job_runtime_s=max(d.runtime_s for d in dirs),
        latency_buckets=tj.buckets,
        extra=tj.extra,
    )


# ---------------------------------------------------------------------------------------------


def read_fio(path: str | Path) -> FioRun:
    """Read fio output (JSON 2.x/3.x, json+, or normal text) from ``path``.

    Raises :class:`ConfigError` naming the file if it cannot be read or is not fio output.
    """
    p = Path(path)
    src = str(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source=src) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected fio output", source=src) from None
    except OSError as e:
        raise ConfigError(f"cannot read file: {e}", source=src) from None
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.strip():
        raise ConfigError("empty file, expected fio output", source=src)
    doc = _find_json(text)
    if doc is _NOT_FIO_JSON:
        raise ConfigError("not fio output: invalid JSON or JSON without fio's 'jobs' list", source=src)
    if doc is not None:
        return parse_fio_json(doc, src)
    run = parse_fio_text(text, src)
    if run is None:
        raise ConfigError(
            "not fio output: neither fio JSON (--output-format=json) nor fio's normal text output", source=src
        )
    return run
