"""The flash read cache (device kind ``flash_read_cache``).

Oracles: a repeated working set smaller than the cache ends with hit ratio -> 1; a uniform random
read stream over a span much larger than the cache has hit ratio size/span once the cache is full
(every resident block is equally likely to be read; the sampling error of a binomial gives the
tolerance); writes invalidate what they touch; the access-count admission does not promote a
region read once; every IO completes exactly once through nested caches, RAIDs and queues; latency
>= service for every IO; the same seed gives the same result."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_workload_support import new_sim, run_jobs

from simulator.devices.base import Op, Request
from simulator.devices.flashcache import FlashReadCache, FlashReadCacheConfig
from simulator.devices.registry import build_device, load_profile, resolve_params
from simulator.errors import ConfigError
from simulator.workloads.runner import RequestLog

AIO = {"ioengine": "libaio", "sim_slat": 0}
MIB = 2**20


def qspec(service=5e-3, capacity="4GiB", dist="deterministic"):
    svc = {"dist": "deterministic", "value": service} if dist == "deterministic" else {"dist": dist, "mean": service}
    return {"kind": "queue", "params": {"capacity": capacity, "service": svc}}


def cache(sim, size="64MiB", backing=None, name="fc", **kw):
    cfg = FlashReadCacheConfig.model_validate({"backing": backing or qspec(), "size": size, **kw})
    return FlashReadCache(cfg, name, sim.root)


def test_repeated_working_set_smaller_than_the_cache_reaches_hit_ratio_one():
    sim = new_sim(1)
    fc = cache(sim, size="64MiB", series_interval=1.0)
    # 16 MiB working set (4096 blocks of 4 KiB), read uniformly: every block is missed twice
    # (the access-count filter), then it is resident and never evicted
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 4, "size": "16MiB", "time_based": 1, "runtime": 60, "filename": "fc"}], {"fc": fc}, sim)
    series = fc.hit_ratio_series()
    assert series[0][1] < 0.2  # cold at first
    tail = [h for t, h, n in series if t >= 40]
    assert min(tail) > 0.999
    assert fc.valid_bytes == 16 * MIB
    assert fc.stats()["flash_cache"]["evicted_regions"] == 0


def test_uniform_scan_over_a_span_much_larger_than_the_cache_hits_size_over_span():
    sim = new_sim(2)
    size, span = 8 * MIB, 256 * MIB  # ratio 1/32
    fc = cache(sim, size=size, admission="on_miss", backing=qspec(1e-4))
    # warm: fill the cache, then measure
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 1, "size": span, "norandommap": 1, "time_based": 1, "runtime": 100000, "number_ios": 20000, "filename": "fc"}], {"fc": fc}, sim)
    fc.reset_stats()
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 1, "size": span, "norandommap": 1, "time_based": 1, "runtime": 100000, "number_ios": 40000, "randseed": 7, "filename": "fc"}], {"fc": fc}, sim)
    p = size / span
    n = fc.hits + fc.misses
    assert n == 40000
    sd = math.sqrt(p * (1 - p) / n)
    assert abs(fc.hits / n - p) < 4 * sd
    assert fc.valid_bytes <= size


def test_access_count_admission_does_not_promote_a_single_miss():
    sim = new_sim(3)
    fc = cache(sim, size="64MiB", admit_after=2)
    # sequential-free single pass over 32 MiB in 64 KiB-separated 4 KiB reads: each region read once
    offs = [(Op.READ, i * 65536, 4096) for i in range(512)]
    assert fc.warm(offs) == 0
    assert fc.valid_bytes == 0
    # a second pass promotes (second miss of each region), a third one hits everything
    assert fc.warm(offs) == 0
    assert fc.valid_bytes == 512 * 65536  # whole regions
    assert fc.warm(offs) == 512


def test_large_and_sequential_reads_are_not_promoted():
    sim = new_sim(3)
    fc = cache(sim, size="64MiB", admission="on_miss", max_admit_size="64KiB")
    fc.warm([(Op.READ, 0, 128 * 1024)])
    assert fc.valid_bytes == 0
    fc.warm([(Op.READ, MIB, 4096), (Op.READ, 2 * MIB + 4096, 4096), (Op.READ, 2 * MIB + 8192, 4096)])
    assert fc.valid_bytes == 2 * 65536  # the third read continues the second: not counted
    fc.warm([(Op.READ, 3 * MIB + 4096, 4096)] * 2)  # a repeated read is not sequential
    assert fc.valid_bytes == 3 * 65536


def test_writes_invalidate_and_go_to_the_backing_device():
    sim = new_sim(4)
    fc = cache(sim, size="64MiB", admission="on_miss")
    fc.warm([(Op.READ, i * 8192, 8192) for i in range(0, 64, 2)])
    assert fc.valid_bytes == 8 * 65536  # eight whole regions
    back = fc.backing
    # an 8 KiB write over one cached read, and a 512-byte write inside another block
    for r in (Request(Op.WRITE, 0, 8192), Request(Op.WRITE, 4 * 8192 + 512, 512)):
        fc.submit(r)
    sim.run()
    assert back.completed[Op.WRITE] == 2
    assert fc.valid_bytes == 8 * 65536 - 8192 - 4096
    assert fc.invalidated_bytes == 8192 + 4096
    # the first read is now a miss (goes to the backing device), an untouched one a hit
    r1, r2 = Request(Op.READ, 0, 8192), Request(Op.READ, 2 * 8192, 8192)
    fc.submit(r1)
    fc.submit(r2)
    sim.run()
    assert fc.hits == 1 and fc.misses == 1
    # the miss went to the backing device and refreshed its region with one background fill read
    assert fc.fills == 1 and back.completed[Op.READ] == 2
    assert fc.valid_bytes == 8 * 65536  # both writes were in region 0, now wholly valid again


def test_hits_are_faster_than_misses_and_latency_covers_service():
    sim = new_sim(5)
    fc = cache(sim, size="64MiB", backing=qspec(5e-3))
    log = RequestLog(fc)
    run_jobs(AIO, [{"rw": "randread", "bs": "8k", "iodepth": 8, "size": "8MiB", "time_based": 1, "runtime": 10000, "number_ios": 20000, "filename": "fc"}], {"fc": log}, sim)
    a = log.arrays()
    assert len(a["latency"]) == 20000
    assert np.all(a["latency"] >= a["service"] - 1e-12)
    assert np.all(a["service"] > 0)
    assert fc.hits > 15000
    nand = fc.cfg.nand
    hit_service = fc.cfg.controller_time + nand.read_latency + 8192 / nand.channel_rate
    fast = a["service"] < 1e-3
    assert fast.sum() == fc.hits
    assert np.allclose(a["service"][fast], hit_service)


def test_promotions_compete_with_hits_for_the_dies():
    """A die busy programming delays a hit on it: the hit waits for the program to finish."""
    sim = new_sim(6)
    fc = cache(sim, size="64MiB", admission="on_miss", nand={"dies": 1, "channels": 1}, controller_time=0)
    fc.warm([(Op.READ, 0, 4096)])  # resident, on die 0
    nand = fc.cfg.nand
    miss = Request(Op.READ, 10 * MIB, 65536)  # a miss covering a whole region: promoted without a fill
    fc.submit(miss)
    sim.run()
    assert fc.fills == 0
    t_prog_end = sim.env.now + 2 * nand.program_latency  # 64 KiB = two multi-plane pages
    hit = Request(Op.READ, 0, 4096)
    fc.submit(hit)
    sim.run()
    assert sim.env.now == pytest.approx(t_prog_end + nand.read_latency + 4096 / nand.channel_rate)
    assert hit.service == pytest.approx(nand.read_latency + 4096 / nand.channel_rate)


def test_every_io_completes_exactly_once_through_nested_caches():
    """A host-side cache over a RAID 5 of cached queue devices (cache in cache in RAID)."""
    sim = new_sim(9)
    member = {"kind": "flash_read_cache", "params": {"backing": qspec(2e-4, "1GiB", "exponential"), "size": "8MiB", "admission": "on_miss"}}
    spec = {"kind": "flash_read_cache", "params": {"size": "16MiB", "backing": {"kind": "raid", "params": {"level": 5, "members": {"count": 4, "device": member}}}}}
    top = build_device(spec, "top", sim.root)
    state: dict[int, int] = {}
    counts = [0, 0]
    orig = top.submit

    def done(e):
        assert state[id(e.value)] == 1
        state[id(e.value)] = 0
        counts[1] += 1

    def counting_submit(req):
        assert state.get(id(req), 0) == 0
        state[id(req)] = 1
        counts[0] += 1
        ev = orig(req)
        ev.callbacks.append(done)
        return ev

    top.submit = counting_submit
    _, (r,) = run_jobs(AIO, [{"rw": "randrw", "bs": "16k", "iodepth": 32, "size": "64MiB", "time_based": 1, "runtime": 10000, "number_ios": 6000, "filename": "t"}], {"t": top}, sim)
    assert r.n == 6000 and counts == [6000, 6000] and not any(state.values())
    sim.run()  # the caches' own fill reads still in flight
    raid = top.backing
    assert sum(top.completed) == 6000
    # every miss and write reached the RAID once, plus the cache's own fill reads
    assert sum(raid.completed) == 6000 - top.hits + top.fills
    members = raid.members
    assert sum(sum(m.completed) for m in members) == sum(raid.member_ios)
    assert sum(sum(m.backing.completed) for m in members) == sum(raid.member_ios) - sum(m.hits - m.fills for m in members)
    assert top._inside == 0 and all(m._inside == 0 for m in members)
    assert top.hits > 0 and sum(m.hits for m in members) > 0


def test_disabled_cache_is_transparent():
    sim = new_sim(10)
    fc = cache(sim, enabled=False)
    run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 4, "size": "1MiB", "time_based": 1, "runtime": 10000, "number_ios": 3000, "filename": "fc"}], {"fc": fc}, sim)
    assert fc.hits == 0 and fc.backing.completed[Op.READ] == 3000


def test_same_seed_same_result():
    def once():
        sim = new_sim(11)
        fc = cache(sim, backing=qspec(1e-3, dist="exponential"))
        _, (r,) = run_jobs(AIO, [{"rw": "randread", "bs": "4k", "iodepth": 4, "size": "32MiB", "time_based": 1, "runtime": 10000, "number_ios": 5000, "filename": "fc"}], {"fc": fc}, sim)
        return r.clat.tolist(), fc.hits

    assert once() == once()


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"region": "6KiB"}, "region"),
        ({"region": "2MiB"}, "region"),
        ({"nand": {"dies": 3, "channels": 2}}, "dies"),
        ({"size": "4KiB", "region": "64KiB"}, "size"),
        ({"admission": "always"}, "admission"),
    ],
)
def test_bad_config_is_one_clear_error(params, word):
    with pytest.raises(ConfigError) as e:
        resolve_params({"kind": "flash_read_cache", "params": {"backing": qspec(), **params}}, source="x.yaml")
    assert word in str(e.value)


def test_turboboost_profile_builds():
    prof = load_profile("hdd/seagate_exos_15e900_512e_awc_turboboost")
    assert prof["kind"] == "flash_read_cache"
    sim = new_sim(12)
    dev = build_device({"profile": "hdd/seagate_exos_15e900_512e_awc_turboboost"}, "d", sim.root)
    assert dev.capacity == dev.backing.capacity and dev.sector_size == dev.backing.sector_size
