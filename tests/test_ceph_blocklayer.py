"""The block layer in front of OSD devices (simulator.devices.blocklayer): the nr_requests bound,
the device queue-depth bound, reads overtaking queued writes under mq-deadline (and not under a
plain FIFO), the write-starvation limit, FLUSH handling (skipped without a write cache, merged while
one is at the device), and exactly-once completion."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.devices.base import Op, Request
from simulator.devices.blocklayer import BlockLayer, BlockLayerConfig, has_write_cache
from simulator.devices.partition import Partition
from simulator.devices.registry import build_device
from simulator.engine import Simulation

SVC = 1e-3  # deterministic service time of the oracle device


def _dev(sim: Simulation, servers: int = 1, svc: float = SVC, name: str = "disk"):
    spec = {"kind": "queue", "params": {"capacity": "100GiB", "servers": servers,
                                        "service": {"dist": "deterministic", "value": svc}}}
    return build_device(spec, name, sim.root)


class _Probe:
    """Wraps a device to record the number of requests inside it over time."""

    def __init__(self, dev):
        self.dev = dev
        self.max_inside = 0
        orig = dev.submit

        def submit(req):
            ev = orig(req)
            self.max_inside = max(self.max_inside, dev._inside)
            return ev

        dev.submit = submit


def _writes(n: int, stride: int = 1 << 20, start: int = 0) -> list[Request]:
    return [Request(Op.WRITE, start + ((i * 7919) % n) * stride, 4096) for i in range(n)]


@pytest.mark.parametrize("sched", ["mq-deadline", "none"])
def test_tags_and_queue_depth_bound_and_every_request_completes_once(sched: str) -> None:
    sim = Simulation(1)
    dev = _dev(sim)
    probe = _Probe(dev)
    bl = BlockLayer("blk", sim.root, dev, BlockLayerConfig(scheduler=sched, queue_depth=4, nr_requests=8))
    done: list[Request] = []
    tags_seen = []

    def cb(ev):
        done.append(ev.value)
        tags_seen.append(bl.nr_requests - bl._tags)

    reqs = _writes(100)
    for ev in bl.submit_batch(reqs[:60]):
        ev.callbacks.append(cb)
    for r in reqs[60:]:
        bl.submit(r).callbacks.append(cb)
    assert bl.nr_requests - bl._tags == 8  # all tags taken at once, the rest sleep
    sim.run()
    assert sorted(map(id, done)) == sorted(map(id, reqs))  # each exactly once
    assert probe.max_inside <= 4
    assert max(tags_seen) <= 8
    assert bl._tags == 8 and bl._inside == 0 and not bl._waiters
    # one server, 1 ms each: the device is never idle while requests wait
    assert sim.now == pytest.approx(100 * SVC)
    assert bl.stats()["utilisation"] == pytest.approx(1.0)


def test_nr_requests_default_is_twice_the_queue_depth_capped_at_128() -> None:
    sim = Simulation(1)
    assert BlockLayer("a", sim.root, _dev(sim, name="d1"), BlockLayerConfig(queue_depth=32)).nr_requests == 64
    assert BlockLayer("b", sim.root, _dev(sim, name="d2"), BlockLayerConfig(queue_depth=254)).nr_requests == 256
    assert BlockLayer("c", sim.root, _dev(sim, name="d3"), BlockLayerConfig(queue_depth=32, scheduler="none")).nr_requests == 32


NR, QD = 64, 4


def _read_after_write_burst(sched: str | None, n_writes: int = 300) -> float:
    """Latency of one read submitted right after a burst of ``n_writes`` async writes."""
    sim = Simulation(1)
    dev = _dev(sim)
    target = dev if sched is None else BlockLayer("blk", sim.root, dev, BlockLayerConfig(scheduler=sched, queue_depth=QD, nr_requests=NR))
    if sched is None:
        for r in _writes(n_writes):
            target.submit(r)
    else:
        target.submit_batch(_writes(n_writes))
    lat = []
    rd = Request(Op.READ, 123 << 20, 4096)
    target.submit(rd).callbacks.append(lambda ev: lat.append(sim.now))
    sim.run()
    return lat[0]


def test_reads_overtake_queued_writes() -> None:
    no_layer = _read_after_write_burst(None)
    fifo = _read_after_write_burst("none")
    deadline = _read_after_write_burst("mq-deadline")
    # without a block layer the read waits for all 300 writes
    assert no_layer == pytest.approx(301 * SVC)
    # with one, the writer thread sleeps for tags: the read gets the second freed tag at t = 2 ms
    # (the writer had the first) and then, in FIFO order, waits for the nr_requests requests ahead
    assert fifo == pytest.approx((2 + NR) * SVC)
    # mq-deadline dispatches it once the current write batch (fifo_batch = 16) ends: behind the
    # device's 4 and at most 16 writes
    assert deadline <= (2 + 16 + QD) * SVC + 1e-9
    assert deadline < 0.4 * fifo


@pytest.mark.parametrize("starved", [2, 10**6])
def test_write_starvation_limit_lets_writes_through_a_read_stream(starved: int) -> None:
    sim = Simulation(1)
    dev = _dev(sim)
    bl = BlockLayer("blk", sim.root, dev, BlockLayerConfig(queue_depth=1, nr_requests=64, fifo_batch=4, writes_starved=starved))
    rng = np.random.default_rng(3)
    w_done = []
    for r in _writes(20):
        bl.submit(r).callbacks.append(lambda ev: w_done.append(sim.now))

    # 8 reader threads keep reads queued until t = 0.3 s
    def reader(ev=None):
        if sim.now > 0.3:
            return
        req = Request(Op.READ, int(rng.integers(0, 1 << 16)) * 4096, 4096)
        bl.submit(req).callbacks.append(reader)

    for _ in range(8):
        reader()
    sim.run()
    assert len(w_done) == 20
    if starved == 2:
        # at least one write per (2 read batches of <= 4 + 1 write batch): all 20 within 20 x 9 ms
        assert max(w_done) <= 20 * (2 * 4 + 1) * SVC + SVC
    else:
        # no starvation limit: the writes wait until the reads stop
        assert sorted(w_done)[1] > 0.3


@pytest.mark.parametrize("starved", [2, 1000])
def test_a_write_waits_for_writes_starved_read_batches(starved: int) -> None:
    sim = Simulation(1)
    bl = BlockLayer("blk", sim.root, _dev(sim), BlockLayerConfig(queue_depth=1, nr_requests=1000, writes_starved=starved))
    bl.submit(Request(Op.READ, 0, 4096))  # occupies the device
    t_w = []
    bl.submit(Request(Op.WRITE, 1 << 30, 4096)).callbacks.append(lambda ev: t_w.append(sim.now))
    for i in range(200):
        bl.submit(Request(Op.READ, (i + 1) * 4096, 4096))
    sim.run()
    if starved == 2:
        # two read batches of fifo_batch = 16, then the write
        assert t_w[0] == pytest.approx((1 + 2 * 16 + 1) * SVC)
    else:
        # mq-deadline checks deadlines only in the direction it chose: the write waits for every read
        assert t_w[0] == pytest.approx(202 * SVC)


def _hdd(sim: Simulation, wc: str, name: str):
    return build_device({"profile": "hdd/toshiba_mg06sca10te", "params": {"cache": {"write_cache": wc}}}, name, sim.root)


def test_flush_is_skipped_without_a_write_cache_and_reaches_the_device_with_one() -> None:
    sim = Simulation(1)
    off = _hdd(sim, "off", "off")
    vol = _hdd(sim, "volatile", "vol")
    assert not has_write_cache(off) and has_write_cache(vol)
    b_off = BlockLayer("blk", off, off)
    b_vol = BlockLayer("blk", vol, vol)
    t = {}
    for name, b in (("off", b_off), ("vol", b_vol)):
        b.submit(Request(Op.WRITE, 1 << 30, 4096))
        b.submit(Request(Op.FLUSH)).callbacks.append(lambda ev, n=name: t.setdefault(n, sim.now))
    sim.run()
    assert t["off"] == 0.0 and off.completed[Op.FLUSH] == 0 and b_off.flushes_skipped == 1
    assert vol.completed[Op.FLUSH] == 1 and t["vol"] > 1e-3  # destage of the dirty write first
    # through a partition (an LV) the same
    p = Partition("lv", sim.root, b_off, 1 << 20, 1 << 30)
    p.submit(Request(Op.FLUSH))
    sim.run()
    assert off.completed[Op.FLUSH] == 0


def test_flushes_arriving_while_one_is_at_the_device_are_merged() -> None:
    sim = Simulation(1)
    spec = {"kind": "queue", "params": {"capacity": "100GiB", "servers": 4, "flush_time": 0.002,
                                        "service": {"dist": "deterministic", "value": 1e-4}}}
    dev = build_device(spec, "d", sim.root)
    bl = BlockLayer("blk", sim.root, dev, BlockLayerConfig(queue_depth=8))
    done = []
    bl.submit(Request(Op.FLUSH)).callbacks.append(lambda ev: done.append(sim.now))
    for _ in range(5):  # five more, from five threads, while the first is running
        bl.submit(Request(Op.FLUSH)).callbacks.append(lambda ev: done.append(sim.now))
    sim.run()
    assert dev.completed[Op.FLUSH] == 2 and bl.flushes_merged == 5
    assert done == pytest.approx([0.002] + [0.004] * 5)
    # unmerged: one device flush each
    sim = Simulation(1)
    dev = build_device(spec, "d", sim.root)
    bl = BlockLayer("blk", sim.root, dev, BlockLayerConfig(queue_depth=8, merge_flushes=False))
    for _ in range(6):
        bl.submit(Request(Op.FLUSH))
    sim.run()
    assert dev.completed[Op.FLUSH] == 6
