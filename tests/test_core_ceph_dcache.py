"""BlueStore's data cache in the compiled Ceph core (simulator.core.ceph_dcache) against the Python
model's (simulator.ceph.cache, the reference): 2Q and LRU, 4 KiB and larger IOs (partial hits across
runs of units), reads after writes with buffered writes on and off (the writing buffers of deferred
writes not applied yet), caches bigger and smaller than the working set (evictions, ghosts,
promotions to hot), and the persist_state hand-over (a run, then another from the written-back
state, against Python doing the same). Completion times, cache contents in order, hit and miss
counts and writing buffers are identical. Mutation notes in the docstrings say which deliberate
error each test was checked to catch.
"""

from __future__ import annotations

import numpy as np
import pytest

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.core.ceph_bench import py_closed
from simulator.devices.registry import resolve_params
from simulator.engine import Simulation

US = 1e-6
KIB = 1024
MIB = 1024 * KIB


def _params(cache: dict, pool_size: int = 3, hosts: int = 3, drives: int = 2) -> dict:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 300 * US}}}
    return {
        "hosts": [{"name": "h", "count": hosts, "cpu": {"cores": 2},
                   "drives": [{"count": drives, "device": dev}]}],
        "pools": [{"name": "p", "size": pool_size, "min_size": 1, "pg_num": 16}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB"}],
        "osd": {"cost_cv": 0.4},
        "block_layer": {"enabled": False},
        "bluestore": {"cache_hit_cost": 7 * US, "cache": cache},
    }


def _cluster(params: dict, seed: int = 3) -> tuple[Simulation, Cluster]:
    _, cfg, _ = resolve_params({"kind": "ceph_cluster", "params": params})
    sim = Simulation(seed)
    return sim, Cluster(cfg, "cluster", sim.root)


def _units(lst) -> list[tuple[int, int]]:
    """A Python cache list as (object, unit) pairs, oldest first."""
    out = []
    r = lst.head
    while r is not None:
        out.extend((r.key, u) for u in range(r.a, r.b))
        r = r.next
    return out


def _cache_state(cl: Cluster) -> list:
    out = []
    for o in cl.osds:
        c = o.bs.cache
        n = len(c)
        arrays = [list(zip(k.tolist(), u.tolist(), strict=True)) for k, u in c.unit_arrays()]
        c.runs()  # builds the runs of a packed cache (after a compiled run), as a Python-engine run would
        lists = c.lists()
        walked = [_units(x) for x in lists]
        assert walked == arrays and len(c) == n  # the packed form and the runs built from it agree
        out.append((walked, [x.units for x in lists], c.hits, c.misses, n,
                    {k: sorted(v) for k, v in o.bs.writing.items()}))
    return out


def _requests(rng, n: int, ws: int, size: int, p_write: float) -> tuple:
    """``n`` requests of ``size`` bytes at 4 KiB-aligned offsets in the first ``ws`` bytes of the image
    (``size`` > 4 KiB: reads straddle cached and uncached units, and objects)."""
    kinds = (rng.random(n) < p_write).astype(np.int64)
    offs = rng.integers(0, (ws - size) // 4096 + 1, n) * 4096
    return kinds, offs.astype(np.int64), np.full(n, size, np.int64)


def _phase(sim_py, py, cc, req, depth: int) -> dict:
    from simulator.core.ceph_build import run_closed, unsupported_reads, unsupported_writes

    writes = bool(req[0].any())
    why = (unsupported_writes(cc) if writes else None) or unsupported_reads(cc)
    assert why is None, why  # the compiled core covers it: no silent Python run
    t_is, ref = py_closed(sim_py, py.image("p", "img"), *req, depth)
    c_is, out, info = run_closed(cc, cc.image("p", "img"), *req, depth)
    assert not np.isnan(ref).any()
    np.testing.assert_array_equal(c_is, t_is)
    np.testing.assert_array_equal(out, ref)
    assert _cache_state(cc) == _cache_state(py)
    for a, b in zip(py.osds, cc.osds, strict=True):
        assert (a.ops, a.subops, a.replies) == (b.ops, b.subops, b.replies)
        assert (a.bs.kv_batches, a.bs.deferred_ops, a.bs.cursor) == (b.bs.kv_batches, b.bs.deferred_ops, b.bs.cursor)
    return info


_VARIANTS = {
    # name: (cache options, IO size, working set, requests per phase)
    "2q-4k-small": ({"policy": "2q", "size": "1MiB"}, 4096, 24 * MIB, 3000),
    "2q-4k-small-bufw": ({"policy": "2q", "size": "1MiB", "buffered_write": True}, 4096, 24 * MIB, 3000),
    "2q-16k-spans-bufw": ({"policy": "2q", "size": "2MiB", "buffered_write": True}, 16 * KIB, 16 * MIB, 2000),
    "2q-4k-big": ({"policy": "2q", "size": "64MiB"}, 4096, 8 * MIB, 3000),
    "2q-kin-kout": ({"policy": "2q", "size": "1MiB", "kin_ratio": 0.25, "kout_ratio": 1.5}, 8192, 12 * MIB, 3000),
    "lru-4k-small": ({"policy": "lru", "size": "1MiB"}, 4096, 24 * MIB, 3000),
    "lru-12k-bufw": ({"policy": "lru", "size": "1MiB", "buffered_write": True}, 12 * KIB, 16 * MIB, 2000),
    "lru-4k-big": ({"policy": "lru", "size": "64MiB"}, 4096, 8 * MIB, 3000),
    "no-bufread": ({"policy": "2q", "size": "1MiB", "buffered_read": False, "buffered_write": True}, 4096, 8 * MIB, 2000),
}


@pytest.mark.parametrize("variant", sorted(_VARIANTS))
def test_cached_reads_and_writes_identical(variant):
    """Three runs on one cluster, each compiled and Python from the state the last left (the
    persist_state hand-over both ways through build / write_back): writes over the working set,
    then reads mixed with writes at QD16 (reads of deferred writes not applied yet hit their
    writing buffers; writes drop or replace cached units), then reads alone at QD8. Completion
    times, every OSD's cache lists unit by unit in order, hits, misses and writing buffers equal.
    Mutations caught (each made in one engine, the Python reference, so the two differ): a warm_in
    unit re-inserted promoted to hot (4 variants fail: buffered writes, IOs over several units;
    4 KiB reads alone re-insert a warm_in unit only when two reads of it overlap); ghosts not
    trimmed (kout ignored); the writing buffers not consulted (7 variants); the cache not handed
    back after a compiled run (write_back skipped: all)."""
    cache, size, ws, n = _VARIANTS[variant]
    p = _params(cache)
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(11)
    _phase(sim_py, py, cc, _requests(rng, n // 2, ws, size, 1.0), 16)
    _phase(sim_py, py, cc, _requests(rng, n, ws, size, 0.3), 16)
    _phase(sim_py, py, cc, _requests(rng, n, ws, size, 0.0), 8)
    st = _cache_state(cc)
    hits = sum(s[2] for s in st)
    misses = sum(s[3] for s in st)
    assert misses > 0
    if cache.get("buffered_read", True):
        assert hits > 0  # the runs exercise the cache (not a vacuous identity)
    if cache["policy"] == "2q" and cache["size"] == "1MiB" and cache.get("buffered_read", True):
        assert any(s[1][1] for s in st) and any(s[1][2] for s in st)  # ghosts and hot units are there


def test_reads_of_pending_deferred_writes_hit_their_writing_buffers():
    """A read of a unit written by a deferred write not applied yet is served from memory (the
    writing buffer) without a data cache: with a cache of 0 bytes, reads right behind writes of the
    same units hit, compiled as in Python (counts and completion times). Mutation caught: the
    writing buffers not consulted by the probe (every read a miss)."""
    p = _params({"policy": "2q", "size": 0})
    p["bluestore"]["deferred_batch_ops"] = 64  # the deferred writes stay pending for a while
    sim_py, py = _cluster(p)
    _, cc = _cluster(p)
    rng = np.random.default_rng(4)
    offs = rng.integers(0, 4 * MIB // 4096, 200).astype(np.int64) * 4096
    kinds = np.tile(np.array([1, 0], np.int64), 200)
    req = (kinds, np.repeat(offs, 2), np.full(400, 4096, np.int64))
    _phase(sim_py, py, cc, req, 1)
    hits = sum(o.bs.cache.hits for o in cc.osds)
    assert hits > 0


def test_lru_hit_ratio_uniform_reads():
    """Oracle: under uniform independent reads of W units, a read hits with probability (units in
    memory) / W, whatever the replacement order: a full LRU cache of C units plus the Wr units of
    deferred writes still pending (read from their writing buffers, never cached). One OSD (pool
    size 1): after a warm-up run fills the cache, the hit count of a second run of n reads is
    binomial(n, (C + Wr) / W); it must lie within 4.5 standard deviations. Mutation caught: the
    writing buffers not consulted (hits ~C/W: -7 standard deviations)."""
    from simulator.core.ceph_build import run_closed

    cap = 2 * MIB
    ws = 8 * MIB
    p = _params({"policy": "lru", "size": cap}, pool_size=1, hosts=1, drives=1)
    _, cc = _cluster(p)
    img = cc.image("p", "img")
    rng = np.random.default_rng(9)
    w = np.arange(ws // 4096, dtype=np.int64) * 4096
    run_closed(cc, img, np.ones(w.size, np.int64), w, np.full(w.size, 4096, np.int64), 16)  # the objects exist
    n = 20000
    offs = rng.integers(0, ws // 4096, n).astype(np.int64) * 4096
    run_closed(cc, img, np.zeros(n, np.int64), offs, np.full(n, 4096, np.int64), 8)
    c = cc.osds[0].bs.cache
    assert len(c) == cap // 4096
    c.hits = c.misses = 0
    offs = rng.integers(0, ws // 4096, n).astype(np.int64) * 4096
    run_closed(cc, img, np.zeros(n, np.int64), offs, np.full(n, 4096, np.int64), 8)
    # the last deferred writes of the first run are still pending (no batch trigger in a read run): their
    # units are read from their writing buffers, never enter the cache, and always hit
    wr = sum(b - a for runs in cc.osds[0].bs.writing.values() for a, b in runs)
    assert wr > 0
    q = (cap // 4096 + wr) / (ws // 4096)
    assert c.hits + c.misses == n
    sd = (n * q * (1 - q)) ** 0.5
    assert abs(c.hits - n * q) < 4.5 * sd, (c.hits, n * q, sd)


@pytest.mark.parametrize("policy", ["2q", "lru"])
def test_fio_persist_chain_with_the_cache_identical(policy):
    """The flagship's pattern through the run path (simulator.core.choose, fio jobs, persist_state):
    randwrite, randread with a ramp (the hit and miss counts restart at its end), randread,
    randwrite, randread on one cluster, every run compiled (the decision covers it), against the
    same chain in the Python model: fio results, the cluster's cache contents in order, hit ratios
    and writing buffers identical."""
    from simulator.core import choose
    from simulator.workloads.options import resolve_jobs
    from simulator.workloads.runner import Workload, run_fio

    def job(**kw):
        return {"name": "j", "ioengine": "libaio", "sim_slat": 0, "bs": 4096, "size": "16m", "norandommap": 1, **kw}

    chain = [job(rw="randwrite", iodepth=16, number_ios=1500, randseed=1),
             job(rw="randread", iodepth=32, time_based=1, runtime="0.3s", ramp_time="0.05s", randseed=2),
             job(rw="randread", iodepth=4, number_ios=1500, randseed=2),
             job(rw="randwrite", iodepth=8, number_ios=800, randseed=3),
             job(rw="randread", iodepth=16, number_ios=1500, randseed=4, bs=8192)]
    p = _params({"policy": policy, "size": "2MiB"})
    out = {}
    for engine in ("python", "auto"):
        sim, cl = _cluster(p, 5)
        img = cl.image("p", "img")
        res = []
        for j in chain:
            wl = Workload(sim, resolve_jobs({}, [j], "t"), lambda _j, _i=img: [_i])
            assert choose(sim, wl, "auto") is None  # compiled in the auto chain
            r = run_fio(sim, [img], j, engine=engine)
            res.append((repr(r[0]), [o.bs.stats()["cache_hit_ratio"] for o in cl.osds], sim.env.now))
        out[engine] = (res, _cache_state(cl))
    assert out["auto"] == out["python"]
    assert any(h > 0 for h in out["auto"][0][2][1])  # reads hit the cache
