"""JobStats / JobResult / merge: exactness against numpy, fio's conventions, CI coverage, cost."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from simulator.metrics.hdr import HdrHist
from simulator.metrics.stats import (
    DEFAULT_BATCHES,
    DEFAULT_PERCENTILES,
    FLUSH_SAMPLES,
    JobStats,
    merge,
    percentile_key,
)


def _feed(js: JobStats, d, t, s, c, nb) -> None:
    add = js.add
    for row in zip(d.tolist(), t.tolist(), s.tolist(), c.tolist(), nb.tolist(), strict=True):
        add(*row)


def _workload(seed: int, n: int, t0: float = 0.0, t1: float = 10.0, mixed: bool = True):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(t0, t1, n))
    d = rng.integers(0, 3 if mixed else 1, n)
    s = rng.uniform(1e-6, 2e-5, n)
    c = rng.lognormal(math.log(2e-3), 1.0, n)
    nb = rng.choice([4096, 8192, 65536], n)
    return d, t, s, c, nb


def _ns(x: np.ndarray) -> np.ndarray:
    return np.floor(x * 1e9 + 0.5).astype(np.int64)


def _fio_bucket(v: int) -> int:
    th = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)
    if v < 1000:
        return next(i for i, x in enumerate(th) if v < x)
    if v < 1_000_000:
        u = v // 1000
        return 10 + next(i for i, x in enumerate(th) if u < x)
    m = v // 1_000_000
    th_ms = (*th, 2000)
    return 20 + next((i for i, x in enumerate(th_ms) if m < x), 11)


def test_jobstats_matches_numpy_exactly():
    n = 2 * FLUSH_SAMPLES + 1234  # several flushes plus a partial buffer
    d, t, s, c, nb = _workload(1, n, 5.0, 25.0)
    js = JobStats("j", {"rw": "randrw"})
    js.set_window(5.0, 25.0)
    _feed(js, d, t, s, c, nb)
    r = js.result()
    assert r.window == (5.0, 25.0) and r.job_runtime_s == 20.0
    buckets = np.zeros(32, dtype=np.int64)
    for ddir in range(3):
        m = d == ddir
        dr = r.dir(ddir)
        assert dr.total_ios == int(m.sum())
        assert dr.io_bytes == int(nb[m].sum())
        assert dr.runtime_s == 20.0
        assert dr.iops == pytest.approx(m.sum() / 20.0, rel=1e-12)
        assert dr.bw_bytes == pytest.approx(nb[m].sum() / 20.0, rel=1e-12)
        for kind, vals in (("slat", s[m]), ("clat", c[m]), ("lat", s[m] + c[m])):
            ns = _ns(vals)
            ls = dr.latency(kind)
            assert ls.n == ns.size
            assert ls.min_ns == ns.min() and ls.max_ns == ns.max()
            assert ls.mean_ns == pytest.approx(ns.mean(), rel=1e-12)
            assert ls.stddev_ns == pytest.approx(ns.std(ddof=1), rel=1e-9)  # fio: n-1
            h = HdrHist()
            h.record_many(ns)
            assert ls.hist == h
        clat_ns = _ns(c[m])
        assert set(dr.clat.percentiles) == {percentile_key(p) for p in DEFAULT_PERCENTILES}
        assert dr.slat.percentiles == {} and dr.lat.percentiles == {}  # fio: clat only by default
        h = HdrHist()
        h.record_many(clat_ns)
        for p in DEFAULT_PERCENTILES:
            assert dr.clat.percentiles[percentile_key(p)] == h.value_at_percentile(p)
        for v in clat_ns:
            buckets[_fio_bucket(int(v))] += 1
    # fio's latency buckets (percent of all IOs, clat, floor 0.01 for non-empty buckets)
    flat = [*r.latency_buckets["latency_ns"].values(), *r.latency_buckets["latency_us"].values()]
    flat += list(r.latency_buckets["latency_ms"].values())
    expect = 100.0 * buckets / n
    expect = np.where((expect > 0) & (expect < 0.01), 0.01, expect)
    assert np.allclose(flat, expect, rtol=1e-12, atol=0)


def test_without_window_batches_double_and_runtime_is_last_completion():
    d, t, s, c, nb = _workload(2, 30000, 0.0, 3.7, mixed=False)
    js = JobStats("j", {})
    _feed(js, d, t, s, c, nb)
    r = js.result()
    assert r.window == (0.0, float(t.max()))
    bd = r.read.batches
    used = int(np.count_nonzero(bd.spans(0.0, float(t.max()))))
    assert DEFAULT_BATCHES <= used <= 2 * DEFAULT_BATCHES
    assert int(bd.n.sum()) == 30000
    assert r.read.iops_ci is not None and r.read.iops_ci.n == used


def test_invalid_direction_is_an_error():
    js = JobStats("j", {})
    js.add(3, 0.1, 0.0, 1e-3, 4096)
    with pytest.raises(ValueError, match="ddir"):
        js.result()


def test_sync_section():
    js = JobStats("j", {})
    lat = np.linspace(1e-4, 1e-2, 1001)
    for i, x in enumerate(lat):
        js.add_sync(i * 1e-3, float(x))
    js.add(1, 0.5, 0.0, 1e-3, 4096)
    r = js.result()
    ns = _ns(lat)
    assert r.sync.n == 1001
    assert r.sync.mean_ns == pytest.approx(ns.mean(), rel=1e-12)
    assert r.sync.min_ns == ns.min() and r.sync.max_ns == ns.max()
    assert r.sync.percentiles[percentile_key(50)] == pytest.approx(np.median(ns), rel=1e-3)


def test_percentile_options_follow_fio():
    d, t, s, c, nb = _workload(3, 5000, mixed=False)
    js = JobStats("j", {"lat_percentiles": "1", "percentile_list": "50:99.5"})
    _feed(js, d, t, s, c, nb)
    r = js.result()
    assert r.read.clat.percentiles == {}
    assert set(r.read.lat.percentiles) == {"50.000000", "99.500000"}
    assert set(r.read.lat.percentile_ci) == {"50.000000", "99.500000"}
    js2 = JobStats("j", {"clat_percentiles": "0"})
    _feed(js2, d, t, s, c, nb)
    assert js2.result().read.clat.percentiles == {}


def test_fio_interval_samples():
    """Constant rate: 2000 IO/s of 4 KiB for 10 s -> every 500 ms sample is 2000 IOPS."""
    js = JobStats("j", {})
    js.set_window(0.0, 10.0)
    t = (np.arange(20000) + 0.5) / 2000.0
    for x in t.tolist():
        js.add(0, x, 0.0, 1e-3, 4096)
    r = js.result()
    assert r.read.iops_samples.samples == 20
    assert r.read.iops_samples.min == r.read.iops_samples.max == 2000
    assert r.read.bw_samples.mean == pytest.approx(2000 * 4096 / 1024)
    js = JobStats("j", {"iops_avg_time": "1000"})
    js.set_window(0.0, 10.0)
    for x in t.tolist():
        js.add(0, x, 0.0, 1e-3, 4096)
    assert js.result().read.iops_samples.samples == 10


@pytest.mark.parametrize("window", [True, False])
def test_merge_equals_one_job_with_all_ios(window):
    """group_reporting: merging two jobs gives what one JobStats fed with every IO gives —
    histograms, moments and the batch-means CIs (aligned batches)."""
    a = _workload(4, 20000, 0.0, 8.0)
    b = _workload(5, 15000, 0.0, 6.0)  # shorter: without a window its batches are narrower
    ja, jb, jall = JobStats("g", {}), JobStats("g", {}), JobStats("g", {})
    if window:
        for j in (ja, jb, jall):
            j.set_window(0.0, 8.0)
    _feed(ja, *a)
    _feed(jb, *b)
    order = np.argsort(np.concatenate([a[1], b[1]]), kind="stable")
    _feed(jall, *(np.concatenate([x, y])[order] for x, y in zip(a, b, strict=True)))
    m = merge([ja.result(), jb.result()])
    one = jall.result()
    assert m.jobs == 2
    for ddir in range(3):
        x, y = m.dir(ddir), one.dir(ddir)
        assert x.total_ios == y.total_ios and x.io_bytes == y.io_bytes
        assert x.iops == pytest.approx(y.iops)
        for kind in ("slat", "clat", "lat"):
            lx, ly = x.latency(kind), y.latency(kind)
            assert lx.hist == ly.hist
            assert lx.mean_ns == pytest.approx(ly.mean_ns, rel=1e-12)
            assert lx.stddev_ns == pytest.approx(ly.stddev_ns, rel=1e-9)
            assert lx.min_ns == ly.min_ns and lx.max_ns == ly.max_ns
            assert lx.percentiles == ly.percentiles
        assert np.array_equal(x.batches.n, y.batches.n)
        for cx, cy in (
            (x.iops_ci, y.iops_ci),
            (x.clat.mean_ci, y.clat.mean_ci),
            (x.clat.ci_of(99), y.clat.ci_of(99)),
        ):
            assert cx is not None and cy is not None
            assert (cx.lo, cx.hi) == pytest.approx((cy.lo, cy.hi), rel=1e-9)
    assert m.latency_buckets["latency_ms"] == pytest.approx(one.latency_buckets["latency_ms"], abs=0.011)


def test_clones_with_different_final_windows_still_merge_with_cis():
    """The runner sets the expected window first and the actual one at the end (drained IOs):
    batches are fixed by the first call, so clones stay aligned."""
    parts = []
    for seed, end in ((7, 6.11), (8, 6.12)):
        d, t, s, c, nb = _workload(seed, 800, 1.0, end, mixed=False)
        js = JobStats("g", {})
        js.set_window(1.0, 6.0)
        _feed(js, d, t, s, c, nb)
        js.set_window(1.0, end)
        parts.append(js.result())
    m = merge(parts)
    assert m.window == (1.0, 6.12)
    assert m.read.iops_ci is not None and m.read.clat.ci_of(99) is not None
    assert m.read.iops == pytest.approx(1600 / 5.12)
    assert m.read.iops_ci.n == 31  # 30 batches of the expected window + the drained tail


def test_window_set_only_after_ios_uses_doubling_batches():
    parts = []
    for seed, end in ((9, 4.3), (10, 5.9)):
        d, t, s, c, nb = _workload(seed, 3000, 1.0, end, mixed=False)
        js = JobStats("g", {})
        _feed(js, d, t, s, c, nb)
        js.set_window(1.0, end)
        parts.append(js.result())
    assert parts[0].read.batches.t0 == 0.0
    m = merge(parts)
    assert m.read.iops_ci is not None
    assert m.read.iops_ci.n >= DEFAULT_BATCHES // 2


def test_merge_single_and_empty_directions():
    d, t, s, c, nb = _workload(6, 1000, mixed=False)
    js = JobStats("j", {})
    _feed(js, d, t, s, c, nb)
    r = js.result()
    assert merge([r]) is r
    m = merge([r, JobStats("k", {}).result()])
    assert m.read.total_ios == 1000 and not m.write.present
    with pytest.raises(ValueError):
        merge([])


def _coverage_run(seed: int, ar_phi: float | None):
    rng = np.random.default_rng(seed)
    lam, T, mean = 1000.0, 10.0, 2e-3
    n = rng.poisson(lam * T)
    t = np.sort(rng.uniform(0, T, n))
    if ar_phi is None:
        c = rng.exponential(mean, n)
    else:
        sd = 0.5
        e = rng.normal(0, sd * math.sqrt(1 - ar_phi**2), n)
        e[0] = rng.normal(0, sd)  # stationary start
        c = mean * np.exp(lfilter([1.0], [1.0, -ar_phi], e))
    js = JobStats("j", {})
    js.set_window(0.0, T)
    add = js.add
    for ti, ci in zip(t.tolist(), c.tolist(), strict=True):
        add(0, ti, 0.0, ci, 4096)
    return js.result().read


def test_batch_means_cis_cover_truth_iid():
    """Poisson completions (1000/s), exponential clat: IOPS, mean and percentile CIs."""
    R = 160
    hits = {"iops": 0, "mean": 0, "p50": 0, "p99": 0, "p99.9": 0, "p99.99": 0}
    mean = 2e-3
    for k in range(R):
        d = _coverage_run(1000 + k, None)
        hits["iops"] += d.iops_ci.contains(1000.0)
        hits["mean"] += d.clat.mean_ci.contains(mean * 1e9)
        hits["p50"] += d.clat.ci_of(50).contains(mean * math.log(2) * 1e9)
        hits["p99"] += d.clat.ci_of(99).contains(mean * math.log(100) * 1e9)
        # ~10 and ~1 samples beyond these in a run: widened / unbounded-above intervals
        hits["p99.9"] += d.clat.ci_of(99.9).contains(mean * math.log(1000) * 1e9)
        hits["p99.99"] += d.clat.ci_of(99.99).contains(mean * math.log(10000) * 1e9)
    for key, h in hits.items():
        assert 0.88 <= h / R <= 0.995, (key, h / R)


def test_batch_means_mean_ci_covers_truth_autocorrelated():
    """Log-AR(1) latencies (φ = 0.95, correlation time ~20 IOs): batches of ~330 IOs still cover."""
    R = 160
    phi, sd, mean = 0.95, 0.5, 2e-3
    true_mean = mean * math.exp(sd**2 / 2) * 1e9
    hits = 0
    for k in range(R):
        d = _coverage_run(5000 + k, phi)
        hits += d.clat.mean_ci.contains(true_mean)
    assert 0.88 <= hits / R <= 0.995
