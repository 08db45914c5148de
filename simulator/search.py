"""The highest offered load that meets a latency target: a search over a monotone load axis.

``highest_load(evaluate, lo, hi)`` finds the largest load (arrival rate, IOPS, clients...) whose
probe is acceptable, for a system whose metric (say the p99 latency) grows with the load. Each
probe is one simulation run at one load, returned by ``evaluate(load)`` as a :class:`Probe`: the
point verdict ``ok`` (metric within the bound), the metric and, when the run has one, the metric's
confidence interval.

The search
----------
* It first probes ``lo`` (nothing below is tried: if ``lo`` fails the answer is "infeasible") and
  ``hi`` (if ``hi`` passes the answer is "at least hi", status ``above-range``).
* It then narrows the bracket ``[a, b]`` = (highest passing load, lowest failing load, by the point
  verdicts). With a ``bound`` and metrics on both ends it steps by linear interpolation of
  ``1/metric`` (exact for an M/M/1 percentile, whose inverse falls linearly with the arrival rate;
  close to linear for most queues short of saturation), kept at least 10 % of the bracket away from
  both ends; otherwise, and whenever interpolation shrank the bracket by less than half, it
  bisects. With ``integer=True`` probes are whole numbers.
* It stops when the bracket is narrower than ``rel_tol`` times its upper end (and at most 1 apart for integers),
  after ``max_probes`` probes, or when the confidence intervals say that further probes cannot
  decide anything (both bracket ends are *undecided*, see below).

Confidence intervals
--------------------
With ``bound`` given, a probe whose CI lies entirely on one side of the bound is *decided*; one
whose CI straddles the bound is *undecided*: the run cannot tell whether that load meets the
target. An undecided probe is re-run through ``refine(load, level)`` (level 1, 2, ... up to
``max_refine``; typically a longer run) when the caller provides it. What remains undecided is
reported honestly: :attr:`SearchResult.lower` is the highest *decided* passing load and
:attr:`SearchResult.upper` the lowest *decided* failing load, so the threshold lies in
``[lower, upper]`` at the CIs' confidence (given monotonicity), however noisy the probes in between
were. :attr:`SearchResult.load` is the point estimate (the highest passing load of the point
verdicts). Every probe, refinements included, is kept in :attr:`SearchResult.probes`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Probe", "SearchResult", "highest_load"]

Status = Literal["converged", "ci-limited", "max-probes", "above-range", "infeasible"]


@dataclass(frozen=True)
class Probe:
    """One run at one offered load.

    ``ok``: the point verdict (metric within the target); ``metric``: the measured metric (e.g.
    p99 in seconds; ``inf`` when the run did not complete or the queue grew without bound);
    ``ci``: its confidence interval ``(lo, hi)`` or None; ``info``: anything the caller wants kept
    with the probe (utilisations, the bottleneck, run wall time...).
    """

    load: float
    ok: bool
    metric: float
    ci: tuple[float, float] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def decided(self, bound: float | None) -> bool:
        """Whether the CI lies entirely on one side of ``bound`` (always true without a CI or bound)."""
        if bound is None or self.ci is None:
            return True
        lo, hi = self.ci
        return hi <= bound if self.ok else lo > bound

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "ok": self.ok,
            "metric": _finite_or_none(self.metric),
            "ci": None if self.ci is None else [_finite_or_none(self.ci[0]), _finite_or_none(self.ci[1])],
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Probe:
        ci = d.get("ci")
        return cls(
            float(d["load"]),
            bool(d["ok"]),
            math.inf if d.get("metric") is None else float(d["metric"]),
            None if ci is None else (_num_or(ci[0], -math.inf), _num_or(ci[1], math.inf)),
            dict(d.get("info") or {}),
        )


def _finite_or_none(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _num_or(x: Any, default: float) -> float:
    return default if x is None else float(x)


@dataclass(frozen=True)
class SearchResult:
    """The outcome of :func:`highest_load`.

    ``load``: point estimate of the highest passing load (None when even ``lo`` fails);
    ``lower``/``upper``: highest decided-passing and lowest decided-failing loads (None when there is
    none; ``upper`` None with status ``above-range`` means "more than hi"); ``status``: why the
    search stopped; ``probes``: every probe in the order run.
    """

    load: float | None
    lower: float | None
    upper: float | None
    status: Status
    probes: tuple[Probe, ...]
    bound: float | None = None

    @property
    def feasible(self) -> bool:
        return self.load is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "lower": self.lower,
            "upper": self.upper,
            "status": self.status,
            "bound": self.bound,
            "probes": [p.to_dict() for p in self.probes],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SearchResult:
        return cls(d["load"], d["lower"], d["upper"], d["status"], tuple(Probe.from_dict(p) for p in d["probes"]), d.get("bound"))


def highest_load(
    evaluate: Callable[[float], Probe],
    lo: float,
    hi: float,
    *,
    integer: bool = False,
    rel_tol: float = 0.02,
    max_probes: int = 30,
    bound: float | None = None,
    refine: Callable[[float, int], Probe] | None = None,
    max_refine: int = 1,
) -> SearchResult:
    """The highest load in ``[lo, hi]`` whose probe passes, for a metric that grows with the load.

    ``evaluate(load) -> Probe``; ``bound``: the target the probes' ``ok`` was judged against (enables
    the CI logic); ``refine(load, level) -> Probe``: a more precise probe at the same load (a longer
    run), tried up to ``max_refine`` times on an undecided probe. ``max_probes`` counts every call
    of ``evaluate`` and ``refine``. See the module docstring for the method.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi < lo:
        raise ValueError(f"need 0 < lo <= hi, got lo={lo}, hi={hi}")
    if not 0 < rel_tol < 1:
        raise ValueError(f"rel_tol must be in (0, 1), got {rel_tol}")
    if max_probes < 2:
        raise ValueError("max_probes must be at least 2")
    if integer:
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
        if hi < lo:
            raise ValueError("no integer load in [lo, hi]")

    probes: list[Probe] = []

    def run(load: float) -> Probe:
        p = evaluate(load)
        probes.append(p)
        level = 0
        while refine is not None and level < max_refine and len(probes) < max_probes and not p.decided(bound):
            level += 1
            p = refine(load, level)
            probes.append(p)
        return p

    def result(status: Status, load: float | None) -> SearchResult:
        final = _final(probes)
        dec_ok = [x for x, p in final.items() if p.ok and p.decided(bound)]
        dec_fail = [x for x, p in final.items() if not p.ok and p.decided(bound)]
        upper = min(dec_fail) if dec_fail else None
        lower = max((x for x in dec_ok if upper is None or x < upper), default=None)
        return SearchResult(load, lower, upper, status, tuple(probes), bound)

    p_lo = run(lo)
    if not p_lo.ok:
        return result("infeasible", None)
    if hi == lo:
        return result("above-range", lo)
    p_hi = run(hi)
    if p_hi.ok:
        return result("above-range", hi)

    def narrow_enough(x: float, y: float) -> bool:
        return y - x <= (max(1.0, rel_tol * y) if integer else rel_tol * y)

    def inside(x: float, a: float, b: float) -> float | None:
        if integer:
            x = float(round(x))
            x = min(max(x, a + 1), b - 1)
            return x if a < x < b else None
        return x if a < x < b else None

    # phase 1: the point verdicts' bracket [a, b]
    a, b = p_lo, p_hi
    last_width = b.load - a.load
    interpolated_last = False
    while not narrow_enough(a.load, b.load) and not (bound is not None and not a.decided(bound) and not b.decided(bound)):
        if len(probes) >= max_probes:
            return result("max-probes", a.load)
        width = b.load - a.load
        x = None
        slow = interpolated_last and width > 0.5 * last_width
        if bound is not None and not slow:
            x = _interpolate(a, b, bound)
        interpolated_last = x is not None
        if x is None:
            x = 0.5 * (a.load + b.load)
        x = inside(x, a.load, b.load)
        if x is None:
            break
        last_width = width
        p = run(x)
        if p.ok:
            a = p
        else:
            b = p

    # phase 2 (CIs only): narrow the decided bracket [lower, upper] onto the band of undecided probes
    while bound is not None:
        r = result("converged", a.load)
        if r.lower is None or r.upper is None:
            break
        und = [p.load for p in _final(probes).values() if not p.decided(bound) and r.lower < p.load < r.upper]
        targets = []
        if und:
            if not narrow_enough(r.lower, min(und)):
                targets.append(inside(0.5 * (r.lower + min(und)), r.lower, min(und)))
            if not narrow_enough(max(und), r.upper):
                targets.append(inside(0.5 * (max(und) + r.upper), max(und), r.upper))
        elif not narrow_enough(r.lower, r.upper):
            targets.append(inside(0.5 * (r.lower + r.upper), r.lower, r.upper))
        targets = [t for t in targets if t is not None]
        if not targets:
            break
        for x in targets:
            if len(probes) >= max_probes:
                return result("max-probes", a.load)
            p = run(x)
            if p.ok and a.load < p.load < b.load:
                a = p
            elif not p.ok and a.load < p.load < b.load:
                b = p
    r = result("converged", a.load)
    if bound is not None and (r.lower is None or r.upper is None or not narrow_enough(r.lower, r.upper)):
        return result("ci-limited", a.load)
    return r


def _final(probes: list[Probe]) -> dict[float, Probe]:
    """The last (most refined) probe at each load speaks for it."""
    final: dict[float, Probe] = {}
    for p in probes:
        final[p.load] = p
    return final


def _interpolate(a: Probe, b: Probe, bound: float) -> float | None:
    """Where ``1/metric`` reaches ``1/bound`` on the line through the two bracket ends, kept in the
    middle 80 % of the bracket; None when a metric is not a positive finite number."""
    ma, mb = a.metric, b.metric
    if not (0 < ma < math.inf and 0 < mb < math.inf) or ma >= mb:
        return None
    ga, gb = 1.0 / ma - 1.0 / bound, 1.0 / mb - 1.0 / bound
    if ga == gb:
        return None
    x = a.load + (b.load - a.load) * ga / (ga - gb)
    w = b.load - a.load
    return min(max(x, a.load + 0.1 * w), b.load - 0.1 * w)
