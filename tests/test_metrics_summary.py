"""summary rows, replication combination, and the plots (PNG files are written)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.metrics.stats import JobStats, merge
from simulator.metrics.summary import SUMMARY_PERCENTILES, combine_replications, summary_row


def _result(seed: int, rw_mix: bool = True, syncs: int = 0):
    rng = np.random.default_rng(seed)
    js = JobStats("j", {})
    js.set_window(0.0, 5.0)
    n = 8000
    t = np.sort(rng.uniform(0, 5, n))
    d = rng.integers(0, 2 if rw_mix else 1, n)
    c = rng.exponential(1e-3, n)
    for row in zip(d.tolist(), t.tolist(), c.tolist(), strict=True):
        js.add(row[0], row[1], 0.0, row[2], 4096)
    for i in range(syncs):
        js.add_sync(i * 0.01, 2e-3)
    return js.result()


def test_summary_row_keys_and_values():
    r = _result(1, syncs=10)
    row = summary_row(r, qd=4)
    assert list(row)[:3] == ["qd", "job", "jobs"]
    for d in ("read", "write"):
        for m in ("iops", "bw_MBps", "lat_mean_ms", *(f"p{p:g}_ms" for p in SUMMARY_PERCENTILES)):
            assert isinstance(row[f"{d}.{m}"], float)
            assert row[f"{d}.{m}_ci"] is not None and row[f"{d}.{m}_ci"] > 0
        # the half-widths agree with theory: ~N/2 exponential latencies of mean 1 ms (CI 1.96 ms/sqrt(n))
        # and a Poisson-like count over the 5 s window (CI 1.96 sqrt(n) / 5 s); batch means within 2x
        n = row[f"{d}.total_ios"]
        assert 0.5 <= row[f"{d}.lat_mean_ms_ci"] / (1.96 / math.sqrt(n)) <= 2.0
        assert 0.5 <= row[f"{d}.iops_ci"] / (1.96 * math.sqrt(n) / 5.0) <= 2.0
    assert "trim.iops" not in row
    assert row["read.iops"] == r.read.iops
    assert row["read.bw_MBps"] == pytest.approx(r.read.bw_bytes / 1e6)
    assert row["read.p99.9_ms"] == r.read.clat.percentiles["99.900000"] / 1e6
    assert row["read.p99_ms_ci"] == pytest.approx(r.read.clat.ci_of(99).half_width / 1e6)
    assert row["read.total_ios"] == r.read.total_ios
    assert row["sync.total_ios"] == 10 and row["sync.lat_mean_ms"] == pytest.approx(2.0)


def test_summary_of_several_jobs_merges():
    a, b = _result(2), _result(3)
    assert summary_row([a, b]) == summary_row(merge([a, b]))
    assert summary_row([a, b])["jobs"] == 2


def test_combine_replications_t_interval():
    rows = [summary_row(_result(10 + k, rw_mix=False), qd=1) for k in range(5)]
    comb = combine_replications(rows)
    x = np.array([r["read.iops"] for r in rows])
    assert comb["replications"] == 5 and comb["qd"] == 1
    assert comb["read.iops"] == pytest.approx(x.mean())
    assert comb["read.iops_ci"] == pytest.approx(2.7764451 * x.std(ddof=1) / math.sqrt(5), rel=1e-6)
    one = combine_replications(rows[:1])
    assert one["read.iops_ci"] == rows[0]["read.iops_ci"] and one["replications"] == 1
    assert combine_replications([]) == {}


def test_plots_write_pngs(tmp_path):
    from simulator.metrics.plots import Series, plot_cdf, plot_iops_vs_qd, plot_percentiles

    r = _result(4)
    p1 = plot_iops_vs_qd(
        [Series("sim", [1, 4, 16], [100.0, 300.0, 500.0], [5.0, None, 20.0])],
        tmp_path / "iops.png",
        measured=[Series("measured", [1, 4, 16], [110.0, 280.0, 520.0])],
        title="IOPS",
    )
    table = {k: v for k, v in r.read.clat.percentiles.items()}
    p2 = plot_percentiles(
        [("hist", r.read.clat), ("table", table), ("raw", r.write.clat.hist)], tmp_path / "hdr.png"
    )
    p3 = plot_cdf([("hist", r.read.clat), ("table", table)], tmp_path / "sub" / "cdf.png")
    for p in (p1, p2, p3):
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(TypeError):
        plot_percentiles([("bad", 42)], tmp_path / "bad.png")
