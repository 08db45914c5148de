"""Parsing helpers of the Ceph lab (no Ceph needed): fio JSON, perf-dump deltas, /proc CPU, derived rows.

Used by lab.py (measurement), by tests/test_ceph_lab.py (on committed fixtures) and by the "Ceph lab"
validation section. Pure functions over dicts; nothing here talks to a cluster.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

# perf-dump counters kept per run (section, counter) -> short name. Pacific (16.2) names; a counter
# missing from a release's dump is simply absent from the delta.
PERF_SUM = {
    ("bluestore", "bluestore_buffer_hit_bytes"): "buffer_hit_bytes",
    ("bluestore", "bluestore_buffer_miss_bytes"): "buffer_miss_bytes",
    ("bluestore", "onode_hits"): "onode_hits",
    ("bluestore", "onode_misses"): "onode_misses",
    ("bluestore", "deferred_write_ops"): "deferred_write_ops",
    ("bluestore", "deferred_write_bytes"): "deferred_write_bytes",
    ("bluestore", "bluestore_write_small"): "write_small",
    ("bluestore", "bluestore_write_deferred"): "write_deferred",
    ("bluestore", "bluestore_write_new"): "write_new",
    ("bluestore", "bluestore_write_small_pre_read"): "write_small_pre_read",
    ("bluestore", "bluestore_write_big"): "write_big",
    ("bluestore", "bluestore_write_big_deferred"): "write_big_deferred",
    ("bluestore", "write_penalty_read_ops"): "write_penalty_read_ops",
    ("bluestore", "bluestore_txc"): "txc",
    ("bluestore", "bluestore_reads_with_retries"): "reads_with_retries",
    ("bluefs", "log_bytes"): "bluefs_log_bytes",  # a gauge (the log's size; log compaction resets it)
    ("bluefs", "logged_bytes"): "bluefs_logged_bytes",  # cumulative bytes appended to BlueFS's own log
    ("bluefs", "bytes_written_wal"): "bluefs_wal_bytes",
    ("bluefs", "bytes_written_sst"): "bluefs_sst_bytes",  # RocksDB memtable flushes and compactions
    ("bluefs", "log_compactions"): "bluefs_log_compactions",
    ("rocksdb", "compact"): "rocksdb_compactions",
    ("osd", "op_r"): "op_r",
    ("osd", "op_w"): "op_w",
    ("osd", "subop_w"): "subop_w",
    ("rocksdb", "submit_transaction_sync"): "rocksdb_submit_sync",
}
# avgcount/sum (seconds) latency counters -> short name; the delta gives count and mean over the run
PERF_LAT = {
    ("bluestore", "kv_commit_lat"): "kv_commit",
    ("bluestore", "kv_flush_lat"): "kv_flush",
    ("bluestore", "kv_sync_lat"): "kv_sync",
    ("bluestore", "kv_final_lat"): "kv_final",
    ("bluestore", "commit_lat"): "bs_commit",
    ("bluestore", "read_lat"): "bs_read",
    ("bluestore", "read_onode_meta_lat"): "bs_read_onode_meta",
    ("bluestore", "read_wait_aio_lat"): "bs_read_wait_aio",
    ("bluestore", "throttle_lat"): "bs_throttle",
    ("bluestore", "submit_lat"): "bs_submit",
    ("bluestore", "state_deferred_queued_lat"): "deferred_queued",
    ("bluestore", "state_deferred_aio_wait_lat"): "deferred_aio_wait",
    ("bluestore", "state_deferred_cleanup_lat"): "deferred_cleanup",
    ("bluestore", "state_kv_queued_lat"): "kv_queued",
    ("bluestore", "state_kv_commiting_lat"): "kv_committing",  # sic: Ceph's spelling
    ("bluestore", "state_aio_wait_lat"): "aio_wait",
    ("osd", "op_latency"): "op",
    ("osd", "op_r_latency"): "op_r",
    ("osd", "op_w_latency"): "op_w",
    ("osd", "op_process_latency"): "op_process",
    ("osd", "op_r_process_latency"): "op_r_process",
    ("osd", "op_w_process_latency"): "op_w_process",
    ("osd", "op_before_queue_op_lat"): "op_before_queue",
    ("osd", "op_before_dequeue_op_lat"): "op_queue_wait",
    ("osd", "subop_w_latency"): "subop_w",
    ("throttle-bluestore_throttle_bytes", "wait"): "throttle_bytes_wait",
    ("throttle-bluestore_throttle_deferred_bytes", "wait"): "throttle_deferred_wait",
    ("throttle-osd_client_bytes", "wait"): "throttle_osd_client_bytes_wait",
    ("throttle-osd_client_messages", "wait"): "throttle_osd_client_messages_wait",
}


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def perf_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """Selected counters of one OSD's ``perf dump``: after - before.

    Sum counters give ``name``; latency counters (``{avgcount, sum}``) give ``name_count`` and
    ``name_mean_ms`` (mean over the run's events; absent when no event happened).
    """
    out: dict[str, float] = {}
    for (sec, key), name in PERF_SUM.items():
        a = _num(after.get(sec, {}).get(key))
        b = _num(before.get(sec, {}).get(key))
        if a is not None and b is not None:
            out[name] = a - b
    for (sec, key), name in PERF_LAT.items():
        a = after.get(sec, {}).get(key)
        b = before.get(sec, {}).get(key)
        if not isinstance(a, dict) or not isinstance(b, dict):
            continue
        n = _num(a.get("avgcount"))
        n0 = _num(b.get("avgcount"))
        s = _num(a.get("sum"))
        s0 = _num(b.get("sum"))
        if None in (n, n0, s, s0):
            continue
        cnt = n - n0  # type: ignore[operator]
        out[f"{name}_count"] = cnt
        if cnt > 0:
            out[f"{name}_mean_ms"] = 1000.0 * (s - s0) / cnt  # type: ignore[operator]
    return out


PERF_GAUGE = {
    ("bluestore", "bluestore_buffer_bytes"): "buffer_bytes",
    ("bluestore", "bluestore_onodes"): "onodes",
    ("bluestore-pricache:data", "committed_bytes"): "data_cache_committed_bytes",
    ("bluestore-pricache", "target_bytes"): "memory_target_bytes",
}


def perf_gauges(dump: dict[str, Any]) -> dict[str, float]:
    """Point-in-time values of one OSD's perf dump (cached data bytes, onodes, the autotuner's data cache size)."""
    out = {}
    for (sec, key), name in PERF_GAUGE.items():
        v = _num(dump.get(sec, {}).get(key))
        if v is not None:
            out[name] = v
    return out


def sum_osds(deltas: list[dict[str, float]]) -> dict[str, float]:
    """Cluster totals over OSDs: counts summed, means weighted by their counts."""
    tot: dict[str, float] = {}
    for d in deltas:
        for k, v in d.items():
            if k.endswith("_mean_ms"):
                continue
            tot[k] = tot.get(k, 0.0) + v
    for k in {k for d in deltas for k in d if k.endswith("_mean_ms")}:
        base = k[: -len("_mean_ms")]
        w = sum(d.get(f"{base}_count", 0.0) for d in deltas if k in d)
        if w > 0:
            tot[k] = sum(d[k] * d.get(f"{base}_count", 0.0) for d in deltas if k in d) / w
    return tot


def mechanism_shares(tot: dict[str, float]) -> dict[str, float | None]:
    """Shares the model also reports: buffer-cache hit share (bytes), onode hit share, deferred share."""

    def ratio(a: float | None, b: float | None) -> float | None:
        if a is None or b is None or b <= 0:
            return None
        return a / b

    hit = tot.get("buffer_hit_bytes")
    miss = tot.get("buffer_miss_bytes")
    oh = tot.get("onode_hits")
    om = tot.get("onode_misses")
    writes = None
    if tot.get("write_small") is not None and tot.get("write_big") is not None:
        writes = tot["write_small"] + tot["write_big"]
    return {
        "cache_hit_share": ratio(hit, (hit or 0) + (miss or 0)) if hit is not None and miss is not None else None,
        "onode_hit_share": ratio(oh, (oh or 0) + (om or 0)) if oh is not None and om is not None else None,
        # share of BlueStore writes (small + big write paths) that went through the deferred path
        "deferred_share": ratio(tot.get("write_deferred"), writes),
        "deferred_per_txc": ratio(tot.get("deferred_write_ops"), tot.get("txc")),
        "txc_per_kv_commit": ratio(tot.get("txc"), tot.get("kv_commit_count")),
    }


# ---------------------------------------------------------------------------------------- fio JSON
def fio_load(path: Path) -> dict[str, Any]:
    """fio's JSON output; tolerates text fio prints before the JSON (e.g. rbd engine warnings)."""
    txt = Path(path).read_text()
    i = txt.find("{")
    if i < 0:
        raise ValueError(f"{path}: no JSON object")
    return json.loads(txt[i:])


def _bins_quantile(bins: dict[str, int], q: float) -> float | None:
    """q-quantile (ns) from json+ bins {"<ns>": count}."""
    items = sorted((int(k), int(v)) for k, v in bins.items())
    n = sum(c for _, c in items)
    if n == 0:
        return None
    target = q * n
    acc = 0
    for v, c in items:
        acc += c
        if acc >= target:
            return float(v)
    return float(items[-1][0])


def bins_share_below(bins: dict[str, int], limit_ns: float) -> float | None:
    """Share of IOs faster than ``limit_ns`` from json+ bins."""
    n = sum(int(c) for c in bins.values())
    if n == 0:
        return None
    return sum(int(c) for k, c in bins.items() if int(k) < limit_ns) / n


def fast_mode_threshold_ns(bins: dict[str, int]) -> float | None:
    """The gap between a fast (cache) mode and the device mode of a read latency histogram.

    Returns the latency at the widest gap on a log scale between consecutive populated json+ bins
    holding at least 0.1 % of the IOs each, if that gap is at least a factor 1.8 (else None: unimodal
    as far as this crude test can tell). Bins with fewer IOs are ignored so that isolated outliers
    do not open gaps."""
    items = sorted((int(k), int(v)) for k, v in bins.items())
    n = sum(c for _, c in items)
    if n == 0:
        return None
    pop = [v for v, c in items if c >= max(1, 0.001 * n)]
    best = (0.0, None)
    for a, b in itertools.pairwise(pop):
        r = math.log(b / a) if a > 0 else 0.0
        if r > best[0]:
            best = (r, math.sqrt(a * b))
    return best[1] if best[0] >= math.log(1.8) else None


def fio_summary(d: dict[str, Any], fast_ns: float | None = None) -> dict[str, Any]:
    """One row from fio JSON: direction, IOPS, mean/p50/p99 total latency (ms), share < fast_ns."""
    job = d["jobs"][0]
    opts = {**d.get("global options", {}), **job.get("job options", {})}
    rw = opts.get("rw", "")
    dirn = "read" if "read" in rw else "write"
    s = job[dirn]
    lat = s.get("lat_ns", {})
    clat = s.get("clat_ns", {})
    pct = lat.get("percentile") or clat.get("percentile") or {}
    bins = lat.get("bins") or clat.get("bins") or {}
    p50 = pct.get("50.000000")
    p99 = pct.get("99.000000")
    if p50 is None and bins:
        p50 = _bins_quantile(bins, 0.50)
    if p99 is None and bins:
        p99 = _bins_quantile(bins, 0.99)
    row: dict[str, Any] = {
        "rw": rw,
        "dir": dirn,
        "qd": int(opts.get("iodepth", job.get("job options", {}).get("iodepth", 1))),
        "randrepeat": int(opts.get("randrepeat", 1)),
        "iops": s["iops"],
        "ios": s["total_ios"],
        "runtime_s": s["runtime"] / 1000.0,
        "lat_mean_ms": lat.get("mean", clat.get("mean", 0.0)) / 1e6,
        "p50_ms": (p50 or 0.0) / 1e6,
        "p99_ms": (p99 or 0.0) / 1e6,
        "fio_usr_pct": job.get("usr_cpu"),
        "fio_sys_pct": job.get("sys_cpu"),
    }
    if bins:
        thr = fast_ns if fast_ns is not None else fast_mode_threshold_ns(bins)
        row["fast_threshold_ms"] = thr / 1e6 if thr else None
        row["fast_share"] = bins_share_below(bins, thr) if thr else 0.0
    return row


# ---------------------------------------------------------------------------------------- /proc
def proc_cpu_seconds(stat_text: str, clk_tck: int) -> float:
    """utime + stime (seconds) from the text of /proc/<pid>/stat (the comm field may hold spaces)."""
    rest = stat_text[stat_text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); utime = field 14, stime = field 15
    return (int(rest[11]) + int(rest[12])) / clk_tck


def thread_delta(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per daemon and thread name: CPU seconds after - before (threads that appeared count from 0)."""
    return {n: {k: v - before.get(n, {}).get(k, 0.0) for k, v in th.items() if v - before.get(n, {}).get(k, 0.0) > 0}
            for n, th in after.items()}


#: thread-name prefixes of ceph-osd (Pacific) -> the role used in the derived tables
THREAD_ROLES = (("tp_osd_tp", "op_workers"), ("msgr-worker", "messenger"), ("bstore_kv_sync", "kv_sync"),
                ("bstore_kv_final", "kv_final"), ("bstore_aio", "aio"), ("rocksdb", "rocksdb"),
                ("finisher", "finisher"), ("fn_", "finisher"), ("cfin", "finisher"), ("bstore_", "bstore_other"))


def thread_role(name: str) -> str:
    for prefix, role in THREAD_ROLES:
        if name.startswith(prefix):
            return role
    return "other"


def thread_roles(per_daemon: dict[str, dict[str, float]], prefix: str = "osd.") -> dict[str, float]:
    """CPU seconds by thread role, summed over the daemons whose name starts with ``prefix``."""
    out: dict[str, float] = {}
    for n, th in per_daemon.items():
        if n.startswith(prefix):
            for k, v in th.items():
                r = thread_role(k)
                out[r] = out.get(r, 0.0) + v
    return out


def fio_thread_roles(threads: dict[str, float]) -> dict[str, float]:
    """fio's CPU seconds by role: ``job`` (fio's own threads: submission, reaping, accounting), ``messenger``
    (librbd's msgr-worker threads), ``librbd`` (io_context_pool, finishers, timers, other librados threads)."""
    out: dict[str, float] = {}
    for k, v in threads.items():
        r = "job" if k.startswith("fio") else "messenger" if k.startswith("msgr-worker") else "librbd"
        out[r] = out.get(r, 0.0) + v
    return out


def host_cpu(stat_text: str) -> tuple[float, float]:
    """(total, idle) jiffies from /proc/stat's first line."""
    f = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    return float(sum(f)), float(f[3] + f[4])


# ---------------------------------------------------------------------------------------- derived
def spread(values: list[float]) -> dict[str, float | None]:
    """mean, sample sd, cv and (max - min) / mean of repeated measurements."""
    v = [x for x in values if x is not None and not math.isnan(x)]
    if not v:
        return {"n": 0, "mean": None, "sd": None, "cv": None, "range_rel": None}
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return {
        "n": len(v),
        "mean": m,
        "sd": sd,
        "cv": sd / m if m else None,
        "range_rel": (max(v) - min(v)) / m if m else None,
    }
