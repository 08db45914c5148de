"""Off-CPU stalls and the bookings that follow a stalled job (docs/ceph-model.md, Mechanism 3, H4).

A stalled job's result comes milliseconds after its CPU work ended; the core is free meanwhile. A follow-up
booked at once for an arrival at the stall's end would hold a core idle until then (the pool books jobs,
it has no processes). ``then`` defers such follow-ups to an event at the stall's end.
"""

from __future__ import annotations

import math

import pytest
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.ceph.resources import CpuPool, then
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

US = 1e-6


def _stalled_job(pool: CpuPool, cost: float) -> float:
    """Book jobs 1 s apart until one stalls; return its (delayed) result time; the pool is idle after it."""
    t = 0.0
    while True:
        e = pool.book(t, cost)
        if pool.stalled:
            return e
        assert e == pytest.approx(t + cost)
        t = e + 1.0


def test_then_defers_a_stalled_jobs_follow_up_and_leaves_the_core_free():
    sim = Simulation(1)
    pool = CpuPool("cpu", sim.root, 1, stall_share=0.5, stall_mean=1.0)
    env = sim.env
    r = _stalled_job(pool, 10 * US)
    cpu_end = pool._free[0]
    assert r > cpu_end + 1e-6  # the result comes after the stall, the core is free from cpu_end
    seen = []

    def follow_up(arg, t):
        seen.append((arg, t, env.now, pool.book(t, 10 * US)))

    then(pool, r, follow_up, "x")
    assert seen == [] and not pool.stalled  # deferred: nothing booked yet
    # a job arriving while the stalled job's thread waits off-CPU finds the core free and starts at once
    # (booked directly, the follow-up would have held the core until r + 10 us and this job queued behind)
    t_other = cpu_end + 5 * US
    pool.book(t_other, 10 * US)
    assert pool._free[0] == pytest.approx(t_other + 10 * US)
    env.run(until=r + 1e-9)
    assert len(seen) == 1
    arg, t, at, end = seen[0]
    assert arg == "x" and t == r and at == pytest.approx(r)
    assert end == pytest.approx(r + 10 * US) or pool.stalled  # booked at r on the free core


def test_then_runs_at_once_without_a_stall():
    sim = Simulation(1)
    pool = CpuPool("cpu", sim.root, 1)
    seen = []
    then(pool, pool.book(0.0, 10 * US), lambda a, t: seen.append((a, t)), 7)
    assert seen == [(7, pytest.approx(10 * US))]


def _lab_cluster(stall_share: float, stall_mean: float) -> tuple[Simulation, Cluster]:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "deterministic", "value": 200 * US}}}
    p = {
        "hosts": [{"name": "h", "cpu": {"cores": 2, "stall_share": stall_share, "stall_mean": stall_mean},
                   "drives": [{"count": 3, "device": dev}]}],
        "client": {"host": "h"},
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 32, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "64MiB"}],
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


@pytest.mark.parametrize("rw", ["randread", "randwrite"])
def test_no_booking_reserves_a_core_for_a_stall(rw, monkeypatch):
    """On a cluster whose CPU jobs stall often (30 %, mean 5 ms), no CPU booking is made for an arrival more
    than 1 ms ahead at QD1: every chain (client submit -> primary, repops, commit replies, client reply, cache
    hits) waits for a stall's end before booking its next job. (Before the fix, follow-ups were booked up to
    several stall means ahead.) The longest legitimate lead is one job plus a loopback hop: tens of us."""
    sim, cl = _lab_cluster(0.3, 5e-3)
    env = sim.env
    leads = []
    orig = CpuPool.book

    def book(self, t, cost):
        leads.append(t - env._now)
        return orig(self, t, cost)

    monkeypatch.setattr(CpuPool, "book", book)
    img = cl.image("p", "img")
    if rw == "randread":  # written first, so that reads touch existing objects (and hit the cache)
        ClosedLoop(sim, img, qd=4, bs=65536, rw="write", runtime=0.3, seed=1).run()
    log = ClosedLoop(sim, img, qd=1, bs=4096, rw=rw, runtime=0.5, seed=2).run()
    stalls = cl.hosts[0].cpu.stalls
    assert log.completed > 20 and stalls > 20  # the stall path was exercised many times
    assert max(leads) < 1e-3, f"a booking {max(leads) * 1e3:.2f} ms ahead"


def test_background_share_keeps_the_core_busy_but_returns_the_result_early():
    sim = Simulation(1)
    pool = CpuPool("cpu", sim.root, 1, speed=2.0, background_share=0.3)
    # 100 us at speed 2 = 50 us of core time; the result is out after 70 % of it, the core is busy for all of it
    assert pool.book(0.0, 100 * US) == pytest.approx(35 * US)
    assert pool._free[0] == pytest.approx(50 * US)
    # a job arriving while the background part runs queues behind it (FCFS): starts at 50 us
    assert pool.book(40 * US, 100 * US) == pytest.approx(85 * US)
    assert pool._busy == pytest.approx(100 * US)  # full cost counted: throughput is unchanged


def test_background_share_shortens_qd1_latency_not_cpu_per_io():
    """Deterministic lab-like cluster at QD1 reads: with a background share b the CPU per read is unchanged
    (same jobs per read), and the mean latency falls by at most b x the CPU of the read's chain (it falls
    less when the background part of one job delays the next job of the same IO on a busy core)."""
    def run(b: float) -> tuple[float, float, int]:
        dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                           "service": {"dist": "deterministic", "value": 200 * US}}}
        p = {
            "hosts": [{"name": "h", "cpu": {"cores": 2, "background_share": b}, "drives": [{"count": 3, "device": dev}]}],
            "client": {"host": "h"},
            "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 32, "rule": {"failure_domain": "osd"}}],
            "images": [{"pool": "p", "name": "img", "size": "64MiB"}],
        }
        _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
        sim = Simulation(1)
        cl = Cluster(cfg, "cluster", sim.root)
        img = cl.image("p", "img")
        ClosedLoop(sim, img, qd=4, bs=65536, rw="write", runtime=0.2, seed=1).run()
        cpu = cl.hosts[0].cpu
        t0 = sim.env.now
        log = ClosedLoop(sim, img, qd=1, bs=4096, rw="randread", runtime=0.5, seed=2).run()
        n = log.completed
        assert cpu._t0 == t0  # the run started a new statistics interval: _busy is the run's CPU
        return cpu._busy / n, (sim.env.now - t0) / n, n

    c0, lat0, n0 = run(0.0)
    c1, lat1, n1 = run(0.4)
    # same jobs per read; the two runs differ only in the jobs of the IO in flight at the end (1 of n IOs)
    assert c1 == pytest.approx(c0, rel=2.0 / min(n0, n1))
    # at QD1 the CPU on a read's chain is all of its CPU (c0); latency falls by (0, 0.4 c0]
    # (elapsed / completed: the IO in flight at the end shifts each figure by at most one latency / n)
    cut = lat0 / n0 + lat1 / n1
    assert 0.0 < lat0 - lat1 <= 0.4 * c0 + cut
    assert lat0 - lat1 > 0.2 * c0  # most of it: two cores, the background parts rarely delay the next job


def test_foreign_work_takes_its_cores_from_a_saturated_pool():
    """Two chains of modelled jobs keep 2 cores busy; foreign work of 1 core (Poisson, mean slice 1 ms) takes its
    share: the modelled jobs get 2 T - foreign busy, and the foreign busy time is 1 core x T within 4 sd of the
    compound-Poisson sum (var = rate T E[S^2] = 2 L s T)."""
    sim = Simulation(3)
    s, L, T = 1e-3, 1.0, 20.0
    pool = CpuPool("cpu", sim.root, 2, foreign_cores=L, foreign_slice=s)
    ends = [0.0, 0.0]
    work = 0.0
    while min(ends) < T:
        i = 0 if ends[0] <= ends[1] else 1
        ends[i] = pool.book(ends[i], 50 * US)
        work += 50 * US
    sd = math.sqrt(2 * L * s * T)
    assert abs(pool.foreign_busy - L * T) < 4 * sd
    # work conserving: both cores busy all the time, with modelled or foreign work
    assert work + pool.foreign_busy == pytest.approx(2 * min(ends), rel=0.01)


def test_foreign_work_waits_follow_erlang_c():
    """Light modelled load (far-apart probes of 1 ns) on 2 cores with 1 core of foreign work: M/M/2 with offered
    load 1: a probe waits with probability C(2, 1) = 1/3, the mean wait is C s / (2 - 1) = s / 3 (PASTA)."""
    sim = Simulation(5)
    s = 1e-3
    pool = CpuPool("cpu", sim.root, 2, foreign_cores=1.0, foreign_slice=s)
    n = 5000
    waits = []
    for i in range(n):
        t = (i + 1) * 20 * s
        waits.append(pool.book(t, 1e-9) - t - 1e-9)
    waited = sum(w > 1e-12 for w in waits) / n
    assert abs(waited - 1 / 3) < 4 * math.sqrt(2 / 9 / n)
    se = math.sqrt(5 / 9) * s / math.sqrt(n)  # per-probe sd of the wait: sqrt(E[W^2] - W^2) = sqrt(2/3 - 1/9) s
    assert abs(sum(waits) / n - s / 3) < 4 * se


def test_foreign_cores_must_leave_a_core():
    from pydantic import ValidationError

    from simulator.ceph.config import CpuConfig

    assert CpuConfig(cores=2, foreign_cores=1.5, foreign_slice=1e-3).foreign_cores == 1.5
    with pytest.raises(ValidationError, match="foreign_cores"):
        CpuConfig(cores=2, foreign_cores=2.0, foreign_slice=1e-3)


def _stall_cluster(ec: bool, osds: int = 3, events: list | None = None, prefilled: bool = False,
                   size: str = "32MiB") -> tuple[Simulation, Cluster]:
    """A stall-heavy one-host cluster (30 % of CPU jobs stall, mean 5 ms) whose image's data is in an
    erasure-coded 2+1 pool (``ec``) or a replicated size-3 pool; ``events``: failures (recovery)."""
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "deterministic", "value": 200 * US}}}
    pools = [{"name": "p", "size": 3, "min_size": 2, "pg_num": 16, "rule": {"failure_domain": "osd"}}]
    img = {"pool": "p", "name": "img", "size": size, "prefilled": prefilled}
    if ec:
        pools.append({"name": "e", "type": "erasure", "pg_num": 16, "erasure": {"k": 2, "m": 1},
                      "rule": {"failure_domain": "osd"}})
        img["data_pool"] = "e"
    p = {
        "hosts": [{"name": "h", "cpu": {"cores": 2, "stall_share": 0.3, "stall_mean": 5e-3},
                   "drives": [{"count": osds, "device": dev}]}],
        "client": {"host": "h"},
        "pools": pools,
        "images": [img],
        **({"events": events, "recovery": {"recovery_sleep": "0.02s"}} if events else {}),
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _max_lead(sim: Simulation, monkeypatch) -> list[float]:
    env = sim.env
    leads: list[float] = []
    orig = CpuPool.book

    def book(self, t, cost):
        leads.append(t - env._now)
        return orig(self, t, cost)

    monkeypatch.setattr(CpuPool, "book", book)
    return leads


@pytest.mark.parametrize("rw", ["randread", "randwrite"])
def test_no_booking_reserves_a_core_for_a_stall_erasure_coded(rw, monkeypatch):
    """As above for an erasure-coded pool: encode -> shard writes, sub-reads -> read replies -> decode,
    the primary's own shard commit: every chained booking waits for a stall's end."""
    sim, cl = _stall_cluster(ec=True)
    leads = _max_lead(sim, monkeypatch)
    img = cl.image("p", "img")
    if rw == "randread":
        ClosedLoop(sim, img, qd=4, bs=65536, rw="write", runtime=0.3, seed=1).run()
    log = ClosedLoop(sim, img, qd=1, bs=4096, rw=rw, runtime=1.5, seed=2).run()
    assert log.completed > 20 and cl.hosts[0].cpu.stalls > 20
    assert max(leads) < 1e-3, f"a booking {max(leads) * 1e3:.2f} ms ahead"


@pytest.mark.parametrize("ec", [False, True])
def test_no_booking_reserves_a_core_for_a_stall_in_recovery(ec, monkeypatch):
    """An OSD marked out while a client writes: the backfill's pushes (source reads, gathering, decode,
    pushes to the targets, their acks) chain their bookings through stalls the same way."""
    sim, cl = _stall_cluster(ec=ec, osds=5, events=[{"at": "0.2s", "action": "out", "osd": 1}], prefilled=True,
                             size="256MiB")
    leads = _max_lead(sim, monkeypatch)
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=1, bs=4096, rw="randwrite", runtime=1.5, seed=2).run()
    r = cl.stats()["recovery"]
    assert r["recovered_objects"] > 10 and r["pgs_backfilling"] == 0 and cl.hosts[0].cpu.stalls > 20
    assert max(leads) < 1e-3, f"a booking {max(leads) * 1e3:.2f} ms ahead"
