"""Mechanisms found in the Ceph lab's counters (docs/ceph-model.md, "CPU batching and stalls in the lab"):
thread wakeups amortised over queued jobs, the kv_sync commit cycle's own CPU, off-CPU stalls.

All three are off by default; these tests check their arithmetic against theory and that the default path
is unchanged.
"""

from __future__ import annotations

import math

import pytest
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.resources import CpuPool
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

US = 1e-6


def _pool(servers: int = 1, **kw) -> CpuPool:
    sim = Simulation(1)
    return CpuPool("cpu", sim.root, servers, **kw)


def test_default_pool_books_cost_only():
    p = _pool(2, speed=2.0)
    assert p.book(0.0, 10 * US) == pytest.approx(5 * US)
    assert p.book(0.0, 10 * US) == pytest.approx(5 * US)  # second server
    assert p.book(0.0, 10 * US) == pytest.approx(10 * US)  # queued behind the first
    assert p.book(1.0, 0.0) == 1.0  # a zero-cost job is no job


def test_wakeup_paid_on_an_idle_server_not_back_to_back():
    p = _pool(1, speed=2.0, wakeup_cost=20 * US)
    # idle server: the job wakes it: (cost + wakeup) / speed
    e1 = p.book(0.0, 100 * US)
    assert e1 == pytest.approx(60 * US)
    # arrives while the server is busy: runs back to back, no wakeup
    e2 = p.book(10 * US, 100 * US)
    assert e2 == pytest.approx(e1 + 50 * US)
    # arrives after the server went idle: wakes it again
    e3 = p.book(1.0, 100 * US)
    assert e3 == pytest.approx(1.0 + 60 * US)
    # with wakeups on, even a zero-cost job (a message whose handling is all wakeup) wakes a thread
    assert p.book(2.0, 0.0) == pytest.approx(2.0 + 10 * US)
    assert p.jobs == 4


def test_stalls_do_not_hold_the_server_and_have_the_configured_mean():
    m = 2e-3
    p = _pool(1, stall_share=0.5, stall_mean=m)
    n = 20000
    delays, t = [], 0.0
    for _ in range(n):
        t += 1.0  # far apart: every job finds the server idle
        delays.append(p.book(t, 10 * US) - (t + 10 * US))
    stalled = [d for d in delays if d > 1e-12]
    # binomial share: 0.5 +- 4 sd
    assert abs(len(stalled) / n - 0.5) < 4 * math.sqrt(0.25 / n)
    assert p.stalls == len(stalled)
    # exponential mean m: the sample mean within 4 standard errors (sd = m)
    mean = sum(stalled) / len(stalled)
    assert abs(mean - m) < 4 * m / math.sqrt(len(stalled))
    # the core is free during a stall: the next job starts when the stalled job's CPU work ends
    q = _pool(1, stall_share=0.5, stall_mean=1.0)
    t = 0.0
    while True:
        e = q.book(t, 10 * US)
        if e > t + 10 * US + 1e-9:  # stalled
            break
        t = e + 1.0
    assert q.book(t + 10 * US, 10 * US) >= t + 20 * US - 1e-12
    assert q._free[0] == pytest.approx(t + 20 * US)


def _lab_like(kv_commit_cost: float, speed: float = 1.0, client: dict | None = None) -> tuple[Simulation, Cluster]:
    """3 OSDs on one 2-core host, deterministic device and costs (no wakeups, no cost spread)."""
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "deterministic", "value": 200 * US}}}
    p = {
        "hosts": [{"name": "h", "cpu": {"cores": 2, "speed": speed}, "drives": [{"count": 3, "device": dev}]}],
        "client": {"host": "h", **(client or {})},
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 32, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "bluestore": {"kv_commit_cost": kv_commit_cost},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _cpu_per_write(sim: Simulation, cl: Cluster, qd: int) -> tuple[float, float, float, float]:
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=qd, bs=4096, rw="randwrite", runtime=0.5, seed=1).run()
    cl.reset_stats()
    cpu = cl.hosts[0].cpu
    busy0 = cpu._busy
    t0 = sim.env.now
    log = ClosedLoop(sim, img, qd=qd, bs=4096, rw="randwrite", runtime=2.0, seed=2).run()
    n = log.completed
    batches = sum(o.bs.kv_batches for o in cl.osds)
    txcs = sum(o.bs.kv_txcs for o in cl.osds)
    kv_ms = 1e3 * sum(o.bs.kv_time for o in cl.osds) / batches
    assert sim.env.now > t0
    return (cpu._busy - busy0) / n, batches / n, txcs / batches if batches else 0.0, kv_ms


@pytest.mark.parametrize("qd", [1, 8])
def test_kv_commit_cost_is_paid_once_per_batch(qd):
    """CPU per client write with kv_commit_cost K = without + K x (kv batches per write): the cost is per
    commit cycle, so it is amortised over the transactions of a batch (at QD 8 batches hold several)."""
    k = 300 * US
    sim0, cl0 = _lab_like(0.0)
    c0, _, txc0, kv0 = _cpu_per_write(sim0, cl0, qd)
    sim1, cl1 = _lab_like(k)
    c1, b1, txc1, kv1 = _cpu_per_write(sim1, cl1, qd)
    assert c1 - c0 == pytest.approx(k * b1, rel=0.03)
    if qd == 1:
        # one write = one txc on each of 3 OSDs; each commits alone; the commit takes K longer (idle CPU)
        assert b1 == pytest.approx(3.0, rel=0.02) and txc1 == pytest.approx(1.0, rel=0.02)
        assert kv1 - kv0 == pytest.approx(k * 1e3, rel=0.05)
    else:
        # several txcs per commit, more than without K (a longer cycle gathers more): K per write is
        # below 3 K, and the commit slows by more than K (the cycle waits for a busy CPU)
        assert txc1 > max(txc0, 1.2) and b1 < 3.0 / 1.2
        assert kv1 - kv0 > k * 1e3


def test_defaults_leave_the_model_unchanged():
    """The three options default to off: a cluster with them explicitly 0 books exactly the same CPU."""
    sim0, cl0 = _lab_like(0.0)
    a = _cpu_per_write(sim0, cl0, 4)
    from simulator.ceph.config import BlueStoreConfig, CpuConfig

    assert CpuConfig().wakeup_cost == 0.0 and CpuConfig().stall_share == 0.0 and CpuConfig().stall_mean == 0.0
    assert BlueStoreConfig().kv_commit_cost == 0.0
    sim1, cl1 = _lab_like(0.0)
    assert _cpu_per_write(sim1, cl1, 4) == a


def test_client_write_cost_is_charged_to_writes_only():
    """client.write_cost (the lab's fio used 268 us per write, 98 us per read): QD1 writes cost exactly that
    much more client CPU per IO (deterministic costs, no wakeups); reads are untouched."""
    w = 170 * US
    sim0, cl0 = _lab_like(0.0)
    c0 = _cpu_per_write(sim0, cl0, 1)[0]
    sim1, cl1 = _lab_like(0.0, client={"write_cost": w})
    c1 = _cpu_per_write(sim1, cl1, 1)[0]
    assert c1 - c0 == pytest.approx(w, rel=0.01)
    reads = []
    for cfg in ({}, {"write_cost": w}):
        sim, cl = _lab_like(0.0, client=cfg)
        img = cl.image("p", "img")
        log = ClosedLoop(sim, img, qd=1, bs=4096, rw="randread", runtime=0.5, seed=3).run()
        reads.append((log.completed, cl.hosts[0].cpu._busy))
    assert reads[0] == reads[1]
