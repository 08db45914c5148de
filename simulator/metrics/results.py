"""Result types of the metrics layer, in fio's shape: :class:`JobResult` (one reported job) with a
:class:`DirResult` per data direction, each with :class:`LatStats` of slat/clat/lat (exact moments,
HDR histogram, percentiles, confidence intervals), per-batch sums (:class:`BatchData`) and fio's
per-interval samples; the constants of fio's output (directions, latency kinds, default
percentiles, latency buckets) and the batch-means confidence intervals attached to a result.

Produced by :class:`simulator.metrics.jobstats.JobStats` (simulated runs) and
:mod:`simulator.fio.reader` (measured runs); combined by :func:`simulator.metrics.merge.merge`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.metrics.ci import CI, quantile_ci_from_batches, quantile_ci_order_stat, ratio_batch_means
from simulator.metrics.hdr import HdrHist

DDIR_NAMES = ("read", "write", "trim")
LAT_KINDS = ("slat", "clat", "lat")
DEFAULT_PERCENTILES = (
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
)  # fmt: skip
DEFAULT_BATCHES = 30
FLUSH_SAMPLES = 65536
CONFIDENCE = 0.95
MIN_TAIL_PER_BATCH = (
    5  # samples beyond a percentile per batch below which its CI is widened (see _attach_cis)
)

__all__ = ["CONFIDENCE", "DDIR_NAMES", "DEFAULT_BATCHES", "DEFAULT_PERCENTILES", "FLUSH_SAMPLES", "LAT_BUCKET_KEYS", "LAT_KINDS", "BatchData", "DirResult", "JobResult", "LatStats", "SampleSeries", "SampleStats", "fio_bool", "percentile_key", "percentile_list_of"]
COARSE_SHIFT = 4  # per-batch histograms merge 16 HDR sub-buckets: 64 bins per octave (~1.6 %)
_INITIAL_WIDTH = 2.0**-20  # s, batch width when no window is known (then doubled as needed)

# fio's latency buckets: keys of latency_ns / latency_us / latency_ms
LAT_BUCKET_KEYS = {
    "latency_ns": ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"),
    "latency_us": ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"),
    "latency_ms": ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"),
}
N_LAT_BUCKETS = 32


def percentile_key(p: float) -> str:
    """fio's JSON key of a percentile: ``99.9 -> "99.900000"``."""
    return f"{float(p):f}"


def fio_bool(value: Any, default: bool = False) -> bool:
    """fio's boolean option syntax: "1"/"0", "true"/"false", "yes"/"no", "on"/"off", "" (= set)."""
    if value is None:
        return default
    s = str(value).strip().lower()
    if s in ("", "1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    try:
        return float(s) != 0
    except ValueError:
        return default


def percentile_list_of(options: dict[str, str]) -> tuple[float, ...]:
    """fio's ``percentile_list`` (colon separated) or the default list."""
    raw = options.get("percentile_list")
    if not raw:
        return DEFAULT_PERCENTILES
    try:
        vals = tuple(float(x) for x in str(raw).replace(",", ":").split(":") if x.strip())
    except ValueError:
        return DEFAULT_PERCENTILES
    vals = tuple(v for v in vals if 0.0 <= v <= 100.0)
    return vals or DEFAULT_PERCENTILES


def _percentile_kinds(options: dict[str, str]) -> tuple[int, ...]:
    """Latency kinds (0 slat, 1 clat, 2 lat) that carry percentiles, following fio's options."""
    kinds = []
    if fio_bool(options.get("slat_percentiles"), False):
        kinds.append(0)
    lat = fio_bool(options.get("lat_percentiles"), False)
    # fio 3.x (<= 3.19): lat_percentiles and clat_percentiles are mutually exclusive
    clat_default = not lat
    if fio_bool(options.get("clat_percentiles"), clat_default):
        kinds.append(1)
    if lat:
        kinds.append(2)
    return tuple(kinds)


def _sample_period(options: dict[str, str]) -> float:
    """fio's ``iops_avg_time``/``bw_avg_time`` (ms unless a unit is given) in seconds; default 0.5 s."""
    from simulator.units import parse_time

    for key in ("iops_avg_time", "bw_avg_time"):
        raw = options.get(key)
        if raw is None or str(raw).strip() == "":
            continue
        s = str(raw).strip()
        try:
            v = float(s) / 1000.0
        except ValueError:
            try:
                v = parse_time(s)
            except ValueError:
                continue
        if v > 0:
            return v
    return 0.5


# ---------------------------------------------------------------------------------------------
# result types


@dataclass
class SampleStats:
    """fio's per-interval samples of bandwidth (KiB/s) or IOPS: ``*_min/max/mean/dev/samples``."""

    min: float = 0
    max: float = 0
    mean: float = 0.0
    stddev: float = 0.0
    samples: int = 0

    @classmethod
    def of(cls, values: np.ndarray) -> SampleStats:
        v = np.asarray(values, dtype=np.float64)
        if v.size == 0:
            return cls()
        sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
        return cls(int(v.min()), int(v.max()), float(v.mean()), sd, int(v.size))


@dataclass
class LatStats:
    """One latency kind (slat, clat, lat or sync) as fio reports it, values in nanoseconds.

    ``percentiles`` maps fio's keys ("99.900000") to ns, and is filled only for the kinds fio
    would print percentiles for (clat by default). ``hist`` is the HDR histogram (None for
    measured data without json+ bins). ``percentile_ci`` uses the same keys as ``percentiles``.
    """

    n: int = 0
    min_ns: float = 0.0
    max_ns: float = 0.0
    mean_ns: float = 0.0
    stddev_ns: float = 0.0
    percentiles: dict[str, float] = field(default_factory=dict)
    hist: HdrHist | None = field(default=None, repr=False)
    mean_ci: CI | None = None
    percentile_ci: dict[str, CI] = field(default_factory=dict)

    @property
    def mean_ms(self) -> float:
        return self.mean_ns / 1e6

    def has_distribution(self) -> bool:
        return bool(self.percentiles) or (self.hist is not None and self.hist.total_count > 0)

    def percentile_ns(self, p: float) -> float:
        """The ``p``-th percentile in ns: the table value if fio printed it, else from the
        histogram, else interpolated in the table (NaN if nothing is known)."""
        key = percentile_key(p)
        if key in self.percentiles:
            return float(self.percentiles[key])
        if self.hist is not None and self.hist.total_count > 0:
            return float(self.hist.value_at_percentile(p))
        if not self.percentiles:
            return math.nan
        ps, vs = self.table()
        return float(np.interp(p, ps, vs))

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """The percentile table as sorted arrays (percent, ns)."""
        items = sorted((float(k), float(v)) for k, v in self.percentiles.items())
        if not items:
            return np.zeros(0), np.zeros(0)
        a = np.asarray(items)
        return a[:, 0], a[:, 1]

    def ci_of(self, p: float) -> CI | None:
        return self.percentile_ci.get(percentile_key(p))


@dataclass
class BatchData:
    """Per-batch sums of one data direction (time batches of width ``width`` from ``t0``).

    ``n``/``nbytes`` per slot, ``lat_sum[:, k]`` the summed latency (ns) of kind k, ``hist[:, j]``
    a coarse histogram (HDR index >> ``coarse_shift``) of latency kind ``hist_kinds[j]``.
    """

    t0: float
    width: float
    n: np.ndarray
    nbytes: np.ndarray
    lat_sum: np.ndarray
    hist: np.ndarray
    hist_kinds: tuple[int, ...]
    coarse_shift: int = COARSE_SHIFT

    def spans(self, t_start: float, t_end: float) -> np.ndarray:
        """Duration of each slot inside ``[t_start, t_end]``."""
        b = np.arange(self.n.size, dtype=np.float64)
        lo = np.maximum(self.t0 + b * self.width, t_start)
        hi = np.minimum(self.t0 + (b + 1) * self.width, t_end)
        return np.maximum(hi - lo, 0.0)

    def copy(self) -> BatchData:
        return BatchData(
            self.t0, self.width, self.n.copy(), self.nbytes.copy(), self.lat_sum.copy(), self.hist.copy(),
            self.hist_kinds, self.coarse_shift,
        )  # fmt: skip

    def fold(self) -> None:
        """Double the width: merge adjacent slot pairs (in place)."""
        for name in ("n", "nbytes", "lat_sum", "hist"):
            a = getattr(self, name)
            out = np.zeros_like(a)
            half = a.shape[0] // 2
            out[:half] = a[0 : 2 * half : 2] + a[1 : 2 * half : 2]
            setattr(self, name, out)
        self.width *= 2.0

    @staticmethod
    def merged(parts: Sequence[BatchData]) -> BatchData | None:
        """Sum aligned batch data of several jobs (same origin, widths power-of-two multiples)."""
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        first = parts[0]
        wmax = max(p.width for p in parts)
        out = None
        for p in parts:
            if abs(p.t0 - first.t0) > 1e-9 * max(1.0, abs(first.t0)) or p.n.size != first.n.size:
                return None
            ratio = wmax / p.width
            k = round(math.log2(ratio)) if ratio > 0 else -1
            if k < 0 or abs(ratio - 2.0**k) > 1e-9 * ratio:
                return None
            q = p.copy()
            for _ in range(k):
                q.fold()
            q.width = wmax
            if out is None:
                out = q
                continue
            out.n += q.n
            out.nbytes += q.nbytes
            out.lat_sum += q.lat_sum
            if (
                out.hist_kinds == q.hist_kinds
                and out.coarse_shift == q.coarse_shift
                and out.hist.shape == q.hist.shape
            ):
                out.hist += q.hist
            else:
                out.hist = np.zeros((out.n.size, 0, 0), dtype=np.int32)
                out.hist_kinds = ()
        return out


@dataclass
class SampleSeries:
    """Per-interval IO counts and bytes (fio's iops/bw samples), ``period`` seconds from ``t0``."""

    t0: float
    period: float
    n: np.ndarray
    nbytes: np.ndarray

    def stats(self, t_end: float) -> tuple[SampleStats, SampleStats]:
        """(bw KiB/s, iops) sample statistics over the complete intervals before ``t_end``."""
        k = int(math.floor((t_end - self.t0) / self.period + 1e-9))
        k = max(min(k, self.n.size), 0)
        if k == 0:
            return SampleStats(), SampleStats()
        iops = np.floor(self.n[:k] / self.period)
        bw = np.floor(self.nbytes[:k] / self.period / 1024.0)
        return SampleStats.of(bw), SampleStats.of(iops)

    @staticmethod
    def merged(parts: Sequence[SampleSeries]) -> SampleSeries | None:
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        f = parts[0]
        if any(abs(p.t0 - f.t0) > 1e-9 or abs(p.period - f.period) > 1e-12 for p in parts):
            return None
        size = max(p.n.size for p in parts)
        n = np.zeros(size, dtype=np.int64)
        b = np.zeros(size, dtype=np.float64)
        for p in parts:
            n[: p.n.size] += p.n
            b[: p.nbytes.size] += p.nbytes
        return SampleSeries(f.t0, f.period, n, b)


@dataclass
class DirResult:
    """One data direction (0 read, 1 write, 2 trim) of one job, simulated or measured.

    ``bw_bytes`` is B/s, ``runtime_s`` seconds; ``bw_samples`` is in KiB/s and ``iops_samples`` in
    IO/s per sampling interval, as fio's ``bw_*``/``iops_*`` fields. ``iops_ci``/``bw_ci`` come
    from batch means (None for measured data).
    """

    ddir: int
    total_ios: int = 0
    io_bytes: int = 0
    runtime_s: float = 0.0
    iops: float = 0.0
    bw_bytes: float = 0.0
    short_ios: int = 0
    drop_ios: int = 0
    slat: LatStats = field(default_factory=LatStats)
    clat: LatStats = field(default_factory=LatStats)
    lat: LatStats = field(default_factory=LatStats)
    bw_samples: SampleStats = field(default_factory=SampleStats)
    iops_samples: SampleStats = field(default_factory=SampleStats)
    iops_ci: CI | None = None
    bw_ci: CI | None = None
    batches: BatchData | None = field(default=None, compare=False, repr=False)
    series: SampleSeries | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return DDIR_NAMES[self.ddir]

    @property
    def present(self) -> bool:
        return self.total_ios > 0

    def latency(self, kind: str) -> LatStats:
        if kind not in LAT_KINDS:
            raise ValueError(f"latency kind must be one of {LAT_KINDS}, not {kind!r}")
        return getattr(self, kind)

    @property
    def bw_mbps(self) -> float:
        return self.bw_bytes / 1e6


@dataclass
class JobResult:
    """One fio job (or group, after :func:`merge`): three directions, sync, fio's buckets.

    ``jobs`` is the number of fio jobs aggregated (numjobs with group_reporting). ``window`` is
    the statistics window (simulated runs). ``latency_buckets`` holds fio's ``latency_ns``,
    ``latency_us`` and ``latency_ms`` maps (percent of IOs). ``extra`` keeps other fields of a
    measured job (cpu, iodepth levels...) so they survive a read/write round trip.
    """

    name: str
    options: dict[str, str] = field(default_factory=dict)
    groupid: int = 0
    jobs: int = 1
    error: int = 0
    read: DirResult = field(default_factory=lambda: DirResult(0))
    write: DirResult = field(default_factory=lambda: DirResult(1))
    trim: DirResult = field(default_factory=lambda: DirResult(2))
    sync: LatStats = field(default_factory=LatStats)
    job_runtime_s: float = 0.0
    window: tuple[float, float] | None = None
    latency_buckets: dict[str, dict[str, float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def dirs(self) -> tuple[DirResult, DirResult, DirResult]:
        return (self.read, self.write, self.trim)

    def dir(self, ddir: int | str) -> DirResult:
        if isinstance(ddir, str):
            ddir = DDIR_NAMES.index(ddir)
        return self.dirs[ddir]

    def present_dirs(self) -> list[DirResult]:
        return [d for d in self.dirs if d.present]

    @property
    def total_ios(self) -> int:
        return sum(d.total_ios for d in self.dirs)



# ---------------------------------------------------------------------------------------------
# helpers shared by JobStats.result and merge


def _percentile_dict(h: HdrHist, plist: Sequence[float]) -> dict[str, float]:
    if h.total_count == 0:
        return {}
    vals = h.values_at_percentiles(list(plist))
    return {percentile_key(p): int(v) for p, v in zip(plist, vals, strict=True)}


def _bucket_percentages(counts: np.ndarray) -> dict[str, dict[str, float]]:
    total = int(counts.sum())
    out: dict[str, dict[str, float]] = {}
    for name, keys in LAT_BUCKET_KEYS.items():
        base = {"latency_ns": 0, "latency_us": 10, "latency_ms": 20}[name]
        d = {}
        for i, k in enumerate(keys):
            c = int(counts[base + i])
            v = 100.0 * c / total if total else 0.0
            if 0 < v < 0.01:
                v = 0.01  # fio's floor for non-empty buckets
            d[k] = v
        out[name] = d
    return out


def _attach_cis(dr: DirResult, t_start: float, t_end: float, level: float = CONFIDENCE) -> None:
    """Batch-means CIs of IOPS, bandwidth, mean latencies and percentiles (in place)."""
    bd = dr.batches
    if bd is None or dr.total_ios == 0:
        return
    span = bd.spans(t_start, t_end)
    use = span > 0
    if use.sum() < 2:
        return
    n = bd.n[use].astype(np.float64)
    dr.iops_ci = ratio_batch_means(n, span[use], level)
    dr.bw_ci = ratio_batch_means(bd.nbytes[use], span[use], level)
    for k, kind in enumerate(LAT_KINDS):
        ls: LatStats = getattr(dr, kind)
        ls.mean_ci = ratio_batch_means(bd.lat_sum[use, k], n, level)
        ls.percentile_ci = {}
        if k not in bd.hist_kinds or ls.hist is None or not ls.percentiles or bd.hist.size == 0:
            continue
        j = bd.hist_kinds.index(k)
        bh = bd.hist[use, j, :].astype(np.float64)
        cum_b = np.cumsum(bh, axis=1)
        counts = ls.hist.counts
        sh = bd.coarse_shift
        for key in ls.percentiles:
            p = float(key)
            i_p = ls.hist.index_of(int(ls.hist.value_at_percentile(p)))
            c = i_p >> sh
            lo_i, hi_i = c << sh, min((c + 1) << sh, counts.size)
            tot_c = float(counts[lo_i:hi_i].sum())
            frac = float(counts[lo_i : i_p + 1].sum()) / tot_c if tot_c > 0 else 1.0
            below = (cum_b[:, c - 1] if c > 0 else 0.0) + frac * bh[:, c]
            ci = quantile_ci_from_batches(p, below, n, ls.hist.value_at_percentile, level)
            tail = min(p, 100.0 - p) / 100.0 * dr.total_ios
            if tail < MIN_TAIL_PER_BATCH * n.size:
                # too few samples beyond the percentile per batch for the batch indicator means to
                # be near-normal: widen to the (iid) order-statistics interval as well
                os_ci = quantile_ci_order_stat(p, ls.hist.total_count, ls.hist.value_at_percentile, level)
                if ci is None:
                    ci = os_ci
                elif os_ci is not None:
                    ci = CI(ci.estimate, min(ci.lo, os_ci.lo), max(ci.hi, os_ci.hi), level,
                            "batch-means+order-statistics", ci.n, ci.lag1)  # fmt: skip
            if ci is not None:
                ls.percentile_ci[key] = ci


