"""Merging job results (fio's ``group_reporting``, and runs of one point): exact where the parts
have aligned statistics batches (same window), CIs included."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from simulator.metrics.hdr import HdrHist
from simulator.metrics.jobstats import _chan
from simulator.metrics.results import (
    CONFIDENCE,
    LAT_BUCKET_KEYS,
    LAT_KINDS,
    BatchData,
    DirResult,
    JobResult,
    LatStats,
    SampleSeries,
    SampleStats,
    _attach_cis,
    _percentile_dict,
)

__all__ = ["merge"]


def _merge_lat(parts: Sequence[LatStats]) -> LatStats:
    parts = [p for p in parts if p.n > 0]
    if not parts:
        return LatStats()
    if len(parts) == 1:
        return replace(parts[0], percentiles=dict(parts[0].percentiles), mean_ci=None, percentile_ci={},
                       hist=parts[0].hist.copy() if parts[0].hist is not None else None)  # fmt: skip
    n, m, s = 0.0, 0.0, 0.0
    for p in parts:
        n, m, s = _chan(n, m, s, float(p.n), p.mean_ns, p.stddev_ns**2 * max(p.n - 1, 0))
    hist = HdrHist.merged([p.hist for p in parts]) if all(p.hist is not None for p in parts) else None
    keys: list[str] = []
    for p in parts:
        keys += [k for k in p.percentiles if k not in keys]
    pct: dict[str, float] = {}
    if hist is not None and keys:
        pct = _percentile_dict(hist, [float(k) for k in keys])
    return LatStats(
        n=int(n),
        min_ns=min(p.min_ns for p in parts),
        max_ns=max(p.max_ns for p in parts),
        mean_ns=m,
        stddev_ns=math.sqrt(s / (n - 1)) if n > 1 else 0.0,
        percentiles=pct,
        hist=hist,
    )


def _merge_dir(
    ddir: int, parts: Sequence[DirResult], level: float, window: tuple[float, float] | None
) -> DirResult:

    live = [p for p in parts if p.present]
    if not live:
        return DirResult(ddir)
    total = sum(p.total_ios for p in live)
    nbytes = sum(p.io_bytes for p in live)
    runtime = max(p.runtime_s for p in live)
    out = DirResult(
        ddir=ddir,
        total_ios=total,
        io_bytes=nbytes,
        runtime_s=runtime,
        iops=total / runtime if runtime > 0 else sum(p.iops for p in live),
        bw_bytes=nbytes / runtime if runtime > 0 else sum(p.bw_bytes for p in live),
        short_ios=sum(p.short_ios for p in live),
        drop_ios=sum(p.drop_ios for p in live),
        slat=_merge_lat([p.slat for p in live]),
        clat=_merge_lat([p.clat for p in live]),
        lat=_merge_lat([p.lat for p in live]),
    )
    series = (
        SampleSeries.merged([p.series for p in live]) if all(p.series is not None for p in live) else None
    )
    if series is not None:
        out.series = series
        out.bw_samples, out.iops_samples = series.stats(series.t0 + runtime)
    else:  # measured: per-job sample statistics only; sum them (independent jobs)
        for attr in ("bw_samples", "iops_samples"):
            ss = [getattr(p, attr) for p in live]
            setattr(
                out,
                attr,
                SampleStats(
                    sum(s.min for s in ss),
                    sum(s.max for s in ss),
                    sum(s.mean for s in ss),
                    math.sqrt(sum(s.stddev**2 for s in ss)),
                    max(s.samples for s in ss),
                ),
            )
    if len(live) == 1:
        src = live[0]
        out.iops_ci, out.bw_ci = src.iops_ci, src.bw_ci
        for kind in LAT_KINDS:
            a, b = getattr(out, kind), getattr(src, kind)
            a.mean_ci, a.percentile_ci = b.mean_ci, dict(b.percentile_ci)
        out.batches = src.batches.copy() if src.batches is not None else None
        return out
    if all(p.batches is not None for p in live):
        out.batches = BatchData.merged([p.batches for p in live])  # type: ignore[misc]
        if out.batches is not None:
            t_start, t_end = window if window is not None else (out.batches.t0, out.batches.t0 + runtime)
            _attach_cis(out, t_start, t_end, level)
    return out


def merge(results: Sequence[JobResult], level: float = CONFIDENCE) -> JobResult:
    """Aggregate jobs as fio's ``group_reporting`` does (numjobs > 1 or several jobs of a group).

    Counts and bytes add, runtime is the longest, histograms merge exactly (percentiles are
    recomputed from the merged histogram), mean/stddev pool exactly; batch-means CIs are
    recomputed from the summed per-batch data when the jobs' batches are aligned (same window).
    fio's per-interval bw/iops samples are summed interval by interval when available.
    """
    results = list(results)
    if not results:
        raise ValueError("merge() needs at least one JobResult")
    first = results[0]
    if len(results) == 1:
        return first
    windows = [r.window for r in results]
    window = None
    if all(w is not None for w in windows):
        window = (min(w[0] for w in windows), max(w[1] for w in windows))  # type: ignore[index]
    dirs = [_merge_dir(d, [r.dirs[d] for r in results], level, window) for d in range(3)]
    total = sum(r.total_ios for r in results)
    buckets: dict[str, dict[str, float]] = {}
    for name in LAT_BUCKET_KEYS:
        acc: dict[str, float] = {}
        for r in results:
            for k, v in r.latency_buckets.get(name, {}).items():
                acc[k] = acc.get(k, 0.0) + float(v) * r.total_ios
        if acc:
            buckets[name] = {k: (v / total if total else 0.0) for k, v in acc.items()}
    return JobResult(
        name=first.name,
        options=dict(first.options),
        groupid=first.groupid,
        jobs=sum(r.jobs for r in results),
        error=next((r.error for r in results if r.error), 0),
        read=dirs[0],
        write=dirs[1],
        trim=dirs[2],
        sync=_merge_lat([r.sync for r in results]),
        job_runtime_s=max(r.job_runtime_s for r in results),
        window=window,
        latency_buckets=buckets,
    )

