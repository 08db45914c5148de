"""The onode caches in the compiled Ceph core (simulator.core.ceph_onode) against the Python model.

Differential tests in the style of tests/test_core_ceph_wire.py: two clusters from the same config and
seed, one run by the Python model, one by the compiled core; onode caches smaller than the objects
on an OSD, so lookups miss (a DB read on the WAL/DB device, decode CPU, or both), and images not
pre-filled. The fio results (repr), the cluster's counters, each OSD's onode hits / misses and the
LRU order of its cache must be identical; a persist_state chain hands the caches over both ways.
An oracle: with uniform random reads over N objects an LRU of C entries hits with probability C/N.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_core_ceph_wire import _cluster, _job

import simulator.ceph  # noqa: F401
from simulator.ceph.cluster import Cluster
from simulator.engine import Simulation
from simulator.workloads.options import resolve_jobs
from simulator.workloads.runner import Workload, run_fio

US = 1e-6
_CACHELESS = {"cache": {"buffered_read": False, "buffered_write": False}}


def _params(bluestore: dict, size: int = 3, image: dict | None = None) -> dict:
    dev = {"kind": "queue", "params": {"capacity": "64GiB", "servers": 1,
                                       "service": {"dist": "exponential", "mean": 300 * US}}}
    return {
        "hosts": [{"name": "h", "count": 3, "cpu": {"cores": 2, "stall_share": 0.05, "stall_mean": 100 * US},
                   "drives": [{"count": 2, "device": dev}]}],
        "pools": [{"name": "p", "size": size, "min_size": min(size, 2), "pg_num": 16}],
        "images": [{"pool": "p", "name": "img", "size": "1GiB", **(image or {})}],
        "osd": {"cost_cv": 0.4},
        "block_layer": {"enabled": False},
        "bluestore": {**_CACHELESS, **bluestore},
    }


def _state(cl: Cluster) -> dict:
    """What a run leaves: counters, device busy time, and every OSD's onode cache (order, hits, misses)."""
    return {
        "osd_ops": [(o.ops, o.subops, o.replies) for o in cl.osds],
        "cpu": [(h.cpu.jobs, h.cpu.stalls, h.cpu._busy) for h in cl.hosts],
        "links": [(h.tx.bytes, h.tx._busy, h.rx.bytes, h.rx._busy) for h in cl.hosts],
        "bluestore": [(o.bs.kv_batches, o.bs.kv_txcs, o.bs.deferred_ops, o.bs.direct_writes, o.bs.throttled)
                      for o in cl.osds],
        "image": [(img.completed, img.bytes, img._qarea) for img in cl.images.values()],
        "device_busy": [(o.bs.dev._busy_acc, o.bs.wal_dev._busy_acc) for o in cl.osds],
        "onodes": [(o.bs.onodes.order().tolist(), o.bs.onodes.hits, o.bs.onodes.misses) for o in cl.osds],
        "onode_hit_ratio": [o.bs.stats()["onode_hit_ratio"] for o in cl.osds],
        "bs_rand": [o.bs.rand.random() for o in cl.osds],  # the DB offsets' stream goes on where it was
    }


def _run(params: dict, seed: int, jobs: list[dict], engines: list[str]) -> tuple[list[str], dict, float]:
    """Run ``jobs`` one after the other on one cluster, job i with ``engines[i]``; the compiled ones
    must be covered (no silent Python run)."""
    from simulator.core import choose

    sim, cl = _cluster(params, seed)
    img = cl.image("p", "img")
    outs = []
    for job, engine in zip(jobs, engines, strict=True):
        if engine == "compiled":
            wl = Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i])
            assert choose(sim, wl, "auto") is None, job
        outs.append(repr(run_fio(sim, [img], job, engine=engine)[0]))
    return outs, _state(cl), sim.env.now


def _same(params: dict, seed: int, jobs: list[dict], engines: list[str]) -> dict:
    py = _run(params, seed, jobs, ["python"] * len(jobs))
    cc = _run(params, seed, jobs, engines)
    assert cc[0] == py[0]
    assert cc[1] == py[1]
    assert cc[2] == py[2]
    return py[1]


_MISSES = {"read": {"onode_miss_read": 4096, "onode_miss_cost": 0},
           "cost": {"onode_miss_read": 0, "onode_miss_cost": "50us"},
           "both": {"onode_miss_read": 4096, "onode_miss_cost": "50us"}}


@pytest.mark.parametrize("miss", sorted(_MISSES))
@pytest.mark.parametrize("rw", ["randread", "randwrite"])
def test_onode_misses_identical(miss, rw):
    """An onode cache of 40 entries for ~128 objects per OSD: reads and writes miss (a DB read on
    the WAL/DB device, decode CPU for a read, or both); results, counters, hit counts and every
    cache's LRU order equal the Python model's."""
    bsx = {"onode_cache_size": 40, **_MISSES[miss]}
    job = _job(rw=rw, iodepth=8, number_ios=1500, randseed=3)
    st = _same(_params(bsx), 7, [job], ["compiled"])
    hits = sum(h for _o, h, _m in st["onodes"])
    misses = sum(m for _o, _h, m in st["onodes"])
    assert hits > 0 and misses > 0.3 * (hits + misses)  # the misses are exercised


def test_onode_misses_time_based_with_ramp():
    """time_based with ramp_time: the onode counters restart at the ramp's end in both engines."""
    bsx = {"onode_cache_size": 30, **_MISSES["both"]}
    job = _job(rw="randread", iodepth=16, time_based=1, runtime="0.2s", ramp_time="0.05s", randseed=7)
    _same(_params(bsx), 7, [job], ["compiled"])


def test_image_not_pre_filled_writes_then_reads():
    """An image not pre-filled: every first write of an object misses its onode (and loads it with
    the DB read), reads of the written objects then hit or miss in an onode cache smaller than them;
    a chain write, read, write, read equals the Python model's with any engine per step."""
    bsx = {"onode_cache_size": 12, "prefer_deferred_size": 0, **_MISSES["both"]}
    p = _params(bsx, image={"size": "256MiB", "prefilled": False})
    w = _job(rw="randwrite", iodepth=8, number_ios=1200, randseed=4)
    r = _job(rw="randread", iodepth=8, number_ios=1200, randseed=9)
    _same(p, 6, [w, r, w, r], ["compiled"] * 4)


@pytest.mark.parametrize("engines", [("compiled", "python", "compiled"), ("python", "compiled", "python"),
                                     ("compiled", "compiled", "python")])
def test_persist_hand_over(engines):
    """persist_state: the onode caches go from a compiled run to the Python model and back (order,
    counters, BlueStore's random stream), equal to the Python model all the way (direct writes: a
    read after deferred writes not yet applied is not compiled)."""
    bsx = {"onode_cache_size": 40, "prefer_deferred_size": 0, **_MISSES["both"]}
    jobs = [_job(rw="randread", iodepth=8, number_ios=900, randseed=2),
            _job(rw="randwrite", iodepth=4, number_ios=700, randseed=3),
            _job(rw="randread", iodepth=16, number_ios=900, randseed=4)]
    _same(_params(bsx), 5, jobs, list(engines))


def test_every_onode_cached_counts_hits():
    """The default cache (every onode cached): a compiled run counts its lookups (hit ratio 1, not NaN)
    and the refreshed LRU order is the Python model's."""
    st = _same(_params({}), 3, [_job(rw="randwrite", iodepth=8, number_ios=600)], ["compiled"])
    assert all(r == 1.0 for r in st["onode_hit_ratio"])


def test_lru_hit_ratio_is_capacity_over_objects():
    """Oracle: uniform random reads over the N objects of an OSD (pool size 1: every object of an OSD
    is one it is primary for) with an onode cache of C < N entries hit with probability C/N at every
    lookup (the cache holds C distinct objects, each read picks one of N at random), so the hits over
    all OSDs are a sum of Bernoulli(C/N_j): within 4 standard deviations of their mean."""
    c = 20
    p = _params({"onode_cache_size": c, **_MISSES["both"]}, size=1)
    sim, cl = _cluster(p, 11)
    img = cl.image("p", "img")
    run_fio(sim, [img], _job(rw="randread", iodepth=16, number_ios=20000, randseed=13), engine="compiled")
    n_obj = np.bincount([pg.acting[0].id for pg in (img.pool.pgs[ps] for ps in img.obj_ps_array)],
                        minlength=len(cl.osds))
    mean = var = 0.0
    hits = 0
    for o in cl.osds:
        look = o.bs.onodes.hits + o.bs.onodes.misses
        if not look:
            continue
        q = c / n_obj[o.id]
        assert q < 1
        mean += look * q
        var += look * q * (1 - q)
        hits += o.bs.onodes.hits
    assert abs(hits - mean) < 4 * math.sqrt(var), (hits, mean, math.sqrt(var))


def test_fitted_croit_profile_normal_pool_writes_identical():
    """The flagship's fitted croit profile (an onode cache smaller than the ~65,500 objects per OSD, misses
    reading the DB on the HDDs' DB partitions through the device core): 4 KiB randwrite QD16 on the
    normal-HDD pool runs compiled with the Python model's results, and both count the same onode
    hits and misses. Oracle for the count: uniform random writes hit an LRU of C onodes over the N_j objects
    of OSD j with probability C/N_j (see test_lru_hit_ratio_is_capacity_over_objects), so the hits are a sum of
    Bernoulli draws: within 4 standard deviations of their mean (was a fixed 75-87 % that a refit moved out of)."""
    from simulator.core import choose
    from simulator.experiment.model import SystemSpec
    from simulator.experiment.system import System

    spec = SystemSpec.model_validate({"cluster": {"profile": "clusters/croit_mach2_fitted", "params": {"state_scale": 0.1}}})
    job = {"name": "t", "ioengine": "rbd", "pool": "test-normal-hdd", "rbdname": "test", "rw": "randwrite", "bs": "4k",
           "iodepth": 16, "time_based": 1, "runtime": "2s", "direct": 1}
    out = {}
    for engine in ("python", "compiled"):
        sim = Simulation(1)
        system = System(sim, spec, "t")
        cl = system.cluster
        img = cl.image("test-normal-hdd", "test")
        if engine == "compiled":
            wl = Workload(sim, resolve_jobs({}, [job], "t"), lambda _j, _i=img: [_i])
            assert choose(sim, wl, "auto") is None
        res = run_fio(sim, [img], job, engine=engine)
        out[engine] = (repr(res[0]), sim.env.now, [(o.bs.onodes.hits, o.bs.onodes.misses) for o in cl.osds],
                       [(o.bs.wal_dev.completed, o.bs.dev.completed) for o in cl.osds])
        cap = [o.bs.onodes.capacity for o in cl.osds]
        per_pg = np.bincount(img.obj_ps_array, minlength=len(img.pool.pgs))
        n_obj = np.zeros(len(cl.osds))
        for ps, k in enumerate(per_pg):
            for o in img.pool.pgs[ps].acting:
                n_obj[o.id] += k
    assert out["compiled"] == out["python"]
    mean = var = 0.0
    for (h_j, m_j), c, n in zip(out["python"][2], cap, n_obj, strict=True):
        if h_j + m_j:
            q = min(1.0, c / n)
            mean += (h_j + m_j) * q
            var += (h_j + m_j) * q * (1 - q)
    h = sum(x for x, _ in out["python"][2])
    m = sum(y for _, y in out["python"][2])
    assert m > 0 and abs(h - mean) < 4 * math.sqrt(var), (h, mean, math.sqrt(var))
