"""Speed work must not move the Ceph model's results: the croit MACH.2 pool, 4 KiB randwrite QD64
(the ``ceph-randwrite-qd64`` bench case), mean IOPS and mean completion latency over seeds, against
the figures the model gave before the stage-1 speed work of issue 13.

Reference: commit 222dad3 (before the speed work), ``build_scaled(sim, 1)`` (clusters/croit_mach2),
per seed s = 1..8: 3,000 IOs with randseed s (warm-up), then 30,000 IOs with randseed s + 100,
libaio without submission latency, offsets uniform with replacement. The check: the difference of
the means lies within 3 standard errors of the difference (Welch), from both samples' own spread.
"""

from __future__ import annotations

import math
import statistics

import pytest

#: (IOPS, mean clat ns) per seed 1..8 at commit 222dad3
BEFORE = [
    (2103.354, 30367562.5), (2152.023, 29695121.2), (2158.495, 29593077.7), (2284.074, 27967650.2),
    (2196.068, 29069016.9), (2145.191, 29766545.3), (2144.745, 29779125.9), (2178.835, 29329203.7),
]


def _run(seed: int) -> tuple[float, float]:
    from simulator.ceph.scale import _fio, build_scaled
    from simulator.engine import Simulation

    sim = Simulation(seed=seed)
    cl = build_scaled(sim, 1)
    img = cl.image("test-mach2", "test")
    _fio(sim, img, 64, "randwrite", 3000, seed)
    (res,) = _fio(sim, img, 64, "randwrite", 30000, seed + 100)
    d = res.present_dirs()[0]
    return d.iops, d.clat.mean_ns


def _within(before: list[float], after: list[float]) -> tuple[bool, str]:
    mb, ma = statistics.mean(before), statistics.mean(after)
    se = math.sqrt(statistics.variance(before) / len(before) + statistics.variance(after) / len(after))
    return abs(ma - mb) <= 3.0 * se, f"before {mb:.4g}, after {ma:.4g}, 3 SE of the difference {3 * se:.3g}"


def test_within_rejects_a_shift():
    """The check can fail: a 5 % shift of the reference itself is outside 3 standard errors."""
    io = [b[0] for b in BEFORE]
    assert _within(io, [x * 1.0 for x in io])[0]
    assert not _within(io, [x * 1.05 for x in io])[0]


@pytest.mark.heavy
def test_croit_randwrite_statistically_unchanged():
    after = [_run(s) for s in (1, 2, 3, 4)]
    for k, name in ((0, "IOPS"), (1, "mean clat")):
        ok, msg = _within([b[k] for b in BEFORE], [a[k] for a in after])
        assert ok, f"{name}: {msg}"
