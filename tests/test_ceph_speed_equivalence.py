"""Speed work must not move the Ceph model's results: the croit MACH.2 pool, 4 KiB randwrite QD64
(the ``ceph-randwrite-qd64`` bench case), mean IOPS and mean completion latency over seeds, against
the figures the model gave before the stage-1 speed work of issue 13.

Reference: see below (originally commit d652718, the merge of the HDD realism work before the stage-1
speed work; now main at 93dddf5), ``build_scaled(sim, 1)`` (clusters/croit_mach2),
per seed s = 1..8: 3,000 IOs with randseed s (warm-up), then 30,000 IOs with randseed s + 100,
libaio without submission latency, offsets uniform with replacement. The check: the difference of
the means lies within 3 standard errors of the difference (Welch), from both samples' own spread.

Re-baselined twice, on purpose, each for a MODEL change: the first reference (commit 222dad3) predates
the HDD realism work (write-cache joins, the firmware's decision time in the reordering choice), which
lowered this case's IOPS by 18 % (2170 -> 1771 mean, reference d652718). The second: the HDD media-cache
change of issue 10 (merged in 93dddf5: each media-cache append waits for the log pointer, one cleaning
write home per append, in the Exos profiles the MACH.2 drives use) lowered it by 66 % (1771 -> 599.9
mean; the merge did not re-baseline this heavy test, which then failed on main: 599.6 vs 1771). The
current reference is main at 93dddf5, per seed as below. A model change re-baselines this file in the
same commit and says so; a speed change must pass it unchanged (the dispatch on arrival of issue 13,
which changes results statistically: 594.5 vs 598.9 IOPS, 107.4 vs 106.7 ms mean latency over seeds
1-4, within 3 standard errors of 13.2 IOPS and 2.4 ms).
"""

from __future__ import annotations

import math
import statistics

import pytest

#: (IOPS, mean clat ns) per seed 1..8 at commit 93dddf5 (main after the HDD media-cache change)
BEFORE = [
    (594.672, 107532482.5), (594.260, 107465079.8), (597.686, 106905886.1), (611.873, 104456193.6),
    (588.116, 108415109.3), (600.459, 106293393.6), (596.143, 107323593.7), (608.309, 105088381.3),
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
