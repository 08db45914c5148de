"""fio's normal (human) text output, 2.x and 3.x -> :class:`FioRun` for the fields it carries."""

from __future__ import annotations

import re
from typing import Any

from simulator.fio.run import FioRun, _f, _i, _num_or_int, _version_tuple
from simulator.metrics.stats import (
    DDIR_NAMES,
    LAT_BUCKET_KEYS,
    DirResult,
    JobResult,
    LatStats,
    SampleStats,
    percentile_key,
)

__all__ = ["parse_fio_text"]


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
    """fio's normal text output -> :class:`FioRun`, or None when ``text`` is not fio output.
    Values of a form fio does not write are a ConfigError naming ``source``."""
    try:
        return _parse_fio_text(text, source)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, ZeroDivisionError, RecursionError):
        from simulator.errors import ConfigError

        raise ConfigError("not fio output: a value has a form fio does not write", source=source) from None


def _parse_fio_text(text: str, source: str) -> FioRun | None:
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
