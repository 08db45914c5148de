"""Queueing theory checks of the runner against the QueueDevice oracle.

Tolerances come from theory (Little's law is exact up to edge effects) or from a batch-means
confidence interval of the run itself (99%, 20 batches, in completion order).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from test_workload_support import new_sim, queue_devices, run_jobs

AIO = {"ioengine": "libaio", "sim_slat": 0}


def batch_ci(x: np.ndarray, batches: int = 20, level: float = 0.99) -> tuple[float, float]:
    """Mean and half-width of the batch-means confidence interval."""
    m = len(x) // batches * batches
    bm = x[:m].reshape(batches, -1).mean(axis=1)
    h = stats.t.ppf(0.5 + level / 2, batches - 1) * bm.std(ddof=1) / np.sqrt(batches)
    return float(x.mean()), float(h)


@pytest.mark.parametrize("depth, dist", [(1, "exponential"), (16, "exponential"), (64, "deterministic")])
def test_littles_law_closed_loop(depth, dist):
    sim = new_sim(5)
    devs = queue_devices(sim, [2e-4], dist=dist, servers=4)
    _, (r,) = run_jobs(
        AIO, [{"rw": "randread", "iodepth": depth, "number_ios": 40_000, "filename": "d0"}], devs, sim
    )
    x = r.n / r.runtime
    # N = X * R; the drain at the end (depth IOs out of 40k) is the only deviation
    assert x * r.lat.mean() == pytest.approx(depth, rel=0.01)
    if depth == 64 and dist == "deterministic":
        # 4 servers saturated: X = 4/s exactly, R = depth/X
        assert x == pytest.approx(4 / 2e-4, rel=1e-3)


def ordered_clat(r):
    return r.clat[np.argsort(r.t_done, kind="stable")]


def test_open_loop_mm1_mean_response():
    lam, mu = 500, 1000.0
    sim = new_sim(7)
    devs = queue_devices(sim, [1 / mu], dist="exponential")
    # iodepth far above any queue length M/M/1 at rho=0.5 reaches: the loop is open
    _, (r,) = run_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "rate_iops": lam,
                "rate_process": "poisson",
                "iodepth": 512,
                "number_ios": 200_000,
                "ramp_time": 1,
                "filename": "d0",
            }
        ],
        devs,
        sim,
    )
    mean, h = batch_ci(ordered_clat(r))
    theory = 1.0 / (mu - lam)
    assert h < 0.02 * theory  # the run is long enough for a 2% statement
    assert abs(mean - theory) < h
    # the arrivals are Poisson at lam
    assert r.n / r.runtime == pytest.approx(lam, rel=0.02)


def test_open_loop_md1_pollaczek_khinchine():
    lam, d = 700, 1e-3
    rho = lam * d
    sim = new_sim(8)
    devs = queue_devices(sim, [d])
    _, (r,) = run_jobs(
        AIO,
        [
            {
                "rw": "randread",
                "rate_iops": lam,
                "rate_process": "poisson",
                "iodepth": 512,
                "number_ios": 200_000,
                "ramp_time": 1,
                "filename": "d0",
            }
        ],
        devs,
        sim,
    )
    wait = ordered_clat(r) - d
    mean, h = batch_ci(wait)
    theory = rho * d / (2 * (1 - rho))  # P-K mean waiting time, deterministic service
    assert h < 0.04 * theory
    assert abs(mean - theory) < h
    assert np.all(wait >= -1e-12)
