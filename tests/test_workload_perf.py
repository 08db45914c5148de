"""Speed of the per-IO path (workload + queue device): simulated IOs per wall second."""

from __future__ import annotations

import pytest

from simulator.workloads.bench import workload_bench


def test_per_io_path_is_lean():
    workload_bench(n_ios=5_000)  # numba kernels compiled / loaded from cache
    r = workload_bench(n_ios=100_000)
    print(f"\nworkload + QueueDevice: {r['ios_per_cpu_s']:,.0f} simulated IO per CPU second")
    # a loose floor that only a gross regression (a process or extra events per IO) breaks
    assert r["ios_per_cpu_s"] > 50_000


@pytest.mark.heavy
@pytest.mark.parametrize("rw, stats", [("randread", "null"), ("randrw", "null"), ("randread", "real")])
def test_per_io_path_target(rw, stats):
    if stats == "real":
        pytest.importorskip("simulator.metrics.stats")
    workload_bench(n_ios=5_000, rw=rw, stats=stats)
    best = max(workload_bench(n_ios=300_000, rw=rw, stats=stats)["ios_per_cpu_s"] for _ in range(3))
    print(f"\n{rw}, stats={stats}: {best:,.0f} simulated IO per CPU second")
    assert best > 200_000
