"""Seagate Advanced Write Cache (the ``persistent`` write-cache mode, issue 15 §1) and 512e
read-modify-write: a bounded non-volatile cache whose sustained random-write rate is set by its
destage (reordering over ``destage_window`` dirty extents), not by its capacity; coalescing of
cached writes; reads of cached dirty data; sub-4 KiB writes on 4 KiB physical sectors."""

from __future__ import annotations

import numpy as np
import pytest
from fio_drive import closed_loop

from simulator.devices.base import Op, Request
from simulator.devices.hdd.bench import make_hdd
from simulator.devices.hdd.config import CacheConfig

AWC = "hdd/seagate_exos_15e900_awc"
BASE = "hdd/seagate_exos_15e900"  # the same drive with WCE=0


def _writes(n, qd, profile=AWC, seed=8, **ov):
    sim, dev = make_hdd(profile, seed=1, **ov)
    r = closed_loop(sim, dev, n_ios=n, qd=qd, bs=4096, write_frac=1.0, seed=seed)
    return r, dev


def _rate_ci(t_done: np.ndarray, batches: int = 10) -> tuple[float, float]:
    """Completion rate over the given completion times and its 95 % half-width by batch means."""
    k = (len(t_done) - 1) // batches
    rates = np.array([k / (t_done[(b + 1) * k] - t_done[b * k]) for b in range(batches)])
    return float(rates.mean()), float(2.262 * rates.std(ddof=1) / np.sqrt(batches))


def _tail_rate(r) -> tuple[float, float]:
    done = np.sort(r.t_submit + r.latency)
    return _rate_ci(done[len(done) // 2:])


def test_awc_is_the_name_of_the_non_volatile_mode():
    assert CacheConfig(write_cache="awc").write_cache == "persistent"
    assert CacheConfig(write_cache="AWC").write_cache == "persistent"


def test_burst_up_to_capacity_is_acknowledged_from_the_cache():
    """1000 random 4 KiB writes into a 4 MiB cache: every one is acknowledged after command overhead +
    link transfer + the non-volatile commit (theory), none waits for the media."""
    r, dev = _writes(1000, 16, **{"cache.persistent_size": "4MiB"})
    c = dev.cfg
    ack = float(c.interface.write_overhead) + 4096 / c.interface.bytes_per_second + float(c.cache.persistent_ack)
    assert r.latency.max() < ack * 1.05 + 16 * 4096 / c.interface.bytes_per_second
    assert r.latency.min() >= ack * (1 - 1e-9)
    # ... while the same writes to the media (WCE off, QD16) take milliseconds each
    off, _ = _writes(1000, 16, profile=BASE)
    assert off.latency.mean() > 20 * r.latency.mean()
    assert dev.destaged == 1000 - dev.overwrites - dev.coalesced  # everything reached the media once


@pytest.mark.parametrize("window", [1, 128])
def test_sustained_rate_is_the_destage_rate_not_the_capacity(window):
    """Past the cache's capacity the host can write only as fast as the drive destages: the same rate
    as the drive with the cache off and ``window`` commands queued (SPTF over the same candidates).
    window=1 (destage in arrival order) gives no sustained gain over WCE=0 at QD1, whatever the
    capacity; window=128 gives the reordering gain."""
    size = 4 * 2**20
    r, _dev = _writes(16000, 16, **{"cache.persistent_size": size, "cache.destage_window": window})
    rate, ci = _tail_rate(r)
    off, _ = _writes(6000, window, profile=BASE)
    ref, ci_ref = _tail_rate(off)
    assert abs(rate - ref) <= 3 * (ci + ci_ref), (rate, ci, ref, ci_ref)
    # conservation: what the host wrote in the tail <= what was destaged meanwhile + the capacity
    done = np.sort(r.t_submit + r.latency)
    t1, t2 = done[len(done) // 2], done[-1]
    host_bytes = (len(done) - len(done) // 2) * 4096
    assert host_bytes <= rate * (t2 - t1) * 4096 + size * 1.001


def test_awc_gain_over_wce_off_comes_from_reordering_the_destage():
    """The study's +70 % sustained random-write gain has to come from destage efficiency: with a
    128-extent destage window the sustained rate at host QD16 beats WCE=0 at QD16 by > 40 %."""
    awc, _ = _writes(16000, 16, **{"cache.persistent_size": "4MiB"})
    off, _ = _writes(6000, 16, profile=BASE)
    a, ca = _tail_rate(awc)
    o, co = _tail_rate(off)
    assert a - ca > 1.4 * (o + co)


def test_reads_of_cached_dirty_data_come_from_the_cache():
    sim, dev = make_hdd(AWC, seed=1, **{"cache.destage": "idle"})
    rng = np.random.default_rng(5)
    offs = [int(x) * 4096 for x in rng.choice(dev.capacity // 4096, size=300, replace=False)]
    writes = [Request(Op.WRITE, o, 4096) for o in offs]
    reads = [Request(Op.READ, o, 4096) for o in offs]
    for w in writes:
        dev.submit(w)

    lat = []

    def one(rq):
        t = sim.env.now
        yield dev.submit(rq)
        lat.append(sim.env.now - t)

    def go():
        yield sim.env.all_of([w.event for w in writes])
        assert dev.destaged < 300  # most still dirty
        yield sim.env.all_of([sim.env.process(one(rq)) for rq in reads])

    sim.env.process(go())
    sim.run()
    hits = dev.dirty_read_hits
    lat = np.array(lat)
    # every read found its data dirty in the cache unless that extent had been destaged already
    assert hits >= 300 - dev.stats()["hdd"]["destaged_extents"]
    assert hits > 200
    assert np.median(lat) < 1e-3  # buffer hits, not 2 ms of rotation + seek
    assert dev.destaged == 300


def test_writes_to_cached_data_join_it_instead_of_adding_destages():
    """Exact overwrites replace cached data in place; adjoining writes extend the cached extent,
    wherever it sits in the cache (not only the newest one)."""
    sim, dev = make_hdd(AWC, seed=1)
    a, b = 10 * 2**30, 500 * 2**30
    reqs = []
    for k in range(8):  # interleaved: 8 adjoining 4 KiB pieces at a and at b, then overwrites
        reqs.append(Request(Op.WRITE, a + k * 4096, 4096))
        reqs.append(Request(Op.WRITE, b + k * 4096, 4096))
    reqs += [Request(Op.WRITE, a, 4096) for _ in range(4)]
    for rq in reqs:
        dev.submit(rq)
    sim.run()
    assert dev.destaged + dev.coalesced + dev.overwrites == len(reqs)
    assert dev.destaged <= 4  # two extents of 32 KiB (plus at most one piece each already in flight)
    assert dev.stats()["hdd"]["destaged_bytes"] <= (16 + 2) * 4096


def test_sub_4k_writes_on_512e_pay_read_modify_write_unless_the_cache_completes_the_sector():
    """512e: a media write covering a 4 KiB physical sector only in part costs a read-modify-write
    (rmw_revolutions); eight cached 512 B writes that fill one physical sector are destaged as one
    aligned write, with no read-modify-write."""
    ov = {"geometry.physical_sector_size": 4096, "geometry.rmw_revolutions": 2.0}
    base = 123456 * 4096
    # cache off: each 512 B write is a media write with RMW
    sim, dev = make_hdd(BASE, seed=1, **ov)
    dev.trace = []
    reqs = [Request(Op.WRITE, base + k * 512, 512) for k in range(8)]
    for rq in reqs:
        sim.env.process(_one(sim, dev, rq))
    sim.run()
    rev = dev.rev_time
    assert len(dev.trace) == 8
    assert all(x[4] >= 2.0 * rev for x in dev.trace)  # media time includes the two revolutions
    # AWC: the pieces coalesce in the cache into one aligned 4 KiB extent
    sim, dev = make_hdd(AWC, seed=1, **ov)
    dev.trace = []
    dev.submit(Request(Op.READ, 2 * base, 4096))  # the mechanism is busy while the pieces arrive
    reqs = [Request(Op.WRITE, base + k * 512, 512) for k in (3, 4, 2, 5, 1, 6, 0, 7)]
    for rq in reqs:
        dev.submit(rq)
    sim.run()
    assert dev.destaged + dev.coalesced + dev.overwrites == 8
    assert dev.destaged == 1 and dev.destaged_bytes == 4096
    destage = [x for x in dev.trace if x[1] == 1]
    assert len(destage) == 1 and destage[0][4] < 0.1 * rev  # one sector's transfer, no extra revolutions


def _one(sim, dev, rq):
    yield dev.submit(rq)


def test_simrun_fio_flags_the_cache_filling_transient(tmp_path):
    """A 30 s random-write run whose first second fills the AWC is flagged on stderr and in the JSON
    (the reported mean would be the transient); with the fill inside ramp_time it is steady and its
    rate is the destage rate."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    job = tmp_path / "w.fio"
    job.write_text("[global]\nioengine=libaio\ndirect=1\nbs=4k\nrw=randwrite\niodepth=16\ntime_based\nruntime=30s\n"
                   "[w]\nfilename=/dev/sda\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    base = [sys.executable, "-m", "simulator.cli", "fio", str(job), "-d", "sda=" + AWC,
            "--set", "system.devices.0.params.cache.persistent_size=256MiB", "--output-format", "json"]
    r = subprocess.run(base, capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "write has not reached steady state" in r.stderr
    st = json.loads(r.stdout)["sim"]["steady_state"]["write"]
    assert st["steady"] is False and st["mean_all"] > 2 * st["mean_after"]
    r2 = subprocess.run([*base, "--set", "workload.global.ramp_time=5s"], capture_output=True, text=True, env=env,
                        cwd=root, timeout=600)
    assert r2.returncode == 0 and "steady state" not in r2.stderr, r2.stderr
    st2 = json.loads(r2.stdout)["sim"]["steady_state"]["write"]
    assert st2["steady"] is True
    assert st2["mean_all"] == pytest.approx(st["mean_after"], rel=0.1)


def test_media_cache_appends_wait_for_the_log_pointer():
    """A media-cache append goes to the log's next free sectors: the arm waits for them to come round
    (half a revolution on average after a cleaning trip), so WCE=0 random writes cost rotation on the
    append as well as on the cleaning write home."""
    sim, dev = make_hdd("hdd/seagate_exos_x24", seed=1, **{"cache.media_cache_wce": False})
    r = closed_loop(sim, dev, n_ios=400, qd=1, bs=4096, write_frac=1.0, seed=3)
    h = dev.stats()["hdd"]
    assert h["media_cache_appends"] >= 390 and h["destaged_extents"] >= 390
    # every media op (append or cleaning write) waits ~U(0, 1) revolution: mean ~0.5 rev
    assert h["mean_rotation_s"] == pytest.approx(0.5 * dev.rev_time, rel=0.15)
    assert r.latency.mean() > 0.5 * dev.rev_time


@pytest.mark.parametrize("mode", ["volatile", "persistent", "media_cache"])
def test_joining_cached_data_keeps_every_io_once_and_flush_durable(mode):
    """Writes, reads, FUA writes and FLUSHes over a 64 KiB span (overwrites, prepends and appends to
    cached extents all the time): every request completes exactly once, reads of cached data hit,
    every byte the cache took is destaged, and a FLUSH completes only after everything written
    before it is durable."""
    ov = {"cache.write_cache": mode, "cache.media_cache_size": "64MiB", "cache.persistent_size": "1MiB",
          "cache.write_cache_size": "1MiB"}
    sim, dev = make_hdd("hdd/seagate_st91000640ns", seed=2, **ov)
    rng = np.random.default_rng(11)
    count: dict[int, int] = {}
    reqs: list[Request] = []
    flush_ok: list[bool] = []

    def done(ev):
        count[ev._value.tag] = count.get(ev._value.tag, 0) + 1

    def flusher(f, s_at):
        yield dev.submit(f)
        if mode == "volatile":
            pending = dev.dirty_extents()
            flush_ok.append(all(e[2] > s_at for e in pending))

    def gen():
        for _ in range(600):
            k = rng.random()
            size = int(rng.choice([512, 4096, 8192]))
            off = int(rng.integers(0, (65536 - size) // 512)) * 512
            if k < 0.05:
                f = Request(Op.FLUSH, tag=len(reqs))
                reqs.append(f)
                f_proc = sim.env.process(flusher(f, dev._seq))
                f_proc.callbacks.append(lambda _e, t=f.tag: count.__setitem__(t, count.get(t, 0) + 1))
            else:
                op = Op.READ if k < 0.35 else Op.WRITE
                r = Request(op, off, size, fua=bool(rng.random() < 0.1), tag=len(reqs))
                reqs.append(r)
                dev.submit(r).callbacks.append(done)
            if rng.random() < 0.5:
                yield sim.env.timeout(float(rng.exponential(0.002)))

    sim.env.process(gen())
    sim.run()
    assert len(count) == len(reqs) and all(v == 1 for v in count.values())
    assert all(flush_ok)
    # the media cache's DRAM stage empties into the log quickly: fewer chances to join there
    joins, hits = (10, 2) if mode == "media_cache" else (50, 10)
    assert dev.overwrites + dev.coalesced > joins and dev.dirty_read_hits > hits
    assert dev._dirty_bytes == 0 and not dev.dirty_extents()
    assert dev._inside == 0 and dev._outstanding == 0
