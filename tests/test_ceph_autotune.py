"""BlueStore cache autotuning toward osd_memory_target: the cache budget converges to what the target
leaves, the caches' capacities never exceed it, and over the target the budget falls."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.autotune import Autotuner, resize_cache
from simulator.ceph.cache import LruCache, TwoQCache
from simulator.ceph.cluster import Cluster
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

sys.path.insert(0, str(Path(__file__).parent))
from fio_drive import ClosedLoop

MiB = 1 << 20


def _q() -> dict:
    return {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1, "service": {"dist": "deterministic", "value": "0.2ms"}}}


def _cluster(autotune: dict) -> tuple[Simulation, Cluster]:
    params = {
        "hosts": [{"name": "h", "cpu": {"cores": 8}, "drives": [{"count": 3, "device": _q()}]}],
        "pools": [{"name": "p", "size": 3, "pg_num": 16, "rule": {"failure_domain": "osd"}}],
        "images": [{"pool": "p", "name": "img", "size": "2GiB"}],
        "bluestore": {"autotune": {"enabled": True, "interval": "1s", **autotune}, "cache": {"buffered_write": True}},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(1)
    return sim, Cluster(cfg, "cluster", sim.root)


def _spy(cl: Cluster) -> list[tuple[int, dict]]:
    seen: list[tuple[int, dict]] = []
    tuner = cl.autotune
    orig = tuner._tune

    def tune(bs):
        orig(bs)
        seen.append((len(bs.cache), dict(tuner.last[id(bs)]), bs.cache.capacity, len(bs.onodes), bs.onodes.capacity))

    tuner._tune = tune
    return seen


def test_autotuned_caches_stay_within_the_memory_target() -> None:
    at = {"memory_target": "1GiB", "memory_base": "256MiB", "expected_fragmentation": 0.1, "cache_min": "64MiB"}
    sim, cl = _cluster(at)
    seen = _spy(cl)
    ClosedLoop(sim, cl.image("p", "img"), qd=8, rw="randwrite", runtime=5.0, seed=1).run()
    ClosedLoop(sim, cl.image("p", "img"), qd=8, rw="randread", runtime=5.0, seed=2).run()
    assert len(seen) >= 3 * 8  # three OSDs, about one tuning per simulated second
    limit = (1 << 30) * 0.9 - 256 * MiB  # target x (1 - fragmentation) - base
    for n_data, last, cap, n_onodes, onode_cap in seen:
        assert last["budget"] <= limit + 1
        assert last["kv"] + last["meta"] + last["data"] <= last["budget"]
        assert 256 * MiB + last["kv"] + last["meta"] + last["data"] <= (1 << 30) * 0.9 + 1
        assert n_data <= cap and n_onodes <= onode_cap
        assert cap * 4096 == last["data"]
    # the caches were exercised: the data cache held more than the smallest total cache allows
    assert max(n for n, *_ in seen) * 4096 > 64 * MiB


def test_budget_converges_to_what_the_target_leaves() -> None:
    """Below the target the budget moves (1 - mapped/target) of the way to its maximum per interval:
    an idle OSD (mapped = base) approaches it geometrically."""
    at = {"memory_target": "2GiB", "memory_base": "512MiB", "expected_fragmentation": 0.15, "cache_min": "128MiB"}
    _sim, cl = _cluster(at)
    tuner: Autotuner = cl.autotune
    mx = int((2 << 30) * 0.85 - 512 * MiB)
    assert tuner.max == mx
    bs = cl.osds[0].bs
    bs.cache.clear()
    b0 = tuner.budget[id(bs)]
    for _ in range(12):
        prev = tuner.budget[id(bs)]
        mapped = 512 * MiB + len(bs.onodes) * 4096 + len(bs.cache) * 4096
        tuner._tune(bs)
        want = prev + int((1 - mapped / (2 << 30)) * (mx - prev))
        assert tuner.budget[id(bs)] == min(mx, want)
    assert b0 < tuner.budget[id(bs)] <= mx
    assert tuner.budget[id(bs)] > 0.99 * mx


def test_over_the_target_the_budget_falls_toward_cache_min() -> None:
    at = {"memory_target": "1GiB", "memory_base": "1200MiB", "cache_min": "128MiB"}  # base alone exceeds the target
    _sim, cl = _cluster(at)
    tuner = cl.autotune
    bs = cl.osds[0].bs
    tuner.budget[id(bs)] = tuner.max
    prev = tuner.budget[id(bs)]
    for _ in range(5):
        tuner._tune(bs)
        assert tuner.budget[id(bs)] < prev or tuner.budget[id(bs)] == 128 * MiB
        prev = tuner.budget[id(bs)]
    assert tuner.budget[id(bs)] >= 128 * MiB


@pytest.mark.parametrize("kind", ["2q", "lru"])
def test_resize_cache_evicts_down_to_the_new_capacity(kind: str) -> None:
    c = TwoQCache(100) if kind == "2q" else LruCache(100)
    for k in range(100):
        c.insert(k)
    assert len(c) == 100
    resize_cache(c, 30)
    assert len(c) <= 30 and c.capacity == 30
    for k in range(200, 260):
        c.insert(k)
    assert len(c) <= 30
    resize_cache(c, 0)
    assert len(c) == 0


def _two_pool_cluster(policy: str, seed: int) -> tuple[Simulation, Cluster]:
    """Autotuned BlueStore on two pools of separate OSDs (a run on one pool leaves the other's OSDs outside it):
    interval 50 ms, so a short run re-sizes many times; no fragmentation allowance and no RocksDB share, so
    full caches plus deferred data in flight pass the 160 MiB target and budgets move both ways; 64 KiB
    onodes, so the onode share bounds the onode cache: both caches shrink and evict."""
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": "0.3ms"}}}
    params = {
        "hosts": [{"name": "h", "cpu": {"cores": 4},
                   "drives": [{"count": 3, "device": dev, "device_class": "hdd"},
                              {"count": 3, "device": dev, "device_class": "ssd"}]}],
        "pools": [{"name": "p", "size": 3, "pg_num": 16, "rule": {"failure_domain": "osd", "device_class": "hdd"}},
                  {"name": "q", "size": 3, "pg_num": 16, "rule": {"failure_domain": "osd", "device_class": "ssd"}}],
        "images": [{"pool": "p", "name": "img", "size": "2GiB"}, {"pool": "q", "name": "img", "size": "2GiB"}],
        "osd": {"cost_cv": 0.3}, "block_layer": {"enabled": False},
        "bluestore": {"autotune": {"enabled": True, "interval": "50ms", "memory_target": "160MiB",
                                   "memory_base": "128MiB", "cache_min": "4MiB", "onode_bytes": 65536,
                                   "expected_fragmentation": 0.0, "kv_ratio": 0.0},
                      "cache": {"policy": policy, "buffered_write": True, "size": "16MiB"}, "onode_cache_size": 4096,
                      "prefer_deferred_size": 131072},
    }
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _autotune_chain(engine: str, policy: str) -> list:
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    sim, cl = _two_pool_cluster(policy, 3)
    out = []
    img = cl.image("p", "img")  # pool q's OSDs stay outside every run
    for rw, qd, bs in (("randwrite", 8, 4096), ("randwrite", 16, 16384), ("randread", 8, 4096), ("randwrite", 4, 65536),
                       ("randwrite", 16, 65536), ("randread", 16, 16384)):
        job = {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": bs, "randseed": 5, "rw": rw, "iodepth": qd,
               "time_based": 1, "runtime": "0.4s", "ramp_time": "0.05s"}
        if engine == "auto":  # no silent Python run
            assert choose(sim, Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i]), "auto") is None
        res = run_fio(sim, [img], job, engine=engine)
        tuner = cl.autotune
        caches = [(o.bs.cache.capacity, len(o.bs.cache), getattr(o.bs.cache, "kin", 0), getattr(o.bs.cache, "kout", 0),
                   [(k.tolist(), u.tolist()) for k, u in o.bs.cache.unit_arrays()], o.bs.onodes.capacity,
                   len(o.bs.onodes), o.bs.onodes.order().tolist())
                  for o in cl.osds]
        out.append((repr(res[0]), tuner.stats(), [tuner.budget[id(o.bs)] for o in cl.osds],
                    cl.next_tune, caches, sim.env.now))
    return out


@pytest.mark.parametrize("policy", ["2q", "lru"])
def test_compiled_core_autotunes_as_the_python_model(policy: str) -> None:
    """The compiled Ceph core runs the autotuner (issue 13): a chain of runs on one pool of a cluster with two
    pools of separate OSDs (the run's OSDs tuned in the core, the other pool's replaying the ticks at write
    back), with budgets that grow and shrink, gives the Python model's results, tuner statistics, budgets, cache capacities and cache contents
    (every unit in order, every onode), byte for byte."""
    py = _autotune_chain("python", policy)
    cc = _autotune_chain("auto", policy)
    assert cc == py
    st = py[-1][1]
    assert st["ticks"] > 30
    caps = {c[0] for step in py for c in step[4]}
    assert len(caps) > 3  # the data caches were re-sized to several capacities
    assert any(c[1] == c[0] for c in py[-1][4])  # and filled: re-sizing below what they hold evicts
    assert any(b < a for s0, s1 in itertools.pairwise(py) for a, b in zip(s0[2], s1[2], strict=True))  # a budget fell
    assert len({tuple(s[2][3:]) for s in py}) > 3  # the other pool's OSDs were tuned (their budgets grew)
