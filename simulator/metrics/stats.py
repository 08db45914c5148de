"""Per-job statistics in fio's shape: slat/clat/lat, IOPS, bandwidth, percentiles, CIs.

:class:`JobStats` is fed once per completed IO by the workload runner (:meth:`JobStats.add`, the
hot path: one ``list.extend`` and one length check). Every :data:`FLUSH_SAMPLES` IOs the buffer is
turned into a numpy array and folded, by one numba kernel per data direction, into

* HDR histograms (ns, 3 significant digits) of slat, clat and lat,
* exact running moments (Welford) and exact min/max — fio's mean/stddev/min/max are exact too,
* fio's latency buckets (``latency_ns``/``_us``/``_ms``, counted on clat like fio),
* per-batch sums for confidence intervals: the statistics window is cut into
  :data:`DEFAULT_BATCHES` time batches (IO count, bytes, latency sums, and a coarse histogram of
  the latency kinds that carry percentiles),
* fio's per-interval IOPS/bandwidth samples (``iops_avg_time``/``bw_avg_time``, default 500 ms).

Memory is bounded by the histograms (≈ 270 KB per latency kind and direction in use), not by
the number of IOs.

Times are seconds (SI) at the interface; latencies inside results are integer nanoseconds, as
fio reports them (``*_ns`` field names).

Batch geometry is fixed once: by the first :meth:`JobStats.set_window` call if it comes before
the first IO (batch ``b`` covers ``t_start + b·w``, ``w = (t_end − t_start)/n_batches``; later
calls, e.g. the actual end of the run, only move the window's edges), otherwise batches start at
t = 0 with width 2^-20 s and double (adjacent pairs merged) whenever completions run past the
last of ``2·n_batches`` slots, so [0, last completion] holds between ``n_batches`` and
``2·n_batches`` equal batches. Either way, jobs with the same initial window (or none) have
aligned batches, which is what makes :func:`merge` (group_reporting) exact, CIs included.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numba import njit

from simulator.metrics.ci import CI, quantile_ci_from_batches, quantile_ci_order_stat, ratio_batch_means
from simulator.metrics.hdr import HdrHist, hdr_index, hdr_layout

__all__ = [
    "DDIR_NAMES",
    "DEFAULT_BATCHES",
    "DEFAULT_PERCENTILES",
    "FLUSH_SAMPLES",
    "LAT_KINDS",
    "BatchData",
    "DirResult",
    "JobResult",
    "JobStats",
    "LatStats",
    "SampleSeries",
    "SampleStats",
    "fio_bool",
    "merge",
    "percentile_key",
    "percentile_list_of",
]

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
# numba kernel


@njit(cache=True, inline="always")
def _lat_bucket(v: int) -> int:
    if v < 1000:
        u = v
        base = 0
    elif v < 1000000:
        u = v // 1000
        base = 10
    else:
        u = v // 1000000
        if u >= 2000:
            return 31
        if u >= 1000:
            return 30
        base = 20
    if u < 2:
        j = 0
    elif u < 4:
        j = 1
    elif u < 10:
        j = 2
    elif u < 20:
        j = 3
    elif u < 50:
        j = 4
    elif u < 100:
        j = 5
    elif u < 250:
        j = 6
    elif u < 500:
        j = 7
    elif u < 750:
        j = 8
    else:
        j = 9
    return base + j


@njit(cache=True, inline="always")
def _to_ns(x: float) -> int:
    y = x * 1e9
    if y <= 0.0:
        return 0
    if y > 9.0e18:
        return 9000000000000000000
    return int(y + 0.5)


@njit(cache=True)
def _accumulate(
    t, s, c, nb,
    hist, mom, mm, latb,
    bn, bbytes, bsum, bhist, pk, cshift, t0, w,
    sn, sbytes, period,
    unit_mag, half_mag, sub_mask, max_index,
):  # fmt: skip
    nslots = bn.shape[0]
    nsamp = sn.shape[0]
    ix = np.empty(3, np.int64)
    vv = np.empty(3, np.int64)
    for i in range(t.shape[0]):
        vv[0] = _to_ns(s[i])
        vv[1] = _to_ns(c[i])
        vv[2] = _to_ns(s[i] + c[i])
        for k in range(3):
            v = vv[k]
            j = hdr_index(v, unit_mag, half_mag, sub_mask, max_index)
            ix[k] = j
            hist[k, j] += 1
            n1 = mom[k, 0] + 1.0
            d = v - mom[k, 1]
            mom[k, 1] += d / n1
            mom[k, 2] += d * (v - mom[k, 1])
            mom[k, 0] = n1
            if v < mm[k, 0]:
                mm[k, 0] = v
            if v > mm[k, 1]:
                mm[k, 1] = v
        latb[_lat_bucket(vv[1])] += 1
        ti = t[i]
        b = int(math.floor((ti - t0) / w))
        if b < 0:
            b = 0
        elif b >= nslots:
            b = nslots - 1
        bn[b] += 1
        bbytes[b] += nb[i]
        bsum[b, 0] += vv[0]
        bsum[b, 1] += vv[1]
        bsum[b, 2] += vv[2]
        for q in range(pk.shape[0]):
            bhist[b, q, ix[pk[q]] >> cshift] += 1
        r = int(math.floor((ti - t0) / period))
        if 0 <= r < nsamp:
            sn[r] += 1
            sbytes[r] += nb[i]


def _chan(n1: float, m1: float, s1: float, n2: float, m2: float, s2: float) -> tuple[float, float, float]:
    """Combine (count, mean, M2) of two samples."""
    n = n1 + n2
    if n == 0:
        return 0.0, 0.0, 0.0
    d = m2 - m1
    return n, m1 + d * n2 / n, s1 + s2 + d * d * n1 * n2 / n


class _DirAcc:
    """Accumulators of one data direction (allocated on the first IO of that direction)."""

    __slots__ = ("bytes_total", "hist", "latb", "mm", "mom", "n_total", "sbytes", "sn", "t_first", "t_last")

    def __init__(self, layout):
        self.hist = np.zeros((3, layout.counts_len), dtype=np.int64)
        self.mom = np.zeros((3, 3), dtype=np.float64)
        self.mm = np.empty((3, 2), dtype=np.int64)
        self.mm[:, 0] = np.iinfo(np.int64).max
        self.mm[:, 1] = -1
        self.latb = np.zeros(N_LAT_BUCKETS, dtype=np.int64)
        self.sn = np.zeros(64, dtype=np.int64)
        self.sbytes = np.zeros(64, dtype=np.float64)
        self.n_total = 0
        self.bytes_total = 0
        self.t_first = math.inf
        self.t_last = -math.inf


class JobStats:
    """Collects the IOs of one fio job and produces its :class:`JobResult`.

    ``options`` are the job's effective fio options (strings); they select which latency kinds get
    percentiles (``clat_percentiles``, ``lat_percentiles``, ``slat_percentiles``), the percentile
    list (``percentile_list``) and the sampling interval of fio's iops/bw samples
    (``iops_avg_time``/``bw_avg_time``). Set ``n_batches`` / ``confidence`` before the first IO to
    change the batch-means setup.
    """

    def __init__(self, name: str, options: dict[str, str], groupid: int = 0, jobs: int = 1):
        self.name = name
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        self.groupid = int(groupid)
        self.jobs = int(jobs)
        self.n_batches = DEFAULT_BATCHES
        self.confidence = CONFIDENCE
        self._buf = array("d")  # (ddir, t_done, slat, clat, nbytes) per IO, raw doubles
        self._limit = 5 * FLUSH_SAMPLES
        self._sync_buf = array("d")
        self._layout = hdr_layout()
        self._acc: list[_DirAcc | None] = [None, None, None]
        self._batches: list[BatchData | None] = [None, None, None]
        self._pct_kinds = _percentile_kinds(self.options)
        self._plist = percentile_list_of(self.options)
        self._period = _sample_period(self.options)
        self.t_start: float | None = None
        self.t_end: float | None = None
        self._geometry: tuple[float, float] | None = None  # (t0, width), fixed at first flush
        self._sync_hist: HdrHist | None = None
        self._sync_mom = (0.0, 0.0, 0.0)
        self._sync_min = math.inf
        self._sync_max = -math.inf

    # -- hot path ------------------------------------------------------------------------------

    def add(self, ddir: int, t_done: float, slat: float, clat: float, nbytes: int) -> None:
        """Record one completed IO: direction, completion time, submission and completion
        latency (seconds), bytes transferred."""
        buf = self._buf
        buf.fromlist([ddir, t_done, slat, clat, nbytes])
        if len(buf) >= self._limit:
            self._flush()

    def add_sync(self, t_done: float, lat: float) -> None:
        """Record one completed fsync/fdatasync (fio's ``sync`` section), latency in seconds."""
        self._sync_buf.fromlist([t_done, lat])
        if len(self._sync_buf) >= 2 * FLUSH_SAMPLES:
            self._flush_sync()

    def set_window(self, t_start: float, t_end: float) -> None:
        """Statistics window [t_start, t_end) in seconds (after ramp_time); runtime, IOPS and
        bandwidth refer to it. Call it once before the first IO (the expected window) so that the
        batches of the confidence intervals tile it, and again at the end if the window moved."""
        if not (math.isfinite(t_start) and math.isfinite(t_end)) or t_end < t_start:
            raise ValueError(f"invalid statistics window [{t_start}, {t_end}]")
        self.t_start = float(t_start)
        self.t_end = float(t_end)
        if self._geometry is None and t_end > t_start and not self._buf and all(a is None for a in self._acc):
            # first window, before any IO: the batches tile it (later calls only move the edges)
            self._geometry = (self.t_start, (self.t_end - self.t_start) / self.n_batches)

    # -- bulk processing -----------------------------------------------------------------------

    def _ensure_geometry(self) -> tuple[float, float]:
        if self._geometry is None:  # no window before the first IO: doubling batches from t = 0
            self._geometry = (0.0, _INITIAL_WIDTH)
        return self._geometry

    def _fold_all(self) -> None:
        for bd in self._batches:
            if bd is not None:
                bd.fold()
        t0, w = self._geometry  # type: ignore[misc]
        self._geometry = (t0, 2.0 * w)

    def _flush(self) -> None:
        buf = self._buf
        if not buf:
            return
        self._buf = array("d")
        a = np.frombuffer(buf, dtype=np.float64).reshape(-1, 5)
        t0, w = self._ensure_geometry()
        nslots = 2 * self.n_batches
        tmax = float(a[:, 1].max())
        while tmax >= t0 + nslots * w and tmax - t0 < 1e12:
            self._fold_all()
            t0, w = self._geometry  # type: ignore[misc]
        dd = a[:, 0]
        L = self._layout
        lo, hi = float(dd.min()), float(dd.max())
        if lo < 0 or hi > 2 or not np.all(dd == np.floor(dd)):
            bad = dd[(dd < 0) | (dd > 2) | (dd != np.floor(dd))][0]
            raise ValueError(f"JobStats.add: ddir must be 0 (read), 1 (write) or 2 (trim), got {bad!r}")
        for ddir in range(int(lo), int(hi) + 1):
            if lo == hi:
                rows = a
            else:
                sel = dd == ddir
                if not sel.any():
                    continue
                rows = a[sel]
            acc = self._acc[ddir]
            bd = self._batches[ddir]
            if acc is None:
                acc = self._acc[ddir] = _DirAcc(L)
                ncoarse = (L.counts_len >> COARSE_SHIFT) + 1
                bd = self._batches[ddir] = BatchData(
                    t0,
                    w,
                    np.zeros(nslots, dtype=np.int64),
                    np.zeros(nslots, dtype=np.float64),
                    np.zeros((nslots, 3), dtype=np.float64),
                    np.zeros((nslots, len(self._pct_kinds), ncoarse), dtype=np.int32),
                    self._pct_kinds,
                )
            t = np.ascontiguousarray(rows[:, 1])
            # grow the fio sample series to cover the chunk
            need = int(math.floor((float(t.max()) - t0) / self._period)) + 1
            if need > acc.sn.size and need < 50_000_000:
                size = max(need, 2 * acc.sn.size)
                acc.sn = np.concatenate([acc.sn, np.zeros(size - acc.sn.size, dtype=np.int64)])
                acc.sbytes = np.concatenate([acc.sbytes, np.zeros(size - acc.sbytes.size)])
            nb = np.ascontiguousarray(rows[:, 4])
            _accumulate(
                t,
                np.ascontiguousarray(rows[:, 2]),
                np.ascontiguousarray(rows[:, 3]),
                nb,
                acc.hist,
                acc.mom,
                acc.mm,
                acc.latb,
                bd.n,
                bd.nbytes,
                bd.lat_sum,
                bd.hist,
                np.asarray(self._pct_kinds, dtype=np.int64),
                COARSE_SHIFT,
                t0,
                w,
                acc.sn,
                acc.sbytes,
                self._period,
                L.unit_magnitude,
                L.sub_bucket_half_count_magnitude,
                L.sub_bucket_mask,
                L.max_index,
            )
            acc.n_total += int(rows.shape[0])
            acc.bytes_total += int(round(float(nb.sum())))
            acc.t_first = min(acc.t_first, float(t.min()))
            acc.t_last = max(acc.t_last, float(t.max()))

    def _flush_sync(self) -> None:
        if not self._sync_buf:
            return
        a = np.frombuffer(self._sync_buf, dtype=np.float64).reshape(-1, 2)
        self._sync_buf = array("d")
        ns = np.rint(np.clip(a[:, 1], 0.0, None) * 1e9)
        if self._sync_hist is None:
            self._sync_hist = HdrHist(layout=self._layout)
        self._sync_hist.record_many(ns.astype(np.int64))
        n2, m2 = float(ns.size), float(ns.mean())
        s2 = float(((ns - m2) ** 2).sum())
        self._sync_mom = _chan(*self._sync_mom, n2, m2, s2)
        self._sync_min = min(self._sync_min, float(ns.min()))
        self._sync_max = max(self._sync_max, float(ns.max()))

    # -- result --------------------------------------------------------------------------------

    def _window(self) -> tuple[float, float]:
        t_last = max((a.t_last for a in self._acc if a is not None), default=0.0)
        t_start = self.t_start if self.t_start is not None else 0.0
        t_end = self.t_end if self.t_end is not None else max(t_last, t_start)
        return t_start, t_end

    def result(self) -> JobResult:
        """Flush and summarise (may be called more than once; recording may continue after)."""
        self._flush()
        self._flush_sync()
        t_start, t_end = self._window()
        runtime = max(t_end - t_start, 0.0)
        dirs = []
        latb_total = np.zeros(N_LAT_BUCKETS, dtype=np.int64)
        for ddir in range(3):
            acc = self._acc[ddir]
            if acc is None or acc.n_total == 0:
                dirs.append(DirResult(ddir))
                continue
            latb_total += acc.latb
            lats = []
            for k in range(3):
                n, mean, m2 = acc.mom[k]
                h = HdrHist(layout=self._layout)
                h.add_counts(acc.hist[k], int(acc.mm[k, 0]), int(acc.mm[k, 1]))
                ls = LatStats(
                    n=int(n),
                    min_ns=float(acc.mm[k, 0]),
                    max_ns=float(acc.mm[k, 1]),
                    mean_ns=float(mean),
                    stddev_ns=math.sqrt(m2 / (n - 1)) if n > 1 else 0.0,
                    hist=h,
                )
                if k in self._pct_kinds:
                    ls.percentiles = _percentile_dict(h, self._plist)
                lats.append(ls)
            series = SampleSeries(self._geometry[0], self._period, acc.sn.copy(), acc.sbytes.copy())  # type: ignore[index]
            bw_s, iops_s = series.stats(t_end)
            dr = DirResult(
                ddir=ddir,
                total_ios=acc.n_total,
                io_bytes=acc.bytes_total,
                runtime_s=runtime,
                iops=acc.n_total / runtime if runtime > 0 else 0.0,
                bw_bytes=acc.bytes_total / runtime if runtime > 0 else 0.0,
                slat=lats[0],
                clat=lats[1],
                lat=lats[2],
                bw_samples=bw_s,
                iops_samples=iops_s,
                batches=self._batches[ddir].copy(),  # type: ignore[union-attr]
                series=series,
            )
            _attach_cis(dr, t_start, t_end, self.confidence)
            dirs.append(dr)
        sync = LatStats()
        if self._sync_hist is not None and self._sync_hist.total_count:
            n, mean, m2 = self._sync_mom
            sync = LatStats(
                n=int(n),
                min_ns=self._sync_min,
                max_ns=self._sync_max,
                mean_ns=mean,
                stddev_ns=math.sqrt(m2 / (n - 1)) if n > 1 else 0.0,
                percentiles=_percentile_dict(self._sync_hist, self._plist),
                hist=self._sync_hist.copy(),
            )
        return JobResult(
            name=self.name,
            options=dict(self.options),
            groupid=self.groupid,
            jobs=self.jobs,
            read=dirs[0],
            write=dirs[1],
            trim=dirs[2],
            sync=sync,
            job_runtime_s=runtime,
            window=(t_start, t_end),
            latency_buckets=_bucket_percentages(latb_total),
        )


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
