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

import numpy as np
from numba import njit

from simulator import nbcache
from simulator.metrics import hdr as _hdr
from simulator.metrics.hdr import HdrHist, hdr_index, hdr_layout
from simulator.metrics.results import (
    _INITIAL_WIDTH,
    COARSE_SHIFT,
    CONFIDENCE,
    DEFAULT_BATCHES,
    FLUSH_SAMPLES,
    N_LAT_BUCKETS,
    BatchData,
    DirResult,
    JobResult,
    LatStats,
    SampleSeries,
    _attach_cis,
    _bucket_percentages,
    _percentile_dict,
    _percentile_kinds,
    _sample_period,
    percentile_list_of,
)

nbcache.invalidate_stale(__file__, _hdr.__file__)  # the recording kernels inline the HDR index

__all__ = ["JobStats"]

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

    def add_many(self, rows: np.ndarray) -> None:
        """Record many completed IOs: rows of (ddir, t_done, slat, clat, nbytes) in completion order
        (the compiled core's log). Flushes at the same IO counts as :meth:`add`, so the result is
        the same as adding the rows one by one."""
        a = np.ascontiguousarray(rows, dtype=np.float64).reshape(-1)
        i = 0
        while i < a.size:
            k = min(a.size - i, self._limit - len(self._buf))  # both multiples of 5
            self._buf.frombytes(a[i : i + k].tobytes())
            i += k
            if len(self._buf) >= self._limit:
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


