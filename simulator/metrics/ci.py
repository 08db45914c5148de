"""Confidence intervals: Student t over independent replications, batch means within one run.

* :func:`t_interval` — replications: the run-level estimates are iid, so
  ``mean ± t_{n-1} s/sqrt(n)``.
* :func:`ratio_batch_means` — one run cut into B batches (time intervals of the statistics window).
  The estimate is a ratio ``sum(num)/sum(den)`` (mean latency = Σ latency / Σ IOs, IOPS =
  Σ IOs / Σ seconds). Batches of unequal size are handled by the ratio (delta-method) variance
  ``Σ (num_b − R den_b)² / (B (B−1) mean(den)²)``, which is the classical batch-means variance
  when all batches have equal size. Batches long compared to the correlation time are
  approximately independent; :attr:`CI.lag1` reports the lag-1 autocorrelation of the batch
  ratios as a diagnostic (values above ~0.3 mean the batches are too short).
* :func:`quantile_ci_from_batches` — a percentile's CI by batch means of the indicator
  ``1{X <= x_p}`` (per-batch CDF at the estimated percentile), inverted through the run's
  quantile function: ``[Q(p − h), Q(p + h)]``. Asymmetric intervals come out naturally. It
  needs a few samples beyond the percentile in every batch; with fewer (extreme tails of short
  runs) :mod:`simulator.metrics.stats` widens it to the union with the order-statistics interval.
* :func:`quantile_ci_order_stat` — distribution-free order-statistics interval (binomial, normal
  approximation) for independent samples; used when there is no batch information (e.g.
  measured histograms). When the bracketing rank falls beyond the sample (extreme percentiles of
  small samples) that side is unbounded (±inf): the data say nothing there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

__all__ = [
    "CI",
    "batch_means",
    "quantile_ci_from_batches",
    "quantile_ci_order_stat",
    "ratio_batch_means",
    "t_interval",
    "t_quantile",
]


@dataclass(frozen=True)
class CI:
    """A confidence interval ``[lo, hi]`` around ``estimate`` at confidence ``level``.

    ``method`` says how it was obtained ("batch-means", "t", "order-statistics",
    "batch-means-quantile"), ``n`` the number of batches / replications / samples behind it.
    """

    estimate: float
    lo: float
    hi: float
    level: float = 0.95
    method: str = ""
    n: int = 0
    lag1: float | None = None

    @property
    def half_width(self) -> float:
        return 0.5 * (self.hi - self.lo)

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def scaled(self, factor: float) -> CI:
        """The same interval in other units (``factor`` > 0)."""
        return CI(
            self.estimate * factor,
            self.lo * factor,
            self.hi * factor,
            self.level,
            self.method,
            self.n,
            self.lag1,
        )

    def to_dict(self) -> dict:
        """JSON-ready dict; an unbounded side (±inf) is written as None."""
        d = {
            "estimate": self.estimate,
            "lo": self.lo if math.isfinite(self.lo) else None,
            "hi": self.hi if math.isfinite(self.hi) else None,
            "level": self.level,
            "method": self.method,
            "n": self.n,
        }
        if self.lag1 is not None:
            d["lag1"] = self.lag1
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> CI | None:
        if not isinstance(d, dict):
            return None
        try:
            lag1 = d.get("lag1")
            lo, hi = d["lo"], d["hi"]
            return cls(
                float(d["estimate"]),
                -math.inf if lo is None else float(lo),
                math.inf if hi is None else float(hi),
                float(d.get("level", 0.95)),
                str(d.get("method", "")),
                int(d.get("n", 0)),
                None if lag1 is None else float(lag1),
            )
        except (KeyError, TypeError, ValueError):
            return None


def t_quantile(level: float, dof: int) -> float:
    """Two-sided Student-t critical value for confidence ``level`` with ``dof`` degrees of freedom."""
    if not 0 < level < 1:
        raise ValueError("confidence level must be in (0, 1)")
    if dof < 1:
        return math.inf
    return float(_st.t.ppf(0.5 + level / 2.0, dof))


def t_interval(samples: Sequence[float] | np.ndarray, level: float = 0.95, method: str = "t") -> CI | None:
    """Student-t interval for the mean of independent replications; None for fewer than 2."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n < 2:
        return None
    m = float(x.mean())
    h = t_quantile(level, n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return CI(m, m - h, m + h, level, method, n)


def _lag1(x: np.ndarray) -> float | None:
    if x.size < 3:
        return None
    d = x - x.mean()
    den = float(np.dot(d, d))
    if den <= 0:
        return 0.0
    return float(np.dot(d[:-1], d[1:]) / den)


def ratio_batch_means(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    level: float = 0.95,
    method: str = "batch-means",
) -> CI | None:
    """CI of ``R = Σnum / Σden`` from per-batch sums (see module doc). None if < 2 usable batches."""
    a = np.asarray(num, dtype=np.float64)
    b = np.asarray(den, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b) & (b >= 0)
    a, b = a[ok], b[ok]
    B = int(a.size)
    sb = float(b.sum())
    if B < 2 or sb <= 0:
        return None
    R = float(a.sum()) / sb
    e = a - R * b
    se = math.sqrt(float(np.dot(e, e)) / (B * (B - 1))) / (sb / B)
    h = t_quantile(level, B - 1) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(b > 0, a / np.where(b > 0, b, 1.0), R)
    return CI(R, R - h, R + h, level, method, B, _lag1(ratios))


def batch_means(x: Sequence[float] | np.ndarray, n_batches: int = 30, level: float = 0.95) -> CI | None:
    """Classical batch means for the mean of a (possibly autocorrelated) series ``x``.

    The series is cut into ``n_batches`` contiguous batches of equal length (the remainder at the
    start is dropped), and a t interval is formed over the batch means.
    """
    a = np.asarray(x, dtype=np.float64)
    if n_batches < 2 or a.size < n_batches:
        return None
    m = a.size // n_batches
    a = a[a.size - m * n_batches :]
    means = a.reshape(n_batches, m).mean(axis=1)
    ci = t_interval(means, level)
    if ci is None:
        return None
    return CI(ci.estimate, ci.lo, ci.hi, level, "batch-means", n_batches, _lag1(means))


def quantile_ci_from_batches(
    p: float,
    below: Sequence[float] | np.ndarray,
    n: Sequence[float] | np.ndarray,
    quantile: Callable[[float], float],
    level: float = 0.95,
) -> CI | None:
    """CI of the ``p``-th percentile from per-batch counts ``below[b]`` of samples <= the estimate
    and batch sizes ``n[b]``; ``quantile(q)`` maps a percentile (0..100) to a value (the run's
    quantile function)."""
    ci = ratio_batch_means(below, n, level)
    if ci is None:
        return None
    h = 100.0 * ci.half_width
    lo_p = min(max(p - h, 0.0), 100.0)
    hi_p = min(max(p + h, 0.0), 100.0)
    est = float(quantile(p))
    return CI(est, float(quantile(lo_p)), float(quantile(hi_p)), level, "batch-means-quantile", ci.n, ci.lag1)


def quantile_ci_order_stat(
    p: float, total: int, quantile: Callable[[float], float], level: float = 0.95
) -> CI | None:
    """Order-statistics CI of the ``p``-th percentile of ``total`` independent samples.

    The ranks ``N p/100 ± z sqrt(N p (1-p))`` bracket the true quantile with probability ``level``
    (binomial, normal approximation); their values come from ``quantile``.
    """
    if total < 2:
        return None
    q = p / 100.0
    z = float(_st.norm.ppf(0.5 + level / 2.0))
    s = z * math.sqrt(total * q * (1.0 - q))
    lo_rank = math.floor(total * q - s)
    hi_rank = math.ceil(total * q + s)
    est = float(quantile(p))
    # beyond the sample extremes the interval is unbounded: the data cannot bound that tail
    lo = float(quantile(100.0 * lo_rank / total)) if lo_rank >= 1 else -math.inf
    hi = float(quantile(100.0 * hi_rank / total)) if hi_rank <= total else math.inf
    return CI(est, lo, hi, level, "order-statistics", int(total))
