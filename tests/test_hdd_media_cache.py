"""Media cache (Seagate Exos profiles): what bounds cached random writes.

* an append is set up after the mechanism frees and then waits for the log's write pointer, so
  appends never chain for free: at most one DRAM's worth of dirty segments per revolution;
* with ``cleaning_interleave`` (Seagate's preemptive cleaning under sustained random writes) every
  append is followed by a cleaning write home, so the sustained rate is the same with the write cache
  on or off and at any queue depth above the DRAM's segments (no cliff at QD 17).
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.devices.base import Op
from simulator.devices.hdd.sweep import run_job

X24 = "hdd/seagate_exos_x24"


def _run(qd: int, cache: dict[str, Any], seed: int = 3, runtime: str = "6s") -> tuple[float, float, Any]:
    r = run_job(X24, {"rw": "randwrite", "iodepth": qd, "runtime": runtime, "ramp_time": "2s"},
                params={"cache": cache}, seed=seed)
    d = r.dir("randwrite")
    per_s = d.series.n / d.series.period
    half = 3 * float(per_s.std(ddof=1)) / len(per_s) ** 0.5  # ~3 standard errors of the mean rate
    return d.iops, half, r.device


def test_appends_never_chain_for_free():
    """WCE=0, 32 writes queued, no interleaved cleaning: the DRAM holds 16 segments, and each append
    after another waits for the log pointer to come round after the firmware's set-up, so the drive
    appends at most 16 writes per (revolution - set-up). Before 2026-11-23 appends started at the next
    sector at once and this run gave ~70,000 writes/s."""
    iops, half, dev = _run(32, {"media_cache_wce": False, "cleaning_interleave": 0})
    rev = dev.rev_time
    setup = float(dev.cfg.interface.write_overhead)
    bound = 16 / (rev - setup)
    assert iops <= bound * 1.02 + half
    # and not far below it: the appends are what the drive does (one per revolution)
    st = dev.stats()["hdd"]
    assert st["media_cache_appends"] >= 0.9 * (6.0 / rev)  # 6 measured s (stats reset after the ramp)
    assert iops >= 0.8 * bound


def test_cleaning_interleave_sets_one_rate_for_wce_on_and_off_and_every_queue_depth():
    """cleaning_interleave 1 (the Exos profiles): one cleaning write home after each append. The
    sustained rate is then one DRAM's worth of writes per (append + cleaning trip): the same with WCE
    off at QD16 and QD32 and with WCE on at QD32, and every append is followed by a cleaning write."""
    off16, h16, d16 = _run(16, {"media_cache_wce": False})
    off32, h32, d32 = _run(32, {"media_cache_wce": False})
    on32, hon, don = _run(32, {"media_cache_wce": True})
    assert abs(off32 - off16) <= h16 + h32 + 0.05 * off16
    assert abs(on32 - off32) <= hon + h32 + 0.05 * off32
    for dev in (d16, d32, don):
        st = dev.stats()["hdd"]
        assert st["destaged_extents"] >= st["media_cache_appends"] - 2
    # each append carries at most the DRAM's 16 segments
    st = d32.stats()["hdd"]
    assert off32 * 6.0 <= 16 * (st["media_cache_appends"] + 1)
    # without the interleave the same drive at QD32 appends once per revolution instead
    free, hf, _ = _run(32, {"media_cache_wce": False, "cleaning_interleave": 0})
    assert free > 2 * off32 + hf


@pytest.mark.parametrize("wce", [False, True])
def test_every_write_completes_once_and_the_cache_stays_bounded(wce: bool):
    _iops, _h, dev = _run(32, {"media_cache_wce": wce}, runtime="3s")
    st = dev.stats()["hdd"]
    assert st["dirty_bytes"] <= 16 * 4096
    assert 0 <= st["media_cache_bytes"] <= int(dev.cfg.cache.media_cache_size)
    # writes the drive completed = what DRAM accepted: each append carries at most the 16 segments
    assert dev.completed[int(Op.WRITE)] <= 16 * (st["media_cache_appends"] + 1) + 32
