"""Confidence intervals: nominal coverage on processes with known means (fixed seeds).

With R replications of a 95 % interval the number of misses is Binomial(R, 0.05); the acceptance
band [0.90, 0.985] for R = 400 is about ±4 standard deviations of that count, so the tests fail for
real under-coverage (e.g. ignoring autocorrelation gives ~50 % coverage for AR(1) with φ = 0.9),
not by chance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from simulator.metrics.ci import (
    CI,
    batch_means,
    quantile_ci_order_stat,
    ratio_batch_means,
    t_interval,
    t_quantile,
)

R = 400


def _ar1(rng, n, phi, mu, sigma=1.0):
    e = rng.normal(0.0, sigma, n)
    x = lfilter([1.0], [1.0, -phi], e)
    # start in stationarity
    x += rng.normal(0.0, sigma / math.sqrt(1 - phi * phi)) * phi ** np.arange(1, n + 1)
    return mu + x


def test_t_quantile_values():
    assert t_quantile(0.95, 1) == pytest.approx(12.7062, rel=1e-4)
    assert t_quantile(0.95, 29) == pytest.approx(2.0452, rel=1e-4)
    assert math.isinf(t_quantile(0.95, 0))


def test_t_interval_coverage_iid_replications():
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(R):
        ci = t_interval(rng.exponential(2.0, 5))
        hits += ci.contains(2.0)
    assert 0.90 <= hits / R <= 0.985
    assert t_interval([1.0]) is None


@pytest.mark.parametrize("phi", [0.0, 0.9])
def test_batch_means_coverage_ar1(phi):
    rng = np.random.default_rng(1234 + int(phi * 10))
    mu = 3.0
    hits = 0
    lag = []
    for _ in range(R):
        ci = batch_means(_ar1(rng, 30000, phi, mu), n_batches=30)
        hits += ci.contains(mu)
        lag.append(ci.lag1)
    assert 0.90 <= hits / R <= 0.985
    assert abs(float(np.mean(lag))) < 0.15  # batches of 1000 >> correlation time: ~independent


def test_naive_iid_interval_undercovers_ar1():
    """Sanity check of the test's power: treating AR(1) samples as iid misses badly."""
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(100):
        x = _ar1(rng, 30000, 0.9, 0.0)
        h = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
        hits += abs(x.mean()) <= h
    assert hits / 100 < 0.75


def test_ratio_batch_means_reduces_to_classical_for_equal_batches():
    rng = np.random.default_rng(2)
    x = rng.normal(5, 1, (30, 100))
    a = ratio_batch_means(x.sum(axis=1), np.full(30, 100.0))
    b = t_interval(x.mean(axis=1))
    assert a.estimate == pytest.approx(b.estimate)
    assert a.lo == pytest.approx(b.lo) and a.hi == pytest.approx(b.hi)


def test_ratio_batch_means_coverage_unequal_batches():
    """Mean of iid exponential samples grouped in Poisson-sized batches (like time batches)."""
    rng = np.random.default_rng(77)
    hits = 0
    for _ in range(R):
        sizes = rng.poisson(200, 30)
        sums = np.array([rng.exponential(4.0, k).sum() for k in sizes])
        ci = ratio_batch_means(sums, sizes)
        hits += ci.contains(4.0)
    assert 0.90 <= hits / R <= 0.985
    assert ratio_batch_means([1.0], [1.0]) is None


def test_order_statistic_quantile_ci_coverage():
    rng = np.random.default_rng(8)
    true_p99 = -math.log(0.01)  # exponential(1)
    hits = 0
    for _ in range(R):
        s = np.sort(rng.exponential(1.0, 3000))

        def q(p, s=s):
            return float(s[max(math.ceil(p / 100 * s.size) - 1, 0)])

        ci = quantile_ci_order_stat(99.0, s.size, q)
        hits += ci.contains(true_p99)
    assert 0.90 <= hits / R <= 0.99


def test_order_statistic_ci_unbounded_beyond_the_sample():
    s = np.arange(1, 101, dtype=float)

    def q(p):
        return float(s[max(math.ceil(p / 100 * s.size) - 1, 0)])

    ci = quantile_ci_order_stat(99.9, 100, q)
    assert ci.hi == math.inf and math.isfinite(ci.lo)
    assert quantile_ci_order_stat(0.1, 100, q).lo == -math.inf
    assert CI.from_dict(ci.to_dict()) == ci  # inf survives JSON as None


def test_ci_dict_round_trip():
    ci = CI(1.0, 0.5, 1.5, 0.95, "batch-means", 30, 0.1)
    assert CI.from_dict(ci.to_dict()) == ci
    assert ci.half_width == 0.5
    assert ci.scaled(2.0).hi == 3.0
    assert CI.from_dict({"lo": 1}) is None
    assert CI.from_dict(None) is None
