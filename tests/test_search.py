"""The highest-load search (simulator.search): exact thresholds, CI logic, and the M/M/1 SLO threshold.

The M/M/1 check runs the real experiment path (execute_task: an inline ``queue`` device driven by fio's
open-loop Poisson arrivals, rate_iops + rate_process=poisson). The sojourn time of M/M/1 (FCFS) is
exponential with rate mu - lambda, so its p-quantile is -ln(1-p)/(mu - lambda) and the highest arrival
rate with p99 <= X is lambda* = mu - ln(100)/X.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.experiment.execute import execute_task
from simulator.search import Probe, SearchResult, highest_load


def step(threshold: float, calls: list | None = None):
    """A noiseless system: passes exactly up to ``threshold``; metric = load/threshold (bound 1)."""

    def ev(load: float) -> Probe:
        if calls is not None:
            calls.append(load)
        m = load / threshold
        return Probe(load, m <= 1.0, m)

    return ev


@given(st.floats(min_value=1.0, max_value=1e6), st.floats(min_value=1.0005, max_value=50.0))
def test_noiseless_threshold_is_bracketed_to_tolerance(t, span):
    lo, hi = t / span, t * span
    r = highest_load(step(t), lo, hi, rel_tol=0.01, max_probes=60)
    assert r.status == "converged"
    assert r.load <= t < r.upper
    assert r.upper - r.load <= 0.01 * r.upper
    assert r.lower == r.load  # noiseless probes are all decided
    assert [p.load for p in r.probes][:2] == [lo, hi]


def test_integer_search_finds_the_exact_integer():
    calls: list[float] = []
    r = highest_load(step(37.5, calls), 1, 128, integer=True, bound=1.0, rel_tol=0.001)
    assert r.load == 37 and r.upper == 38
    assert all(float(x).is_integer() for x in calls)
    assert len(set(calls)) == len(calls)  # no load probed twice


def test_infeasible_and_above_range():
    r = highest_load(step(5.0), 10, 100)
    assert r.status == "infeasible" and r.load is None and not r.feasible and len(r.probes) == 1
    r = highest_load(step(500.0), 10, 100)
    assert r.status == "above-range" and r.load == 100 and r.upper is None


def test_interpolation_beats_bisection_on_a_linear_inverse_metric():
    # metric = 1/(mu - load): 1/metric is linear, interpolation lands on the threshold at once
    mu, bound = 1000.0, 0.01
    target = mu - 1 / bound

    def ev(x):
        m = 1 / (mu - x) if x < mu else math.inf
        return Probe(x, m <= bound, m)

    with_bound = highest_load(ev, 10, 999, bound=bound, rel_tol=0.001)
    without = highest_load(ev, 10, 999, rel_tol=0.001)
    assert with_bound.load <= target < with_bound.upper
    assert without.load <= target < without.upper
    assert len(with_bound.probes) < len(without.probes)


def noisy(threshold: float, half_width: float, refined: list | None = None):
    """Metric = load/threshold with a CI of +-half_width (shrinking by 2 per refinement level)."""

    def ev(load: float, level: int = 0) -> Probe:
        if refined is not None and level:
            refined.append((load, level))
        m = load / threshold
        h = half_width / 2**level
        return Probe(load, m <= 1.0, m, (m - h, m + h))

    return ev


def test_undecided_probes_are_reported_not_trusted():
    r = highest_load(noisy(100.0, 0.05), 10, 1000, bound=1.0, rel_tol=0.001, max_probes=40)
    # probes with metric within 0.05 of the bound (loads 95..105) are undecided: the certified bracket
    # stays outside that band and, with probes to spare, closes onto it
    assert r.lower is not None and r.upper is not None
    assert 95.0 * 0.998 <= r.lower <= 95.0 and 105.0 <= r.upper <= 105.0 * 1.002
    assert r.lower <= r.load <= 100.0 < r.upper
    assert r.status == "ci-limited"
    undecided = [p for p in r.probes if not p.decided(1.0)]
    assert undecided  # the search did go inside the noise band, and says so


def test_refinement_narrows_the_certified_bracket():
    refined: list = []
    ev = noisy(100.0, 0.08, refined)
    r0 = highest_load(ev, 10, 1000, bound=1.0, rel_tol=0.001, max_probes=60)
    r1 = highest_load(ev, 10, 1000, bound=1.0, rel_tol=0.001, max_probes=60, refine=ev, max_refine=3)
    assert refined and all(1 <= lvl <= 3 for _, lvl in refined)
    assert r1.upper - r1.lower < r0.upper - r0.lower
    assert r1.lower <= 100.0 < r1.upper
    assert len(r1.probes) <= 60


def test_result_round_trips_through_a_dict():
    r = highest_load(noisy(100.0, 0.05), 10, 1000, bound=1.0)
    back = SearchResult.from_dict(r.to_dict())
    assert back == r


def test_bad_arguments():
    with pytest.raises(ValueError):
        highest_load(step(1), 0, 10)
    with pytest.raises(ValueError):
        highest_load(step(1), 10, 5)
    with pytest.raises(ValueError):
        highest_load(step(1), 1.2, 1.8, integer=True)


# ------------------------------------------------------------------------------------------ M/M/1
MU = 1000.0  # service rate, 1/s (exponential service, mean 1 ms)
BOUND_MS = 10.0  # p99 sojourn target


def mm1_probe(lam: float, level: int = 0) -> Probe:
    lam = int(lam)  # fio's rate_iops is a whole number of IOs per second
    runtime = 60 * 2**level  # simulated seconds; a refinement doubles the run
    raw = {
        "name": "mm1",
        "seed": 1,
        "system": {"devices": [{"name": "q", "kind": "queue", "params": {"service": {"dist": "exponential", "mean": 1 / MU}}}]},
        "workload": {
            "global": {
                "ioengine": "libaio", "sim_slat": 0, "rw": "randread", "bs": "4k",
                # open loop: Poisson arrivals at lam; iodepth far above any M/M/1 queue length reached here
                "rate_iops": lam, "rate_process": "poisson", "iodepth": 4096,
                "time_based": 1, "ramp_time": "2s", "runtime": f"{runtime}s", "filename": "q",
            },
            "jobs": [{"name": "mm1"}],
        },
    }
    (o,) = execute_task({"source": "test_search", "points": [(0, {}, raw)], "replication": 0, "seed": 1})
    p99, h = o.summary["read.p99_ms"], o.summary["read.p99_ms_ci"]
    return Probe(lam, p99 <= BOUND_MS, p99, (p99 - h, p99 + h), {"ios": o.ios})


def test_mm1_p99_threshold_found_within_its_ci():
    lam_star = MU - 1000.0 * math.log(100) / BOUND_MS  # 539.5/s
    r = highest_load(mm1_probe, 50, 990, integer=True, bound=BOUND_MS, rel_tol=0.02, max_probes=16, refine=mm1_probe, max_refine=1)
    assert r.lower is not None and r.upper is not None
    # the certified bracket (decided probes only) holds the closed-form threshold ...
    assert r.lower <= lam_star <= r.upper
    # ... and is narrow: a p99 CI of a few % maps to a load band of a few % (dp/p = dlam/(mu-lam))
    assert (r.upper - r.lower) / lam_star < 0.15
    # the point estimate is within the bracket and close to the theory
    assert r.lower <= r.load <= r.upper
    assert abs(r.load - lam_star) / lam_star < 0.05
    assert len(r.probes) <= 16
