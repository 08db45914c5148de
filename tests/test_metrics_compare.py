"""compare(): IOPS error, log ratios, Ruemmler–Wilkes demerit (identical -> 0, shifted -> shift)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from simulator.fio import read_fio
from simulator.metrics.compare import compare, compare_jobs, demerit, rms_distance_hist, rms_distance_table
from simulator.metrics.hdr import HdrHist
from simulator.metrics.stats import DEFAULT_PERCENTILES, DirResult, LatStats, percentile_key


def _lat(values_ns: np.ndarray, with_hist: bool = True) -> LatStats:
    h = HdrHist()
    h.record_many(values_ns)
    return LatStats(
        n=values_ns.size,
        min_ns=float(values_ns.min()),
        max_ns=float(values_ns.max()),
        mean_ns=float(values_ns.mean()),
        stddev_ns=float(values_ns.std(ddof=1)),
        percentiles={percentile_key(p): h.value_at_percentile(p) for p in DEFAULT_PERCENTILES},
        hist=h if with_hist else None,
    )


def _dir(values_ns: np.ndarray, iops: float, with_hist: bool = True) -> DirResult:
    return DirResult(
        0,
        total_ios=values_ns.size,
        runtime_s=values_ns.size / iops,
        iops=iops,
        clat=_lat(values_ns, with_hist),
    )


@pytest.fixture
def sample():
    rng = np.random.default_rng(9)
    return np.rint(rng.lognormal(math.log(4e6), 0.7, 50000)).astype(np.int64)


def test_identical_distributions_have_zero_demerit(sample):
    a = _dir(sample, 1000.0)
    c = compare(a, a)
    assert c["demerit_ms"] == 0.0 and c["demerit_method"] == "histogram"
    assert c["iops_err_pct"] == 0.0
    assert c["mean_log_ratio"] == 0.0 and c["p99_log_ratio"] == 0.0 and c["p99.9_log_ratio"] == 0.0
    t = compare(_dir(sample, 1000.0, False), _dir(sample, 1000.0, False))
    assert t["demerit_ms"] == 0.0 and t["demerit_method"] == "percentiles"


@pytest.mark.parametrize("shift_ms", [0.5, 3.0])
def test_shifted_distribution_demerit_is_the_shift(sample, shift_ms):
    shift = int(shift_ms * 1e6)
    sim, meas = _dir(sample + shift, 1100.0), _dir(sample, 1000.0)
    c = compare(sim, meas)
    # HDR buckets are < 1/1024 of the value wide: the step quantile functions are each within
    # that of the exact ones, so the RMS distance is within 2/1024 of the RMS value of the shift
    rms_val = math.sqrt(float(np.mean((sample.astype(float) + shift) ** 2)))
    assert c["demerit_ms"] == pytest.approx(shift_ms, abs=2 * rms_val / 1024 / 1e6)
    assert c["demerit_pct"] == pytest.approx(100 * shift / sample.mean(), rel=0.01)
    assert c["iops_err_pct"] == pytest.approx(10.0)
    assert c["mean_log_ratio"] == pytest.approx(math.log((sample.mean() + shift) / sample.mean()), rel=1e-9)
    # from percentile tables only: the piecewise-linear interpolants differ by exactly the shift
    # up to HDR resolution at each table point
    t = compare(_dir(sample + shift, 1100.0, False), _dir(sample, 1000.0, False))
    assert t["demerit_method"] == "percentiles"
    assert t["demerit_ms"] == pytest.approx(shift_ms, rel=0.02)


def test_table_distance_is_exact_for_linear_quantiles():
    p = np.array([10.0, 50.0, 90.0])
    # difference 0 at 10 %, 4 at 50 %, 0 at 90 %: ∫ = 2 * 0.4 * 16/3 = 4.2667, ends contribute 0
    assert rms_distance_table(p, [1, 5, 9], [1, 1, 9]) == pytest.approx(math.sqrt(2 * 0.4 * 16 / 3))
    # constant difference d everywhere -> d
    assert rms_distance_table(p, [3, 7, 11], [1, 5, 9]) == pytest.approx(2.0)


def test_hist_distance_two_point_masses():
    a, b = HdrHist(), HdrHist()
    a.record_many(np.full(100, 1000, dtype=np.int64))
    b.record_many(np.full(100, 1500, dtype=np.int64))
    assert rms_distance_hist(a, b) == pytest.approx(500.0)
    mix = HdrHist()
    mix.record_many(np.array([1000] * 50 + [2000] * 50, dtype=np.int64))
    # half of the quantile range differs by 1000 -> sqrt(0.5) * 1000
    assert rms_distance_hist(a, mix) == pytest.approx(math.sqrt(0.5) * 1000.0, rel=1e-3)


def test_demerit_mixed_hist_and_table(sample):
    sim = _lat(sample)
    meas = _lat(sample, with_hist=False)
    d, method = demerit(sim, meas)
    assert method == "percentiles" and d == 0.0


def test_compare_against_croit_measurement(shared_dir):
    run = read_fio(os.path.join(shared_dir, "data/croit-mach2/read-mach2-16.json"))
    meas = run.jobs[0]
    same = compare_jobs(meas, meas)
    assert list(same) == ["read"]
    assert same["read"]["demerit_ms"] == 0.0 and same["read"]["iops_err_pct"] == 0.0
    assert same["read"]["p50_ms_measured"] == 5.931008
    rng = np.random.default_rng(1)
    sim = _dir(np.rint(rng.exponential(9.7e6, 100000)).astype(np.int64), 1500.0)
    c = compare(sim, meas.read)
    assert c["iops_err_pct"] == pytest.approx(100 * (1500 - 1647.708877) / 1647.708877)
    assert c["iops_in_sim_ci"] is None
    assert c["demerit_method"] == "percentiles" and c["demerit_ms"] > 0
    assert math.isfinite(c["p99.9_log_ratio"])
