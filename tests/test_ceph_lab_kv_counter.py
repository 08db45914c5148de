"""The model's kv_sync latency counters measure what Ceph's do (BlueStore::_kv_sync_thread, Pacific):
kv_sync_lat = the whole cycle, kv_flush_lat = its data-device FLUSH, kv_commit_lat = the rest (after the
flush: the cycle's own CPU, including any wait for a core, the WAL write and its flush). The lab compares
the model's kv_commit_s with the OSDs' kv_commit_lat (calibration/ceph-lab/compare.py).

Oracles: the identity sync = flush + commit; without kv_commit_cost the commit is the WAL write + flush
(kv_wal_s); with it, on a host with a core always free, exactly K / speed longer; on a busy host longer by
the wait for a core, which kv_wal_s (the old definition of kv_commit_s) left out.
"""

from __future__ import annotations

import pytest
from fio_drive import ClosedLoop

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

US = 1e-6


def _cluster(kv_commit_cost: float, cores: int, speed: float = 1.0, rotational: bool = False) -> tuple[Simulation, Cluster]:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "deterministic", "value": 100 * US},
                                       "flush_time": 200 * US}}
    p = {
        "ceph_release": "pacific",  # SSD: 4 KiB min_alloc_size, prefer_deferred_size 0 -> 4 KiB writes go direct
        "rotational": rotational,
        "hosts": [{"name": "h", "cpu": {"cores": cores, "speed": speed}, "drives": [{"count": 3, "device": dev}]}],
        "client": {"host": "h"},
        "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 32, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "bluestore": {"kv_commit_cost": kv_commit_cost},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _kv(kv_commit_cost: float, cores: int, qd: int, speed: float = 1.0, rotational: bool = False) -> list[dict]:
    sim, cl = _cluster(kv_commit_cost, cores, speed, rotational)
    img = cl.image("p", "img")
    ClosedLoop(sim, img, qd=qd, bs=4096, rw="randwrite", runtime=0.3, seed=1).run()
    cl.reset_stats()
    ClosedLoop(sim, img, qd=qd, bs=4096, rw="randwrite", runtime=1.0, seed=2).run()
    return [o.bs.stats() for o in cl.osds]


def _mean(sts: list[dict], k: str) -> float:
    n = sum(s["kv_batches"] for s in sts)
    return sum(s[k] * s["kv_batches"] for s in sts) / n


@pytest.mark.parametrize("rotational", [False, True])
def test_sync_is_flush_plus_commit(rotational):
    for s in _kv(150 * US, 2, 4, rotational=rotational):
        assert s["kv_batches"] > 50
        assert s["kv_sync_s"] == pytest.approx(s["kv_flush_s"] + s["kv_commit_s"], rel=1e-12)
        assert s["kv_commit_s"] >= s["kv_wal_s"] * (1 - 1e-12)


def test_data_flush_is_not_in_the_commit():
    """Direct (non-deferred) 4 KiB writes on a non-rotational Pacific OSD: every cycle flushes the data device first
    (a 200 us FLUSH on the queue device); kv_commit_lat leaves it out, kv_sync_lat has it."""
    for s in _kv(0.0, 16, 1):
        assert s["kv_data_flushes"] > 0.9 * s["kv_batches"]
        assert s["kv_flush_s"] > 150 * US
        assert s["kv_commit_s"] == pytest.approx(s["kv_wal_s"], rel=1e-9)  # no CPU after the flush: WAL only


def test_commit_includes_the_cycle_cpu_and_its_wait_for_a_core():
    k, speed = 300 * US, 1.5
    base = _kv(0.0, 16, 1, speed)
    # 16 cores: a core is always free, so the cycle's CPU adds exactly K / speed to kv_commit_lat
    idle = _kv(k, 16, 1, speed)
    assert _mean(idle, "kv_commit_s") - _mean(idle, "kv_wal_s") == pytest.approx(k / speed, rel=1e-6)
    assert _mean(base, "kv_commit_s") == pytest.approx(_mean(base, "kv_wal_s"), rel=1e-9)
    # 1 core, QD 8: the cycle's CPU waits behind the op threads' jobs; kv_commit_lat counts the wait
    busy = _kv(k, 1, 8, speed)
    gap = _mean(busy, "kv_commit_s") - _mean(busy, "kv_wal_s")
    assert gap > 1.5 * k / speed


@pytest.mark.parametrize("kv_commit_cost", [0.0, 40 * US])
def test_compiled_core_keeps_the_same_kv_counters(kv_commit_cost):
    """The compiled Ceph core (simulator/core/ceph_loop.py) books the same cycle times as the Python model:
    kv_sync, kv_flush, kv_commit and kv_wal per OSD equal to 1e-12 s after 2000 closed-loop writes (QD16) that
    flush the data device every cycle (64 KiB direct writes, a 200 us FLUSH). Mutation: not timing the data
    flush in the compiled loop leaves its kv_flush_s at 0 and fails this."""
    import numpy as np

    from simulator.core.ceph_build import run_closed, unsupported_writes

    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 150 * US}, "flush_time": 200 * US}}
    p = {"hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2}, "drives": [{"count": 2, "device": dev}]}],
         "pools": [{"name": "p", "size": 3, "min_size": 2, "pg_num": 8}],
         "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
         "osd": {"cost_cv": 0.3}, "block_layer": {"enabled": False},
         "bluestore": {"kv_commit_cost": kv_commit_cost}}

    def cluster() -> tuple[Simulation, Cluster]:
        _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": p})
        sim = Simulation(1)
        return sim, Cluster(cfg, "cluster", sim.root)

    (sim_py, py), (_, cc) = cluster(), cluster()
    assert unsupported_writes(cc) is None
    img_py = py.image("p", "img")
    rng = np.random.default_rng(5)
    n, size = 2000, 65536
    offs = rng.integers(0, (img_py.capacity - size) // 4096, n) * 4096
    kinds, sizes = np.ones(n, np.int64), np.full(n, size, np.int64)
    from simulator.devices.base import Request

    left = list(range(16, n))

    def submit(i):
        img_py.submit(Request(int(kinds[i]), int(offs[i]), int(sizes[i]))).callbacks.append(done)

    def done(_ev):
        if left:
            submit(left.pop(0))

    for i in range(16):
        submit(i)
    sim_py.env.run()
    run_closed(cc, cc.image("p", "img"), kinds, offs, sizes, 16)
    flushes = 0
    for a, b in zip(py.osds, cc.osds, strict=True):
        sa, sb = a.bs.stats(), b.bs.stats()
        assert sa["kv_batches"] == sb["kv_batches"]
        flushes += sa["kv_data_flushes"]
        for k in ("kv_sync_s", "kv_flush_s", "kv_commit_s", "kv_wal_s"):
            assert sb[k] == pytest.approx(sa[k], abs=1e-12), k
        assert sa["kv_flush_s"] > 100 * US
    assert flushes > 0
