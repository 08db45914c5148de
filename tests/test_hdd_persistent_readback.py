"""``cache.persistent_readback``: a non-volatile write cache kept on the platter (an on-disk media cache
behind the DRAM) must read its data back before destaging it home. The firmware reads the cache's log
in batches (one seek to the region, the rotational wait for the log's read pointer, a sequential
transfer) and then writes the blocks home with the destage window's reordering.

Oracles: accounting (every destaged sector was read back once, batches are whole), physics (a
read-back lasts at least its transfer at the region's sustained rate and at most a full-stroke seek,
one revolution and that transfer), and the sustained random-write rate past the cache's capacity:
slower with the read-back, and faster the larger the batch (the seek and rotation are shared by more
blocks). With ``queued_write_candidates`` the writes the full cache refuses are written home directly
when picked, which needs no read-back: deeper queues then destage more efficiently.
"""

from __future__ import annotations

import numpy as np
import pytest
from fio_drive import closed_loop

from simulator.devices.hdd import kernels as K
from simulator.devices.hdd.bench import make_hdd
from simulator.devices.hdd.config import CacheConfig

AWC = "hdd/seagate_exos_15e900_awc"
SMALL = {"cache.persistent_size": "2MiB"}


def _writes(n: int, qd: int, seed: int = 5, **ov):
    sim, dev = make_hdd(AWC, seed=1, **{**SMALL, **ov})
    r = closed_loop(sim, dev, n_ios=n, qd=qd, bs=4096, write_frac=1.0, seed=seed)
    return r, dev


def _tail_rate(r, batches: int = 10) -> tuple[float, float]:
    """Completion rate over the second half of the run and its 95 % half-width by batch means."""
    done = np.sort(r.t_submit + r.latency)
    done = done[len(done) // 2:]
    k = (len(done) - 1) // batches
    rates = np.array([k / (done[(b + 1) * k] - done[b * k]) for b in range(batches)])
    return float(rates.mean()), float(2.262 * rates.std(ddof=1) / np.sqrt(batches))


def test_default_reads_nothing_back():
    assert int(CacheConfig().persistent_readback) == 0
    _r, dev = _writes(1500, 16)
    st = dev.stats()["hdd"]
    assert st["destaged_extents"] > 500
    assert st["readbacks"] == 0 and st["readback_time_s"] == 0.0


@pytest.mark.parametrize("batch", ["4KiB", "64KiB", "1MiB"])
def test_every_destaged_sector_was_read_back_once_in_whole_batches(batch):
    r, dev = _writes(3000, 16, **{"cache.persistent_readback": batch})
    st = dev.stats()["hdd"]
    per = int(CacheConfig(persistent_readback=batch).persistent_readback) // dev.geo.sector_size
    destaged = st["destaged_bytes"] // dev.geo.sector_size
    assert st["destaged_extents"] > 1000
    # each read-back reads one batch (every extent here is 8 sectors, no larger than a batch), and
    # the sectors read back cover the destaged ones with less than one batch (plus the extent in
    # flight) left over
    n = st["readbacks"]
    assert n * per >= destaged
    assert n * per < destaged + per + 8
    assert 0.0 <= dev._par[K.ST_RB] < per + 8
    assert len(r.latency) == 3000  # exactly once


def test_a_read_back_lasts_between_its_transfer_and_a_full_stroke_plus_a_revolution():
    batch = 128 * 1024
    _r, dev = _writes(3000, 16, **{"cache.persistent_readback": batch})
    st = dev.stats()["hdd"]
    g = dev.geo
    spt = dev._par[K.P_RBSPT]
    skew = dev._par[K.P_CSKEW] if dev._par[K.P_LAYOUT] else dev._par[K.P_TSKEW]
    xfer = batch / g.sector_size * g.rev_time * (1 + skew) / spt
    full = K.seek_time(g.ncyl - 1, 0, dev._sk, dev._tt)
    per = st["readback_time_s"] / st["readbacks"]
    assert st["readbacks"] > 50
    assert xfer * (1 - 1e-9) <= per <= full + g.rev_time + xfer
    # the region is at the OD (media_cache_location 0): the head leaves the data for it, so a
    # read-back costs a seek and rotation on average, not a transfer alone
    assert per > xfer + 0.25 * g.rev_time


def test_read_back_slows_the_sustained_rate_and_a_larger_batch_less():
    rates = {}
    for batch in (0, 4096, 65536):
        r, _dev = _writes(6000, 32, **{"cache.persistent_readback": batch})
        rates[batch] = _tail_rate(r)
    (r0, h0), (r4k, h4k), (r64k, h64k) = rates[0], rates[4096], rates[65536]
    assert r4k < r64k - (h4k + h64k)  # one seek and rotation per block is the worst case
    assert r64k < r0 - (h64k + h0)  # even batched, reading back costs drive time
    # a 4 KiB batch adds about one seek + rotation to every destaged block: at least halves the rate
    assert r4k < 0.6 * r0


def test_queued_writes_bypass_the_read_back_and_deep_queues_gain():
    """With the cache full, a refused queued write written home directly costs no read-back, so the
    switch raises the sustained rate once the queue holds more than a few writes."""
    ov = {"cache.persistent_readback": "64KiB", "cache.destage_window": 4}
    off, _ = _writes(6000, 64, **ov)
    on, dev = _writes(6000, 64, **ov, **{"cache.queued_write_candidates": True})
    st = dev.stats()["hdd"]
    assert st["queued_writes_direct"] > 500
    (a, ha), (b, hb) = _tail_rate(off), _tail_rate(on)
    assert b > a + ha + hb
    assert len(on.latency) == 6000


def test_config_bounds():
    with pytest.raises(ValueError):
        CacheConfig(persistent_readback=-1)
    with pytest.raises(ValueError):
        CacheConfig(persistent_readback="2GiB")
    assert int(CacheConfig(persistent_readback="256KiB").persistent_readback) == 262144
