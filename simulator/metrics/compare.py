"""Simulated vs measured: the one comparison routine.

:func:`compare` takes two :class:`DirResult` (one direction each, from a simulation and from
:func:`simulator.fio.read_fio`, or any two runs) and reports

* IOPS error in percent, and whether the measured IOPS lies inside the simulation's CI;
* log-ratio errors ``ln(sim/measured)`` of the mean latency and of p50, p99, p99.9 (a log ratio
  of 0.1 is ~10.5 % too slow, -0.1 ~9.5 % too fast; symmetric, and additive over a model chain);
* Ruemmler & Wilkes' demerit figure: the root-mean-square horizontal distance between the two
  latency CDFs, ``sqrt(∫_0^1 (Q_sim(u) − Q_meas(u))² du)``, in ms and as % of the measured mean
  ("An introduction to disk drive modeling", IEEE Computer 1994).

The demerit is exact on histograms (HDR bucket midpoints, step quantile functions) when both
sides have one. Otherwise both sides are reduced to the measured percentile table (the
simulation's values at the same percentiles), the quantile functions are interpolated linearly
between table points and held constant beyond the first and last, and the integral is exact for
those interpolants; ``demerit_method`` says which was used.

Latency is fio's completion latency (clat) unless the measured run carries percentiles for
total latency only (``lat_percentiles=1``); ``kind`` overrides.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simulator.metrics.hdr import HdrHist
from simulator.metrics.stats import LAT_KINDS, DirResult, JobResult, LatStats

__all__ = [
    "COMPARE_PERCENTILES",
    "compare",
    "compare_jobs",
    "demerit",
    "log_ratio",
    "rms_distance_hist",
    "rms_distance_table",
]

COMPARE_PERCENTILES = (50.0, 99.0, 99.9)


def log_ratio(sim: float, measured: float) -> float:
    """``ln(sim/measured)``; NaN when either is not positive/finite."""
    if not (math.isfinite(sim) and math.isfinite(measured)) or sim <= 0 or measured <= 0:
        return math.nan
    return math.log(sim / measured)


def _quantile_steps(h: HdrHist) -> tuple[np.ndarray, np.ndarray]:
    lo, width, cnt = h.distribution()
    mids = lo.astype(np.float64) + (width >> 1).astype(np.float64)
    cum = np.cumsum(cnt, dtype=np.float64)
    return cum / cum[-1], mids


def rms_distance_hist(a: HdrHist, b: HdrHist) -> float:
    """Exact RMS horizontal distance (same unit as the values, ns) between two histograms' CDFs."""
    if a.total_count == 0 or b.total_count == 0:
        return math.nan
    fa, va = _quantile_steps(a)
    fb, vb = _quantile_steps(b)
    u = np.unique(np.concatenate([fa, fb, [0.0, 1.0]]))
    u = u[(u >= 0.0) & (u <= 1.0)]
    du = np.diff(u)
    mid = 0.5 * (u[1:] + u[:-1])
    qa = va[np.minimum(np.searchsorted(fa, mid, side="left"), va.size - 1)]
    qb = vb[np.minimum(np.searchsorted(fb, mid, side="left"), vb.size - 1)]
    return float(math.sqrt(float(np.dot((qa - qb) ** 2, du))))


def rms_distance_table(percentiles, qa, qb) -> float:
    """RMS horizontal distance between two quantile functions known at ``percentiles`` (0..100),
    linear between points and constant beyond the ends (exact integral of the interpolants)."""
    p = np.asarray(percentiles, dtype=np.float64) / 100.0
    d = np.asarray(qa, dtype=np.float64) - np.asarray(qb, dtype=np.float64)
    ok = np.isfinite(p) & np.isfinite(d) & (p >= 0) & (p <= 1)
    p, d = p[ok], d[ok]
    if p.size == 0:
        return math.nan
    order = np.argsort(p)
    p, d = p[order], d[order]
    total = d[0] ** 2 * p[0] + d[-1] ** 2 * (1.0 - p[-1])
    dp = np.diff(p)
    total += float(np.dot(dp, (d[:-1] ** 2 + d[:-1] * d[1:] + d[1:] ** 2) / 3.0))
    return float(math.sqrt(max(total, 0.0)))


def demerit(sim: LatStats, measured: LatStats) -> tuple[float, str]:
    """(RMS horizontal CDF distance in ns, method) of two latency distributions."""
    if (
        sim.hist is not None
        and measured.hist is not None
        and sim.hist.total_count
        and measured.hist.total_count
    ):
        return rms_distance_hist(sim.hist, measured.hist), "histogram"
    base = measured if measured.percentiles else sim
    ps, _ = base.table()
    ps = ps[(ps > 0) & (ps < 100)]
    if ps.size == 0:
        return math.nan, "none"
    qs = np.array([sim.percentile_ns(p) for p in ps])
    qm = np.array([measured.percentile_ns(p) for p in ps])
    return rms_distance_table(ps, qs, qm), "percentiles"


def _kind(sim: DirResult, measured: DirResult, kind: str) -> str:
    if kind != "auto":
        if kind not in LAT_KINDS:
            raise ValueError(f"kind must be 'auto' or one of {LAT_KINDS}")
        return kind
    for k in ("clat", "lat", "slat"):
        if measured.latency(k).has_distribution() and sim.latency(k).n:
            return k
    return "clat"


def _pname(p: float) -> str:
    return f"p{p:g}"


def compare(
    sim: DirResult, measured: DirResult, *, kind: str = "auto", percentiles=COMPARE_PERCENTILES
) -> dict:
    """Compare one direction of a simulated run with a measured one (see module doc).

    Keys: ``direction``, ``kind``, ``iops_sim``, ``iops_measured``, ``iops_err_pct``,
    ``iops_in_sim_ci`` (None without CI), ``mean_ms_sim``, ``mean_ms_measured``,
    ``mean_log_ratio``, and for each percentile ``p50_ms_sim``, ``p50_ms_measured``,
    ``p50_log_ratio`` (p99, p99.9 likewise), then ``demerit_ms``, ``demerit_pct`` (of the
    measured mean) and ``demerit_method``.
    """
    k = _kind(sim, measured, kind)
    ls, lm = sim.latency(k), measured.latency(k)
    out: dict[str, Any] = {"direction": measured.name, "kind": k}
    out["iops_sim"] = sim.iops
    out["iops_measured"] = measured.iops
    out["iops_err_pct"] = (
        100.0 * (sim.iops - measured.iops) / measured.iops if measured.iops > 0 else math.nan
    )
    out["iops_in_sim_ci"] = sim.iops_ci.contains(measured.iops) if sim.iops_ci is not None else None
    out["mean_ms_sim"] = ls.mean_ns / 1e6
    out["mean_ms_measured"] = lm.mean_ns / 1e6
    out["mean_log_ratio"] = log_ratio(ls.mean_ns, lm.mean_ns)
    for p in percentiles:
        vs, vm = ls.percentile_ns(p), lm.percentile_ns(p)
        out[f"{_pname(p)}_ms_sim"] = vs / 1e6
        out[f"{_pname(p)}_ms_measured"] = vm / 1e6
        out[f"{_pname(p)}_log_ratio"] = log_ratio(vs, vm)
    dem, method = demerit(ls, lm)
    out["demerit_ms"] = dem / 1e6
    out["demerit_pct"] = 100.0 * dem / lm.mean_ns if lm.mean_ns > 0 else math.nan
    out["demerit_method"] = method
    return out


def compare_jobs(sim: JobResult, measured: JobResult, *, kind: str = "auto") -> dict[str, dict]:
    """:func:`compare` for every direction the measured job has IOs in, keyed by direction name."""
    return {m.name: compare(sim.dir(m.ddir), m, kind=kind) for m in measured.present_dirs()}
