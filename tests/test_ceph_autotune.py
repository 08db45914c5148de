"""BlueStore cache autotuning toward osd_memory_target: the cache budget converges to what the target
leaves, the caches' capacities never exceed it, and over the target the budget falls."""

from __future__ import annotations

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
