"""Has a run reached steady state? MSER truncation over batch means.

MSER (White 1997; MSER-5: White, Cobb & Spratt 2000) chooses the truncation point d* of a time
series x_1..x_n that minimises the standard error of the mean of what is left,

    z(d) = sum_{i>d} (x_i - mean_{>d})^2 / (n - d)^2 ,

computed over batch means of ``batch`` consecutive observations (MSER-5: batches of 5). Its own
rule says the run is too short when d* falls in the second half of the series. Searched over the
whole series, z(d) has spurious minima near the end (a few batches that happen to agree), so here
d* is searched in the first half and what is left is tested for drift: if its two halves differ
by more than DRIFT_Z standard errors and DRIFT_REL of the mean, the run has not reached steady
state (a cache still filling, a queue still growing); so has it when the warm-up moves the
window's mean by more than MAX_BIAS (the reported figure would be the transient). The observations are the per-interval IOPS
samples fio records (``iops_avg_time``, 0.5 s by default) over the measured window.

:func:`detect` returns a :class:`SteadyState`: ``steady`` (None when there are too few batches to
judge), ``warmup_s`` (the truncation, seconds from the start of the measured window), the mean
over the whole window and after the truncation, and ``bias`` = whole/after - 1 (how much the
warm-up moves the reported mean).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["MIN_BATCHES", "SteadyState", "detect", "detect_series", "mser", "plot_warmups"]

#: fewer batches than this: no verdict (steady = None)
MIN_BATCHES = 8
#: the truncation point is searched while at least this many batches remain (MSER's end effect)
MIN_TAIL = 4
#: drift test on what is left after the truncation: halves differing by > DRIFT_Z standard errors
#: and > DRIFT_REL of the mean
DRIFT_Z = 3.0
DRIFT_REL = 0.05
#: a warm-up that moves the window's mean by more than this (relative) makes the result a transient
MAX_BIAS = 0.10


def mser(batch_means: np.ndarray, max_d: int | None = None) -> int:
    """MSER truncation point (in batches) of a series of batch means: the d <= ``max_d`` (default:
    all but the last MIN_TAIL batches) minimising z(d); 0 if too short to tell."""
    x = np.asarray(batch_means, dtype=float)
    k = x.size
    if k < 2:
        return 0
    top = k - MIN_TAIL if max_d is None else min(max_d, k - 2)
    best, bz = 0, np.inf
    # suffix sums give every z(d) in O(k)
    s1 = np.cumsum(x[::-1])[::-1]
    s2 = np.cumsum((x * x)[::-1])[::-1]
    for d in range(0, max(0, top) + 1):
        m = k - d
        ss = s2[d] - s1[d] * s1[d] / m
        z = max(ss, 0.0) / (m * m)
        if d == 0 or z < bz * (1.0 - 1e-12):
            bz, best = z, d
    return best


def drifting(tail: np.ndarray, rel: float = DRIFT_REL, z: float = DRIFT_Z) -> bool:
    """True if the two halves of ``tail`` (batch means) differ by more than ``z`` standard errors
    and more than ``rel`` of the mean: the series still drifts."""
    n = tail.size // 2
    if n < 2:
        return False
    a, b = tail[:n], tail[-n:]
    se = float(np.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n))
    diff = abs(float(a.mean() - b.mean()))
    return diff > z * se and diff > rel * abs(float(tail.mean()))


@dataclass(frozen=True)
class SteadyState:
    steady: bool | None  # None: too few samples to judge
    warmup_s: float  # MSER truncation from the start of the measured window, seconds
    window_s: float  # measured window covered by the samples, seconds
    mean_all: float  # mean of the samples over the whole window
    mean_after: float  # mean after the truncation
    bias: float  # mean_all / mean_after - 1
    batches: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def message(self) -> str:
        if self.steady is None:
            return f"too short to judge steady state ({self.batches} batches)"
        if abs(self.bias) > MAX_BIAS:
            return (
                f"NOT in steady state: a warm-up of {self.warmup_s:g} s (MSER) moves the mean by "
                f"{self.bias * 100:+.0f} % ({self.mean_all:.4g} over the window, {self.mean_after:.4g} after it); "
                "add ramp_time or run longer"
            )
        if not self.steady:
            return (
                f"NOT in steady state: the rate still drifts after the MSER warm-up of {self.warmup_s:g} s "
                f"(of {self.window_s:g} s); run longer"
            )
        return "steady"


def detect(samples: np.ndarray, period: float, batch: int = 5) -> SteadyState:
    """Steady-state verdict for per-interval samples (e.g. IOPS) ``period`` seconds apart."""
    x = np.asarray(samples, dtype=float)
    k = x.size // batch
    window = x.size * period
    if k < MIN_BATCHES:
        m = float(x.mean()) if x.size else 0.0
        return SteadyState(None, 0.0, window, m, m, 0.0, k)
    bm = x[: k * batch].reshape(k, batch).mean(axis=1)
    d = mser(bm, k // 2)
    m_all = float(bm.mean())
    m_after = float(bm[d:].mean())
    bias = m_all / m_after - 1.0 if m_after else 0.0
    steady = not drifting(bm[d:]) and abs(bias) <= MAX_BIAS
    return SteadyState(steady, d * batch * period, window, m_all, m_after, bias, k)


def detect_series(series: Any, t_end: float | None = None, batch: int = 5) -> SteadyState | None:
    """:func:`detect` on a :class:`simulator.metrics.stats.SampleSeries` (complete intervals
    before ``t_end``); None without one."""
    if series is None or series.n is None or series.period <= 0:
        return None
    n = np.asarray(series.n, dtype=float)
    if t_end is not None:
        k = int(np.floor((t_end - series.t0) / series.period + 1e-9))
        n = n[: max(0, min(k, n.size))]
    return detect(n / series.period, series.period, batch)


def plot_warmups(points: list[Any], out: Any) -> list[Any]:
    """For every point whose first run has a direction that is not in steady state, a time series of
    its IOPS samples with the MSER warm-up shaded and both means drawn (``warmup_pNNN_<dir>.png``),
    drawn by the one plotting stack (:func:`simulator.metrics.plots.plot_warmup`).
    Points are the experiment report's PointSummary objects (``docs`` = the runs' JSON documents)."""
    from pathlib import Path

    from simulator.metrics.plots import plot_warmup

    written = []
    for p in points:
        doc = p.docs[0] if getattr(p, "docs", None) else None
        sim = (doc or {}).get("sim") or {}
        for d, st in (sim.get("steady_state") or {}).items():
            if st.get("steady") is not False or not st.get("iops_samples"):
                continue
            labels = ", ".join(f"{k}={v}" for k, v in p.labels.items()) or "run"
            written.append(plot_warmup(st, d, f"not in steady state: {labels}", Path(out) / f"warmup_p{p.index:03d}_{d}.png"))
    return written
